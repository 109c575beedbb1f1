//! The agent definitions the server must be configured with for the fleet's external agents,
//! in a form it loads as it is.
//!
//! Each definition is the document's "Config Shape (Draft)": `agentId`, `displayName`,
//! `description`, `type: "external"`, `external: {inputUrl, callbackBaseUrl}`. That is also
//! what the public implementation's config loader (kcosr/assistant, agent-server's
//! `config.ts`) requires of an agent: `agentId`, `displayName` and `description` non-empty
//! after trimming, `external` with non-empty `inputUrl` and `callbackBaseUrl` when `type` is
//! `"external"` (and only then). A fleet of `ws: document` gets the list of definitions (a JSON
//! array, to put where its server lists its agents); a fleet of `ws: assistant-v5` gets a whole
//! config file that server loads (`{"agents": [...], "plugins": {"sessions": {"enabled": true}}}`:
//! the session operations are its sessions plugin's, served only when enabled; its other
//! sections have defaults).
//!
//! A fleet of `ws: auto` (the default) does not know its server's kind before the run, and gets
//! the whole file too. The public server loads a bare list without a word, as a config with no
//! agents, so a list would fail there silently; JSON has no comments, so the file cannot say in
//! itself which server takes which shape; and the whole file holds the document's list as its
//! `agents` member, for a server that takes a list (`jq .agents FILE`). The line that announces
//! the file says so.

use std::path::Path;

use serde_json::{json, Value};

use crate::protocols::connector::ws::Dialect;

use super::file::Fleet;

/// The definitions of a fleet's agents, as the server is to be given them.
#[derive(Debug, Clone, PartialEq)]
pub struct Definitions {
    json: Value,
    /// A whole config file (`{"agents": [...]}`), not a list to paste.
    pub whole_file: bool,
    /// The fleet's `ws: auto`: the server's kind is not known before the run, so the whole file
    /// is given with a word on the document's list inside it.
    auto: bool,
}

/// Why the definitions could not be given: a flag to fix, nothing was run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionsError {
    /// `--print-config` with `listen: HOST:0` and no `advertise:`: the inputUrls are not known
    /// before the OS picks a port.
    #[error(
        "--print-config: {file}: connector.listen {listen} lets the OS pick the port at each run, \
         so the inputUrls are not known before the run: give a fixed port (without `listen:` the \
         fleet listens on {default}) or `advertise:`"
    )]
    NoFixedPort {
        file: String,
        listen: std::net::SocketAddr,
        default: &'static str,
    },
    #[error("--write-config {path}: cannot write: {cause}")]
    Write { path: String, cause: String },
}

impl crate::error::LayerError for DefinitionsError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

impl Definitions {
    /// The definitions of `fleet`'s agents when its inputUrls are served at `base`.
    pub fn of(fleet: &Fleet, base: &str) -> Definitions {
        let agents: Vec<Value> = fleet
            .agents
            .iter()
            .map(|a| {
                json!({
                    "agentId": a.agent_id,
                    "displayName": format!("agent-tck {}", a.name),
                    "description": format!(
                        "agent-tck's mock external agent {:?}: acknowledges each forward and \
                         calls back as its fleet file says",
                        a.name
                    ),
                    "type": "external",
                    "external": {
                        "inputUrl": Fleet::input_url(base, &a.name),
                        "callbackBaseUrl": fleet.callback_base,
                    },
                })
            })
            .collect();
        if fleet.dialect == Dialect::AssistantV5 || fleet.detect {
            Definitions {
                // Its session operations (`/api/plugins/sessions/operations/*`) are a plugin,
                // there only when enabled.
                json: json!({ "agents": agents, "plugins": {"sessions": {"enabled": true}} }),
                whole_file: true,
                auto: fleet.detect,
            }
        } else {
            Definitions {
                json: Value::Array(agents),
                whole_file: false,
                auto: false,
            }
        }
    }

    /// The definitions of `fleet`'s agents before it serves them (`--print-config`): at its
    /// `advertise:` base, or at its listen address when that names a fixed port.
    pub fn before_serving(fleet: &Fleet, source: &str) -> Result<Definitions, DefinitionsError> {
        let base = match (&fleet.advertise, fleet.listen.port()) {
            (Some(base), _) => base.clone(),
            (None, 0) => {
                return Err(DefinitionsError::NoFixedPort {
                    file: source.to_string(),
                    listen: fleet.listen,
                    default: super::file::DEFAULT_LISTEN,
                })
            }
            (None, _) => format!("http://{}", fleet.listen),
        };
        Ok(Definitions::of(fleet, &base))
    }

