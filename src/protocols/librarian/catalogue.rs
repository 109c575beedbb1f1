//! The Librarian's cases in every role: its suite's (the probe judging a Librarian server), the
//! client fleet's (`fleet.rs`: clients judging the server under load), and the mock
//! Librarian's (`mock.rs`: the server the kit plays, judging an agent that calls it).

use crate::error::Error;
use crate::protocols::plugin::{CaseInfo, Role};
use crate::report::Level;

/// The cases [`super::fleet`] reports on the server (a test holds that every id fleet.rs
/// reports is here).
pub const FLEET_CASES: &[(&str, Level, &str, &str)] = &[
    ("fleet.no-5xx", Level::Must, "no client, however it misbehaves, gets a 5xx (or no answer)", "agent-tck (HTTP, RFC 9110)"),
    ("fleet.refusals", Level::Must, "each misbehaving request gets the answer its fault calls for (429, 401/403, a refusal)", "Validation Rules; REST API Endpoints"),
    ("fleet.answers-valid", Level::Must, "every 2xx answer any client gets is a LibrarianResponse of the schema, judged by the probe's rules", "Response Message Format"),
    ("fleet.answers-expected", Level::Should, "every answer meets the document's expectations, as the probe's request.expectations and request.response-fields judge them", "3. Handling Rejection; Response Message Format; Common Operations"),
    ("fleet.retry-after", Level::Should, "every 429 says when to come back: Retry-After (or rate-limit headers)", "\"Rate limit exceeded\""),
    ("fleet.flood-limited", Level::Must, "a client over 60 requests a minute is answered 429", "REST API Endpoints"),
    ("fleet.conforming-served", Level::Must, "well-behaved clients are answered 2xx (never limited) while the others misbehave", "REST API Endpoints"),
    ("fleet.conforming-latency", Level::Must, "well-behaved clients are answered within 10 s at p99 while the others misbehave", "Protocol Settings"),
    ("fleet.capabilities-after", Level::Must, "after the fleet, the server still answers GET /agent/capabilities", "REST API Endpoints"),
    ("fleet.latency", Level::May, "latency per kind of client (p50 / p90 / p99)", "Protocol Settings"),
];

/// The cases the mock Librarian (`mock agent --protocol librarian`) reports on the agent that
/// calls it (a test holds that every id mock.rs reports is here).
pub const CLIENT_CASES: &[(&str, Level, &str, &str)] = &[
    ("client.request-schema", Level::Must, "every /agent/request body is a valid AgentRequest, with its type's required fields", "Validation Rules; Request Message Format"),
    ("client.bearer", Level::Must, "every request carries Authorization: Bearer TOKEN", "REST API Endpoints"),
    ("client.rate", Level::Must, "at most 60 requests a minute per agent", "REST API Endpoints"),
    ("client.backs-off", Level::Must, "after a 429, the client waits at least Retry-After before its next request", "\"Rate limit exceeded\""),
    ("client.polling", Level::Must, "an escalated request's status is polled no faster than once a second", "4. Escalation Handling"),
    ("client.retries", Level::Must, "a failed request is retried at most 3 times", "Protocol Settings"),
    ("client.reports", Level::Should, "every approved APPROVAL is reported: a REPORT with its request_id", "1. Agent Requesting Approval"),
    ("client.no-unchanged-resend", Level::Should, "a rejected request is fixed before it is sent again, not resent unchanged", "3. Handling Rejection"),
    ("client.resubmissions", Level::Must, "a rejected request is resubmitted (fixed or not) at most 3 times", "Protocol Settings"),
    ("client.content-size", Level::Must, "no request's content is over max_content_size (100 KB = 102,400 bytes)", "Protocol Settings"),
    ("client.waits-for-human", Level::Must, "an escalated request is not REPORTed before the human decision", "4. Escalation Handling"),
    ("client.probe-requests", Level::May, "requests agent-tck's probe marked as its own tests (x-agent-tck-case), set aside: not judged as the client's", "agent-tck (a probe's negative cases)"),
];

/// The Librarian's reachability, reported when it cannot be reached at all.
const REACHABLE: (&str, Level, &str, &str) = (
    "librarian.reachable",
    Level::Must,
    "the Librarian accepts a connection",
    "agent-tck (precondition)",
);

/// The suite's cases (probe), the fleet's (mock), the mock Librarian's (probe: it judges an
/// agent).
pub fn catalogue() -> Result<Vec<CaseInfo>, Error> {
    let mut cases = CaseInfo::of_table(&[REACHABLE], Role::Probe);
    cases.extend(CaseInfo::of_suite(&super::rules::suite()?, Role::Probe));
    cases.extend(CaseInfo::of_table(FLEET_CASES, Role::Mock));
    cases.extend(CaseInfo::of_table(CLIENT_CASES, Role::Probe));
    Ok(cases)
}
