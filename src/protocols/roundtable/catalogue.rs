//! The round table's cases in every role: its suite's (the probe judging an agent), and the
//! ones its fleet's observer reports on the platform it judges (`observe.rs`).

use crate::error::Error;
use crate::protocols::plugin::{CaseInfo, Role};
use crate::report::Level;

/// The cases [`super::observe`] reports on a platform (beside the mock engine's own, which
/// every protocol whose agents it plays reports). A test holds that every id observe.rs
/// reports is here.
pub const PLATFORM_CASES: &[(&str, Level, &str, &str)] = &[
    ("platform.gives-up", Level::Must, "the platform gives up on an agent that does not answer within its timeout, closing the request's connection", "Timeouts"),
    ("platform.challenge-not-own", Level::Must, "/challenge other_analyses never holds the receiving agent's own analysis", "POST /challenge"),
    ("platform.challenge-no-failed", Level::Must, "/challenge other_analyses holds no agent whose /analyze failed (timed out, errored, refused, malformed, oversized)", "Error Handling"),
    ("platform.nul-stripped", Level::Must, "strings forwarded from one agent to others carry no NUL characters", "Response Sanitization"),
    ("platform.field-truncated", Level::Must, "strings forwarded from one agent to others are at most 50,000 characters", "Response Size Limits"),
    ("platform.phases-continue", Level::Must, "every agent whose /analyze answer conformed is called at /challenge, and every agent called at /challenge that did not time out is called at /vote", "Error Handling; Timeouts"),
    ("platform.failed-not-recalled", Level::Must, "an agent whose answer failed in a phase is not called again in that phase of the task", "Timeouts"),
    ("platform.injection-forwarded", Level::May, "prompt-injection payloads sent by one agent are not forwarded verbatim to others", "Response Sanitization"),
    ("platform.phase-latency", Level::May, "latency the platform adds between phases (from the last answer it waited for to its next request)", "agent-tck (measurement)"),
];

/// The suite's cases (probe), then the platform's (mock).
pub fn catalogue() -> Result<Vec<CaseInfo>, Error> {
    let mut cases = CaseInfo::of_suite(&super::suite()?, Role::Probe);
    cases.extend(CaseInfo::of_table(PLATFORM_CASES, Role::Mock));
    Ok(cases)
}
