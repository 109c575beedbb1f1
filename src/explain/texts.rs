//! The explain texts (`explain/*.yaml`, embedded by build.rs): their shape, their parse, the
//! match of an id against an entry's id or pattern, and how one is printed. The format is
//! described at the top of each file and in docs/design.md.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::error::Error;

/// `explain/*.yaml` as (file, text), every file there.
pub const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/explain.rs"));

/// One file of texts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextFile {
    /// The file under `specs/` the quotes are checked against (none: every case of the file
    /// states a `basis`, or names its own `spec`).
    #[serde(default)]
    pub spec: Option<String>,
    pub cases: Vec<Text>,
    /// The file's name (`explain/roundtable.yaml`), set after the parse.
    #[serde(skip)]
    pub source: String,
}

/// The text of one case (or of the cases a pattern matches).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Text {
    /// The case id, or a pattern: `{name}` stands for one or more characters other than `.` (the
    /// first one of a pattern, for what a user named, dots too).
    pub id: String,
    pub role: String,
    pub rule: String,
    #[serde(default)]
    pub clause: Option<Clause>,
    /// The kit's own rule (robustness, hygiene, liveness) when no clause of the spec says it.
    #[serde(default)]
    pub basis: Option<String>,
    /// What the kit's own rule is, in a word or two (`robustness`): the case's section reads
    /// `agent-tck (OWN)`, for a catalogue that keeps no section of its own (the agent standard's).
    #[serde(default)]
    pub own: Option<String>,
    /// The spec file of the clause, when it is not the file's (a common case quoting one spec).
    #[serde(default)]
    pub spec: Option<String>,
    pub why: String,
    pub fails: String,
    pub passes: String,
    #[serde(default)]
    pub shown_by: Option<String>,
    pub fix: String,
}

/// The spec's words a case enforces.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clause {
    pub section: String,
    pub quote: String,
}

/// The section a case's text rests on, for a catalogue that keeps none of its own (the agent
/// standard's rules): the quoted clause's, or the kit's own form when the text gives only a
/// basis; empty for an id no text explains.
pub fn section_of(id: &str) -> String {
    let Ok(files) = embedded() else {
        return String::new();
    };
    files
        .iter()
        .flat_map(|f| f.cases.iter())
        .find(|t| matches(&t.id, id))
        .map_or_else(String::new, |t| match &t.clause {
            Some(c) => c.section.clone(),
            None => format!("agent-tck ({})", t.own.as_deref().unwrap_or("its own rule")),
        })
}

/// Parses one file of texts; the error names the file.
pub fn parse(source: &str, text: &str) -> Result<TextFile, Error> {
    let mut file: TextFile =
        serde_saphyr::from_str(text).map_err(|e| Error::usage(format!("{source}: {e}")))?;
    file.source = source.to_string();
    for t in &file.cases {
        let at = |what: &str| Error::usage(format!("{source}: case {}: {what}", t.id));
        if crate::protocols::plugin::Role::parse(&t.role).is_none() {
            return Err(at(&format!(
                "role {:?} is none of probe, mock, lint, orchestration, run",
                t.role
            )));
        }
        match (&t.clause, &t.basis) {
            (Some(_), Some(_)) => return Err(at("give a clause or a basis, not both")),
            (None, None) => return Err(at("give the spec's clause, or the kit's basis")),
            (Some(_), None) if t.spec.is_none() && file.spec.is_none() => {
                return Err(at("a clause needs the spec it is quoted from (`spec:`)"))
            }
            (Some(_), None) if t.own.is_some() => {
                return Err(at("`own:` names the kit's own rule: it goes with a basis"))
            }
            _ => {}
        }
    }
    Ok(file)
}

/// Every embedded file, parsed once.
pub fn embedded() -> Result<&'static [TextFile], Error> {
    static PARSED: OnceLock<Result<Vec<TextFile>, Error>> = OnceLock::new();
    PARSED
        .get_or_init(|| EMBEDDED.iter().map(|(f, t)| parse(f, t)).collect())
        .as_ref()
        .map(Vec::as_slice)
        // `parse`'s errors are messages alone (`Error::Usage`): each call gets its own copy.
        .map_err(|e| Error::usage(e.to_string()))
}

/// Whether `id` is `pattern`, where each `{name}` of the pattern stands for one or more
/// characters other than `.` (one that opens the pattern, for any characters).
pub fn matches(pattern: &str, id: &str) -> bool {
    match pattern.find('{') {
        None => pattern == id,
        Some(open) => {
            let Some(close) = pattern[open..].find('}').map(|c| open + c) else {
                return pattern == id;
            };
            let (head, rest) = (&pattern[..open], &pattern[close + 1..]);
            let Some(tail) = id.strip_prefix(head) else {
                return false;
            };
            // The placeholder takes 1..n characters up to the first `.`; try every length. One
            // that opens the pattern names what a user wrote (a scenario's id, a response
            // file's name), which may hold dots (`cs.v2.completes`): it may run past them.
            let run = if open == 0 {
                tail.len()
            } else {
                tail.find('.').unwrap_or(tail.len())
            };
            (1..=run).any(|n| matches(rest, &tail[n..]))
        }
    }
}

