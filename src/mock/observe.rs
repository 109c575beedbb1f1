//! What the fleet learns about the platform from the requests its agents receive, and the
//! verdicts it draws (the same [`CaseResult`]s the probe produces, through the same reporters).
//!
//! The fleet's handler feeds a [`PlatformObserver`] synchronously with every request (the full
//! body, parsed) and the agent's decision, and tells it when each answer is over. A protocol
//! brings its own observer for the rules of its deliberation; what every protocol shares — each
//! request valid against its endpoint's schema, bearer keys as registered — is [`Common`], and
//! [`SchemaObserver`] is that alone (the observer of a protocol that has none of its own).

use std::sync::Mutex;

use super::journal::AuthSeen;
use super::protocol::{AgentProtocol, Endpoint, PlatformExpect, PlatformObserver, Seen, Served};
use crate::report::{CaseResult, Evidence, Level};
use crate::schema::findings_message;

/// Examples kept per rule.
pub const EXAMPLES: usize = 5;

/// A rule's tally: how often it was checked, how often broken, and a few examples.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub checked: u64,
    pub broken: u64,
    pub examples: Vec<String>,
}

impl Tally {
    pub fn check(&mut self, ok: bool, example: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.broken += 1;
            if self.examples.len() < EXAMPLES {
                self.examples.push(example());
            }
        }
    }

    /// The case of a tallied rule: passed on what was checked, failed with examples, or, with
    /// nothing checked, skipped saying `unexercised` (what was missing and what would exercise
    /// the rule).
    #[allow(clippy::too_many_arguments)]
    pub fn judged(
        &self,
        id: &str,
        group: &str,
        level: Level,
        title: &str,
        spec: &str,
        what: &str,
        unexercised: &str,
    ) -> CaseResult {
        let mut case = CaseResult::new(id, group, level, title, spec);
        let evidence = Evidence::new(self.checked, what);
        if self.broken == 0 {
            case.pass(evidence, || format!("no {what} to judge: {unexercised}"));
        } else {
            case.fail_on(
                evidence,
                format!(
                    "{} of {} {what} break the rule, e.g.\n  {}",
                    self.broken,
                    self.checked,
                    self.examples.join("\n  ")
                ),
            );
        }
        case
    }
}

/// Tells, in a case, the answers the run's own end cut before the platform's time for them
/// was up (`cut`: its count in `broken`, a few of them in words in `examples`; `what`: what
/// they are, "answers", put in the number `broken` asks for). They were not judged: with
/// nothing else judged the case is a skip that names them (not one that asks for a behaviour
/// the fleet already has); beside a verdict, a note.
pub fn note_cut(case: &mut CaseResult, cut: &Tally, what: &str) {
    if cut.broken == 0 {
        return;
    }
    let listed = cut.examples.join("\n  ");
    let more = match cut.broken - cut.examples.len() as u64 {
        0 => String::new(),
        n => format!("\n  … and {n} more"),
    };
    if case.status == crate::report::Status::Skip {
        case.skip(format!(
            "not judged: {}, cut by the run's own end, which is not the platform's act nor evidence about it:\n  {listed}{more}",
            crate::text::count(cut.broken, what)
        ));
    } else {
        case.message.push_str(&format!(
            "{}(not judged: {}, cut by the run's own end:\n  {listed}{more})",
            if case.message.is_empty() { "" } else { "\n" },
            crate::text::count(cut.broken, what)
        ));
    }
}

/// The rules every protocol's platform is held to: each request valid against its endpoint's
/// schema; agents registered with a key receive it as a bearer token, others none. A protocol's
/// observer keeps one inside its own state (one lock per request).
#[derive(Debug, Default)]
pub struct Common {
    /// Protocol requests by endpoint (counted per request: a fast hash, not SipHash).
    pub requests: foldhash::HashMap<String, u64>,
    /// Requests agent-tck's probe marked as its own tests: "CASE at /ENDPOINT" → how many.
    probe_requests: std::collections::BTreeMap<String, u64>,
    schema: Tally,
    bearer: Tally,
    no_stray_bearer: Tally,
    /// Requests that never arrived whole (the connection or stdin closed mid-request).
    incomplete: Tally,
    /// Requests to agents whose key is not known (behind a proxy told none): the bearer rules
    /// were not judged on them.
    unknown_keys: u64,
}

