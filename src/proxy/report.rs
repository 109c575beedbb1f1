//! The proxy's own cases and its report, live or of a recording judged again.

use crate::report::{CaseResult, Evidence, Level, Report, RunInfo};
use crate::text::Redactor;

/// A proxy's report (live, or of a recording judged again): `seed` and `strict` as the run
/// had them.
pub fn report_of(
    protocol: &str,
    target: String,
    (seed, strict): (u64, bool),
    cases: Vec<CaseResult>,
    redactor: &Redactor,
) -> Report {
    RunInfo::start("proxy", protocol.to_string(), target, seed, strict)
        .made_by(format!("proxy --protocol {protocol}"))
        .report(cases, redactor)
}

/// The case that says whether the platform's traffic came through the proxy at all: without
/// it, every rule has nothing to judge.
pub fn reached_case(requests: u64) -> CaseResult {
    came_through(
        (REACHED, "platform"),
        "the platform calls its agents through the proxy",
        requests,
        "no request of the protocol came through the proxy: register the proxy's URLs \
         (printed at start) with the platform in place of the agents' own, then let it work",
    )
}

/// The precondition case's id.
pub const REACHED: &str = "platform.reached-proxy";

/// Before a server its clients call: whether their traffic came through the proxy at all.
/// Nobody's fault when it did not (the proxy's own party): the clients were not pointed at it.
pub fn clients_reached_case(requests: u64) -> CaseResult {
    came_through(
        (CLIENTS_REACHED, "proxy"),
        "the clients call the server through the proxy",
        requests,
        "no request came through the proxy, so neither the server nor any client was \
         judged: give the clients the proxy's URL (printed at start) in place of the \
         server's, then let them work",
    )
}

/// A precondition case (`id`, `group`): passed on the `requests` that came through the proxy,
/// failed saying `none` when none did.
fn came_through((id, group): (&str, &str), title: &str, requests: u64, none: &str) -> CaseResult {
    let mut case =
        CaseResult::new(id, group, Level::Must, title, "agent-tck (precondition)").precondition();
    if requests == 0 {
        case.fail(none.to_string());
    } else {
        case.pass_noting(
            Evidence::new(requests, "requests"),
            String::new(),
            String::new,
        );
    }
    case
}

/// Its id.
pub const CLIENTS_REACHED: &str = "proxy.clients-reached";

/// Each case under its party, a JUnit test suite each: the platform's (the observer's topical
/// groups, `requests`, `challenge`, … folded into `platform`), each agent's (`agent NAME`, as
/// the agent rules name them), and the proxy's own (whether its faults took effect, which
/// requests it bent; whether a server's clients came through it).
pub fn by_party(cases: &mut [CaseResult]) {
    for case in cases {
        if case.id.contains('/') {
            continue;
        }
        case.group = if case.id == "agent.behaviors-applied"
            || case.id == CLIENTS_REACHED
            || case.id == super::bend::BENT_ID
        {
            "proxy".to_string()
        } else {
            "platform".to_string()
        };
    }
}
