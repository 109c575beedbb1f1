//! Driving a real platform with the fleet: register its agents (`POST {platform}/api/v1/agents`,
//! the spec's body), trigger deliberations with a configurable request, check each answer, and
//! deregister on the way out. Every step becomes report cases.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use super::agent::MockAgent;
use crate::report::{CaseResult, Level, Status};
use crate::transport::http::{self, BaseUrl, Limits, Request};

/// The `platform:` section of a fleet file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformSpec {
    /// The platform's base URL.
    pub url: String,
    /// Bearer token for the platform's API (prefer `token_env`).
    #[serde(default)]
    pub token: Option<String>,
    /// Environment variable holding the bearer token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The platform's per-endpoint agent timeout (to judge slow agents and deadlines).
    #[serde(default = "default_timeout")]
    pub timeout: String,
    #[serde(default)]
    pub register: Option<RegisterSpec>,
    #[serde(default)]
    pub trigger: Option<TriggerSpec>,
}

fn default_timeout() -> String {
    "120s".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterSpec {
    #[serde(default = "agents_path")]
    pub path: String,
    /// `DELETE {path}/{name}` for each registered agent on exit.
    #[serde(default = "yes")]
    pub deregister: bool,
    #[serde(default = "sync")]
    pub mode: String,
}

fn agents_path() -> String {
    "/api/v1/agents".into()
}
fn yes() -> bool {
    true
}
fn sync() -> String {
    "sync".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    #[serde(default = "post")]
    pub method: String,
    #[serde(default = "tasks_path")]
    pub path: String,
    /// A JSON body; in its strings `{{ n }}` becomes the trigger's number and `{{ task }}` a
    /// generated task text.
    #[serde(default = "default_body")]
    pub body: Value,
    #[serde(default = "one")]
    pub count: usize,
    #[serde(default = "one")]
    pub concurrency: usize,
    /// Added to the platform's timeout: a deliberation must end within both (three phases,
    /// each bounded by the timeout, hence 3 × timeout + margin).
    #[serde(default = "margin")]
    pub margin: String,
    #[serde(default)]
    pub expect: Expect,
}

fn post() -> String {
    "POST".into()
}
fn tasks_path() -> String {
    "/api/v1/round-table/tasks".into()
}
fn default_body() -> Value {
    json!({ "content": "{{ task }}" })
}
fn one() -> usize {
    1
}
fn margin() -> String {
    "30s".into()
}

/// What each trigger's answer must be.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Accepted statuses (default: any 2xx).
    #[serde(default)]
    pub status: Vec<u16>,
    /// Conditions on the JSON answer: `PATH == JSON`, `PATH != JSON`, `PATH exists`.
    #[serde(default)]
    pub json: Vec<String>,
}

/// A condition on a JSON answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    text: String,
    path: crate::jsonpath::JsonPath,
    op: Op,
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(Value),
    Ne(Value),
    Exists,
}

impl Condition {
    pub fn parse(text: &str) -> Result<Condition, String> {
        let t = text.trim();
        let (path, op) = if let Some(p) = t.strip_suffix(" exists") {
            (p, Op::Exists)
        } else if let Some((p, v)) = t.split_once("!=") {
            (p, Op::Ne(literal(v)))
        } else if let Some((p, v)) = t.split_once("==") {
            (p, Op::Eq(literal(v)))
        } else {
            return Err(format!(
                "condition {t:?}: expected `PATH == VALUE`, `PATH != VALUE` or `PATH exists`"
            ));
        };
        Ok(Condition {
            text: t.to_string(),
            path: crate::jsonpath::JsonPath::parse(path.trim())?,
            op,
        })
    }

    /// None when it holds, else what was found.
    pub fn violation(&self, answer: &Value) -> Option<String> {
        let found = self.path.select(answer);
        let shown = |v: &Value| crate::text::excerpt_str(&v.to_string(), 200);
        match &self.op {
            Op::Exists if found.is_empty() => Some(format!("{}: absent", self.text)),
            Op::Exists => None,
            Op::Eq(want) => match found.first() {
                Some((_, v)) if *v == want => None,
                Some((_, v)) => Some(format!("{}: found {}", self.text, shown(v))),
                None => Some(format!("{}: absent", self.text)),
            },
            Op::Ne(want) => match found.first() {
                Some((_, v)) if *v == want => Some(format!("{}: found {}", self.text, shown(v))),
                _ => None,
            },
        }
    }
}

