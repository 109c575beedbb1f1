//! Findings of a linter (`agent-tck lint …`): rules with a level, findings that point at a file,
//! a line and a column, and the ways they are written — console lines (`path:line:col:
//! error[rule]: message`), SARIF 2.1.0 for code scanning, and the kit's own report (a case per
//! rule) for `--format json|junit`. Protocol-free: a protocol names its rules and finds.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{CaseResult, Evidence, Level, Report, RunInfo};
use crate::text::Redactor;

/// A rule a linter checks.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    /// MUST findings are errors, SHOULD findings warnings.
    pub level: Level,
    pub title: &'static str,
    /// What to do about a finding (SARIF's help text).
    pub help: &'static str,
    /// What the rule judges, as a plural noun phrase (`names`, `tool names`): its evidence.
    pub of: &'static str,
    /// With nothing of that to judge: what would exercise the rule (the case's skip reason).
    pub unexercised: &'static str,
}

/// One broken rule, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub level: Level,
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
    pub message: String,
}

/// A linter's run: what it read, its rules, what it found.
#[derive(Debug, Clone)]
pub struct Lint {
    pub protocol: String,
    /// The spec the rules come from (the report's `spec` of each case).
    pub spec: &'static str,
    pub rules: &'static [Rule],
    pub files: Vec<String>,
    pub findings: Vec<Finding>,
    /// How many things each rule judged (by rule id; a rule not here judged nothing).
    pub judged: BTreeMap<&'static str, u64>,
    pub strict: bool,
    /// Which set of the protocol's rules was applied, when it has more than one (said in the
    /// SARIF rule metadata).
    pub dialect: Option<&'static str>,
}

impl Lint {
    /// How many things `rule` judged.
    pub fn judged(&self, rule: &str) -> u64 {
        self.judged.get(rule).copied().unwrap_or(0)
    }

    /// The rules that had nothing to judge (no file held what they are about).
    pub fn unexercised(&self) -> Vec<&'static str> {
        self.rules
            .iter()
            .filter(|r| self.judged(r.id) == 0)
            .map(|r| r.id)
            .collect()
    }

    fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }

    /// 1 when a MUST rule is broken (or, under --strict, a SHOULD one); else 0.
    pub fn exit_code(&self) -> super::Exit {
        let errors = self.count(Level::Must);
        let warnings = self.count(Level::Should);
        super::Exit::failed_if(errors > 0 || (self.strict && warnings > 0))
    }

    /// `path:line:col: error[rule]: message` per finding, in file and line order, then the
    /// counts.
    pub fn console(&self) -> String {
        let mut findings = self.findings.clone();
        findings.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
        let mut out = String::new();
        for f in &findings {
            out.push_str(&format!(
                "{}:{}:{}: {}[{}]: {}\n",
                f.file,
                f.line,
                f.column,
                severity(f.level),
                f.rule,
                f.message
            ));
        }
        // Notes (MAY, advisory) are counted only when there are some: the line stays as it was.
        let notes = match self.count(Level::May) {
            0 => String::new(),
            n => format!(", {}", crate::text::count(n as u64, "notes")),
        };
        let n = |count: usize, what: &str| crate::text::count(count as u64, what);
        out.push_str(&format!(
            "{}: {}, {}{notes}{}\n",
            n(self.files.len(), "files"),
            n(self.count(Level::Must), "errors"),
            n(self.count(Level::Should), "warnings"),
            if self.strict {
                " (--strict: warnings fail)"
            } else {
                ""
            }
        ));
        let unexercised = self.unexercised();
        if !unexercised.is_empty() {
            out.push_str(&format!(
                "not judged, nothing to judge: {} (--format json says what would exercise each)\n",
                unexercised.join(", ")
            ));
        }
        out
    }

    /// The kit's report: a case per rule, failed with its findings.
    pub fn report(&self, target: &str, info: RunInfo) -> Report {
        let _ = target;
        let cases = self
            .rules
            .iter()
            .map(|rule| {
                let mut case = CaseResult::new(rule.id, "lint", rule.level, rule.title, self.spec);
                let mine: Vec<String> = self
                    .findings
                    .iter()
                    .filter(|f| f.rule == rule.id)
                    .map(|f| format!("{}:{}:{}: {}", f.file, f.line, f.column, f.message))
                    .collect();
                let evidence = Evidence::new(self.judged(rule.id), rule.of);
                if mine.is_empty() {
                    case.pass(evidence, || rule.unexercised.to_string());
                } else {
                    case.fail_on(
                        evidence,
                        format!(
                            "{}:\n  {}",
                            crate::text::count(mine.len() as u64, "findings"),
                            mine.join("\n  ")
                        ),
                    );
                }
                case
            })
            .collect();
        info.report(cases, &Redactor::new(Vec::new()))
    }

    /// SARIF 2.1.0: one run, the rules in the driver, a result per finding with its region.
    pub fn sarif(&self) -> Value {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "name": pascal(r.id),
                    "shortDescription": {"text": r.title},
                    "fullDescription": {"text": match self.dialect {
                        Some(d) => format!("{} ({}, {}, dialect {d})", r.title, r.level.as_str().to_uppercase(), self.spec),
                        None => format!("{} ({}, {})", r.title, r.level.as_str().to_uppercase(), self.spec),
                    }},
                    "help": {"text": r.help, "markdown": r.help},
                    "defaultConfiguration": {"level": severity(r.level)},
                    "properties": match self.dialect {
                        Some(d) => json!({"tags": [self.protocol, r.level.as_str(), format!("dialect:{d}")], "dialect": d}),
                        None => json!({"tags": [self.protocol, r.level.as_str()]}),
                    },
                })
            })
            .collect();
        let results: Vec<Value> = self
            .findings
            .iter()
            .map(|f| {
                let index = self.rules.iter().position(|r| r.id == f.rule);
                json!({
                    "ruleId": f.rule,
                    "ruleIndex": index.map_or(-1, |i| i as i64),
                    "level": severity(f.level),
                    "message": {"text": f.message},
                    "locations": [{
                        "physicalLocation": {
                            "artifactLocation": artifact(&f.file),
                            "region": {"startLine": f.line.max(1), "startColumn": f.column.max(1)},
                        }
                    }],
                })
            })
            .collect();
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "agent-tck",
                    "version": crate::VERSION,
                    "rules": rules,
                }},
                "results": results,
                "columnKind": "unicodeCodePoints",
            }],
        })
    }
}

