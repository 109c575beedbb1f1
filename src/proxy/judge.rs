//! A proxy run's recording judged again, with no platform and no agent running: the platform
//! rules fed the recorded calls in the order the live observer had them
//! ([`crate::mock::recording::rejudge`]), the agent rules fed each agent's recorded answer as
//! the live judge had it. The run's settings (the protocol, the timeouts, the faults) are an
//! event of the recording's own, written as the run starts.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;

use super::bend::{bent_case, RequestFault, Requests};
use super::settings::{RunSettings, SETTINGS_EVENT};
use crate::judge::time::duration;
use crate::judge::{Entry, Exchange, Message};
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::applied::Applied;
use crate::mock::behavior::{self, For};
use crate::mock::protocol::AgentProtocol;
use crate::mock::protocol::Served;
use crate::mock::recording::{tell, Apart, ReplayError};
use crate::probe::outcome::Sent;
use crate::probe::traffic::{LiveAnswer, TrafficJudge};
use crate::probe::Suite;
use crate::report::CaseResult;
use crate::transport::http;

/// Judges `entries` again as the live proxy judged them: the same cases, in the same order.
pub fn judge(
    entries: &[Entry],
    protocol: &'static dyn AgentProtocol,
    suite: Suite,
    settings: &RunSettings,
) -> Result<Vec<CaseResult>, ReplayError> {
    judge_together(&[(entries, settings)], protocol, suite)
}

/// Judges several recordings together, as one run (the conversations of `proxy --stdio`, a
/// process and a file each): one platform observer told every conversation, each in its place
/// in time (by the start each recorded; its requests' numbers kept apart from the others'),
/// one agent judge fed every answer. The first recording's settings are the run's (its
/// timeouts and limits); every recording's agents are reported.
pub fn judge_together(
    recordings: &[(&[Entry], &RunSettings)],
    protocol: &'static dyn AgentProtocol,
    suite: Suite,
) -> Result<Vec<CaseResult>, ReplayError> {
    let Some((_, first)) = recordings.first() else {
        return Err(ReplayError::Missing(
            "recording: there is none to judge".into(),
        ));
    };
    let observer = crate::mock::observe::observer_for(protocol, &first.expect());
    let traffic = TrafficJudge::new(suite, first.limits());
    let mut agents: Vec<MockAgent> = Vec::new();
    let mut requests: Vec<(String, Requests)> = Vec::new();
    for (_, settings) in recordings {
        for agent in agents_of(protocol, settings)? {
            if !agents.iter().any(|a| a.name() == agent.name()) {
                traffic.expect(agent.name());
                agents.push(agent);
            }
        }
        for (name, r) in requests_of(protocol, settings)? {
            if !requests.iter().any(|(n, _)| *n == name) {
                requests.push((name, r));
            }
        }
        for agent in settings.agents.iter().filter(|a| !a.requests.is_empty()) {
            traffic.expect_bent(&agent.name);
        }
    }
    let base = Instant::now();
    let earliest = recordings
        .iter()
        .filter_map(|(entries, _)| started_unix_ms(entries))
        .min()
        .unwrap_or(0);
    let applied = Applied::default();
    let mut judged: Option<(Served, Instant)> = None;
    let mut apart = Apart::default();
    let mut told_count = 0u64;
    for (entries, _) in recordings {
        let offset = started_unix_ms(entries).map_or(0, |ms| ms.saturating_sub(earliest));
        let at = base + Duration::from_millis(offset);
        if let Some((served, when)) = tell(entries, observer.as_ref(), at, apart, Some(protocol))? {
            judged = Some(match judged {
                Some((s, w)) => (s, w.max(when)),
                None => (served, when),
            });
        }
        let told = told_in_order(entries);
        told_count += told.len() as u64;
        for exchange in &told {
            let agent = match &exchange.to {
                crate::judge::Party::Agent(name) => name.as_str(),
                _ => continue,
            };
            if let Some(i) = agents.iter().position(|a| a.name() == agent) {
                let decision = &exchange.context["seen"]["decision"]["applied"];
                let sources: Vec<String> =
                    serde_json::from_value(decision.clone()).unwrap_or_default();
                applied.record(i, &sources);
            }
            let bent = &exchange.context["forwarded"];
            let theirs = requests
                .iter()
                .find(|(name, _)| name == agent)
                .map(|(_, r)| r);
            if let (Some(source), Some(r)) = (bent["fault"].as_str(), theirs) {
                r.count(source);
            }
            // As the live judge: a request held is judged on the agent's own time; one cut or
            // never passed on is not judged; one bent, by the cases of bent requests, on what
            // was sent.
            let held = bent["held_ms"].as_f64().map_or(Duration::ZERO, duration);
            if bent["cut"].as_bool() == Some(true) || bent["hang"].as_bool() == Some(true) {
                continue;
            }
            let Some((result, elapsed)) = recorded_answer(exchange, traffic.timeout(), held)?
            else {
                continue;
            };
            let path = format!("/{}", exchange.endpoint);
            let mut answer = LiveAnswer {
                answer_json: None,
                agent,
                method: exchange.method.as_deref().unwrap_or("POST"),
                path: &path,
                task: task_of(exchange),
                request: Sent::Bytes(exchange.request.body().into()),
                result,
                at: duration(exchange.sent_ms) + Duration::from_millis(offset),
                elapsed,
            };
            match (bent["behavior"].as_str(), bent.get("message")) {
                (Some(name), Some(sent)) => {
                    let sent: Message = serde_json::from_value(sent.clone()).map_err(|_| {
                        ReplayError::Exchange {
                            seq: exchange.seq,
                            what: "its forwarded message is missing or wrong".into(),
                        }
                    })?;
                    answer.request = Sent::Bytes(sent.body().into());
                    let judged =
                        traffic.judge_bent(answer, name, RequestFault::refusal_holds(name));
                    if let (false, Some(source), Some(r)) = (judged, bent["fault"].as_str(), theirs)
                    {
                        r.unjudged(source);
                    }
                }
                _ => traffic.judge(answer),
            }
        }
        let most = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Exchange(x) => Some(x.seq),
                Entry::Event(_) => None,
            })
            .max()
            .unwrap_or(0);
        apart.seq += most + 1;
        apart.channel += 1 << 32;
    }
    let (served, now) = judged.ok_or_else(|| {
        ReplayError::Missing(
            "`judged` event: the run ended before its verdicts were drawn, so there is no moment to judge it at".into(),
        )
    })?;
    let mut cases = vec![super::report::reached_case(told_count)];
    cases.extend(observer.cases_at(served, now));
    cases.extend(traffic.cases());
    cases.extend(applied.case(&agents));
    cases.extend(bent_case(requests.iter().map(|(n, r)| (n.as_str(), r))));
    super::report::by_party(&mut cases);
    Ok(cases)
}

