//! The fleet file: its format (`protocol: connector`, the server, the listen address, the
//! agents and their behaviours), parsed and checked into a [`Fleet`].

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

use crate::protocols::connector::ws::Dialect;
use crate::text::DataFileError;
use crate::transport::http::BaseUrl;

use super::behavior::{Behavior, BehaviorError};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FleetFile {
    #[allow(dead_code)]
    protocol: String,
    #[serde(default)]
    seed: Option<u64>,
    connector: Spec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct Spec {
    url: String,
    /// Where the inputUrls are served.
    #[serde(default = "default_listen")]
    listen: String,
    /// The base URL the server reaches the inputUrls at, when not the listen address.
    #[serde(default)]
    advertise: Option<String>,
    /// What every callbackUrl must start with (default: the server's URL).
    #[serde(default)]
    callback_base: Option<String>,
    /// `auto` (default: the document's dialect, then the public implementation's, whichever
    /// answers), `document` or `assistant-v5`.
    #[serde(default = "default_dialect")]
    ws: String,
    /// User messages per session.
    #[serde(default = "default_two")]
    messages: usize,
    /// WebSocket clients per session.
    #[serde(default = "default_two")]
    clients: usize,
    /// How long an agent waits after its acknowledgement before it calls back.
    #[serde(default = "default_reply_after")]
    reply_after: String,
    /// How long broadcasts are awaited after the last callback.
    #[serde(default = "default_settle")]
    settle: String,
    agents: Vec<AgentSpec>,
}

/// Where the inputUrls are served without `listen:`: a fixed port, so that the definitions
/// given to the server once (`mock fleet --write-config`) stay right run after run.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9400";

pub(super) fn default_listen() -> String {
    DEFAULT_LISTEN.into()
}
pub(super) fn default_dialect() -> String {
    "auto".into()
}
pub(super) fn default_two() -> usize {
    2
}
pub(super) fn default_reply_after() -> String {
    "100ms".into()
}
pub(super) fn default_settle() -> String {
    "2s".into()
}
pub(super) fn default_one() -> usize {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct AgentSpec {
    name: String,
    /// The agent's id in the server's configuration.
    agent_id: String,
    #[serde(default = "default_conforming", alias = "behaviour")]
    behavior: String,
    #[serde(default = "default_one")]
    sessions: usize,
}

pub(super) fn default_conforming() -> String {
    "conforming".into()
}

/// An external agent of the fleet.
#[derive(Debug, Clone)]
pub struct FleetAgent {
    pub name: String,
    pub agent_id: String,
    pub behavior: Behavior,
    pub sessions: Vec<String>,
}

/// A fleet file, parsed and checked.
pub struct Fleet {
    pub server: BaseUrl,
    pub listen: SocketAddr,
    pub advertise: Option<String>,
    pub callback_base: String,
    /// The WebSocket dialect forced, or with `detect` the one tried first.
    pub dialect: Dialect,
    /// `ws: auto`: try `dialect`, and when no session_ready comes, the other.
    pub detect: bool,
    pub messages: usize,
    pub clients: usize,
    pub reply_after: Duration,
    pub settle: Duration,
    pub agents: Vec<FleetAgent>,
    pub seed: Option<u64>,
    /// Whether the agent server is still there ([`crate::transport::liveness`]): every session
    /// call and callback of the run feeds it.
    pub watch: std::sync::Arc<crate::transport::liveness::Watch>,
}

/// Why a connector fleet file was refused: the file is to fix, nothing was run (a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetFileError {
    /// Not YAML, not a fleet's shape, or an `${ENV}` that is not set.
    #[error(transparent)]
    Yaml(#[from] DataFileError),
    /// A setting under `connector:` (`url`, `reply-after`, `settle`) that does not read.
    #[error("{file}: connector.{key}: {cause}")]
    Setting {
        file: String,
        key: &'static str,
        cause: String,
    },
    #[error("{file}: connector.listen: {listen:?} is not HOST:PORT (e.g. 127.0.0.1:9400)")]
    Listen { file: String, listen: String },
    #[error("{file}: connector.ws: {given:?} (expected auto, document or assistant-v5)")]
    Dialect { file: String, given: String },
    #[error("{file}: connector.agents is empty")]
    NoAgents { file: String },
    /// `messages` or `clients` outside 1..=max.
    #[error("{file}: connector.{key}: {n} (expected 1 to {max})")]
    OutOfRange {
        file: String,
        key: &'static str,
        n: usize,
        max: usize,
    },
    /// One agent's entry.
    #[error("{file}: agent {agent:?}: {fault}")]
    Agent {
        file: String,
        agent: String,
        fault: AgentFault,
    },
}

/// What is wrong with one agent of a connector fleet file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentFault {
    #[error("a second agent of this name")]
    Twice,
    #[error("the name must be [A-Za-z0-9_-] (it is a path segment of the inputUrl)")]
    Name,
    #[error("sessions: {0} (expected 1 to 1000)")]
    Sessions(usize),
    #[error(transparent)]
    Behavior(#[from] BehaviorError),
}

impl crate::error::LayerError for FleetFileError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

impl Fleet {
    /// Parses (after `${ENV}` substitution); `url` overrides the file's. Errors name the file
    /// and the agent.
    pub fn parse(source: &str, text: &str, url: Option<&str>) -> Result<Fleet, FleetFileError> {
        let file: FleetFile = crate::text::read_yaml_with_env(source, text)?;
        let spec = file.connector;
        let server_url = url.unwrap_or(&spec.url).trim_end_matches('/').to_string();
        let setting = |key: &'static str, cause: &dyn std::fmt::Display| FleetFileError::Setting {
            file: source.to_string(),
            key,
            cause: cause.to_string(),
        };
        let server = BaseUrl::parse(&server_url).map_err(|e| setting("url", &e))?;
        let listen: SocketAddr = spec.listen.parse().map_err(|_| FleetFileError::Listen {
            file: source.to_string(),
            listen: spec.listen.clone(),
        })?;
        let duration = |key: &'static str, v: &str| {
            crate::units::parse_duration(v).map_err(|e| setting(key, &e))
        };
        let reply_after = duration("reply-after", &spec.reply_after)?;
        let settle = duration("settle", &spec.settle)?;
        let (dialect, detect) = dialect(source, &spec.ws)?;
        counts(source, &spec)?;
        let agents = agents(source, spec.agents, session_tag(file.seed))?;
        let watch = std::sync::Arc::new(crate::transport::liveness::Watch::http(
            format!("the agent server at {server_url}"),
            std::time::Instant::now(),
            &server.host,
            server.port,
        ));
        Ok(Fleet {
            callback_base: spec
                .callback_base
                .unwrap_or_else(|| server_url.clone())
                .trim_end_matches('/')
                .to_string(),
            server,
            listen,
            advertise: spec.advertise.map(|a| a.trim_end_matches('/').to_string()),
            dialect,
            detect,
            messages: spec.messages,
            clients: spec.clients,
            reply_after,
            settle,
            agents,
            seed: file.seed,
            watch,
        })
    }

    pub fn target(&self) -> String {
        self.server.to_string()
    }

    /// The inputUrl of `agent` when the fleet's inputs are served at `base`.
    pub fn input_url(base: &str, agent: &str) -> String {
        format!("{base}/agents/{agent}/input")
    }
}