    /// The JSON, pretty-printed, with a final newline.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.json).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Writes [`text`](Self::text) to `path` (`--write-config`).
    pub fn write(&self, path: &Path) -> Result<(), DefinitionsError> {
        std::fs::write(path, self.text()).map_err(|e| DefinitionsError::Write {
            path: path.display().to_string(),
            cause: e.to_string(),
        })
    }

    /// What the printed definitions are, for the line before them.
    pub fn what(&self) -> &'static str {
        if self.auto {
            "a config file the public agent server (kcosr/assistant) loads as it is (its `agents`, \
             and its sessions plugin enabled); `ws: auto` leaves the server's kind unknown until \
             the run, and that server would load a bare list as no agents at all. A server that \
             takes the document's list of definitions takes its `agents` member (`jq .agents \
             FILE`; `ws: document` in the fleet file writes the list alone)"
        } else if self.whole_file {
            "a config file the agent server loads as it is (its `agents`, and its sessions plugin enabled)"
        } else {
            "the agent definitions to add to the server's agents (the document's config shape)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(extra: &str) -> Fleet {
        let text = format!(
            "protocol: connector\nconnector:\n  url: http://127.0.0.1:3000\n{extra}  agents:\n    - {{ name: a, agent-id: ext-a }}\n"
        );
        Fleet::parse("f.yaml", &text, None).unwrap()
    }

    #[test]
    fn each_definition_has_what_the_public_loader_requires() {
        let d = Definitions::before_serving(&fleet("  ws: document\n"), "f.yaml").unwrap();
        assert!(!d.whole_file);
        let json: Value = serde_json::from_str(&d.text()).unwrap();
        let a = &json[0];
        for key in ["agentId", "displayName", "description"] {
            assert!(
                a[key].as_str().is_some_and(|s| !s.trim().is_empty()),
                "{key}: {a}"
            );
        }
        assert_eq!(a["type"], "external");
        assert_eq!(
            a["external"]["inputUrl"],
            "http://127.0.0.1:9400/agents/a/input"
        );
        assert_eq!(a["external"]["callbackBaseUrl"], "http://127.0.0.1:3000");
        let v5 = Definitions::before_serving(&fleet("  ws: assistant-v5\n"), "f.yaml").unwrap();
        assert!(v5.whole_file);
        let json: Value = serde_json::from_str(&v5.text()).unwrap();
        assert_eq!(json["agents"][0]["agentId"], "ext-a");
    }

    /// `ws: auto` (the default): the server's kind is unknown, so the whole file is written —
    /// the public server loads a bare list as no agents, without a word — and the line that
    /// announces it says which server takes which shape.
    #[test]
    fn under_ws_auto_the_whole_file_is_written_and_the_list_is_its_agents() {
        let auto = Definitions::before_serving(&fleet(""), "f.yaml").unwrap();
        assert!(auto.whole_file);
        let json: Value = serde_json::from_str(&auto.text()).unwrap();
        assert_eq!(json["plugins"]["sessions"]["enabled"], true);
        let listed = Definitions::before_serving(&fleet("  ws: document\n"), "f.yaml").unwrap();
        assert_eq!(json["agents"].to_string(), listed.json.to_string());
        assert!(
            auto.what().starts_with("a config file the public agent server (kcosr/assistant) loads as it is")
                && auto.what().contains("would load a bare list as no agents at all")
                && auto.what().contains("takes its `agents` member (`jq .agents FILE`; `ws: document` in the fleet file writes the list alone)"),
            "{}",
            auto.what()
        );
    }

    #[test]
    fn an_os_picked_port_cannot_be_printed_before_the_run() {
        let e =
            Definitions::before_serving(&fleet("  listen: 127.0.0.1:0\n"), "f.yaml").unwrap_err();
        assert_eq!(
            crate::error::Error::from(e.clone()).shown(),
            (crate::error::Class::Usage, e.to_string())
        );
        assert!(
            e.to_string().starts_with(
                "--print-config: f.yaml: connector.listen 127.0.0.1:0 lets the OS pick the port"
            ),
            "{e}"
        );
        let advertised = Definitions::before_serving(
            &fleet("  listen: 127.0.0.1:0\n  advertise: http://fleet.example:9400\n"),
            "f.yaml",
        )
        .unwrap();
        assert!(advertised
            .text()
            .contains("\"http://fleet.example:9400/agents/a/input\""));
    }
}
