//! The execute_task protocol (specs/execute-task-agent-api.md): a harness sends an agent a task
//! over HTTP, stdio or a socket, and the agent answers each turn with one action.
//!
//! - `model`: message types, answer checks, name discovery;
//! - `scenario`: multi-turn scenarios as data (`suites/execute_task/*.yaml`);
//! - `harness`: the harness loop and the judging of a scenario's expectations;
//! - `probe`: `probe execute-task`, the protocol cases and the scenarios over a transport;
//! - `reference`: the conforming scripted agent; `conversation`: where it is in a conversation
//!   the harness does not number; `mutate`: its content misbehaviours;
//! - `observe`: the mock role's verdicts on a harness (turns, history, tool results, the turn
//!   limit, the deadline, what follows a bad answer).

pub mod behaviors;
pub mod catalogue;
pub mod commands;
pub mod conversation;
pub mod harness;
pub mod model;
pub mod mutate;
pub mod observe;
pub mod probe;
pub mod reference;
pub mod rules;
pub mod scenario;

pub use commands::ExecuteTask;

use crate::mock::protocol::{
    AgentProtocol, AnswerFields, ContentBehavior, Endpoint, PlatformExpect, PlatformObserver,
};
use crate::mock::Responder;

/// The registry key, and the report's `protocol`.
pub const NAME: &str = "execute-task";

const ENDPOINTS: &[Endpoint] = &[
    Endpoint::post("execute_task", Some(model::REQUEST_SCHEMA)),
    Endpoint::health(),
];

/// See [`Agents::answer_fields`].
static ANSWER_FIELDS: AnswerFields = AnswerFields {
    identity: "agent_name",
    text: &["finding", "counter_evidence", "agent_name"],
    number: "confidence",
};

/// execute_task agents, as the mock engine plays them (over HTTP, stdio and sockets).
pub struct Agents;

impl AgentProtocol for Agents {
    fn name(&self) -> &'static str {
        NAME
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        ENDPOINTS
    }

    fn line_endpoint(&self) -> Option<&'static str> {
        Some("execute_task")
    }

    /// Its answers have no name or texts of the round table's kind, but the encoding behaviours
    /// aimed at these members before protocols named their own: kept, so that a malformed,
    /// invalid-UTF-8 or endless answer is byte for byte what it was (a member the answer lacks
    /// is added, or the next rule applies: see `mock::encoding`).
    fn answer_fields(&self) -> &'static AnswerFields {
        &ANSWER_FIELDS
    }

    /// The scripted agent, knowing the built-in scenarios.
    fn reference(&self, name: &str, _seed: u64) -> Box<dyn Responder> {
        Box::new(reference::TaskAgent::with_scenarios(
            name,
            &scenario::Scenario::builtin(),
        ))
    }

    fn behaviors(&self) -> &'static [ContentBehavior] {
        behaviors::BEHAVIORS
    }

    /// The harness's verdicts, over every transport.
    fn observer(&self, expect: &PlatformExpect) -> Option<Box<dyn PlatformObserver>> {
        Some(Box::new(observe::HarnessObserver::new(*expect)))
    }
}

#[cfg(test)]
mod traffic_tests;