/// When a recording's run started (ms since the epoch), when it recorded it (`proxy --stdio`
/// does, to place its conversation among the others').
fn started_unix_ms(entries: &[Entry]) -> Option<u64> {
    entries.iter().find_map(|entry| match entry {
        Entry::Event(e) if e.event == SETTINGS_EVENT => e.context["started_unix_ms"].as_u64(),
        _ => None,
    })
}

/// A recorded request's id, as the live observer was told it (None: it had none).
pub(super) fn task_of(exchange: &Exchange) -> Option<&str> {
    exchange.context["seen"]["task"]
        .as_str()
        .filter(|t| !t.is_empty())
}

/// The recorded exchanges whose request the live observer was told, in the order it was.
pub(super) fn told_in_order(entries: &[Entry]) -> Vec<&Exchange> {
    let mut told: Vec<(u64, &Exchange)> = entries
        .iter()
        .filter_map(|entry| match entry {
            Entry::Exchange(e) => e.context["order"][0].as_u64().map(|n| (n, e)),
            Entry::Event(_) => None,
        })
        .collect();
    told.sort_by_key(|(order, _)| *order);
    told.into_iter().map(|(_, e)| e).collect()
}

/// Each agent's request faults as the run had them, parsed again (to count what they bent).
fn requests_of(
    protocol: &'static dyn AgentProtocol,
    settings: &RunSettings,
) -> Result<Vec<(String, Requests)>, ReplayError> {
    settings
        .agents
        .iter()
        .map(|a| {
            let faults = a
                .requests
                .iter()
                .map(|f| super::bend::parse(f, protocol))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ReplayError::Event {
                    event: SETTINGS_EVENT.into(),
                    what: format!("agent {}'s request faults: {e}", a.name),
                })?;
            Ok((
                a.name.clone(),
                Requests::new(faults, &a.name, settings.seed),
            ))
        })
        .collect()
}

