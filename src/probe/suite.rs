//! Suites are data: `suites/<protocol>.yaml` holds the exchanges (request templates) and the cases
//! (checks on what came back), each case with its level and spec section. A protocol embeds its
//! built-in suite; a user may pass their own copy with `--suite FILE`.
//!
//! Loading validates everything that can be validated before a request is sent (unknown fields,
//! unknown exchanges and schemas, dependency cycles, bad paths and patterns, templates that do not
//! render), and every error names the file and the line.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use serde_saphyr::Spanned;

use super::checks::Check;
pub use super::exchange::{AuthMode, ExchangeSpec};
use super::plugin::SuiteProtocol;
use super::template::{self, Fill, RunValues};
use crate::content::Content;
use crate::report::Level;
use crate::text::{glob_match, yaml_error};

/// Why a suite could not be loaded or its cases chosen: all usage errors (a file or a flag to
/// fix; nothing was sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SuiteError {
    #[error("{path}: cannot read: {cause}")]
    Unreadable { path: String, cause: String },
    /// The suite does not parse or does not validate: `FILE:LINE: what is wrong`.
    #[error("{0}")]
    Invalid(String),
    #[error("{file}: cases need each other in a cycle: {}", .cycle.join(" → "))]
    Cycle { file: String, cycle: Vec<String> },
    #[error("--only {pattern:?} matches no case (list them with `agent-tck suites list`)")]
    NoMatch { pattern: String },
}

/// For the runners that gather one-line messages with `?` (the message unchanged).
impl From<SuiteError> for String {
    fn from(e: SuiteError) -> Self {
        e.to_string()
    }
}

impl crate::error::LayerError for SuiteError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
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
    /// Cases whose answer must be readable first: the needed case's exchange was answered 2xx
    /// with one JSON object within `--max-body`. A needed case that failed on a later rule (its
    /// schema, a protocol rule) still meets it: the answer is judged by this case's rules too.
    /// A needed case with no answer to read (refused, 404, 500, not JSON) skips this one.
    #[serde(default)]
    pub needs_answer: Vec<String>,
    #[serde(default)]
    pub requires: Option<Requirement>,
    /// Judged in traffic the kit did not send on the answers to its exchange's method and path,
    /// though its exchange is not the `traffic:` one of them: a rule on any answer there, which
    /// the probe provokes with a request of its own (`vote.dissent-reason` sends the synthesis
    /// an agent is likeliest to dissent from). On a case of no exchange (a rule over every
    /// answer of a run: execute_task's `protocol.sanitization`), judged on each answer to any
    /// traffic exchange, as that answer's own. See [`crate::probe::traffic`].
    #[serde(default)]
    pub traffic: bool,
    /// Judges, in traffic, the answers to requests `agent-tck proxy` bent this way on their way
    /// to the agent (`--fault NAME=request:BEHAVIOUR`) at its exchange's method and path, and
    /// only those: its own exchange is the probe's (`http.not-json`'s body that is not JSON),
    /// or a traffic one whose ordinary answers it judges too (`analyze.sanitization`). See
    /// [`crate::probe::traffic::TrafficJudge::judge_bent`].
    #[serde(default)]
    pub bent: Vec<String>,
    pub checks: Vec<Check>,
}

impl CaseSpec {
    /// The case as its suite describes it, not judged yet (a pass until failed or skipped).
    pub fn case(&self) -> crate::report::CaseResult {
        let case = crate::report::CaseResult::new(
            &self.id.value,
            &self.group(),
            self.level,
            &self.title,
            &self.spec,
        );
        if self.is_precondition() {
            case.precondition()
        } else {
            case
        }
    }

    /// Whether the case only finds the peer there (its checks are all `reachable`): a
    /// precondition of the others, which judges no rule ([`crate::report::CaseResult::precondition`]).
    pub fn is_precondition(&self) -> bool {
        !self.checks.is_empty()
            && self
                .checks
                .iter()
                .all(|c| matches!(c, crate::probe::checks::Check::Reachable))
    }