/// A JSON literal, or the text as a string.
fn literal(text: &str) -> Value {
    let t = text.trim();
    serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()))
}

/// Validated driver settings.
pub struct Driver {
    pub base: BaseUrl,
    token: Option<String>,
    pub timeout: Duration,
    pub register: Option<RegisterSpec>,
    pub trigger: Option<(TriggerSpec, Vec<Condition>, Duration)>,
}

impl Driver {
    /// `token_override`: the `--platform-token` flag (wins over the file).
    pub fn new(spec: &PlatformSpec, token_override: Option<String>) -> Result<Driver, String> {
        let base = BaseUrl::parse(&spec.url).map_err(|e| format!("platform.url: {e}"))?;
        let token = match (token_override, &spec.token, &spec.token_env) {
            (Some(t), _, _) => Some(t),
            (None, Some(t), _) => Some(t.clone()),
            (None, None, Some(var)) => Some(std::env::var(var).map_err(|_| {
                format!("platform.token_env: the environment variable {var} is not set")
            })?),
            _ => None,
        };
        let timeout = crate::units::parse_duration(&spec.timeout)
            .map_err(|e| format!("platform.timeout: {e}"))?;
        let trigger = match &spec.trigger {
            None => None,
            Some(t) => {
                let conditions = t
                    .expect
                    .json
                    .iter()
                    .map(|c| {
                        Condition::parse(c)
                            .map_err(|e| format!("platform.trigger.expect.json: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let margin = crate::units::parse_duration(&t.margin)
                    .map_err(|e| format!("platform.trigger.margin: {e}"))?;
                if t.count == 0 || t.concurrency == 0 {
                    return Err("platform.trigger: count and concurrency must be at least 1".into());
                }
                Some((t.clone(), conditions, timeout * 3 + margin))
            }
        };
        Ok(Driver {
            base,
            token,
            timeout,
            register: spec.register.clone(),
            trigger,
        })
    }

    /// The token, for redaction.
    pub fn secret(&self) -> Option<&str> {
        self.token.as_deref()
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Request {
        let mut headers = vec![("accept".to_string(), "application/json".to_string())];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        if let Some(t) = &self.token {
            headers.push(("authorization".into(), format!("Bearer {t}")));
        }
        Request {
            method: method.into(),
            path: path.into(),
            headers,
            body: body
                .map(|b| Bytes::from(serde_json::to_vec(b).unwrap_or_default()))
                .unwrap_or_default(),
        }
    }

    async fn send(&self, request: &Request, deadline: Duration) -> Result<http::Response, String> {
        let limits = Limits {
            deadline,
            ..Limits::default()
        };
        http::send(&self.base, request, limits)
            .await
            .map_err(|e| e.to_string())
    }

    /// Registers each agent with `base_url` from `urls`; returns the names registered and a case.
    pub async fn register(
        &self,
        agents: &[MockAgent],
        urls: &[String],
    ) -> (Vec<String>, Option<CaseResult>) {
        let Some(spec) = &self.register else {
            return (Vec::new(), None);
        };
        let started = Instant::now();
        let mut ok = Vec::new();
        let mut failures = Vec::new();
        for (agent, url) in agents.iter().zip(urls) {
            let p = &agent.profile;
            let mut body = json!({
                "name": p.name, "domain": p.domain, "base_url": url,
                "capabilities": p.capabilities, "mode": spec.mode,
            });
            if let Some(k) = &p.api_key {
                body["api_key"] = json!(k);
            }
            let answer = self
                .send(
                    &self.request("POST", &spec.path, Some(&body)),
                    Duration::from_secs(30),
                )
                .await;
            match answer {
                Ok(r) if (200..300).contains(&r.status) => ok.push(p.name.clone()),
                Ok(r) => failures.push(format!(
                    "{}: {} {}{}",
                    p.name,
                    r.status,
                    registration_hint(r.status),
                    crate::text::excerpt(&r.body, 300)
                )),
                Err(e) => failures.push(format!("{}: {e}", p.name)),
            }
        }
        let mut case = CaseResult::new(
            "platform.register",
            "driver",
            Level::Must,
            "every agent of the fleet registers (POST {platform}/api/v1/agents)",
            "Registration",
        );
        case.duration_ms = started.elapsed().as_millis() as u64;
        if failures.is_empty() {
            case.message = format!(
                "{} agent(s) registered at {}",
                ok.len(),
                self.base.join(&spec.path)
            );
        } else {
            case.status = Status::Fail;
            case.message = format!(
                "{} of {} registration(s) refused:\n  {}",
                failures.len(),
                agents.len(),
                failures
                    .iter()
                    .take(10)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n  ")
            );
        }
        (ok, Some(case))
    }

    /// `DELETE {path}/{name}` for each registered agent.
    pub async fn deregister(&self, names: &[String]) -> Option<CaseResult> {
        let spec = self.register.as_ref().filter(|s| s.deregister)?;
        let mut failures = Vec::new();
        for name in names {
            let path = format!("{}/{name}", spec.path.trim_end_matches('/'));
            match self
                .send(
                    &self.request("DELETE", &path, None),
                    Duration::from_secs(30),
                )
                .await
            {
                Ok(r) if (200..300).contains(&r.status) => {}
                Ok(r) => failures.push(format!("{name}: {}", r.status)),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
        let mut case = CaseResult::new(
            "platform.deregister",
            "driver",
            Level::Should,
            "every registered agent deregisters on exit (DELETE {platform}/api/v1/agents/NAME)",
            "Registration",
        );
        if failures.is_empty() {
            case.message = format!("{} agent(s) deregistered", names.len());
        } else {
            case.status = Status::Fail;
            case.message = format!("refused: {}", failures.join("; "));
        }
        Some(case)
    }

    /// Sends the trigger `count` times (`concurrency` at once); returns its cases.
    pub async fn trigger(&self, seed: u64) -> Vec<CaseResult> {
        let Some((spec, conditions, deadline)) = &self.trigger else {
            return Vec::new();
        };
        let started = Instant::now();
        let gate = Arc::new(Semaphore::new(spec.concurrency));
        let runs = (0..spec.count).map(|n| {
            let gate = gate.clone();
            async move {
                let _permit = gate.acquire().await;
                let body = fill(&spec.body, n, seed);
                let t0 = Instant::now();
                let answer = self
                    .send(
                        &self.request(&spec.method, &spec.path, Some(&body)),
                        *deadline,
                    )
                    .await;
                (n, t0.elapsed(), answer)
            }
        });
        let results = futures::future::join_all(runs).await;
        let mut deadline_case = CaseResult::new("platform.deliberation-deadline",
            "deliberation",
            Level::Must,
            "each triggered deliberation is answered within 3 × the platform's timeout plus a margin, even with hanging and slow agents",
            "Timeouts (agents that do not answer are excluded, not waited for)",
        );
        let mut no5xx = CaseResult::new("platform.no-5xx",
            "deliberation",
            Level::Must,
            "each triggered deliberation is answered without a 5xx, despite malformed or hostile agents",
            "Error Handling (the platform never crashes because of a single agent failure)",
        );
        let mut expect_case = CaseResult::new("platform.trigger-expect",
            "deliberation",
            Level::Must,
            "each deliberation's answer meets the fleet file's expectations (status, JSON conditions)",
            "fleet file: platform.trigger.expect",
        );
        let mut late = Vec::new();
        let mut errors = Vec::new();
        let mut unmet = Vec::new();
        let mut latencies = Vec::new();
        for (n, elapsed, answer) in &results {
            match answer {
                Err(e) => late.push(format!("#{n}: {e}")),
                Ok(r) => {
                    latencies.push(*elapsed);
                    if r.status >= 500 {
                        errors.push(format!(
                            "#{n}: {} {}",
                            r.status,
                            crate::text::excerpt(&r.body, 200)
                        ));
                    }
                    // A 5xx is platform.no-5xx's finding; judging its body too would report it twice.
                    if r.status < 500 {
                        unmet.extend(
                            expectations(spec, conditions, r)
                                .into_iter()
                                .map(|u| format!("#{n}: {u}")),
                        );
                    }
                }
            }
        }
        latencies.sort();
        let summary = latency_summary(&latencies);
        fill_case(
            &mut deadline_case,
            &late,
            format!(
                "{} of {} answered within {}; {summary}",
                latencies.len(),
                results.len(),
                humantime::format_duration(*deadline)
            ),
        );
        fill_case(
            &mut no5xx,
            &errors,
            format!("{} answer(s), none 5xx", latencies.len()),
        );
        if !late.is_empty() && latencies.is_empty() {
            no5xx.status = Status::Skip;
            no5xx.message = "no deliberation was answered".into();
        }
        fill_case(
            &mut expect_case,
            &unmet,
            format!("{} answer(s) met every expectation", latencies.len()),
        );
        if latencies.is_empty() {
            expect_case.status = Status::Skip;
            expect_case.message = "no deliberation was answered".into();
        }
        let ms = started.elapsed().as_millis() as u64;
        for c in [&mut deadline_case, &mut no5xx, &mut expect_case] {
            c.duration_ms = ms;
        }
        vec![deadline_case, no5xx, expect_case]
    }
}

fn registration_hint(status: u16) -> &'static str {
    match status {
        409 => "(name taken) ",
        400 => "(refused; a loopback base_url? see --advertise) ",
        401 | 403 => "(the platform token is missing or wrong) ",
        _ => "",
    }
}

fn expectations(spec: &TriggerSpec, conditions: &[Condition], r: &http::Response) -> Vec<String> {
    let mut unmet = Vec::new();
    let status_ok = if spec.expect.status.is_empty() {
        (200..300).contains(&r.status)
    } else {
        spec.expect.status.contains(&r.status)
    };
    if !status_ok {
        unmet.push(format!(
            "status {} (expected {})",
            r.status,
            if spec.expect.status.is_empty() {
                "2xx".to_string()
            } else {
                format!("{:?}", spec.expect.status)
            }
        ));
    }
    if !conditions.is_empty() {
        match serde_json::from_slice::<Value>(&r.body) {
            Ok(v) => unmet.extend(conditions.iter().filter_map(|c| c.violation(&v))),
            Err(e) => unmet.push(format!("the answer is not JSON: {e}")),
        }
    }
    unmet
}

fn fill_case(case: &mut CaseResult, problems: &[String], ok: String) {
    if problems.is_empty() {
        case.message = ok;
    } else {
        case.status = Status::Fail;
        case.message = format!(
            "{} problem(s):\n  {}",
            problems.len(),
            problems
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
}

fn latency_summary(sorted: &[Duration]) -> String {
    if sorted.is_empty() {
        return "no latency".into();
    }
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!(
        "latency p50 {} ms, max {} ms",
        at(0.5).as_millis(),
        sorted[sorted.len() - 1].as_millis()
    )
}

/// The trigger body with `{{ n }}` and `{{ task }}` filled in.
fn fill(body: &Value, n: usize, seed: u64) -> Value {
    match body {
        Value::String(s) => {
            let mut s = s.replace("{{ n }}", &n.to_string());
            if s.contains("{{ task }}") {
                let task =
                    crate::content::Content::new(seed, &format!("trigger/{n}")).task_content();
                s = s.replace("{{ task }}", &task);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| fill(v, n, seed)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), fill(v, n, seed)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_and_judge() {
        let answer = json!({"status": "completed", "votes": [{"approve": true}], "n": 3});
        let ok = [
            "status == completed",
            "n == 3",
            "votes[0].approve == true",
            "status exists",
            "status != failed",
        ];
        for c in ok {
            assert_eq!(Condition::parse(c).unwrap().violation(&answer), None, "{c}");
        }
        let bad = [
            ("status == failed", "found \"completed\""),
            ("missing exists", "absent"),
            ("n != 3", "found 3"),
        ];
        for (c, why) in bad {
            let v = Condition::parse(c).unwrap().violation(&answer).unwrap();
            assert!(v.contains(why), "{c}: {v}");
        }
        assert!(Condition::parse("status is completed")
            .unwrap_err()
            .contains("expected"));
    }

    #[test]
    fn trigger_bodies_are_filled() {
        let body = fill(
            &json!({"content": "{{ task }}", "title": "run {{ n }}"}),
            4,
            1,
        );
        assert_eq!(body["title"], "run 4");
        assert!(!body["content"].as_str().unwrap().contains("{{"));
    }
}
