//! Which of the agents' content behaviours took effect, and the INFO case that says so per agent
//! (`agent.behaviors-applied`). A behaviour that waits for something the peer never sent (e.g.
//! `ignores-governance` for governance feedback, `null-bytes` at an endpoint never called)
//! tested nothing, and the report says so instead of letting its silence read as a pass.

use std::collections::HashMap;
use std::sync::Mutex;

use super::agent::MockAgent;
use super::behavior::{Kind, What};
use crate::report::{CaseResult, Evidence, Level};

/// How often each agent's content behaviours took effect (agent index → source → answers). Only
/// a request whose answer a behaviour changed takes the lock: a conforming answer costs nothing.
#[derive(Default)]
pub struct Applied {
    by_agent: Mutex<HashMap<usize, HashMap<String, u64>>>,
}

impl Applied {
    /// Records the behaviours (their source text) that changed one answer of agent `agent`.
    pub fn record(&self, agent: usize, sources: &[String]) {
        if sources.is_empty() {
            return;
        }
        if let Ok(mut by_agent) = self.by_agent.lock() {
            let counts = by_agent.entry(agent).or_default();
            for source in sources {
                *counts.entry(source.clone()).or_default() += 1;
            }
        }
    }

    /// The case, when some agent of `agents` was given content behaviours: PASS when each took
    /// effect, else a SKIP naming, per agent, the ones that never did and what they wait for.
    pub fn case<'a>(&self, agents: impl IntoIterator<Item = &'a MockAgent>) -> Option<CaseResult> {
        let by_agent = self.by_agent.lock().ok()?;
        let none = HashMap::new();
        let mut given = 0;
        let mut took = Vec::new();
        let mut never = Vec::new();
        for (i, agent) in agents.into_iter().enumerate() {
            let applied = by_agent.get(&i).unwrap_or(&none);
            for source in content_behaviors(agent) {
                given += 1;
                match applied.get(source) {
                    Some(n) => took.push(format!(
                        "{}: {source} on {}",
                        agent.name(),
                        crate::text::count(*n, "answers")
                    )),
                    None => never.push(format!(
                        "{}: never took effect: {source} ({})",
                        agent.name(),
                        what_it_does(agent, source)
                    )),
                }
            }
        }
        if given == 0 {
            return None;
        }
        let mut case = CaseResult::new(
            "agent.behaviors-applied",
            "agent",
            Level::May,
            "each content behaviour the agents were given took effect (one that never did tested nothing)",
            "agent-tck (the behaviours given with --behavior or in the fleet file)",
        );
        if never.is_empty() {
            case.pass_noting(
                Evidence::new(given, "content behaviours that took effect"),
                took.join(", "),
                String::new,
            );
        } else {
            let also = if took.is_empty() {
                String::new()
            } else {
                format!("\ntook effect: {}", took.join(", "))
            };
            case.skip(format!(
                "{}\nnothing the peer sent triggered {}, so the rule {} exercises was not tested (send what it waits for){also}",
                never.join("\n"),
                if never.len() == 1 { "it" } else { "them" },
                if never.len() == 1 { "it" } else { "each" },
            ));
        }
        Some(case)
    }
}

/// The agent's content behaviours, by their source text.
fn content_behaviors(agent: &MockAgent) -> impl Iterator<Item = &str> {
    agent
        .items
        .iter()
        .filter(|i| matches!(i.what, What::Behavior(Kind::Content(_))))
        .map(|i| i.source.as_str())
}

/// What a content behaviour does, from the protocol's catalogue (`source`'s name).
fn what_it_does(agent: &MockAgent, source: &str) -> &'static str {
    let name = source.split([':', ' ', '@']).next().unwrap_or(source);
    agent
        .protocol
        .behaviors()
        .iter()
        .find(|b| b.name == name)
        .map_or("a content behaviour", |b| b.what)
}
