//! `lint agents --fix`: rewrites what has one safe answer — a comma-separated `tools` string into
//! a YAML block list, a `name` that is not kebab-case into kebab-case, a `supports_plan_mode`
//! string (`"true"`, `yes`…) into a boolean. The text is edited line by line, never re-serialised
//! from the YAML, so comments, key order and every line not fixed stay byte for byte.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::definition::{self, comma_names};
use super::lint::kebab;

/// One rewrite of one frontmatter line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The file's line (1-based).
    pub line: usize,
    /// The lines written instead (with their line endings).
    pub new: Vec<String>,
    /// What was done (`tools: comma string → YAML list (3 tools)`).
    pub what: String,
}

/// A file's text and what `--fix` makes of it.
#[derive(Debug, Clone)]
pub struct Fixed {
    /// The text as read.
    pub before: String,
    /// The text with every edit made.
    pub after: String,
    pub edits: Vec<Edit>,
    /// The frontmatter's `name` after the fix, when it is kebab-case (what `--fix-names` names
    /// the file after).
    pub name: Option<String>,
}

/// Why a file is left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Untouched {
    /// No frontmatter, or one that does not parse: nothing is safe to rewrite.
    Unreadable { at: definition::At, why: String },
}

/// The fixes of `text` (the file read from `path`).
pub fn fix_text(path: &str, text: &str) -> Result<Fixed, Untouched> {
    let def = definition::read(path, text);
    let front = def
        .front
        .map_err(|(at, why)| Untouched::Unreadable { at, why })?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // The frontmatter's lines: after the opening fence, up to the closing one (`read` found both).
    let close = lines
        .iter()
        .skip(1)
        .position(|l| matches!(l.trim_end(), "---" | "..."))
        .map_or(lines.len(), |i| i + 1);
    let mut edits = Vec::new();
    for (i, line) in lines.iter().enumerate().take(close).skip(1) {
        let (content, ending) = split_ending(line);
        if content.starts_with([' ', '\t', '-', '#']) {
            continue;
        }
        let Some((key, rest)) = content.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches(['"', '\'']);
        // Only the first place of a key: the one the parser's value comes from.
        if front.keys.get(key).map(|at| at.0) != Some(i + 1) {
            continue;
        }
        let head = &content[..content.len() - rest.len()];
        let edit = match key {
            "tools" => tools_list(&front.value, head, rest, i + 1, ending),
            "name" => kebab_name(&front.value, head, rest, ending),
            "supports_plan_mode" => plan_mode_boolean(&front.value, head, rest, ending),
            _ => None,
        }
        .or_else(|| quoted_value(&front, key, content, ending));
        if let Some((new, what, expected)) = edit {
            let edit = Edit {
                line: i + 1,
                new,
                what,
            };
            // A value the line alone does not hold (a block scalar, a continuation line) would
            // be cut: the edit stands only when the text it makes reads back as meant, every
            // other key as it was.
            let mut value = front.value.clone();
            value[key] = expected;
            if reads_back(path, &lines, std::slice::from_ref(&edit), &value) {
                edits.push(edit);
            }
        }
    }
    let after = edited(&lines, &edits);
    let name = definition::read(path, &after)
        .name()
        .filter(|n| kebab(n))
        .map(str::to_string);
    Ok(Fixed {
        before: text.to_string(),
        after,
        edits,
        name,
    })
}

/// A plain value holding `: ` (strict YAML refuses it; the frontmatter was read with it quoted,
/// as Claude Code reads it) put in double quotes: the one reading both give it.
fn quoted_value(
    front: &definition::Front,
    key: &str,
    content: &str,
    ending: &str,
) -> Option<(Vec<String>, String, Value)> {
    front.lenient.as_ref()?;
    let new = definition::quote_colon_value(content);
    if new == content {
        return None;
    }
    Some((
        vec![format!("{new}{ending}")],
        format!("{key}: a value holding `: ` → quoted"),
        front.value[key].clone(),
    ))
}

/// The text with `edits` made.
fn edited(lines: &[&str], edits: &[Edit]) -> String {
    let mut after = String::new();
    for (i, line) in lines.iter().enumerate() {
        match edits.iter().find(|e| e.line == i + 1) {
            Some(e) => e.new.iter().for_each(|l| after.push_str(l)),
            None => after.push_str(line),
        }
    }
    after
}

/// Whether the text with `edits` made has the frontmatter `value`.
fn reads_back(path: &str, lines: &[&str], edits: &[Edit], value: &Value) -> bool {
    definition::read(path, &edited(lines, edits))
        .front
        .is_ok_and(|f| &f.value == value)
}

