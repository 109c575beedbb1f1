//! A recording's requests sent again to another version of an agent (`agent-tck replay FILE
//! --agent NAME=URL`): its new answers judged by the agent rules, beside the recorded answers
//! judged by the same rules, and what changed between them — in the verdicts (a report diff)
//! and in the answers themselves (status, and the JSON paths whose values moved).
//!
//! The requests go one after another, in the order the platform sent them, with their recorded
//! header fields but the masked ones (a key is never recorded: `--agent-key` gives it again).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;

use super::judge::{recorded_answer, task_of, told_in_order};
use super::settings::RunSettings;
use crate::judge::{Entry, Exchange, Party};
use crate::mock::recording::ReplayError;
use crate::probe::traffic::{LiveAnswer, TrafficJudge};
use crate::probe::Suite;
use crate::report::CaseResult;
use crate::transport::http::{self, Request};
use crate::transport::pool::Pool;

/// An agent the recording's requests are sent to again: its new URL and its key.
pub struct Target {
    pub name: String,
    pub pool: Pool,
    pub key: Option<String>,
}

/// What a replay found.
pub struct Replayed {
    /// The recorded answers of the replayed agents, judged.
    pub recorded: Vec<CaseResult>,
    /// The new answers, judged.
    pub replayed: Vec<CaseResult>,
    /// How many requests were sent again.
    pub sent: u64,
    /// The exchanges whose answer changed, each in a line, in order (at most [`SHOWN`]).
    pub changes: Vec<String>,
    /// How many exchanges' answers changed in all.
    pub changed: u64,
    /// Requests the recording held with a key that no `--agent-key` gives again: sent without.
    pub keyless: u64,
}

/// Changed exchanges listed at most.
pub const SHOWN: usize = 20;
/// Changed paths named per exchange at most.
const PATHS: usize = 4;

/// Sends the recorded requests to `targets` again and judges both sets of answers.
pub async fn replay(
    entries: &[Entry],
    suite: Suite,
    settings: &RunSettings,
    targets: &[Target],
) -> Result<Replayed, ReplayError> {
    let old = TrafficJudge::new(suite.clone(), settings.limits());
    let new = TrafficJudge::new(suite, settings.limits());
    for target in targets {
        old.expect(&target.name);
        new.expect(&target.name);
    }
    let limits = http::Limits {
        deadline: settings.limits().timeout + Duration::from_secs(5),
        max_body: super::forward::MAX_FORWARDED_BODY,
        ..http::Limits::default()
    };
    let started = Instant::now();
    let mut found = Replayed {
        recorded: Vec::new(),
        replayed: Vec::new(),
        sent: 0,
        changes: Vec::new(),
        changed: 0,
        keyless: 0,
    };
    for exchange in told_in_order(entries) {
        let Party::Agent(name) = &exchange.to else {
            continue;
        };
        let Some(target) = targets.iter().find(|t| &t.name == name) else {
            continue;
        };
        let path = format!("/{}", exchange.endpoint);
        let method = exchange.method.as_deref().unwrap_or("POST");
        let body = exchange.request.body();
        let request_json: Option<Value> = serde_json::from_slice(&body).ok();
        // An answer to a request the proxy bent (`--fault NAME=request:…`) answered another
        // request than the one sent again: not compared, not judged as recorded.
        let before = if exchange.context["forwarded"].is_object() {
            None
        } else {
            recorded_answer(exchange, old.timeout(), std::time::Duration::ZERO)?
        };
        if let Some((result, elapsed)) = before.clone() {
            old.judge(LiveAnswer {
                answer_json: None,
                agent: name,
                method,
                path: &path,
                task: task_of(exchange),
                request: (request_json.clone()).into(),
                result,
                at: crate::judge::time::duration(exchange.sent_ms),
                elapsed,
            });
        }
        let (request, keyless) = request_of(exchange, method, &path, body, target);
        found.keyless += u64::from(keyless);
        let at = started.elapsed();
        let sent = Instant::now();
        let result = target.pool.send(&request, limits).await;
        found.sent += 1;
        if let Some(change) = change(exchange, before.as_ref().map(|(r, _)| r), &result) {
            found.changed += 1;
            if found.changes.len() < SHOWN {
                found.changes.push(change);
            }
        }
        new.judge(LiveAnswer {
            answer_json: None,
            agent: name,
            method,
            path: &path,
            task: task_of(exchange),
            request: (request_json).into(),
            result,
            at,
            elapsed: sent.elapsed(),
        });
    }
    found.recorded = old.cases();
    found.replayed = new.cases();
    Ok(found)
}

