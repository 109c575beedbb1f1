//! The JSON Schemas, embedded in the binary so an installed `agent-tck` works anywhere, and
//! validation that turns errors into findings with dotted JSON paths.
//!
//! Schemas refer to each other by relative `$ref` (e.g. `analyze.response.json`); every schema is
//! registered under its `$id`, so references resolve from memory and nothing is ever fetched.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::json_skim::{Kind, Kinds, Skim};
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
    /// The schemas simple enough for [`Shape`]'s quick check (a hash map: looked up on every
    /// request a mock agent answers).
    shapes: foldhash::HashMap<&'static str, Shape>,
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
        let mut shapes = foldhash::HashMap::default();
        for (id, doc) in &docs {
            if let Some(shape) = Shape::of(doc) {
                shapes.insert(*id, shape);
            }
            // `format` is asserted (2020-12 only annotates by default): a timestamp that is not
            // RFC 3339 is a finding, as the specs that name ISO 8601 timestamps mean it.
            let validator = jsonschema::options()
                .with_registry(&registry)
                .should_validate_formats(true)
                .build(doc)
                .map_err(|e| format!("{id}: {e}"))?;
            validators.insert(*id, validator);
        }
        Ok(Schemas { validators, shapes })
    }

    /// Whether a skimmed body certainly meets schema `id` — no finding, without a `Value` or the
    /// validator. False says only "not certain": validate the parsed body for the findings.
    pub fn admits(&self, id: &str, skim: &Skim<'_>) -> bool {
        self.shapes.get(id).is_some_and(|shape| shape.admits(skim))
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

/// What a request schema asks of an object, when that is all it asks: required members, and
/// members of given types (an array's items of given types). Compiled only from schemas made of
/// nothing else (`type`, `required`, `properties`, `items`, and annotations); the others get no
/// shape and are always validated in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The declared members (at most 64: one bit each in `required`).
    properties: Vec<Property>,
    /// Bit i: `properties[i]` is required.
    required: u64,
    /// Required members the schema does not declare (any value will do).
    required_undeclared: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Property {
    name: String,
    /// The kinds its value may be, and (for an array) its items may be.
    kinds: Kinds,
    items: Kinds,
}

/// Keywords that constrain nothing.
const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "title", "description", "$comment"];

impl Shape {
    fn of(schema: &Value) -> Option<Shape> {
        let schema = only(schema, &["type", "required", "properties"])?;
        if schema.get("type")? != "object" {
            return None;
        }
        let mut properties = Vec::new();
        if let Some(declared) = schema.get("properties") {
            for (name, property) in declared.as_object()? {
                let property = only(property, &["type", "items"])?;
                let kinds = kinds(property.get("type")?)?;
                let items = match property.get("items") {
                    Some(_) if kinds != Kind::Array.bit() => return None,
                    Some(items) => self::kinds(only(items, &["type"])?.get("type")?)?,
                    None => ANY,
                };
                properties.push(Property {
                    name: name.clone(),
                    kinds,
                    items,
                });
            }
        }
        if properties.len() > 64 {
            return None;
        }
        let mut required = 0;
        let mut required_undeclared = Vec::new();
        let required_names = match schema.get("required") {
            Some(list) => list.as_array()?.as_slice(),
            None => &[],
        };
        for name in required_names {
            let name = name.as_str()?;
            match properties.iter().position(|p| p.name == name) {
                Some(i) => required |= 1 << i,
                None => required_undeclared.push(name.to_string()),
            }
        }
        Some(Shape {
            properties,
            required,
            required_undeclared,
        })
    }

    /// One pass over the members: each declared one is of its kinds, and the required ones are
    /// all there (a bit per declared member seen; members are unique, the skim saw to that).
    fn admits(&self, skim: &Skim<'_>) -> bool {
        let mut seen = 0u64;
        for member in &skim.members {
            if let Some(i) = self.properties.iter().position(|p| p.name == member.key) {
                let p = &self.properties[i];
                if p.kinds & member.kind.bit() == 0 || member.items & !p.items != 0 {
                    return false;
                }
                seen |= 1 << i;
            }
        }
        seen & self.required == self.required
            && self
                .required_undeclared
                .iter()
                .all(|k| skim.get(k).is_some())
    }
}

/// Every kind.
const ANY: Kinds = 0x7f;

/// `schema` as an object, when it holds no keywords but `keywords` and annotations.
fn only<'s>(schema: &'s Value, keywords: &[&str]) -> Option<&'s serde_json::Map<String, Value>> {
    let schema = schema.as_object()?;
    schema
        .keys()
        .all(|k| ANNOTATIONS.contains(&k.as_str()) || keywords.contains(&k.as_str()))
        .then_some(schema)
}

/// A `type` keyword's kinds (`number` takes integers too); None for one it does not know.
fn kinds(ty: &Value) -> Option<Kinds> {
    let one = |name: &str| {
        Some(match name {
            "null" => Kind::Null.bit(),
            "boolean" => Kind::Bool.bit(),
            "integer" => Kind::Integer.bit(),
            "number" => Kind::Integer.bit() | Kind::Number.bit(),
            "string" => Kind::String.bit(),
            "array" => Kind::Array.bit(),
            "object" => Kind::Object.bit(),
            _ => return None,
        })
    };
    match ty {
        Value::String(name) => one(name),
        Value::Array(names) => names
            .iter()
            .try_fold(0, |all, n| Some(all | one(n.as_str()?)?)),
        _ => None,
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
        K::MinLength { limit } => format!(
            "{value} is shorter than {}",
            crate::text::count(*limit, "characters")
        ),
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

    /// A shape admits a body exactly when the validator finds it valid, for the bodies the skim
    /// takes: each required member (declared or not) missing, each declared member of a wrong
    /// kind or with items of a wrong kind, and members the schema does not declare.
    #[test]
    fn a_shape_admits_what_the_validator_accepts() {
        let schema = json!({"type": "object", "required": ["id", "tags", "extra"],
            "properties": {"id": {"type": "string"}, "n": {"type": ["integer", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}}}});
        let shape = Shape::of(&schema).expect("a shape");
        let validator = jsonschema::validator_for(&schema).unwrap();
        let bodies = [
            (r#"{"id":"a","tags":["x"],"extra":{}}"#, true),
            (
                r#"{"extra":1,"tags":[],"id":"a","n":null,"other":[1]}"#,
                true,
            ),
            (r#"{"id":"a","tags":["x"],"extra":0,"n":3}"#, true),
            (r#"{"id":"a","tags":["x"]}"#, false),
            (r#"{"tags":["x"],"extra":0}"#, false),
            (r#"{"id":"a","extra":0}"#, false),
            (r#"{"id":1,"tags":["x"],"extra":0}"#, false),
            (r#"{"id":"a","tags":["x",2],"extra":0}"#, false),
            (r#"{"id":"a","tags":"x","extra":0}"#, false),
            (r#"{"id":"a","tags":[],"extra":0,"n":1.5}"#, false),
        ];
        for (body, valid) in bodies {
            let value: Value = serde_json::from_str(body).unwrap();
            assert_eq!(validator.is_valid(&value), valid, "{body}");
            let skim = crate::json_skim::skim(body.as_bytes()).expect("skimmed");
            assert_eq!(shape.admits(&skim), valid, "{body}");
        }
        // Keywords beyond the shape's: no shape, always the validator.
        assert!(Shape::of(&json!({"type": "object", "minProperties": 1})).is_none());
        assert!(Shape::of(&json!({"type": "object",
            "properties": {"a": {"type": "string", "maxLength": 3}}}))
        .is_none());
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