/// A line without its ending, and the ending (`\n`, `\r\n` or none).
fn split_ending(line: &str) -> (&str, &str) {
    let content = line.trim_end_matches(['\n', '\r']);
    (content, &line[content.len()..])
}

/// A value as written and what follows it (spaces and a `#` comment, or nothing).
fn split_comment(rest: &str) -> (&str, &str) {
    let value = rest.trim_start();
    let end = match value.chars().next() {
        Some(q @ ('"' | '\'')) => value[1..].find(q).map_or(value.len(), |i| i + 2),
        _ => value.find(" #").unwrap_or(value.len()),
    };
    let (value, tail) = value.split_at(end);
    let trimmed = value.trim_end();
    (
        trimmed,
        &rest[rest.len() - tail.len() - (value.len() - trimmed.len())..],
    )
}

/// `tools: Read, Grep` → `tools:` and a `  - Read` line per tool.
fn tools_list(
    value: &Value,
    head: &str,
    rest: &str,
    line: usize,
    ending: &str,
) -> Option<(Vec<String>, String, Value)> {
    value["tools"].as_str()?;
    let (scalar, tail) = split_comment(rest);
    let names = comma_names(scalar, line, 1);
    if names.is_empty() {
        return None;
    }
    // A value ending the file's last line has no ending of its own; the new lines need one.
    let eol = if ending.is_empty() { "\n" } else { ending };
    let indent = " ".repeat(head.len() - head.trim_start().len() + 2);
    let mut new = vec![format!("{}{}{eol}", head.trim_end(), tail)];
    for (name, _) in &names {
        new.push(format!("{indent}- {}{eol}", plain_or_quoted(name)));
    }
    if let Some(last) = new.last_mut() {
        if ending.is_empty() {
            last.truncate(last.len() - eol.len());
        }
    }
    let what = format!("tools: comma string → YAML list ({} tools)", names.len());
    let list = names.into_iter().map(|(n, _)| Value::String(n)).collect();
    Some((new, what, Value::Array(list)))
}

/// A list item as a plain scalar when YAML reads it back the same, else double-quoted.
fn plain_or_quoted(name: &str) -> String {
    let plain = !name.starts_with([
        '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', '-', '?', ':',
    ]) && !name.contains(": ")
        && !name.contains(" #")
        && !name.ends_with(':');
    if plain {
        name.to_string()
    } else {
        serde_json::to_string(name).unwrap_or_else(|_| name.to_string())
    }
}

/// `name: Code Reviewer` → `name: code-reviewer`.
fn kebab_name(
    value: &Value,
    head: &str,
    rest: &str,
    ending: &str,
) -> Option<(Vec<String>, String, Value)> {
    let name = value["name"].as_str()?;
    if kebab(name) {
        return None;
    }
    let new_name = to_kebab(name);
    if !kebab(&new_name) {
        return None;
    }
    let (_, tail) = split_comment(rest);
    let lead = &rest[..rest.len() - rest.trim_start().len()];
    let lead = if lead.is_empty() { " " } else { lead };
    // A name YAML would read as a number or a boolean keeps quotes.
    let written = if new_name.chars().all(|c| c.is_ascii_digit())
        || matches!(
            new_name.as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off"
        ) {
        format!("\"{new_name}\"")
    } else {
        new_name.clone()
    };
    Some((
        vec![format!("{head}{lead}{written}{tail}{ending}")],
        format!("name: {name:?} → {new_name}"),
        Value::String(new_name),
    ))
}

/// `supports_plan_mode: "true"` (or `yes`, `no`, `"false"`) → a boolean.
fn plan_mode_boolean(
    value: &Value,
    head: &str,
    rest: &str,
    ending: &str,
) -> Option<(Vec<String>, String, Value)> {
    let said = value["supports_plan_mode"].as_str()?;
    let boolean = match said.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" => true,
        "false" | "no" => false,
        _ => return None,
    };
    let (written, tail) = split_comment(rest);
    let lead = &rest[..rest.len() - rest.trim_start().len()];
    let lead = if lead.is_empty() { " " } else { lead };
    Some((
        vec![format!("{head}{lead}{boolean}{tail}{ending}")],
        format!("supports_plan_mode: string {written} → {boolean}"),
        Value::Bool(boolean),
    ))
}

/// `Code Reviewer`, `codeReviewer`, `code_reviewer`, `CodeReviewer` → `code-reviewer`: words
/// split at anything not a letter or digit and where a lower-case letter or digit meets an
/// upper-case one, lower-cased and joined by `-`.
pub fn to_kebab(name: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev = None;
            continue;
        }
        let boundary = c.is_ascii_uppercase()
            && prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        word.push(c.to_ascii_lowercase());
        prev = Some(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.join("-")
}

