//! The JSON Schemas, embedded in the binary so an installed `agent-tck` works anywhere, and
//! validation that turns errors into findings with dotted JSON paths.
//!
//! Schemas refer to each other by relative `$ref` (e.g. `analyze.response.json`); every schema is
//! registered under its `$id`, so references resolve from memory and nothing is ever fetched.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::text::{excerpt_str, pointer_to_path};

/// (schema id as used in suites, file path under `schemas/`, contents): every file under
/// `schemas/`, found by `build.rs` (a protocol's schemas are its folder there).
pub const EMBEDDED: &[(&str, &str, &str)] = include!(concat!(env!("OUT_DIR"), "/schemas.rs"));

/// One way an instance breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Dotted path into the instance, e.g. `observations[1].severity` (`$` for the root).
    pub path: String,
    /// What is wrong, with a bounded excerpt of the offending value.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A finding at `path` (already in dotted form).
pub fn finding(path: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding {
        path: path.into(),
        message: message.into(),
    }
}

/// Findings as one message: at most 8, then a count of the rest.
pub fn findings_message(findings: &[Finding]) -> String {
    const SHOWN: usize = 8;
    let mut lines: Vec<String> = findings
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if findings.len() > SHOWN {
        lines.push(format!("(and {} more)", findings.len() - SHOWN));
    }
    lines.join("\n")
}

/// The compiled validators, built once.
pub struct Schemas {
    validators: BTreeMap<&'static str, jsonschema::Validator>,
}

static SCHEMAS: OnceLock<Schemas> = OnceLock::new();

/// The embedded schemas, compiled. Panics only if an embedded schema is broken, which the unit
/// tests rule out (it is our file, not peer data).
pub fn schemas() -> &'static Schemas {
    SCHEMAS.get_or_init(|| Schemas::compile().expect("embedded schemas compile"))
}

impl Schemas {
    fn compile() -> Result<Schemas, String> {
        let mut docs = Vec::new();
        for (id, file, text) in EMBEDDED {
            let value: Value = serde_json::from_str(text).map_err(|e| format!("{file}: {e}"))?;
            docs.push((*id, value));
        }
        let mut registry = jsonschema::Registry::new();
        for (_, doc) in &docs {
            if let Some(uri) = doc.get("$id").and_then(Value::as_str) {
                registry = registry.add(uri, doc.clone()).map_err(|e| e.to_string())?;
            }
        }
        let registry = registry.prepare().map_err(|e| e.to_string())?;
        let mut validators = BTreeMap::new();
        for (id, doc) in &docs {
            // `format` is asserted (2020-12 only annotates by default): a timestamp that is not
            // RFC 3339 is a finding, as the specs that name ISO 8601 timestamps mean it.
            let validator = jsonschema::options()
                .with_registry(&registry)
                .should_validate_formats(true)
                .build(doc)
                .map_err(|e| format!("{id}: {e}"))?;
            validators.insert(*id, validator);
        }
        Ok(Schemas { validators })
    }

    pub fn ids(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.validators.keys().copied()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.validators.contains_key(id)
    }

    /// All the ways `instance` breaks schema `id` (empty: valid). An unknown id is one finding.
    pub fn validate(&self, id: &str, instance: &Value) -> Vec<Finding> {
        let Some(validator) = self.validators.get(id) else {
            return vec![Finding {
                path: "$".into(),
                message: format!("unknown schema {id:?}"),
            }];
        };
        // The common case first: `is_valid` stops at nothing and builds no error values, where
        // `iter_errors` sets up its error iterators even for a valid instance.
        if validator.is_valid(instance) {
            return Vec::new();
        }
        validator
            .iter_errors(instance)
            .map(|e| Finding {
                path: pointer_to_path(e.instance_path().as_str()),
                message: describe(&e),
            })
            .collect()
    }
}

/// A readable, bounded message for one error. The library's own text quotes the whole offending
/// value, which may be megabytes; we quote an excerpt.
fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    let value = excerpt_str(&error.instance().to_string(), 120);
    match error.kind() {
        K::Enum { options } => {
            let allowed: Vec<String> = options
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("{value} is not one of {}", allowed.join(", "))
        }
        K::Type { .. } => format!("{value} is not of type {}", type_names(error)),
        K::Required { property } => format!("required field {property} is missing"),
        K::Minimum { limit } => format!("{value} is below the minimum {limit}"),
        K::Maximum { limit } => format!("{value} is above the maximum {limit}"),
        K::MinLength { limit } => format!("{value} is shorter than {limit} character(s)"),
        _ => excerpt_str(&error.to_string(), 300),
    }
}

fn type_names(error: &jsonschema::ValidationError<'_>) -> String {
    // The schema path ends in `/type`; its value names the allowed types.
    let text = error.to_string();
    match text.rsplit_once(" is not of type ") {
        Some((_, types)) => excerpt_str(types, 80),
        None => "the expected type".into(),
    }
}

/// Writes `schemas` (file under `schemas/`, text) under `dir`, keeping the `schemas/` layout.
pub fn export(dir: &Path, schemas: &[(&str, &str)]) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut written = Vec::new();
    for (file, text) in schemas {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_embedded_schema_compiles() {
        assert_eq!(schemas().ids().count(), EMBEDDED.len());
    }

    #[test]
    fn findings_name_the_path_and_rule() {
        let body = json!({"agent_name": "a", "domain": "d", "observations": [
            {"finding": "f", "evidence": "[POSSIBLE]", "severity": "info"},
            {"finding": "f", "evidence": "[POSSIBLE]", "severity": "high", "confidence": 1.5}]});
        let findings = schemas().validate("roundtable/analyze.response", &body);
        let text: Vec<String> = findings.iter().map(|f| f.to_string()).collect();
        assert!(
            text.contains(
                &"observations[1].severity: \"high\" is not one of critical, warning, info"
                    .to_string()
            ),
            "{text:?}"
        );
        assert!(
            text.contains(&"observations[1].confidence: 1.5 is above the maximum 1.0".to_string()),
            "{text:?}"
        );
    }

    #[test]
    fn approve_must_be_a_boolean() {
        let findings = schemas().validate(
            "roundtable/vote.response",
            &json!({"agent_name": "a", "approve": "false"}),
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "approve");
        assert!(
            findings[0].message.contains("\"false\" is not of type"),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn relative_refs_resolve_from_memory() {
        let bad = json!({"task_id": "t", "content": "c", "other_analyses": [{"agent_name": "x"}]});
        let findings = schemas().validate("roundtable/challenge.request", &bad);
        assert!(
            findings
                .iter()
                .any(|f| f.path == "other_analyses[0]" && f.message.contains("domain")),
            "{findings:?}"
        );
    }
}
