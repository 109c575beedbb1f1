//! The round table's platform rules, judged from the requests the fleet's agents receive:
//! /challenge never sends an agent its own analysis nor a failed agent's, strings forwarded from
//! one agent to others are sanitized and truncated, injection payloads are not forwarded, and
//! the latency the platform adds between phases (besides the rules every protocol shares,
//! [`Common`]).
//!
//! The observer keeps only compact state: counts, a few examples per rule, and per task the
//! agents whose /analyze answer a platform could not use. It is fed synchronously by the fleet's
//! request handler with the full request body (the journal may hold a capped copy).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

// Looked up on every request: a fast hash, not SipHash (the keys are FNV hashes already).
use foldhash::HashMap as FastMap;
use serde_json::Value;

use crate::jsonpath::strings;
use crate::mock::http1::Outcome;
use crate::mock::injection;
use crate::mock::observe::{skip_all_if_none, Common, Tally};
use crate::mock::protocol::{Answered, PlatformObserver, Seen};
use crate::report::{CaseResult, Level, Status};
/// Tasks and canaries tracked at most: a fleet serving for days must not grow without bound.
/// Past it, new ones are not followed (and the verdicts say so).
const MAX_TRACKED: usize = 100_000;
/// Most (task, agent) /analyze outcomes the books hold.
const MAX_ANALYSES: usize = 4 * MAX_TRACKED;
/// The platform's per-field limit (Response Size Limits).
pub const MAX_FIELD_CHARS: usize = 50_000;

/// A payload that came back in a request to another agent.
#[derive(Debug, Clone)]
struct Reappearance {
    canary: String,
    payload: String,
    family: String,
    from: String,
    to: String,
    endpoint: String,
}

#[derive(Default)]
struct State {
    common: Common,
    own_analysis: Tally,
    failed_excluded: Tally,
    nul: Tally,
    field_length: Tally,
    /// (task_id, agent) → whether its /analyze answer was usable within the platform's timeout.
    analyze: FastMap<(Key, Key), bool>,
    /// canary → (payload id, family, agent that sent it).
    canaries: HashMap<String, (String, String, String)>,
    reappeared: Vec<Reappearance>,
    reappeared_seen: HashSet<(String, String)>,
    /// task_id → each phase's timing of the requests the fleet received.
    phases: FastMap<Key, [Phase; 3]>,
    /// Tasks or canaries not followed because MAX_TRACKED was reached.
    untracked: u64,
}

/// A task id or an agent name as the books key it: its 64-bit FNV-1a. The books hold a few
/// hundred thousand keys of a few bytes each, pre-sized, so that a fleet's memory stays flat
/// under a platform that sends a new task with every request (two of 400,000 keys colliding:
/// about 4 in 10^9).
type Key = u64;

fn key(text: &str) -> Key {
    crate::text::fnv1a(text)
}

/// The phases a task goes through, in order: their index in a task's books.
const PHASES: [&str; 3] = ["analyze", "challenge", "vote"];

fn phase_index(endpoint: &str) -> Option<usize> {
    PHASES.iter().position(|p| *p == endpoint)
}

/// When a task's phase started and when the platform's wait for it could have ended, in
/// microseconds since the observer started (`u64::MAX`: the phase has not begun).
#[derive(Debug, Clone, Copy)]
struct Phase {
    first_request: u64,
    /// The latest moment an answer of this phase was complete, or (for an answer that never
    /// came or came too late) when the platform's timeout for it ran out.
    wait_ended: u64,
}

impl Phase {
    const NOT_BEGUN: Phase = Phase {
        first_request: u64::MAX,
        wait_ended: u64::MAX,
    };

    fn begun(&self) -> bool {
        self.first_request != u64::MAX
    }
}

pub struct Observer {
    /// The platform's per-endpoint timeout, to judge whether a slow answer was usable.
    pub platform_timeout: Duration,
    /// The origin of the books' times.
    started: Instant,
    state: Mutex<State>,
    /// Whether any answer carried an injection payload (then every request body is scanned).
    canaries_placed: AtomicBool,
}