/// A unified diff of `fixed` (`--- a/PATH`, `+++ b/NEW`, hunks with three lines of context).
pub fn diff(path: &str, new_path: &str, fixed: &Fixed) -> String {
    const CONTEXT: usize = 3;
    let lines: Vec<&str> = fixed.before.split_inclusive('\n').collect();
    let mut out = format!("--- a/{path}\n+++ b/{new_path}\n");
    // Edits whose contexts touch or overlap share a hunk.
    let mut groups: Vec<Vec<&Edit>> = Vec::new();
    for e in &fixed.edits {
        match groups.last_mut() {
            Some(g) if g.last().is_some_and(|l| e.line - l.line <= 2 * CONTEXT + 1) => g.push(e),
            _ => groups.push(vec![e]),
        }
    }
    let mut shift: isize = 0;
    for g in groups {
        let first = g[0].line - 1;
        let last = g[g.len() - 1].line - 1;
        let start = first.saturating_sub(CONTEXT);
        let end = (last + 1 + CONTEXT).min(lines.len());
        let added: usize = g.iter().map(|e| e.new.len()).sum();
        let old_len = end - start;
        let new_len = old_len - g.len() + added;
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            start + 1,
            (start as isize + 1 + shift)
        ));
        shift += added as isize - g.len() as isize;
        for (i, line) in lines.iter().enumerate().take(end).skip(start) {
            match g.iter().find(|e| e.line == i + 1) {
                Some(e) => {
                    push_line(&mut out, '-', line);
                    e.new.iter().for_each(|l| push_line(&mut out, '+', l));
                }
                None => push_line(&mut out, ' ', line),
            }
        }
    }
    out
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line.trim_end_matches(['\n', '\r']));
    out.push('\n');
    if !line.ends_with('\n') {
        out.push_str("\\ No newline at end of file\n");
    }
}

/// What `lint agents --fix` was asked to do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Also rename each file to its (fixed) name.
    pub names: bool,
    /// Print the diffs; write nothing.
    pub dry_run: bool,
}

/// Why a fix could not be written: a run error (the files were found and read).
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    #[error("{}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: cannot write the fixed text: {cause}", path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot rename {} to {}: {cause}", from.display(), to.display())]
    Rename {
        from: PathBuf,
        to: PathBuf,
        cause: std::io::Error,
    },
}

impl crate::error::LayerError for FixError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            FixError::Read { .. } => Class::Usage,
            FixError::Write { .. } | FixError::Rename { .. } => Class::Run,
        }
    }
}

/// Fixes each of `files` (or, with `dry_run`, prints the diff), saying each fix through `say`;
/// the definitions as they are after the fix (read from the fixed text, under the new name), for
/// the lint of what is left.
pub fn apply(
    files: &[PathBuf],
    options: Options,
    say: &mut dyn FnMut(String),
) -> Result<Vec<definition::Definition>, FixError> {
    let mut defs = Vec::new();
    for file in files {
        let path = file.display().to_string();
        let bytes = std::fs::read(file).map_err(|cause| FixError::Read {
            path: file.clone(),
            cause,
        })?;
        let Ok(text) = String::from_utf8(bytes) else {
            say(format!(
                "not fixed {path}: not UTF-8 text; the file is left as it is"
            ));
            defs.extend(definition::read_all(std::slice::from_ref(file)).unwrap_or_default());
            continue;
        };
        let fixed = match fix_text(&path, &text) {
            Ok(fixed) => fixed,
            Err(Untouched::Unreadable { at, why }) => {
                say(format!(
                    "not fixed {path}:{}:{}: {why}; the file is left as it is",
                    at.0, at.1
                ));
                defs.push(definition::read(&path, &text));
                continue;
            }
        };
        let target = options
            .names
            .then(|| fixed.name.as_deref().and_then(|n| renamed(file, n)))
            .flatten();
        if let Some(to) = target.as_ref().filter(|to| to.exists()) {
            say(format!(
                "not fixed {path}: --fix-names would rename it to {}, which exists; nothing is changed in this file",
                to.display()
            ));
            defs.push(definition::read(&path, &text));
            continue;
        }
        let new_file = target.clone().unwrap_or_else(|| file.clone());
        let new_path = new_file.display().to_string();
        for e in &fixed.edits {
            say(format!("fixed {path}:{}: {}", e.line, e.what));
        }
        if let Some(to) = &target {
            say(format!("renamed {path} → {}", to.display()));
        }
        if options.dry_run {
            if !fixed.edits.is_empty() || target.is_some() {
                say(diff(&path, &new_path, &fixed)
                    .trim_end_matches('\n')
                    .to_string());
            }
        } else {
            if !fixed.edits.is_empty() {
                std::fs::write(file, &fixed.after).map_err(|cause| FixError::Write {
                    path: file.clone(),
                    cause,
                })?;
            }
            if let Some(to) = &target {
                std::fs::rename(file, to).map_err(|cause| FixError::Rename {
                    from: file.clone(),
                    to: to.clone(),
                    cause,
                })?;
            }
        }
        defs.push(definition::read(&new_path, &fixed.after));
    }
    Ok(defs)
}