impl Common {
    pub fn on_request(&mut self, seen: &Seen<'_>) {
        let endpoint = seen.endpoint;
        // Counted without a key allocation per request: the endpoint is nearly always known.
        match self.requests.get_mut(endpoint) {
            Some(count) => *count += 1,
            None => {
                self.requests.insert(endpoint.to_string(), 1);
            }
        }
        let name = seen.agent;
        let auth = seen.auth;
        if auth == AuthSeen::Unknown {
            // Neither rule can be judged without the agent's key.
            self.unknown_keys += 1;
        } else if seen.expects_key {
            self.bearer.check(auth == AuthSeen::Ok, || {
                format!("{name} /{endpoint}: {}", auth_text(auth))
            });
        } else {
            self.no_stray_bearer.check(auth != AuthSeen::Unexpected, || {
                format!("{name} /{endpoint}: an Authorization header came, though {name} registered no key")
            });
        }
        let findings = seen.schema_findings;
        self.schema.check(findings.is_empty(), || {
            format!("{name} /{endpoint}: {}", findings_message(findings))
        });
    }

    /// A request that never arrived whole.
    pub fn on_incomplete(&mut self, agent: &str, endpoint: &str, what: &str) {
        self.incomplete.check(false, || {
            format!(
                "{agent} /{endpoint}: {}",
                crate::text::excerpt_str(what, 200)
            )
        });
    }

    /// A request agent-tck's probe marked as its own deliberate test.
    pub fn on_probe_request(&mut self, endpoint: &str, case: &str) {
        const KINDS: usize = 100;
        let key = format!("{} at /{endpoint}", crate::text::excerpt_str(case, 80));
        if let Some(n) = self.probe_requests.get_mut(&key) {
            *n += 1;
        } else if self.probe_requests.len() < KINDS {
            self.probe_requests.insert(key, 1);
        }
    }

    /// The probe's own requests, when some came (INFO: they are not the platform's).
    pub fn probe_case(&self) -> Option<CaseResult> {
        if self.probe_requests.is_empty() {
            return None;
        }
        let mut case = CaseResult::new(
            "platform.probe-requests",
            "requests",
            Level::May,
            "requests agent-tck's probe marked as its own deliberate tests (x-agent-tck-case), not judged as the platform's",
            "agent-tck (a probe's negative cases: a missing or wrong key, a body that is not JSON)",
        );
        let total: u64 = self.probe_requests.values().sum();
        let kinds: Vec<String> = self
            .probe_requests
            .iter()
            .map(|(k, n)| format!("{k} ({n})"))
            .collect();
        case.pass_noting(
            Evidence::new(total, "requests marked as the probe's"),
            format!(
                "{}: {}",
                crate::text::count(total, "marked requests"),
                kinds.join(", ")
            ),
            String::new,
        );
        Some(case)
    }

    /// How many protocol requests arrived (whole or not).
    pub fn total(&self) -> u64 {
        self.requests.values().sum::<u64>() + self.incomplete.broken
    }

    /// The shared cases; `requests_spec` names the spec's request sections.
    pub fn cases(&self, requests_spec: &str, served: Served) -> Vec<CaseResult> {
        let (mock, agents) = (served.name(), served.agents());
        // Every whole request counts as checked; each broken one as checked and broken.
        let mut whole = self.incomplete.clone();
        whole.checked += self.requests.values().sum::<u64>();
        let unknown = (self.unknown_keys > 0).then(|| {
            format!(
                "{} went to agents whose key {mock} was not told (--agent-key NAME=KEY): whether a key came as it should is not judged without it",
                crate::text::count(self.unknown_keys, "requests")
            )
        });
        let with_key = unknown.clone().unwrap_or_else(|| "give an agent a key (`api_key: KEY` on an agent of the fleet file; `mock agent --api-key KEY`) and have the platform call it".to_string());
        let without_key = unknown.unwrap_or_else(|| {
            "every agent the platform called has a key; leave one agent keyless to judge this"
                .to_string()
        });
        vec![
            whole.judged(
                "platform.whole-requests",
                "requests",
                Level::Must,
                "every request the platform began arrived whole (no connection or stdin closed in the middle of one)",
                requests_spec,
                "requests",
                &format!("no request reached {mock}; point the platform at {agents}"),
            ),
            self.schema.judged(
                "platform.request-schema",
                "requests",
                Level::Must,
                "every request the platform sent is valid against its request schema",
                requests_spec,
                "requests",
                &format!("no whole request reached {mock}; point the platform at {agents}"),
            ),
            self.bearer.judged(
                "platform.bearer",
                "auth",
                Level::Must,
                "agents registered with a key receive `Authorization: Bearer KEY`, with the right key",
                "Authentication",
                "requests to agents with a key",
                &with_key,
            ),
            self.no_stray_bearer.judged(
                "platform.no-stray-bearer",
                "auth",
                Level::Should,
                "agents registered without a key receive no Authorization header",
                "Authentication (no API key: no Authorization header is sent)",
                "requests to agents without a key",
                &without_key,
            ),
        ]
    }
}

