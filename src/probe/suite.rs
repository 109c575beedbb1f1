//! Suites are data: `suites/<protocol>.yaml` holds the exchanges (request templates) and the cases
//! (checks on what came back), each case with its level and spec section. The built-in suites are
//! embedded; a user may pass their own copy with `--suite FILE`.
//!
//! Loading validates everything that can be validated before a request is sent (unknown fields,
//! unknown exchanges and schemas, dependency cycles, bad paths and patterns, templates that do not
//! render), and every error names the file and the line.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::checks::Check;
use super::template::{self, RunValues};
use crate::protocol::content::Content;
use crate::report::Level;

/// The suites built into the binary: (protocol, file name, YAML).
pub const BUILTIN: &[(&str, &str, &str)] = &[(
    "roundtable",
    "suites/roundtable.yaml",
    include_str!("../../suites/roundtable.yaml"),
)];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// `Authorization: Bearer KEY` when an API key is given, none otherwise.
    #[default]
    Default,
    /// No Authorization header.
    None,
    /// A bearer token that is not the key.
    Wrong,
}

/// A request template.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeSpec {
    #[serde(default = "post")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub auth: AuthMode,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body template (see `template`).
    #[serde(default)]
    pub body: Option<Value>,
    /// A body sent as these exact bytes (for bad requests).
    #[serde(default)]
    pub raw_body: Option<String>,
    /// Content-Type for a body; `application/json` unless set.
    #[serde(default)]
    pub content_type: Option<String>,
}

fn post() -> String {
    "POST".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// Runs only when `--api-key` was given.
    ApiKey,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    pub id: Spanned<String>,
    pub level: Level,
    pub title: String,
    /// The spec section the case enforces.
    pub spec: String,
    /// Reported under this group (a JUnit testsuite); by default the id up to its first dot.
    #[serde(default)]
    pub group: Option<String>,
    /// The exchange whose answer the checks read.
    #[serde(default)]
    pub exchange: Option<String>,
    /// Cases that must pass first; if one fails, this case is skipped and says why.
    #[serde(default)]
    pub needs: Vec<String>,
    #[serde(default)]
    pub requires: Option<Requirement>,
    pub checks: Vec<Check>,
}