/// The agents as the run had them: their faults parsed again (to say which took effect).
fn agents_of(
    protocol: &'static dyn AgentProtocol,
    settings: &RunSettings,
) -> Result<Vec<MockAgent>, ReplayError> {
    settings
        .agents
        .iter()
        .map(|a| {
            let items = match a.faults.as_slice() {
                [] => Vec::new(),
                faults => behavior::parse_list(
                    &faults.join(","),
                    For {
                        protocol,
                        others: &[],
                    },
                )
                .map_err(|e| ReplayError::Event {
                    event: SETTINGS_EVENT.into(),
                    what: format!("agent {}'s faults: {e}", a.name),
                })?,
            };
            Ok(MockAgent::new(
                protocol,
                Profile::served(&a.name, None),
                items,
                settings.seed,
            ))
        })
        .collect()
}

/// What the agent answered, as the live judge had it, and how long it took (less `held`, the
/// time the proxy held the request before passing it on): None when the run ended or the
/// platform left first (not judged live either, unless past the timeout — the judge decides
/// that from the figure).
#[allow(clippy::type_complexity)]
pub(super) fn recorded_answer(
    exchange: &Exchange,
    timeout: Duration,
    held: Duration,
) -> Result<Option<(Result<http::Response, http::Error>, Duration)>, ReplayError> {
    let a = &exchange.context["agent_answer"];
    let wrong = |what: &str| ReplayError::Exchange {
        seq: exchange.seq,
        what: format!("its agent_answer's {what} is missing or wrong"),
    };
    let ms = |key: &str| a[key].as_f64().map(|ms| duration(ms).saturating_sub(held));
    if a.is_null() || a.get("stopped_ms").is_some() {
        return Ok(None);
    }
    if let Some(left) = ms("left_ms") {
        return Ok(super::handler::left_unanswered(left, timeout).map(|late| (Err(late), left)));
    }
    let elapsed = ms("elapsed_ms").ok_or_else(|| wrong("elapsed_ms"))?;
    if let Some(error) = a.get("error") {
        let error: http::Error =
            serde_json::from_value(error.clone()).map_err(|_| wrong("error"))?;
        return Ok(Some((Err(error), elapsed)));
    }
    let status = a["status"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .ok_or_else(|| wrong("status"))?;
    let message: Message =
        serde_json::from_value(a["message"].clone()).map_err(|_| wrong("message"))?;
    let response = http::Response {
        status,
        headers: message.headers.clone(),
        body: Bytes::from(message.body()),
        body_exceeded: a["body_exceeded"].as_bool().unwrap_or(false),
        elapsed,
    };
    Ok(Some((Ok(response), elapsed)))
}

/// What ends a recording cut before its close (the proxy killed, or dead): the run's end and
/// the verdicts drawn at its last moment, where none were written, as the live run would have
/// drawn them had it ended there. Returns when that moment was (ms from the start), None when
/// the recording was closed after all.
pub fn close_cut(entries: &mut Vec<Entry>) -> Option<f64> {
    let judged = entries
        .iter()
        .any(|e| matches!(e, Entry::Event(ev) if ev.event == "judged"));
    if judged {
        return None;
    }
    let mut last_order = 0;
    let mut last_ms: f64 = 0.0;
    for entry in entries.iter() {
        match entry {
            Entry::Exchange(e) => {
                for i in 0..2 {
                    last_order = last_order.max(e.context["order"][i].as_u64().unwrap_or(0));
                }
                last_ms = last_ms.max(e.answered_ms.unwrap_or(e.sent_ms));
            }
            Entry::Event(e) => {
                last_order = last_order.max(e.context["order"].as_u64().unwrap_or(0));
                last_ms = last_ms.max(e.at_ms);
            }
        }
    }
    let event = |name: &str, order: u64, mut context: Value| {
        context["order"] = serde_json::json!(order);
        Entry::Event(crate::judge::Event {
            event: name.to_string(),
            at_ms: last_ms,
            context,
        })
    };
    entries.push(event(
        "run-end",
        last_order + 1,
        serde_json::json!({
            "after_ms": last_ms,
            "why": "the recording ends there (the proxy was killed, or died)",
            "abandoned": false,
        }),
    ));
    entries.push(event(
        "judged",
        last_order + 2,
        serde_json::json!({"served": "proxy"}),
    ));
    Some(last_ms)
}

/// The case that says a recording was cut: the run did not end as a run ends, and no verdict
/// drawn from it is the whole run's.
pub fn cut_case(at_ms: f64) -> CaseResult {
    let mut case = CaseResult::new(
        "run.completed",
        "run",
        crate::report::Level::Must,
        "the run was not cut short (Ctrl-C, SIGTERM): the cases not done are marked not run",
        "agent-tck (the run)",
    );
    case.fail(format!(
        "the recording ends without its close, {:.1} s into the run: the proxy was killed or died there; the verdicts are drawn at that moment, and what the run would have seen after it is not judged",
        at_ms / 1000.0
    ));
    case
}