/// The shared cases judged on HTTP headers (the bearer key): a line transport (stdio, a socket)
/// carries none, so a line mock leaves them out of its report.
pub const HTTP_ONLY: [&str; 2] = ["platform.bearer", "platform.no-stray-bearer"];

/// Marks every case skipped when no request reached the mock (`served`).
pub fn skip_all_if_none(cases: &mut [CaseResult], total: u64, served: Served) {
    if total == 0 {
        let why = format!(
            "no request reached {}: nothing to judge (point the platform at {} and have it run a task)",
            served.name(),
            served.agents()
        );
        for case in cases {
            case.skip(why.clone());
        }
    }
}

fn auth_text(auth: AuthSeen) -> &'static str {
    match auth {
        AuthSeen::Missing => "no Authorization header",
        AuthSeen::Wrong => "a wrong bearer key",
        _ => "ok",
    }
}

/// The observer of `protocol`'s platforms: its own, or the shared rules alone.
pub fn observer_for(
    protocol: &dyn AgentProtocol,
    expect: &PlatformExpect,
) -> Box<dyn PlatformObserver> {
    protocol
        .observer(expect)
        .unwrap_or_else(|| Box::new(SchemaObserver::new(protocol.endpoints())))
}

/// The shared rules alone, for a protocol with no platform rules of its own.
pub struct SchemaObserver {
    spec: String,
    common: Mutex<Common>,
}

impl SchemaObserver {
    pub fn new(endpoints: &[Endpoint]) -> SchemaObserver {
        let posts: Vec<String> = endpoints
            .iter()
            .filter(|e| e.request_schema.is_some())
            .map(|e| format!("{} /{}", e.method, e.name))
            .collect();
        SchemaObserver {
            spec: format!("{}: Request", posts.join(", ")),
            common: Mutex::new(Common::default()),
        }
    }
}

impl PlatformObserver for SchemaObserver {
    fn on_request(&self, seen: &Seen<'_>) {
        if let Ok(mut c) = self.common.lock() {
            c.on_request(seen);
        }
    }

    fn on_probe_request(&self, _agent: &str, endpoint: &str, case: &str) {
        if let Ok(mut c) = self.common.lock() {
            c.on_probe_request(endpoint, case);
        }
    }

    fn on_incomplete(&self, agent: &str, endpoint: &str, what: &str) {
        if let Ok(mut c) = self.common.lock() {
            c.on_incomplete(agent, endpoint, what);
        }
    }

    fn cases_at(&self, served: Served, _now: std::time::Instant) -> Vec<CaseResult> {
        let Ok(c) = self.common.lock() else {
            return Vec::new();
        };
        let mut cases = c.cases(&self.spec, served);
        skip_all_if_none(&mut cases, c.total(), served);
        cases.extend(c.probe_case());
        cases
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    /// The answers the run's end cut, counted in their number: as a skip's reason and as a
    /// note beside a verdict (issue 39, point 13).
    #[test]
    fn the_cut_answers_are_counted_in_their_number() {
        let cut = |n: u64| Tally {
            checked: n,
            broken: n,
            examples: vec!["t1: cut".into()],
        };
        let case = || CaseResult::new("a.case", "g", Level::Must, "t", "s");
        let mut skipped = case();
        note_cut(&mut skipped, &cut(1), "failed answers");
        assert_eq!(skipped.status, Status::Skip);
        assert!(
            skipped
                .message
                .starts_with("not judged: 1 failed answer, cut by the run's own end,"),
            "{}",
            skipped.message
        );
        let mut passed = case();
        passed.pass_noting(
            Evidence::new(3, "answers"),
            "3 answers".to_string(),
            String::new,
        );
        note_cut(&mut passed, &cut(2), "failed answers");
        assert_eq!(passed.status, Status::Pass);
        assert!(
            passed.message.starts_with(
                "3 answers\n(not judged: 2 failed answers, cut by the run's own end:\n  t1: cut\n  … and 1 more)"
            ),
            "{}",
            passed.message
        );
    }
}