/// The recorded request as it is sent again: its header fields but the masked and hop-by-hop
/// ones, and the target's key where the recording had one (true: it had one, and no key was
/// given to send in its place).
fn request_of(
    exchange: &Exchange,
    method: &str,
    path: &str,
    body: Vec<u8>,
    target: &Target,
) -> (Request, bool) {
    let had_key = exchange.request.header("authorization").is_some();
    let mut headers: Vec<(String, String)> = exchange
        .request
        .headers
        .iter()
        .filter(|(n, v)| !v.contains("***") && super::forward::passed_on(n))
        .cloned()
        .collect();
    if let (true, Some(key)) = (had_key, &target.key) {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    let request = Request {
        method: method.to_string(),
        path: path.to_string(),
        headers,
        body: Bytes::from(body),
    };
    (request, had_key && target.key.is_none())
}

/// What changed between the recorded answer and the new one, in a line; None when nothing did.
fn change(
    exchange: &Exchange,
    before: Option<&Result<http::Response, http::Error>>,
    after: &Result<http::Response, http::Error>,
) -> Option<String> {
    let head = format!(
        "#{} {} /{}",
        exchange.seq,
        match &exchange.to {
            Party::Agent(name) => name.as_str(),
            _ => "?",
        },
        exchange.endpoint
    );
    let said = |r: Option<&Result<http::Response, http::Error>>| match r {
        None => "no answer".to_string(),
        Some(Ok(r)) => format!("answered {}", r.status),
        Some(Err(e)) => crate::text::excerpt_str(&e.to_string(), 120),
    };
    match (before, after) {
        (Some(Ok(old)), Ok(new)) if old.status == new.status => {
            let (a, b) = (
                serde_json::from_slice::<Value>(&old.body).ok(),
                serde_json::from_slice::<Value>(&new.body).ok(),
            );
            let mut paths = BTreeMap::new();
            match (&a, &b) {
                (Some(a), Some(b)) => changed_paths(a, b, "", &mut paths),
                _ if old.body != new.body => {
                    paths.insert("(body)".to_string(), "the body changed".to_string());
                }
                _ => {}
            }
            if paths.is_empty() {
                return None;
            }
            let n = paths.len();
            let named: Vec<String> = paths
                .into_iter()
                .take(PATHS)
                .map(|(path, what)| format!("{path} {what}"))
                .collect();
            let more = if n > PATHS {
                format!(" and {} more", n - PATHS)
            } else {
                String::new()
            };
            Some(format!("{head}: {}{more}", named.join("; ")))
        }
        (before, after) => {
            let (was, is) = (said(before), said(Some(after)));
            (was != is).then(|| format!("{head}: {was}, now {is}"))
        }
    }
}

/// The JSON paths at which `a` and `b` differ, each with what changed (bounded: a path per
/// differing leaf, the first few hundred).
fn changed_paths(a: &Value, b: &Value, at: &str, out: &mut BTreeMap<String, String>) {
    const MOST: usize = 200;
    if out.len() >= MOST || a == b {
        return;
    }
    let child = |key: &str| {
        if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => changed_paths(v, w, &child(k), out),
                    None => {
                        out.insert(child(k), "removed".into());
                    }
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.insert(child(k), "added".into());
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                changed_paths(v, w, &format!("{at}[{i}]"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            out.insert(
                at.to_string(),
                format!("{} items, now {}", x.len(), y.len()),
            );
        }
        (Value::String(_), Value::String(_)) => {
            out.insert(at.to_string(), "text changed".into());
        }
        _ => {
            out.insert(
                at.to_string(),
                format!(
                    "{} → {}",
                    crate::text::excerpt_str(&a.to_string(), 40),
                    crate::text::excerpt_str(&b.to_string(), 40)
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_paths_that_moved_are_named_and_equal_answers_are_no_change() {
        let a =
            json!({"vote": "approve", "confidence": 0.8, "conditions": ["x"], "agent_name": "b"});
        let b = json!({"vote": "reject", "confidence": 0.8, "conditions": ["x", "y"], "extra": 1, "agent_name": "b"});
        let mut out = BTreeMap::new();
        changed_paths(&a, &b, "", &mut out);
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            vec![
                ("conditions".to_string(), "1 items, now 2".to_string()),
                ("extra".to_string(), "added".to_string()),
                ("vote".to_string(), "text changed".to_string()),
            ]
        );
        let mut none = BTreeMap::new();
        changed_paths(&a, &a.clone(), "", &mut none);
        assert!(none.is_empty());
    }
}
