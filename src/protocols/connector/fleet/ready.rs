//! Before the fleet drives the server, it waits for the server to know the fleet's agent ids:
//! a session created for each (with an id of the fleet's own, deleted at once) says so. The
//! server is polled until each id is known or `--wait-ready` runs out. These calls are not the
//! users' and no `platform.*` case but `platform.agents-known` judges them.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::report::{CaseResult, Evidence, Level};

use super::books::Call;
use super::file::Fleet;
use super::session_api::session_call;

/// How long the fleet waits for the server without `--wait-ready`: long enough to start (or
/// restart) a server with the definitions the fleet printed or wrote.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// How often a missing agent id is asked about again.
const POLL: Duration = Duration::from_millis(500);

/// The case that judges it.
pub const CASE: &str = "platform.agents-known";

/// An agent id the server did not know, and its last answer to a session create for it.
#[derive(Debug, Clone)]
pub struct Missing {
    pub id: String,
    pub status: Option<u16>,
    /// The answer, briefly (status and body, or why there was none).
    pub answer: String,
}

/// What the wait found: which agent ids the server knew, and, if it never answered, why.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    /// The server, as the fleet reaches it.
    pub server: String,
    /// The fleet's agent ids, each once, in the file's order.
    pub wanted: Vec<String>,
    /// Each agent id the server did not know, with its last answer to a create.
    pub missing: Vec<Missing>,
    /// Why the server never answered during the wait (None: it answered).
    pub unreachable: Option<String>,
    /// The server took the connections but answered none (as against refusing them): what its
    /// last session create met.
    pub silent: bool,
    /// Rounds of session creates sent during the wait.
    pub tries: u32,
    pub waited: Duration,
    pub limit: Duration,
}

impl Readiness {
    /// Every agent id is known: the fleet may drive.
    pub fn ready(&self) -> bool {
        self.unreachable.is_none() && self.missing.is_empty()
    }

    /// The ids not known.
    pub fn missing_ids(&self) -> Vec<&str> {
        self.missing.iter().map(|m| m.id.as_str()).collect()
    }

    /// The server answered, but has no session create endpoint (every create a 404).
    pub fn no_create_endpoint(&self) -> bool {
        !self.missing.is_empty() && self.missing.iter().all(|m| m.status == Some(404))
    }

    /// What stands in the way, and where to fix it (`declared` names where the fleet's
    /// definitions are: the file `--write-config` wrote, or the lines printed above); None when
    /// ready.
    pub fn problem(&self, declared: &str) -> Option<String> {
        let waited = crate::units::format_duration(self.limit);
        if let Some(why) = &self.unreachable {
            // The time really waited and how the server behaved in it: a refused connection
            // fails at once, a silent server holds each create until its deadline.
            let (how, fix) = if self.silent {
                (
                    "took connections but answered no session create",
                    "is it the agent server, and not stuck? (or point --platform-url at it)",
                )
            } else {
                (
                    "refused every connection",
                    "start it (or point --platform-url at it)",
                )
            };
            return Some(format!(
                "the agent server at {} {how}: {} over {} (the wait is {waited}; the last: {why}): \
                 {fix}, with the fleet's agents declared in its config `agents[]` ({declared}), or \
                 give a longer --wait-ready",
                self.server,
                crate::text::count(u64::from(self.tries), "rounds of session creates"),
                crate::units::format_duration(self.waited),
            ));
        }
        if self.missing.is_empty() {
            return None;
        }
        if self.no_create_endpoint() {
            return Some(format!(
                "the agent server at {} has no session create endpoint after {waited} (POST \
                 /api/plugins/sessions/operations/create answered {}): the public agent server \
                 serves it only with its sessions plugin enabled (`\"plugins\": {{\"sessions\": \
                 {{\"enabled\": true}}}}` in its config, as --write-config writes it for `ws: \
                 assistant-v5` and `ws: auto`); or give a longer --wait-ready",
                self.server, self.missing[0].answer
            ));
        }
        let answers: Vec<String> = self
            .missing
            .iter()
            .map(|m| format!("for {}: {}", m.id, m.answer))
            .collect();
        Some(format!(
            "the agent server at {} does not know {} {} after {waited} (its answer to \
             a session create {}): declare them in the server's config `agents[]` ({declared}) \
             and restart it, or give a longer --wait-ready",
            self.server,
            crate::text::in_number(self.missing.len() as u64, "agent ids"),
            self.missing_ids().join(", "),
            answers.join("; ")
        ))
    }

