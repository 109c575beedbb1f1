//! What a proxy run was told, as its recording keeps it for `agent-tck judge`: an event of the
//! recording's own, written as the run starts (never a key).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::judge::time::duration;
use crate::judge::Entry;
use crate::mock::protocol::PlatformExpect;
use crate::probe::traffic::TrafficLimits;

/// [`RunSettings::transport`] of agents that speak HTTP.
pub const HTTP: &str = "http";

/// [`RunSettings::transport`] of an agent over stdio.
pub const STDIO: &str = "stdio";

/// The event that holds a proxy run's settings.
pub const SETTINGS_EVENT: &str = "proxy";

/// What a proxy run was told, as its recording keeps it (never a key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub protocol: String,
    pub platform_timeout_ms: f64,
    pub timeout_ms: f64,
    pub max_body: usize,
    pub max_field: usize,
    pub seed: u64,
    pub agents: Vec<RecordedAgent>,
    /// `--expect-max-turns` (protocols with turns), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// How the agents answered: `http`, or `stdio` (lines, no header fields). A recording
    /// that does not say is judged as one whose answers carry no header fields (the cases
    /// that read them are left out rather than judged on a label it may not have kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

/// An agent of the run: its name, the faults the proxy put on its answers and those it put on
/// the platform's requests to it (what follows `request:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedAgent {
    pub name: String,
    pub faults: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
}

impl RunSettings {
    /// The settings a recording holds, if it holds them.
    pub fn of(entries: &[Entry]) -> Option<RunSettings> {
        entries.iter().find_map(|entry| match entry {
            Entry::Event(e) if e.event == SETTINGS_EVENT => {
                serde_json::from_value(e.context["settings"].clone()).ok()
            }
            _ => None,
        })
    }

    pub fn expect(&self) -> PlatformExpect {
        PlatformExpect {
            max_turns: self.max_turns,
            ..PlatformExpect::timeout(duration(self.platform_timeout_ms))
        }
    }

    pub fn limits(&self) -> TrafficLimits {
        TrafficLimits {
            max_body: self.max_body,
            max_field: self.max_field,
            timeout: duration(self.timeout_ms),
            labelled: self.transport.as_deref() == Some(HTTP),
        }
    }
}

/// The settings event's context.
pub fn settings_context(settings: &RunSettings) -> Value {
    serde_json::json!({ "settings": settings })
}