impl Observer {
    pub fn new(platform_timeout: Duration) -> Observer {
        // Sized for the most they hold: no rehash of a hundred thousand entries in the middle of
        // a request (a latency spike), and a fleet's memory reaches its level at once.
        let state = State {
            phases: FastMap::with_capacity_and_hasher(MAX_TRACKED, Default::default()),
            analyze: FastMap::with_capacity_and_hasher(MAX_ANALYSES, Default::default()),
            ..State::default()
        };
        Observer {
            platform_timeout,
            started: Instant::now(),
            state: Mutex::new(state),
            canaries_placed: AtomicBool::new(false),
        }
    }

    fn micros(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.started).as_micros() as u64
    }
}

impl PlatformObserver for Observer {
    fn on_request(&self, seen: &Seen<'_>) {
        let (name, endpoint, task, decision, at) =
            (seen.agent, seen.endpoint, seen.task, seen.decision, seen.at);
        // The body is parsed (when it must be: /challenge and /vote, or a scan for payloads)
        // before the lock is taken: it is the costly part, and every worker may be here at once.
        let body = (endpoint != "analyze" || self.canaries_placed.load(Ordering::Relaxed))
            .then(|| seen.body.value())
            .flatten();
        let Ok(mut s) = self.state.lock() else { return };
        s.common.on_request(seen);
        let task_key = key(task);
        if let Some(i) = phase_index(endpoint) {
            let now = self.micros(at);
            let tracked = s.phases.len() < MAX_TRACKED || s.phases.contains_key(&task_key);
            if tracked {
                let phase = &mut s.phases.entry(task_key).or_insert([Phase::NOT_BEGUN; 3])[i];
                if !phase.begun() {
                    *phase = Phase {
                        first_request: now,
                        wait_ended: now,
                    };
                }
            } else {
                s.untracked += 1;
            }
        }
        for placed in &decision.injected {
            if s.canaries.len() >= MAX_TRACKED {
                s.untracked += 1;
                break;
            }
            s.canaries.insert(
                placed.canary.clone(),
                (
                    placed.payload.clone(),
                    placed.family.clone(),
                    name.to_string(),
                ),
            );
            self.canaries_placed.store(true, Ordering::Relaxed);
        }
        if let Some(body) = body {
            scan_canaries(&mut s, name, endpoint, body);
        }
        match endpoint {
            "analyze" => {
                let usable = decision.usable_within(self.platform_timeout);
                let pair = (task_key, key(name));
                if s.analyze.len() >= MAX_ANALYSES && !s.analyze.contains_key(&pair) {
                    s.untracked += 1;
                    return;
                }
                s.analyze.insert(pair, usable);
            }
            "challenge" => {
                if let Some(body) = body {
                    check_challenge(&mut s, name, task, body);
                }
            }
            _ => {
                if let Some(findings) = body.and_then(|b| b.pointer("/synthesis/key_findings")) {
                    check_forwarded(&mut s, name, endpoint, "synthesis.key_findings", findings);
                }
            }
        }
    }

    /// The verdicts, as report cases.
    fn cases(&self) -> Vec<CaseResult> {
        let Ok(s) = self.state.lock() else {
            return Vec::new();
        };
        let total = s.common.total();
        let challenges = s.common.requests.get("challenge").copied().unwrap_or(0);
        let mut cases = s.common.cases("POST /analyze, /challenge, /vote: Request");
        cases.extend([
            s.own_analysis.case(
                "platform.challenge-not-own",
                "challenge",
                Level::Must,
                "/challenge other_analyses never holds the receiving agent's own analysis",
                "POST /challenge (the platform sends other agents' analyses)",
                "/challenge requests",
            ),
            s.failed_excluded.case(
                "platform.challenge-no-failed",
                "challenge",
                Level::Must,
                "/challenge other_analyses holds no agent whose /analyze failed (timed out, errored, refused, malformed, oversized)",
                "Error Handling; Timeouts (excluded from the round table)",
                "agents named in /challenge other_analyses",
            ),
            s.nul.case(
                "platform.nul-stripped",
                "sanitization",
                Level::Must,
                "strings forwarded from one agent to others carry no NUL characters",
                "Response Sanitization (stripped of null bytes)",
                "forwarded strings",
            ),
            s.field_length.case(
                "platform.field-truncated",
                "sanitization",
                Level::Must,
                "strings forwarded from one agent to others are at most 50,000 characters",
                "Response Size Limits (per-field 50,000 characters)",
                "forwarded strings",
            ),
        ]);
        if challenges == 0 {
            for case in cases
                .iter_mut()
                .filter(|c| c.group == "challenge" || c.group == "sanitization")
            {
                case.status = Status::Skip;
                case.message =
                    "no /challenge request reached the fleet, so nothing was forwarded to judge"
                        .into();
            }
        }
        skip_all_if_none(&mut cases, total);
        cases.push(injection_case(&s));
        cases.push(latency_case(&s));
        cases.extend(s.common.probe_case());
        if s.untracked > 0 {
            for case in &mut cases {
                case.message.push_str(&format!(
                    "\n(past {MAX_TRACKED} tasks or payloads, {} were not followed)",
                    s.untracked
                ));
            }
        }
        cases
    }