impl CaseSpec {
    pub fn group(&self) -> String {
        self.group.clone().unwrap_or_else(|| {
            self.id
                .value
                .split('.')
                .next()
                .unwrap_or("cases")
                .to_string()
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    pub protocol: String,
    pub title: String,
    /// The spec document the suite implements.
    pub spec: String,
    #[serde(default)]
    pub exchanges: BTreeMap<String, ExchangeSpec>,
    pub cases: Vec<CaseSpec>,
}

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// Where it came from (for messages).
    pub source: String,
    pub file: SuiteFile,
}

impl Suite {
    /// A built-in suite by protocol name.
    pub fn builtin(protocol: &str) -> Result<Suite, String> {
        let (_, name, text) = BUILTIN
            .iter()
            .find(|(p, _, _)| *p == protocol)
            .ok_or_else(|| format!("no built-in suite for protocol {protocol:?}"))?;
        Suite::parse(name, text)
    }

    pub fn from_file(path: &Path) -> Result<Suite, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Suite::parse(&path.display().to_string(), &text)
    }

    /// Parses and validates. Errors read `FILE:LINE: what is wrong`.
    pub fn parse(source: &str, text: &str) -> Result<Suite, String> {
        let file: SuiteFile =
            serde_saphyr::from_str(text).map_err(|e| yaml_error(source, &e.to_string()))?;
        let suite = Suite {
            source: source.to_string(),
            file,
        };
        suite.validate()?;
        Ok(suite)
    }

    pub fn cases(&self) -> &[CaseSpec] {
        &self.file.cases
    }

    pub fn case(&self, id: &str) -> Option<&CaseSpec> {
        self.file.cases.iter().find(|c| c.id.value == id)
    }

    fn at(&self, case: &CaseSpec) -> String {
        format!(
            "{}:{}: case {}",
            self.source,
            case.id.referenced.line(),
            case.id.value
        )
    }

    fn validate(&self) -> Result<(), String> {
        let mut seen = HashSet::new();
        for case in &self.file.cases {
            let at = self.at(case);
            if !seen.insert(case.id.value.as_str()) {
                return Err(format!("{at}: the id is used twice"));
            }
            if case.checks.is_empty() {
                return Err(format!("{at}: no checks (a case must be able to fail)"));
            }
            if let Some(x) = &case.exchange {
                if !self.file.exchanges.contains_key(x) {
                    return Err(format!(
                        "{at}: unknown exchange {x:?} (defined: {})",
                        self.file
                            .exchanges
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            for check in &case.checks {
                check
                    .validate(case.exchange.is_some(), &self.file.exchanges)
                    .map_err(|e| format!("{at}: {e}"))?;
            }
        }
        for case in &self.file.cases {
            for need in &case.needs {
                if self.case(need).is_none() {
                    return Err(format!("{}: needs unknown case {need:?}", self.at(case)));
                }
            }
        }
        self.layers(
            &self
                .file
                .cases
                .iter()
                .map(|c| c.id.value.clone())
                .collect::<Vec<_>>(),
        )?;
        // Render every exchange once, so template errors surface now rather than mid-run.
        let run = RunValues::new(0);
        for (name, x) in &self.file.exchanges {
            if let Some(body) = &x.body {
                template::render(body, &run, &mut Content::new(0, name))
                    .map_err(|e| format!("{}: exchange {name}: {e}", self.source))?;
            }
            if x.body.is_some() && x.raw_body.is_some() {
                return Err(format!(
                    "{}: exchange {name}: give body or raw_body, not both",
                    self.source
                ));
            }
            if !x.path.starts_with('/') {
                return Err(format!(
                    "{}: exchange {name}: path {:?} must start with /",
                    self.source, x.path
                ));
            }
        }
        Ok(())
    }

    /// Orders the chosen cases into layers: each case comes after every case it needs. The error
    /// names a cycle.
    pub fn layers(&self, chosen: &[String]) -> Result<Vec<Vec<String>>, String> {
        let mut depth: HashMap<&str, usize> = HashMap::new();
        fn visit<'a>(
            suite: &'a Suite,
            id: &'a str,
            depth: &mut HashMap<&'a str, usize>,
            path: &mut Vec<&'a str>,
        ) -> Result<usize, String> {
            if let Some(d) = depth.get(id) {
                return Ok(*d);
            }
            if path.contains(&id) {
                path.push(id);
                return Err(format!(
                    "{}: cases need each other in a cycle: {}",
                    suite.source,
                    path.join(" → ")
                ));
            }
            path.push(id);
            let mut d = 0;
            if let Some(case) = suite.case(id) {
                for need in &case.needs {
                    d = d.max(1 + visit(suite, need, depth, path)?);
                }
            }
            path.pop();
            depth.insert(id, d);
            Ok(d)
        }
        let mut layers: Vec<Vec<String>> = Vec::new();
        for id in chosen {
            let d = visit(self, id, &mut depth, &mut Vec::new())?;
            if layers.len() <= d {
                layers.resize(d + 1, Vec::new());
            }
            layers[d].push(id.clone());
        }
        Ok(layers)
    }

    /// The cases `--only` selects (comma-separated glob patterns on ids, `*` for any text), in
    /// suite order, with every case they need. The error names a pattern that matches nothing.
    pub fn select(&self, only: &[String]) -> Result<Vec<String>, String> {
        let all: Vec<String> = self.file.cases.iter().map(|c| c.id.value.clone()).collect();
        if only.is_empty() {
            return Ok(all);
        }
        let mut wanted = HashSet::new();
        for pattern in only {
            let hits: Vec<&String> = all.iter().filter(|id| glob_match(pattern, id)).collect();
            if hits.is_empty() {
                return Err(format!(
                    "--only {pattern:?} matches no case (list them with `agent-tck suites list`)"
                ));
            }
            wanted.extend(hits.into_iter().cloned());
        }
        let mut stack: Vec<String> = wanted.iter().cloned().collect();
        while let Some(id) = stack.pop() {
            for need in self.case(&id).map(|c| c.needs.clone()).unwrap_or_default() {
                if wanted.insert(need.clone()) {
                    stack.push(need);
                }
            }
        }
        Ok(all.into_iter().filter(|id| wanted.contains(id)).collect())
    }
}

/// The prompt-injection and control-character patterns of the built-in round-table suite's
/// `analyze.sanitization` case: one definition of what an injection looks like, shared by every
/// protocol's probe (and the test platform). Loaded once.
pub fn sanitization_patterns() -> Result<&'static crate::protocol::evidence::PhraseSet, String> {
    use std::sync::OnceLock;
    static PATTERNS: OnceLock<Result<crate::protocol::evidence::PhraseSet, String>> =
        OnceLock::new();
    PATTERNS
        .get_or_init(|| {
            let suite = Suite::builtin("roundtable")?;
            let patterns = suite
                .case("analyze.sanitization")
                .into_iter()
                .flat_map(|c| &c.checks)
                .find_map(|check| match check {
                    super::checks::Check::Phrases { patterns, .. } => Some(patterns.clone()),
                    _ => None,
                })
                .ok_or("the built-in suite has no analyze.sanitization phrases check")?;
            crate::protocol::evidence::PhraseSet::new(&patterns)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The YAML parser's error as one line, `FILE:LINE:COLUMN: what is wrong` (its source snippet
/// is dropped: the line number says where to look).
pub(crate) fn yaml_error(source: &str, error: &str) -> String {
    let first = error.lines().next().unwrap_or_default();
    let first = first.trim_start_matches("error: ");
    let located = first.strip_prefix("line ").and_then(|rest| {
        let (line, rest) = rest.split_once(" column ")?;
        let (column, message) = rest.split_once(": ")?;
        Some(format!("{source}:{line}:{column}: {message}"))
    });
    located.unwrap_or_else(|| format!("{source}: {first}"))
}

/// Glob match with `*` (any run of characters) and `?` (one character).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_suite_loads() {
        let s = Suite::builtin("roundtable").unwrap();
        assert!(s.cases().len() > 20);
    }

    #[test]
    fn globs() {
        assert!(glob_match("analyze.*", "analyze.response"));
        assert!(glob_match("*unicode*", "analyze.unicode"));
        assert!(!glob_match("analyze.*", "vote.response"));
        assert!(glob_match("vote.respons?", "vote.response"));
    }

    const BASE: &str = "protocol: x\ntitle: t\nspec: s\nexchanges:\n  a: {path: /a}\ncases:\n";

    fn err(cases: &str) -> String {
        Suite::parse("s.yaml", &format!("{BASE}{cases}")).unwrap_err()
    }

    #[test]
    fn errors_name_file_line_and_case() {
        let e = err("  - {id: c1, level: must, title: t, spec: s, exchange: zz, checks: [json]}\n");
        assert!(
            e.starts_with("s.yaml:7: case c1: unknown exchange \"zz\""),
            "{e}"
        );
        let e = err("  - {id: c1, level: must, title: t, spec: s, needs: [c2], checks: [json], exchange: a}\n  - {id: c2, level: must, title: t, spec: s, needs: [c1], checks: [json], exchange: a}\n");
        assert!(e.contains("cycle: c1 → c2 → c1"), "{e}");
        let e = err(
            "  - {id: c1, level: must, title: t, spec: s, exchange: a, checks: [{schema: nope}]}\n",
        );
        assert!(e.contains("unknown schema \"nope\""), "{e}");
        let e = err("  - {id: c1, level: maybe, title: t, spec: s, checks: [json]}\n");
        assert!(e.starts_with("s.yaml:7:") && e.contains("maybe"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let e = err("  - {id: c1, level: must, title: t, spec: s, exchange: a, checks: [{phrases: {fields: [x], patterns: ['(']}}]}\n");
        assert!(e.contains("not a valid regular expression"), "{e}");
    }

    #[test]
    fn select_adds_what_is_needed() {
        let s = Suite::builtin("roundtable").unwrap();
        let chosen = s.select(&["vote.dissent-reason".to_string()]).unwrap();
        assert!(
            chosen.contains(&"vote.response".to_string())
                && chosen.contains(&"agent.reachable".to_string()),
            "{chosen:?}"
        );
        assert!(s
            .select(&["zzz*".to_string()])
            .unwrap_err()
            .contains("matches no case"));
    }
}