fn severity(level: Level) -> &'static str {
    match level {
        Level::Must => "error",
        Level::Should => "warning",
        Level::May => "note",
    }
}

/// `name-kebab-case` → `NameKebabCase` (SARIF's rule name).
fn pascal(id: &str) -> String {
    id.split(['-', '.', '_'])
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Where a file is, for SARIF: a relative path against the checkout's root (`%SRCROOT%`, what
/// code scanning expects), an absolute one as a `file://` URI.
fn artifact(path: &str) -> Value {
    let path = path.replace('\\', "/");
    match path.strip_prefix('/') {
        Some(absolute) => json!({"uri": format!("file:///{}", uri(absolute))}),
        None => {
            json!({"uri": uri(path.strip_prefix("./").unwrap_or(&path)), "uriBaseId": "%SRCROOT%"})
        }
    }
}

/// A path as a URI reference: what a URI cannot hold percent-encoded.
fn uri(path: &str) -> String {
    path.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &[Rule] = &[
        Rule {
            id: "name-kebab-case",
            level: Level::Must,
            title: "name is kebab-case",
            help: "Rename it.",
            of: "names",
            unexercised: "no definition has a name",
        },
        Rule {
            id: "tools-known",
            level: Level::Should,
            title: "tools are known",
            help: "Check the spelling.",
            of: "tool names",
            unexercised: "no definition lists a tool",
        },
    ];

    fn lint(findings: Vec<Finding>, strict: bool) -> Lint {
        Lint {
            protocol: "p".into(),
            spec: "spec.md",
            rules: RULES,
            files: vec!["a b.md".into()],
            findings,
            judged: BTreeMap::from([("name-kebab-case", 1)]),
            strict,
            dialect: None,
        }
    }

    fn finding(rule: &'static str, level: Level) -> Finding {
        Finding {
            rule,
            level,
            file: "./dir/a b.md".into(),
            line: 3,
            column: 1,
            message: "bad".into(),
        }
    }

    #[test]
    fn errors_fail_warnings_only_under_strict() {
        assert_eq!(lint(vec![], false).exit_code(), 0);
        let warning = vec![finding("tools-known", Level::Should)];
        assert_eq!(lint(warning.clone(), false).exit_code(), 0);
        assert_eq!(lint(warning, true).exit_code(), 1);
        let error = lint(vec![finding("name-kebab-case", Level::Must)], false);
        assert_eq!(error.exit_code(), 1);
        assert!(error
            .console()
            .starts_with("./dir/a b.md:3:1: error[name-kebab-case]: bad\n"));
    }

    #[test]
    fn a_rule_passes_on_what_it_judged_and_skips_with_nothing() {
        let clean = lint(vec![], false);
        let report = clean.report("t", RunInfo::start("lint", "p", "t", None, false));
        let kebab = &report.cases[0];
        assert_eq!(kebab.status, super::super::Status::Pass);
        assert_eq!(kebab.evidence, Some(Evidence::new(1, "names")));
        let tools = &report.cases[1];
        assert_eq!(tools.status, super::super::Status::Skip);
        assert_eq!(tools.message, "no definition lists a tool");
        assert!(clean
            .console()
            .ends_with("not judged, nothing to judge: tools-known (--format json says what would exercise each)\n"));
    }

    #[test]
    fn sarif_names_rules_and_places() {
        let s = lint(vec![finding("tools-known", Level::Should)], false).sarif();
        let result = &s["runs"][0]["results"][0];
        assert_eq!(result["ruleIndex"], 1);
        assert_eq!(result["level"], "warning");
        let place = &result["locations"][0]["physicalLocation"];
        assert_eq!(place["artifactLocation"]["uri"], "dir/a%20b.md");
        assert_eq!(place["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(
            artifact("/abs/x y.md"),
            json!({"uri": "file:///abs/x%20y.md"})
        );
        assert_eq!(place["region"]["startLine"], 3);
        assert_eq!(
            s["runs"][0]["tool"]["driver"]["rules"][0]["name"],
            "NameKebabCase"
        );
    }
}