    /// `platform.agents-known`: a pass when every id was known, a failure naming those that
    /// were not, a skip when the server never answered.
    pub fn case(&self, declared: &str) -> CaseResult {
        let mut c = CaseResult::new(
            CASE,
            "sessions",
            Level::Must,
            "the server knows the fleet's agent ids before it is driven: a session create for each succeeds within --wait-ready",
            "external-agents-async-connector.md",
        );
        let evidence = Evidence::new(self.wanted.len() as u64, "agent ids");
        match self.problem(declared) {
            Some(why) if self.unreachable.is_some() => c.skip(format!(
                "{why}; a server that answers at {} exercises this case",
                self.server
            )),
            Some(why) => c.fail_on(evidence, why),
            None => c.pass_noting(
                evidence,
                format!(
                    "the server knew each of the fleet's {} after {}",
                    crate::text::count(self.wanted.len() as u64, "agent ids"),
                    crate::units::format_duration(self.waited)
                ),
                || "the fleet has no agent".into(),
            ),
        }
        c.set_duration(self.waited);
        c
    }

    /// Why the cases that need the server's sessions were not judged (the fleet did not drive).
    pub fn not_driven(&self) -> String {
        // (A server that never answered is `judge::mark_server_down`'s: one failure, the rest
        // skipped in the drive's words.)
        if self.no_create_endpoint() {
            format!(
                "not driven: the agent server had no session create endpoint (see {CASE}); a server that creates sessions exercises this case"
            )
        } else {
            format!(
                "not driven: the agent server did not know {} {} (see {CASE}); a server configured with the fleet's definitions exercises this case",
                crate::text::in_number(self.missing.len() as u64, "agent ids"),
                self.missing_ids().join(", ")
            )
        }
    }
}

/// What a create's answer says, briefly.
fn answer(call: &Call) -> String {
    let status = match (call.status, &call.error) {
        (Some(s), _) => format!("HTTP {s}"),
        (None, Some(e)) => e.clone(),
        (None, None) => "no answer".into(),
    };
    if call.body.is_null() {
        status
    } else {
        format!(
            "{status} {}",
            crate::text::shorten(&call.body.to_string(), 160)
        )
    }
}

/// Polls the server until it knows every agent id of `fleet` or `limit` has passed.
pub async fn wait(fleet: &Fleet, limit: Duration) -> Readiness {
    let started = Instant::now();
    let mut wanted: Vec<(String, String)> = Vec::new();
    for a in &fleet.agents {
        if !wanted.iter().any(|(id, _)| *id == a.agent_id) {
            // A session id of the fleet's own (its first session's, marked), never driven.
            wanted.push((a.agent_id.clone(), format!("{}-ready", a.sessions[0])));
        }
    }
    let mut r = Readiness {
        server: fleet.target(),
        wanted: wanted.iter().map(|(id, _)| id.clone()).collect(),
        limit,
        ..Readiness::default()
    };
    let mut pending = wanted;
    let mut answered = false;
    let mut last_error = String::new();
    loop {
        r.tries += 1;
        let remaining = limit.saturating_sub(started.elapsed());
        let round = futures::future::join_all(pending.iter().map(|(id, session)| async move {
            let call = session_call(
                &fleet.watch,
                &fleet.server,
                "create",
                session,
                json!({"agentId": id, "sessionId": session}),
            )
            .await;
            if call.status.is_some_and(|s| (200..300).contains(&s)) {
                // Gone again: the users' sessions are the only ones the server keeps.
                session_call(
                    &fleet.watch,
                    &fleet.server,
                    "delete",
                    session,
                    json!({"sessionId": session}),
                )
                .await;
            }
            call
        }));
        // A round cut short by the deadline is a round without answers.
        let calls = match tokio::time::timeout(remaining.max(POLL), round).await {
            Ok(calls) => calls,
            Err(_) => pending
                .iter()
                .map(|(_, session)| Call {
                    what: "create".into(),
                    session: session.clone(),
                    status: None,
                    body: serde_json::Value::Null,
                    error: Some("no answer before --wait-ready ran out".into()),
                    broke_at: None,
                })
                .collect(),
        };
        let mut still = Vec::new();
        r.missing.clear();
        for ((id, session), call) in pending.into_iter().zip(&calls) {
            if call.status.is_some() {
                answered = true;
            } else if let Some(e) = &call.error {
                last_error = e.clone();
                // A refusal, reset or close breaks the call; a silent server only runs it out.
                r.silent = call.broke_at.is_none();
            }
            if !call.status.is_some_and(|s| (200..300).contains(&s)) {
                r.missing.push(Missing {
                    id: id.clone(),
                    status: call.status,
                    answer: answer(call),
                });
                still.push((id, session));
            }
        }
        pending = still;
        if pending.is_empty() || started.elapsed() + POLL > limit {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    if !answered && !pending.is_empty() {
        r.unreachable = Some(if last_error.is_empty() {
            "no answer".into()
        } else {
            last_error
        });
    }
    r.waited = started.elapsed();
    r
}
