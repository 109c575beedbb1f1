//! The lists the lint judges by — tool names, model patterns, openings a description may not
//! have, the frontmatter keys Claude Code reads — kept as data in `lists.yaml` (each entry with
//! its source), embedded in the binary and read once.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

/// The data file as written.
pub const YAML: &str = include_str!("lists.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lists {
    /// Source key → what and where it is.
    pub sources: BTreeMap<String, String>,
    pub tools: Vec<Tool>,
    pub models: Vec<Model>,
    pub role_openings: Vec<Opening>,
    pub claude_code_keys: Vec<Key>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// A regular expression the whole value must match (case-insensitive).
    pub pattern: String,
    /// A value it matches (a test holds the pattern to it).
    pub example: String,
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opening {
    /// Lower case.
    pub word: String,
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: KeyType,
    /// The values it may take, when they are few.
    #[serde(default)]
    pub values: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyType {
    String,
    Integer,
    Boolean,
    Mapping,
    /// A list of names, or a comma-separated string of them.
    Tools,
    Any,
}

impl Lists {
    /// Every entry's source that `sources` does not name, as `section: entry (source)`.
    pub fn unsourced(&self) -> Vec<String> {
        let known = |s: &String| self.sources.contains_key(s);
        let mut out = Vec::new();
        let mut check = |section: &str, entry: &str, source: &String| {
            if !known(source) {
                out.push(format!("{section}: {entry} ({source})"));
            }
        };
        for t in &self.tools {
            check("tools", &t.name, &t.source);
        }
        for m in &self.models {
            check("models", &m.pattern, &m.source);
        }
        for o in &self.role_openings {
            check("role_openings", &o.word, &o.source);
        }
        for k in &self.claude_code_keys {
            check("claude_code_keys", &k.key, &k.source);
        }
        out
    }

    pub fn key(&self, key: &str) -> Option<&Key> {
        self.claude_code_keys.iter().find(|k| k.key == key)
    }
}

/// The lists, parsed once (the file is the kit's own, checked by a test: a broken one is a
/// bug of the kit, not of the definitions linted).
pub static LISTS: LazyLock<Lists> =
    LazyLock::new(|| serde_saphyr::from_str(YAML).expect("lint/lists.yaml parses (tested)"));

/// The model patterns as one whole-value, case-insensitive regex.
pub static MODELS: LazyLock<regex::Regex> = LazyLock::new(|| {
    let alternatives: Vec<String> = LISTS
        .models
        .iter()
        .map(|m| format!("(?:{})", m.pattern))
        .collect();
    regex::Regex::new(&format!("(?i)^(?:{})$", alternatives.join("|")))
        .expect("lint/lists.yaml's model patterns are valid (tested)")
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_parse_and_every_entry_has_a_known_source() {
        let lists: Lists = serde_saphyr::from_str(YAML).unwrap();
        assert_eq!(lists.unsourced(), Vec::<String>::new());
        assert!(lists.sources.values().all(|s| !s.trim().is_empty()));
        for m in &lists.models {
            let one = regex::Regex::new(&format!("(?i)^(?:{})$", m.pattern)).unwrap();
            assert!(one.is_match(&m.example), "{} vs {}", m.pattern, m.example);
        }
        for o in &lists.role_openings {
            assert_eq!(o.word, o.word.to_lowercase(), "{}", o.word);
        }
        for name in ["Agent", "SendMessage", "TaskCreate", "TeamCreate", "Read"] {
            assert!(lists.tools.iter().any(|t| t.name == name), "{name}");
        }
        // A source that is not named is caught.
        let mut broken: Lists = serde_saphyr::from_str(YAML).unwrap();
        broken.tools[0].source = "nowhere".into();
        assert_eq!(
            broken.unsourced(),
            vec!["tools: Read (nowhere)".to_string()]
        );
        assert!(MODELS.is_match("sonnet[1m]"));
    }
}