/// The `ws` setting: the dialect to speak, and whether to detect it (`auto`).
fn dialect(source: &str, ws: &str) -> Result<(Dialect, bool), FleetFileError> {
    Ok(match ws {
        "auto" => (Dialect::Document, true),
        forced => (
            Dialect::parse(forced).map_err(|_| FleetFileError::Dialect {
                file: source.to_string(),
                given: forced.to_string(),
            })?,
            false,
        ),
    })
}

/// The counts in range: some agents, and the messages and clients.
fn counts(source: &str, spec: &Spec) -> Result<(), FleetFileError> {
    if spec.agents.is_empty() {
        return Err(FleetFileError::NoAgents {
            file: source.to_string(),
        });
    }
    for (key, n, max) in [
        ("messages", spec.messages, 100),
        ("clients", spec.clients, 10_000),
    ] {
        if n == 0 || n > max {
            return Err(FleetFileError::OutOfRange {
                file: source.to_string(),
                key,
                n,
                max,
            });
        }
    }
    Ok(())
}

/// What session ids end with: the seed keeps them apart from an earlier run's on the same
/// server.
fn session_tag(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }) % 0xFFFF_FFFF
}

/// The agents, each checked (the first wrong one is the error), their sessions named with `tag`.
fn agents(
    source: &str,
    specs: Vec<AgentSpec>,
    tag: u64,
) -> Result<Vec<FleetAgent>, FleetFileError> {
    let mut agents = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for a in specs {
        let at = |fault: AgentFault| FleetFileError::Agent {
            file: source.to_string(),
            agent: a.name.clone(),
            fault,
        };
        if !names.insert(a.name.clone()) {
            return Err(at(AgentFault::Twice));
        }
        if a.name.is_empty()
            || !a
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(at(AgentFault::Name));
        }
        if a.sessions == 0 || a.sessions > 1000 {
            return Err(at(AgentFault::Sessions(a.sessions)));
        }
        let behavior = Behavior::parse(&a.behavior).map_err(|e| at(e.into()))?;
        let sessions = (0..a.sessions)
            .map(|n| format!("tck-{}-{n}-{tag:08x}", a.name))
            .collect();
        agents.push(FleetAgent {
            name: a.name,
            agent_id: a.agent_id,
            behavior,
            sessions,
        });
    }
    Ok(agents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_files_name_the_field() {
        let ok = "protocol: connector\nseed: 3\nconnector:\n  url: http://127.0.0.1:1\n  agents:\n    - { name: a, agent-id: ext-a, sessions: 2 }\n";
        let fleet = Fleet::parse("f.yaml", ok, None).unwrap();
        assert_eq!(
            fleet.agents[0].sessions,
            ["tck-a-0-00000003", "tck-a-1-00000003"]
        );
        assert_eq!(fleet.callback_base, "http://127.0.0.1:1");
        // `ws: auto` by default: the document's dialect first; a named one is forced.
        assert_eq!((fleet.dialect, fleet.detect), (Dialect::Document, true));
        let forced = Fleet::parse(
            "f.yaml",
            &ok.replace("  agents:", "  ws: assistant-v5\n  agents:"),
            None,
        )
        .unwrap();
        assert_eq!(
            (forced.dialect, forced.detect),
            (Dialect::AssistantV5, false)
        );
        let over = Fleet::parse("f.yaml", ok, Some("http://127.0.0.1:2/")).unwrap();
        assert_eq!(over.target(), "http://127.0.0.1:2");
        for (bad, says) in [
            (
                ok.replace("sessions: 2", "sessions: 0"),
                "agent \"a\": sessions: 0",
            ),
            (
                ok.replace("agent-id: ext-a", "agent-id: ext-a, behavior: sing"),
                "agent \"a\": behavior \"sing\"",
            ),
            (ok.replace("name: a", "name: a/b"), "[A-Za-z0-9_-]"),
            (
                ok.replace("  agents:", "  ws: v9\n  agents:"),
                "connector.ws: \"v9\"",
            ),
            (
                ok.replace("  agents:", "  listen: nowhere\n  agents:"),
                "connector.listen",
            ),
            (
                ok.replace("  agents:", "  settle: soon\n  agents:"),
                "connector.settle",
            ),
            (ok.replace("agent-id", "agent_id"), "f.yaml"),
        ] {
            let err = Fleet::parse("f.yaml", &bad, None)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn a_refused_fleet_file_is_a_usage_error_whose_words_name_file_field_and_agent() {
        let ok = "protocol: connector\nconnector:\n  url: http://127.0.0.1:1\n  agents:\n    - { name: a, agent-id: ext-a }\n";
        let refused = |text: String| Fleet::parse("f.yaml", &text, None).err().unwrap();
        let twice = refused(ok.replace(
            "    - { name: a, agent-id: ext-a }\n",
            "    - { name: a, agent-id: ext-a }\n    - { name: a, agent-id: ext-b }\n",
        ));
        assert_eq!(
            twice,
            FleetFileError::Agent {
                file: "f.yaml".into(),
                agent: "a".into(),
                fault: AgentFault::Twice
            }
        );
        assert_eq!(
            twice.to_string(),
            "f.yaml: agent \"a\": a second agent of this name"
        );
        assert_eq!(
            refused(ok.replace("  agents:", "  listen: nowhere\n  agents:")).to_string(),
            "f.yaml: connector.listen: \"nowhere\" is not HOST:PORT (e.g. 127.0.0.1:9400)"
        );
        assert_eq!(
            refused(ok.replace("  agents:", "  clients: 0\n  agents:")).to_string(),
            "f.yaml: connector.clients: 0 (expected 1 to 10000)"
        );
        assert_eq!(
            refused(ok.replace(
                "  agents:\n    - { name: a, agent-id: ext-a }\n",
                "  agents: []\n"
            ))
            .to_string(),
            "f.yaml: connector.agents is empty"
        );
        assert_eq!(
            refused(ok.replace("  agents:", "  ws: v9\n  agents:")).to_string(),
            "f.yaml: connector.ws: \"v9\" (expected auto, document or assistant-v5)"
        );
        assert_eq!(
            crate::error::Error::from(refused(
                ok.replace("sessions", "x").replace("name: a", "name: a/b")
            ))
            .shown(),
            (
                crate::error::Class::Usage,
                "f.yaml: agent \"a/b\": the name must be [A-Za-z0-9_-] (it is a path segment \
                 of the inputUrl)"
                    .into()
            )
        );
    }
}