/// Where `--fix-names` would move `file` for `name`: `NAME.md` beside it, when that differs.
pub fn renamed(file: &Path, name: &str) -> Option<PathBuf> {
    let target = file.with_file_name(format!("{name}.md"));
    (target != file).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_kebab_case() {
        for (from, to) in [
            ("Code Reviewer", "code-reviewer"),
            ("codeReviewer", "code-reviewer"),
            ("code_reviewer", "code-reviewer"),
            ("CodeReviewer", "code-reviewer"),
            ("  API Scanner 2 ", "api-scanner-2"),
            ("scanner--one", "scanner-one"),
        ] {
            assert_eq!(to_kebab(from), to, "{from}");
        }
        assert_eq!(to_kebab("--"), "");
    }

    #[test]
    fn each_line_keeps_its_comment_and_its_ending() {
        let text = "---\r\nname: \"Code Reviewer\" # shown\r\ntools: Read, Bash(git add, git commit) # mine\r\nsupports_plan_mode: 'yes'\r\n---\r\nBody\r\n";
        let fixed = fix_text("a.md", text).unwrap();
        assert_eq!(
            fixed.after,
            "---\r\nname: code-reviewer # shown\r\ntools: # mine\r\n  - Read\r\n  - Bash(git add, git commit)\r\nsupports_plan_mode: true\r\n---\r\nBody\r\n"
        );
        assert_eq!(
            fixed
                .edits
                .iter()
                .map(|e| e.what.as_str())
                .collect::<Vec<_>>(),
            vec![
                "name: \"Code Reviewer\" → code-reviewer",
                "tools: comma string → YAML list (2 tools)",
                "supports_plan_mode: string 'yes' → true"
            ]
        );
        assert_eq!(fixed.name.as_deref(), Some("code-reviewer"));
        let quoted = fix_text("a.md", "---\ntools: \"Read, Grep\" # c\n---\n").unwrap();
        assert_eq!(quoted.after, "---\ntools: # c\n  - Read\n  - Grep\n---\n");
    }

    #[test]
    fn a_value_the_line_does_not_hold_alone_is_left_as_it_is() {
        for text in [
            "---\nname: Code\n  Reviewer\ntools: Read,\n  Grep\n---\n",
            "---\nname: >\n  Code Reviewer\nsupports_plan_mode: |\n  true\n---\n",
        ] {
            let fixed = fix_text("a.md", text).unwrap();
            assert_eq!(fixed.edits, vec![], "{text}");
            assert_eq!(fixed.after, text);
        }
    }

    #[test]
    fn the_diff_has_its_hunks_counted() {
        let text = "---\nname: a\ntools: Read, Grep\nmodel: opus\n---\nBody\n";
        let fixed = fix_text("a.md", text).unwrap();
        assert_eq!(
            diff("a.md", "a.md", &fixed),
            "--- a/a.md\n+++ b/a.md\n@@ -1,6 +1,8 @@\n ---\n name: a\n-tools: Read, Grep\n+tools:\n+  - Read\n+  - Grep\n model: opus\n ---\n Body\n"
        );
    }

    /// A value holding an unquoted `: ` (strict YAML refuses it, Claude Code reads it) is put
    /// in quotes, escaping what must be, and the file then reads strictly; a second fix does
    /// nothing.
    #[test]
    fn a_value_holding_a_colon_is_quoted() {
        let text = "---\nname: privacy\ndescription: Use it for privacy. Triggers on: 'GDPR', \"CCPA\".\ntools: [Read] # reads\n---\nBody.\n";
        let fixed = fix_text("privacy.md", text).unwrap();
        assert_eq!(
            fixed.after,
            "---\nname: privacy\ndescription: \"Use it for privacy. Triggers on: 'GDPR', \\\"CCPA\\\".\"\ntools: [Read] # reads\n---\nBody.\n"
        );
        assert_eq!(fixed.edits.len(), 1);
        assert_eq!(
            fixed.edits[0].what,
            "description: a value holding `: ` → quoted"
        );
        let front = definition::read("privacy.md", &fixed.after).front.unwrap();
        assert!(front.lenient.is_none());
        assert_eq!(
            front.value["description"],
            "Use it for privacy. Triggers on: 'GDPR', \"CCPA\"."
        );
        assert!(fix_text("privacy.md", &fixed.after)
            .unwrap()
            .edits
            .is_empty());
    }
}
