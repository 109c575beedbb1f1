//! The round-table External Agent Protocol (specs/roundtable-external-agent-protocol.md): the
//! platform calls each agent's POST /analyze, /challenge and /vote.
//!
//! - `model`: message types and the semantic rules no schema can say;
//! - `evidence`: the evidence level tags; `content`: generated analyses, challenges, votes;
//! - `reference`: the conforming agent; `mutate`: the content misbehaviours of the mock fleet;
//! - `observe`: what the fleet judges of a platform from the requests it receives.

pub mod catalogue;
pub mod commands;
pub mod content;
pub mod evidence;
pub mod model;
pub mod mutate;
pub mod observe;
pub mod platform;
pub mod reference;
pub mod rules;

pub use commands::Roundtable;

use std::sync::OnceLock;

use crate::mock::protocol::{
    AgentProtocol, AnswerFields, ContentBehavior, Endpoint, PlatformApi, PlatformExpect,
    PlatformObserver,
};
use crate::mock::Responder;
use crate::probe::suite::SuiteError;
use crate::probe::Suite;

/// The registry key, and the report's `protocol`.
pub const NAME: &str = "roundtable";

/// The built-in suite: (file, YAML).
pub const SUITE: (&str, &str) = (
    "suites/roundtable.yaml",
    include_str!("../../../suites/roundtable.yaml"),
);

/// The built-in suite, loaded once.
pub fn suite() -> Result<Suite, SuiteError> {
    static SUITE_LOADED: OnceLock<Result<Suite, SuiteError>> = OnceLock::new();
    SUITE_LOADED
        .get_or_init(|| Suite::parse(SUITE.0, SUITE.1, &rules::Suite))
        .clone()
}

/// A suite file of the user's, with the round table's rules.
pub fn suite_from_file(path: &std::path::Path) -> Result<Suite, SuiteError> {
    Suite::from_file(path, &rules::Suite)
}

/// The agent's endpoints: the three phases and /health.
const ENDPOINTS: &[Endpoint] = &[
    Endpoint::post("analyze", Some("roundtable/analyze.request")),
    Endpoint::post("challenge", Some("roundtable/challenge.request")),
    Endpoint::post("vote", Some("roundtable/vote.request")),
    Endpoint::health(),
];

/// The round table's agents, as the mock engine plays them.
pub struct Agents;

impl AgentProtocol for Agents {
    fn name(&self) -> &'static str {
        NAME
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        ENDPOINTS
    }

    fn request_id_field(&self) -> Option<&'static str> {
        Some(platform::REQUEST_ID)
    }

    fn answer_fields(&self) -> &'static AnswerFields {
        &platform::ANSWER_FIELDS
    }

    fn platform_api(&self) -> Option<&'static PlatformApi> {
        Some(&platform::PLATFORM_API)
    }

    fn reference(&self, name: &str, seed: u64) -> Box<dyn Responder> {
        Box::new(reference::ReferenceAgent::new(name, seed))
    }

    fn behaviors(&self) -> &'static [ContentBehavior] {
        mutate::BEHAVIORS
    }

    fn observer(&self, expect: &PlatformExpect) -> Option<Box<dyn PlatformObserver>> {
        Some(Box::new(observe::Observer::new(expect.timeout)))
    }
}

#[cfg(test)]
mod traffic_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_suite_loads() {
        let s = suite().unwrap();
        assert!(s.cases().len() > 20);
    }

    #[test]
    fn select_adds_what_is_needed() {
        let s = suite().unwrap();
        let chosen = s.select(&["vote.dissent-reason".to_string()]).unwrap();
        assert!(
            chosen.contains(&"vote.response".to_string())
                && chosen.contains(&"agent.reachable".to_string()),
            "{chosen:?}"
        );
        assert!(s
            .select(&["zzz*".to_string()])
            .unwrap_err()
            .to_string()
            .contains("matches no case"));
    }

    /// The compiled prompt-injection patterns the suite's sanitization cases name: the payloads
    /// are judged by exactly what the probe would use on an agent's answer.
    fn probe_patterns() -> &'static crate::phrases::PhraseSet {
        crate::sanitization::patterns().expect("the shared patterns compile")
    }

    #[test]
    fn the_probe_flags_every_plain_override_spoof_and_template_payload() {
        let patterns = probe_patterns();
        let c = crate::mock::injection::corpus();
        let plain = ["instruction-override", "role-spoofing", "chat-template"].map(String::from);
        for p in c.select(&plain).unwrap() {
            let rendered = p.render(&crate::mock::injection::canary(1, "agent", &p.id, 0));
            assert!(
                !patterns.scan("", &rendered).is_empty(),
                "{}: the probe's sanitization patterns miss {rendered:?}",
                p.id
            );
        }
    }
}