    fn on_probe_request(&self, _agent: &str, endpoint: &str, case: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.common.on_probe_request(endpoint, case);
        }
    }

    fn on_incomplete(&self, agent: &str, endpoint: &str, what: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.common.on_incomplete(agent, endpoint, what);
        }
    }

    fn on_answer(&self, answered: &Answered<'_>) {
        let (endpoint, task, received, delivered) = (
            answered.endpoint,
            answered.task,
            answered.received,
            answered.delivered,
        );
        let Ok(mut s) = self.state.lock() else { return };
        let deadline = received + self.platform_timeout;
        let ended = if delivered.outcome == Outcome::Complete {
            (received + delivered.total).min(deadline)
        } else {
            deadline
        };
        let ended = self.micros(ended);
        let Some(i) = phase_index(endpoint) else {
            return;
        };
        if let Some(phase) = s.phases.get_mut(&key(task)).map(|p| &mut p[i]) {
            if phase.begun() {
                phase.wait_ended = phase.wait_ended.max(ended);
            }
        }
    }
}

/// /challenge: never the receiver's own analysis, never a failed agent; forwarded strings clean.
fn check_challenge(s: &mut State, receiver: &str, task: &str, body: &Value) {
    let Some(others) = body.get("other_analyses").and_then(Value::as_array) else {
        return;
    };
    let name_of = |other: &Value| {
        other
            .get("agent_name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    // One verdict per request (the case counts /challenge requests), naming the first entry
    // that is the receiver's own.
    let own = others.iter().position(|o| name_of(o) == receiver);
    s.own_analysis.check(own.is_none(), || {
        format!(
            "{receiver} got its own analysis in other_analyses[{}] (task {task})",
            own.unwrap_or_default()
        )
    });
    for (i, other) in others.iter().enumerate() {
        let named = name_of(other);
        let named = named.as_str();
        if let Some(usable) = s.analyze.get(&(key(task), key(named))).copied() {
            s.failed_excluded.check(usable, || {
                format!("{receiver} got other_analyses[{i}] from {named}, whose /analyze failed (task {task})")
            });
        }
        check_forwarded(
            s,
            receiver,
            "challenge",
            &format!("other_analyses[{i}]"),
            other,
        );
    }
}

/// Strings one agent sent that reach another: no NUL, at most 50,000 characters.
fn check_forwarded(s: &mut State, receiver: &str, endpoint: &str, base: &str, value: &Value) {
    for (path, text) in strings(value) {
        let at = || format!("{receiver} /{endpoint}: {base}{}", dotted(&path));
        s.nul.check(!text.contains('\0'), || {
            format!("{}: a NUL character", at())
        });
        let chars = text.chars().count();
        s.field_length.check(chars <= MAX_FIELD_CHARS, || {
            format!("{}: {chars} characters", at())
        });
    }
}

fn dotted(path: &str) -> String {
    if path.is_empty() || path.starts_with('[') {
        path.to_string()
    } else {
        format!(".{path}")
    }
}

/// Records canaries (placed by some agent) that arrive in a request to another agent.
fn scan_canaries(s: &mut State, receiver: &str, endpoint: &str, body: &Value) {
    if s.canaries.is_empty() {
        return;
    }
    for (_, text) in strings(body) {
        for canary in injection::find_canaries(text) {
            let Some((payload, family, from)) = s.canaries.get(&canary).cloned() else {
                continue;
            };
            if from == receiver
                || !s
                    .reappeared_seen
                    .insert((canary.clone(), receiver.to_string()))
            {
                continue;
            }
            s.reappeared.push(Reappearance {
                canary,
                payload,
                family,
                from,
                to: receiver.to_string(),
                endpoint: endpoint.to_string(),
            });
        }
    }
}

fn injection_case(s: &State) -> CaseResult {
    let mut case = CaseResult::new(
        "platform.injection-forwarded",
        "sanitization",
        Level::May,
        "prompt-injection payloads sent by one agent are not forwarded verbatim to others",
        "Response Sanitization (scanned for prompt injection patterns)",
    );
    if s.canaries.is_empty() {
        case.status = Status::Skip;
        case.message =
            "no agent of the fleet sent an injection payload (behaviour `injection`)".into();
        return case;
    }
    if s.reappeared.is_empty() {
        case.message = format!(
            "{} payload(s) sent; none reappeared in a request to another agent",
            s.canaries.len()
        );
        return case;
    }
    case.status = Status::Fail;
    let mut families: Vec<&str> = s.reappeared.iter().map(|r| r.family.as_str()).collect();
    families.sort();
    families.dedup();
    let mut message = format!(
        "forwarded unsanitized: {} of {} payload(s) reappeared in requests to other agents (families: {})",
        s.reappeared.iter().map(|r| &r.canary).collect::<HashSet<_>>().len(),
        s.canaries.len(),
        families.join(", ")
    );
    for r in s.reappeared.iter().take(10) {
        message.push_str(&format!(
            "\n  {} ({}, {}): from {} to {} in /{}",
            r.canary, r.payload, r.family, r.from, r.to, r.endpoint
        ));
    }
    case.message = message;
    case
}

/// What the platform adds between phases: from the end of its wait for one phase's answers to
/// its first request of the next phase, per task (median and max over tasks).
fn latency_case(s: &State) -> CaseResult {
    let mut case = CaseResult::new(
        "platform.phase-latency",
        "deliberation",
        Level::May,
        "latency the platform adds between phases (from the last answer it waited for to its next request)",
        "Timeouts (informational)",
    );
    let mut lines = Vec::new();
    for (i, (from, to)) in [("analyze", "challenge"), ("challenge", "vote")]
        .into_iter()
        .enumerate()
    {
        let mut gaps: Vec<f64> = s
            .phases
            .values()
            .filter(|p| p[i].begun() && p[i + 1].begun())
            .map(|p| p[i + 1].first_request.saturating_sub(p[i].wait_ended) as f64 / 1e3)
            .collect();
        if gaps.is_empty() {
            continue;
        }
        gaps.sort_by(f64::total_cmp);
        lines.push(format!(
            "{from} → {to}: median {:.1} ms, max {:.1} ms over {} task(s)",
            gaps[gaps.len() / 2],
            gaps[gaps.len() - 1],
            gaps.len()
        ));
    }
    if lines.is_empty() {
        case.status = Status::Skip;
        case.message = "no task reached two phases".into();
    } else {
        case.message = lines.join("\n");
    }
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::decision::Decision;
    use crate::mock::journal::AuthSeen;
    use crate::mock::Body;
    use serde_json::json;

    fn challenge(observer: &Observer, receiver: &str, others: &[&str]) {
        let body = json!({
            "task_id": "t",
            "content": "c",
            "other_analyses": others.iter().map(|n| json!({"agent_name": n, "domain": "d", "observations": []})).collect::<Vec<_>>(),
        });
        observer.on_request(&Seen {
            seq: 0,
            answer: b"{}",
            agent: receiver,
            expects_key: false,
            endpoint: "challenge",
            auth: AuthSeen::None,
            task: "t",
            body: &Body::new(body.to_string().as_bytes()),
            schema_findings: &[],
            decision: &Decision::default(),
            at: Instant::now(),
        });
    }

    /// The case counts /challenge requests, as it says: one verdict per request, however many
    /// entries its other_analyses has.
    #[test]
    fn challenge_not_own_counts_requests() {
        let observer = Observer::new(Duration::from_secs(120));
        challenge(&observer, "a", &["b", "a", "c"]);
        challenge(&observer, "b", &["a", "c"]);
        let cases = observer.cases();
        let case = cases
            .iter()
            .find(|c| c.id == "platform.challenge-not-own")
            .unwrap();
        assert_eq!(case.status, Status::Fail);
        assert!(
            case.message
                .starts_with("1 of 2 /challenge requests break the rule, e.g.\n  a got its own analysis in other_analyses[1] (task t)"),
            "{}",
            case.message
        );
    }
}