impl Text {
    /// The spec file its clause is quoted from.
    pub fn spec_file<'a>(&'a self, file: &'a TextFile) -> Option<&'a str> {
        self.spec.as_deref().or(file.spec.as_deref())
    }

    /// The text as `explain` prints it after the case's heading; `matrix` are the matrix rows
    /// that break it.
    pub fn render(&self, file: &TextFile, matrix: &[String]) -> String {
        let mut out = format!("\n{}\n", wrap(&format!("Rule: {}", self.rule)));
        match (&self.clause, &self.basis) {
            (Some(c), _) => {
                out.push_str(&format!(
                    "\nThe spec ({}, section \"{}\"):\n{}\n",
                    self.spec_file(file).unwrap_or("?"),
                    c.section,
                    indent(&c.quote, "  > ")
                ));
            }
            (None, Some(basis)) => {
                let basis = format!("Basis (no clause of the spec): {basis}");
                out.push_str(&format!("\n{}\n", wrap(&basis)))
            }
            (None, None) => {}
        }
        out.push_str(&format!(
            "\n{}\n",
            wrap(&format!("Why: {}", self.why.trim()))
        ));
        out.push_str(&format!("\nFails:\n{}\n", indent(&self.fails, "  ")));
        out.push_str(&format!("\nPasses:\n{}\n\n", indent(&self.passes, "  ")));
        // The text's own command first, then each matrix row that breaks the case.
        let mut shown: Vec<String> = self.shown_by.iter().cloned().collect();
        shown.extend(matrix.iter().cloned());
        if !shown.is_empty() {
            out.push_str("Shown by:\n");
            for s in shown {
                out.push_str(&format!("  {s}\n"));
            }
            out.push('\n');
        }
        out.push_str(&format!("{}\n", wrap(&format!("Fix: {}", self.fix.trim()))));
        out.push_str(&format!("\n(text: {})\n", file.source));
        out
    }
}

/// Prose folded at 98 columns, between words.
fn wrap(text: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > 98 {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines.join("\n")
}

/// Each line of `text` (trimmed at its end) after `prefix`.
fn indent(text: &str, prefix: &str) -> String {
    text.trim_end()
        .lines()
        .map(|l| format!("{prefix}{}", l.trim_end()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_stands_for_one_or_more_characters_without_a_dot_but_the_first_one() {
        assert!(matches(
            "{scenario}.called-{tool}",
            "refund.called-apply_refund"
        ));
        assert!(matches("{response}.json-last", "plan.json-last"));
        assert!(!matches("{scenario}.called-{tool}", ".called-x"));
        assert!(matches("{scenario}.called-{tool}", "a.b.called-x"));
        assert!(!matches("{scenario}.called-{tool}", "a.called-x.y"));
        assert!(!matches("x.{scenario}.completes", "x.a.b.completes"));
        assert!(!matches("{scenario}.called-{tool}", "a.called-"));
        assert!(matches("vote.dissent-reason", "vote.dissent-reason"));
        assert!(!matches("vote.dissent-reason", "vote.dissent-reasons"));
        assert!(matches("{a}-{b}.x", "one-two-three.x"));
    }

    #[test]
    fn a_file_is_refused_naming_it_and_the_case() {
        let both = "spec: s.md\ncases:\n  - {id: a.b, role: probe, rule: r, basis: b, clause: {section: s, quote: q}, why: w, fails: f, passes: p, fix: x}\n";
        let e = parse("explain/x.yaml", both).unwrap_err().to_string();
        assert!(
            e.contains("explain/x.yaml: case a.b: give a clause or a basis, not both"),
            "{e}"
        );
        let role = "cases:\n  - {id: a.b, role: judge, rule: r, basis: b, why: w, fails: f, passes: p, fix: x}\n";
        let e = parse("explain/x.yaml", role).unwrap_err().to_string();
        assert!(e.contains("role \"judge\""), "{e}");
        let unknown = "cases:\n  - {id: a.b, role: run, rule: r, basis: b, why: w, fails: f, passes: p, fix: x, level: must}\n";
        assert!(parse("explain/x.yaml", unknown).is_err());
        let no_spec = "cases:\n  - {id: a.b, role: run, rule: r, clause: {section: s, quote: q}, why: w, fails: f, passes: p, fix: x}\n";
        let e = parse("explain/x.yaml", no_spec).unwrap_err().to_string();
        assert!(e.contains("needs the spec"), "{e}");
    }
}