    /// Every case this one needs, of either kind.
    pub fn all_needs(&self) -> impl Iterator<Item = &String> {
        self.needs.iter().chain(&self.needs_answer)
    }

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
#[derive(Clone)]
pub struct Suite {
    /// Where it came from (for messages).
    pub source: String,
    pub file: SuiteFile,
    /// The protocol's rules and generators.
    pub protocol: &'static dyn SuiteProtocol,
    /// The user's file it was read from (`--suite FILE`) and its digest, which the report
    /// records; None for a built-in suite (the kit's version names it).
    pub user_file: Option<crate::specs::SuiteFile>,
}

impl std::fmt::Debug for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suite")
            .field("source", &self.source)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Suite {
    pub fn from_file(
        path: &Path,
        protocol: &'static dyn SuiteProtocol,
    ) -> Result<Suite, SuiteError> {
        let text = std::fs::read_to_string(path).map_err(|e| SuiteError::Unreadable {
            path: path.display().to_string(),
            cause: e.to_string(),
        })?;
        let mut suite = Suite::parse(&path.display().to_string(), &text, protocol)?;
        suite.user_file = Some(crate::specs::SuiteFile {
            file: suite.source.clone(),
            sha256: crate::specs::sha256_hex(&text),
        });
        Ok(suite)
    }

    /// Parses and validates against `protocol`'s rules and generators. Errors read
    /// `FILE:LINE: what is wrong`.
    pub fn parse(
        source: &str,
        text: &str,
        protocol: &'static dyn SuiteProtocol,
    ) -> Result<Suite, SuiteError> {
        let file: SuiteFile = serde_saphyr::from_str(text)
            .map_err(|e| SuiteError::Invalid(yaml_error(source, &e.to_string())))?;
        let suite = Suite {
            source: source.to_string(),
            file,
            protocol,
            user_file: None,
        };
        suite.validate().map_err(SuiteError::Invalid)?;
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
                    .validate(case.exchange.is_some(), &self.file.exchanges, self.protocol)
                    .map_err(|e| format!("{at}: {e}"))?;
            }
            if case.traffic {
                self.validate_case_traffic(case)
                    .map_err(|e| format!("{at}: traffic: true: {e}"))?;
            }
        }
        self.validate_traffic()?;
        for case in &self.file.cases {
            for need in case.all_needs() {
                if self.case(need).is_none() {
                    return Err(format!("{}: needs unknown case {need:?}", self.at(case)));
                }
            }
            for need in &case.needs_answer {
                if self.case(need).is_some_and(|c| c.exchange.is_none()) {
                    return Err(format!(
                        "{}: needs_answer names {need:?}, which sends no exchange and so has no answer to read (write it under needs:)",
                        self.at(case)
                    ));
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
        )
        .map_err(|e| e.to_string())?;
        // Render every exchange once, so template errors surface now rather than mid-run.
        let run = RunValues::new(0);
        for (name, x) in &self.file.exchanges {
            if let Some(body) = &x.body {
                let mut fill = Fill {
                    run: &run,
                    content: Content::new(0, name),
                    protocol: self.protocol,
                };
                template::render(body, &mut fill)
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

    /// The `traffic: true` exchange of `method` and `path`, if the suite has one.
    pub fn traffic_exchange(&self, method: &str, path: &str) -> Option<&str> {
        self.file
            .exchanges
            .iter()
            .find(|(_, x)| x.traffic && x.method.eq_ignore_ascii_case(method) && x.path == path)
            .map(|(name, _)| name.as_str())
    }

    /// At most one `traffic: true` exchange per method and path: the one whose cases judge
    /// the answers there.
    fn validate_traffic(&self) -> Result<(), String> {
        let mut seen: HashMap<(String, &str), &str> = HashMap::new();
        for (name, x) in self.file.exchanges.iter().filter(|(_, x)| x.traffic) {
            if let Some(first) = seen.insert((x.method.to_uppercase(), &x.path), name) {
                return Err(format!(
                    "{}: exchanges {first} and {name} are both traffic: true for {} {} (at most one per method and path: its cases judge the answers there)",
                    self.source, x.method, x.path
                ));
            }
        }
        Ok(())
    }

    /// A case's own `traffic: true` names an exchange that is not the traffic one of a method
    /// and path that has one.
    fn validate_case_traffic(&self, case: &CaseSpec) -> Result<(), String> {
        // A case of no exchange (a rule over every answer of a run) is judged on each answer
        // to any traffic exchange: there must be one.
        let Some(name) = case.exchange.as_deref() else {
            return match self.file.exchanges.values().any(|x| x.traffic) {
                true => Ok(()),
                false => Err("no exchange is traffic: true, so no answer in traffic would be judged by it (mark the one that stands for the platform's requests)".into()),
            };
        };
        let x = &self.file.exchanges[name];
        match self.traffic_exchange(&x.method, &x.path) {
            None => Err(format!(
                "no exchange is traffic: true for {} {} (mark the one that stands for the platform's requests)",
                x.method, x.path
            )),
            Some(t) if t == name => Err(format!(
                "its exchange {name} is the traffic one already (drop the case's traffic:)"
            )),
            Some(_) => Ok(()),
        }
    }

    /// The case list: `id  level  title` and the spec section under it, in suite order.
    /// Every case id, in the file's order.
    pub fn ids(&self) -> Vec<String> {
        self.cases().iter().map(|c| c.id.value.clone()).collect()
    }

    pub fn list(&self) -> String {
        let suite = self;
        let cases = suite.cases();
        let w = cases.iter().map(|c| c.id.value.len()).max().unwrap_or(0);
        let mut out = format!(
            "{} ({}, {} cases; spec {})\n",
            suite.file.title,
            suite.source,
            cases.len(),
            suite.file.spec
        );
        for case in cases {
            out.push_str(&format!(
                "  {:<w$}  {:<6}  {}\n  {:<w$}  {:<6}  spec: {}\n",
                case.id.value,
                case.level.as_str(),
                case.title,
                "",
                "",
                case.spec
            ));
        }
        out
    }

    /// Orders the chosen cases into layers: each case comes after every case it needs. The error
    /// names a cycle.
    pub fn layers(&self, chosen: &[String]) -> Result<Vec<Vec<String>>, SuiteError> {
        let mut depth: HashMap<&str, usize> = HashMap::new();
        fn visit<'a>(
            suite: &'a Suite,
            id: &'a str,
            depth: &mut HashMap<&'a str, usize>,
            path: &mut Vec<&'a str>,
        ) -> Result<usize, SuiteError> {
            if let Some(d) = depth.get(id) {
                return Ok(*d);
            }
            if path.contains(&id) {
                path.push(id);
                return Err(SuiteError::Cycle {
                    file: suite.source.clone(),
                    cycle: path.iter().map(|id| id.to_string()).collect(),
                });
            }
            path.push(id);
            let mut d = 0;
            if let Some(case) = suite.case(id) {
                for need in case.all_needs() {
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
    pub fn select(&self, only: &[String]) -> Result<Vec<String>, SuiteError> {
        let all: Vec<String> = self.file.cases.iter().map(|c| c.id.value.clone()).collect();
        if only.is_empty() {
            return Ok(all);
        }
        let mut wanted = HashSet::new();
        for pattern in only {
            let hits: Vec<&String> = all.iter().filter(|id| glob_match(pattern, id)).collect();
            if hits.is_empty() {
                return Err(SuiteError::NoMatch {
                    pattern: pattern.clone(),
                });
            }
            wanted.extend(hits.into_iter().cloned());
        }
        let mut stack: Vec<String> = wanted.iter().cloned().collect();
        while let Some(id) = stack.pop() {
            let needs: Vec<String> = self
                .case(&id)
                .map(|c| c.all_needs().cloned().collect())
                .unwrap_or_default();
            for need in needs {
                if wanted.insert(need.clone()) {
                    stack.push(need);
                }
            }
        }
        Ok(all.into_iter().filter(|id| wanted.contains(id)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::plugin::GenericOnly;

    /// A library user that loads a bad suite file gets the suite's own error inside the crate's
    /// `Error`, and matches on it; its class is a usage error.
    #[test]
    fn a_bad_suite_file_is_a_suite_error_to_match_on() {
        let load = || -> crate::error::Result<Suite> {
            Ok(Suite::parse("bad.yaml", "cases: [", &GenericOnly)?)
        };
        let e = load().unwrap_err();
        assert!(
            matches!(e.layer::<SuiteError>(), Some(SuiteError::Invalid(m)) if m.starts_with("bad.yaml:")),
            "{e:?}"
        );
        assert_eq!(e.class(), crate::error::Class::Usage);
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
        Suite::parse("s.yaml", &format!("{BASE}{cases}"), &GenericOnly)
            .unwrap_err()
            .to_string()
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
        let e = err("  - {id: c1, level: must, title: t, spec: s, needs_answer: [c2], checks: [json], exchange: a}\n  - {id: c2, level: must, title: t, spec: s, needs_answer: [c1], checks: [json], exchange: a}\n");
        assert!(e.contains("cycle: c1 → c2 → c1"), "{e}");
        let e = err("  - {id: up, level: must, title: t, spec: s, checks: [reachable]}\n  - {id: c1, level: must, title: t, spec: s, needs_answer: [up], checks: [json], exchange: a}\n");
        assert!(
            e.starts_with("s.yaml:8: case c1: needs_answer names \"up\", which sends no exchange"),
            "{e}"
        );
        let e = err(
            "  - {id: c1, level: must, title: t, spec: s, exchange: a, checks: [{schema: nope}]}\n",
        );
        assert!(e.contains("unknown schema \"nope\""), "{e}");
        let e = err("  - {id: c1, level: maybe, title: t, spec: s, checks: [json]}\n");
        assert!(e.starts_with("s.yaml:7:") && e.contains("maybe"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let e = err("  - {id: c1, level: must, title: t, spec: s, exchange: a, checks: [{phrases: {fields: [x], patterns: ['(']}}]}\n");
        assert!(e.contains("not a valid regular expression"), "{e}");
        let e = err("  - {id: c1, level: must, title: t, spec: s, exchange: a, checks: [{phrases: {fields: [x], patterns: sanitisation}}]}\n");
        assert!(
            e.starts_with("s.yaml:7: case c1:")
                && e.contains("\"sanitisation\" is no list of patterns (known: sanitization)"),
            "{e}"
        );
        let named = "  - {id: c1, level: must, title: t, spec: s, exchange: a, checks: [{phrases: {fields: [x], patterns: sanitization}}]}\n";
        assert!(Suite::parse("s.yaml", &format!("{BASE}{named}"), &GenericOnly).is_ok());
        let e = err("  - {id: c1, level: must, title: t, spec: s, exchange: a, checks: [dissent_reasons]}\n");
        assert!(
            e.starts_with("s.yaml:7: case c1: unknown check \"dissent_reasons\" (the generic kinds: reachable,"),
            "{e}"
        );
    }
}
