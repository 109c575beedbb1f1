//! The Librarian's agent registry as a file (the document's `config/agents.yaml`): who may do
//! what. The probe, the client fleet and the mock Librarian all read it, so it lives apart from
//! each of them.

use std::path::Path;

use super::reference::Registered;

#[derive(serde::Deserialize)]
struct RegistryFile {
    agents: std::collections::BTreeMap<String, RegistryAgent>,
}

#[derive(serde::Deserialize)]
struct RegistryAgent {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    capabilities: Vec<String>,
    #[serde(default)]
    allowed_targets: Vec<String>,
    /// The document's other keys (type, rate_limit, max_request_size) are read and not
    /// enforced: the endpoint's 60/minute is.
    #[serde(flatten)]
    _rest: std::collections::BTreeMap<String, serde_json::Value>,
}

/// What is wrong with a registry file. Each is a usage error: the file was given (a flag or a
/// fleet file's `registry:`) and nothing has been run yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("{file}: cannot read: {cause}")]
    Unreadable { file: String, cause: String },
    /// Not YAML, or not a registry's shape: `FILE:LINE:COLUMN: what` where the parser says.
    #[error("{0}")]
    Yaml(String),
    #[error("{file}: agent {agent}: give its `token:` (the bearer token it sends)")]
    NoToken { file: String, agent: String },
    #[error("{file}: `agents` is empty")]
    Empty { file: String },
}

impl crate::error::LayerError for RegistryError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// The agents of a registry file (`need_tokens`: each must give its `token:`, as the mock
/// Librarian's must); errors name the file and the agent.
pub fn read_registry(path: &Path, need_tokens: bool) -> Result<Vec<Registered>, RegistryError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| RegistryError::Unreadable {
        file: source.clone(),
        cause: e.to_string(),
    })?;
    parse_registry(&source, &text, need_tokens)
}

/// The agents of a registry's `text`, read from `source` (see [`read_registry`]).
pub fn parse_registry(
    source: &str,
    text: &str,
    need_tokens: bool,
) -> Result<Vec<Registered>, RegistryError> {
    let source = source.to_string();
    let file: RegistryFile = serde_saphyr::from_str(text)
        .map_err(|e| RegistryError::Yaml(crate::text::yaml_error(&source, &e.to_string())))?;
    let mut agents = Vec::new();
    for (id, a) in file.agents {
        let token = match a.token.filter(|t| !t.trim().is_empty()) {
            Some(t) => t,
            None if !need_tokens => String::new(),
            None => {
                return Err(RegistryError::NoToken {
                    file: source,
                    agent: id,
                })
            }
        };
        let mut r = Registered::any(&id, &token);
        if !a.capabilities.is_empty() {
            r.capabilities = a.capabilities;
        }
        if !a.allowed_targets.is_empty() {
            r.allowed_targets = a.allowed_targets;
        }
        agents.push(r);
    }
    if agents.is_empty() {
        return Err(RegistryError::Empty { file: source });
    }
    Ok(agents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_file_gives_its_agents_and_names_what_is_missing() {
        let dir = std::env::temp_dir().join(format!("tck-registry-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("agents.yaml");
        std::fs::write(&path, "agents:\n  claude-3:\n    type: code-generator\n    token: t1\n    capabilities: [read, write]\n    rate_limit: 100/hour\n    allowed_targets: [code]\n  gemini-pro:\n    capabilities: [read]\n").unwrap();
        let agents = read_registry(&path, false).unwrap();
        assert_eq!(agents[0].id, "claude-3");
        assert_eq!(agents[0].allowed_targets, vec!["code".to_string()]);
        assert_eq!(
            agents[1].allowed_targets,
            vec!["all".to_string()],
            "none given: all"
        );
        let e = read_registry(&path, true).unwrap_err();
        assert_eq!(
            e,
            RegistryError::NoToken {
                file: path.display().to_string(),
                agent: "gemini-pro".into()
            }
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{}: agent gemini-pro: give its `token:` (the bearer token it sends)",
                path.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
