//! The connector's cases in every role: its suite's (the probe judging an external agent), and
//! the fleet's (`fleet/`: agents and WebSocket clients judging the agent server).

use crate::error::Error;
use crate::protocols::plugin::{CaseInfo, Role};
use crate::report::Level;

/// The cases the fleet reports on the agent server (a test holds that every id fleet/ reports
/// is here). platform.alive and platform.reached-fleet, which other fleets report too, are the
/// engine's.
pub const FLEET_CASES: &[(&str, Level, &str, &str)] = &[
    ("platform.agents-known", Level::Must, "the server knows the fleet's agent ids before it is driven: a session create for each succeeds within --wait-ready", "Config Shape (Draft)"),
    ("platform.session-create", Level::Must, "POST /api/plugins/sessions/operations/create {agentId, sessionId} answers 201 {ok: true, result: {sessionId}}", "1) Session creation/attach with user-provided ID"),
    ("platform.session-ids", Level::Must, "the create endpoint refuses empty, over-128-character, `../x`, spaced and non-ASCII ids, attaches the same id idempotently and refuses it for another agent", "1) Session creation/attach with user-provided ID"),
    ("platform.ws-attach", Level::Must, "a WebSocket client of /ws that says hello is told session_ready", "Session IDs"),
    ("platform.session-revive", Level::Must, "a deleted session created again (same agent) is revived: created, attached, and a callback to it answered 200 and broadcast", "1) Session creation/attach with user-provided ID"),
    ("platform.forward-schema", Level::Must, "each forward is POST application/json {sessionId, agentId, callbackUrl, message {type: user, text, createdAt}}", "2) Forward user input to inputUrl"),
    ("platform.forward-once", Level::Must, "each user message is forwarded exactly once (no retry, even after a failure)", "2) Forward user input to inputUrl"),
    ("platform.forward-timeout", Level::Must, "a forward whose acknowledgement is slow is given up at 5 s", "2) Forward user input to inputUrl"),
    ("platform.error-message", Level::Must, "after a non-2xx, failed or slow acknowledgement, an error message reaches the session's client", "2) Forward user input to inputUrl"),
    ("platform.awaiting-callback", Level::Must, "a session whose agent acknowledged a message and never called back stays usable: each later user message on it is forwarded", "2) Forward user input to inputUrl"),
    ("platform.callback-delivered", Level::Must, "a callback's raw text is answered 200 and reaches each WebSocket client of its session exactly once", "3) Accept assistant output injection (new inbound endpoint)"),
    ("platform.broadcast-isolated", Level::Must, "a callback's text reaches its own session's clients only", "3) Accept assistant output injection (new inbound endpoint)"),
    ("platform.callback-empty", Level::Must, "an empty or whitespace-only callback body gets 400 (never a 5xx)", "3) Accept assistant output injection (new inbound endpoint)"),
    ("platform.callback-unknown-session", Level::Must, "a callback to an unknown or deleted session gets 404 (never a 5xx)", "3) Accept assistant output injection (new inbound endpoint)"),
    ("platform.callback-no-5xx", Level::Must, "every callback, whatever its size or body, gets an answer below 500", "agent-tck (HTTP, RFC 9110)"),
    ("platform.callback-huge", Level::Should, "a huge callback body is refused or bounded before it is broadcast, not taken whole", "agent-tck (robustness)"),
    ("platform.injection-as-text", Level::May, "prompt-injection text in a callback is delivered as text, verbatim (INFO)", "3) Accept assistant output injection (new inbound endpoint)"),
    ("platform.broadcast-latency", Level::May, "the time from a callback to its broadcast, and from a user message to the broadcast of its answer (p50, p99)", "agent-tck (measurement)"),
];

/// The suite's cases (probe), the one the proxy adds to them, then the fleet's (mock).
pub fn catalogue() -> Result<Vec<CaseInfo>, Error> {
    let mut cases = CaseInfo::of_suite(&super::probe::suite()?, Role::Probe);
    let (id, title, section) = super::relay::ACKNOWLEDGED;
    cases.push(CaseInfo::new(id, Role::Probe, Level::Must, title, section));
    cases.extend(CaseInfo::of_table(FLEET_CASES, Role::Mock));
    Ok(cases)
}
