//! An agent definition file as written: Markdown with a YAML frontmatter between `---` lines.
//! What the lint needs of it — the frontmatter as a value, where each top-level key and each
//! listed tool is (line and column, 1-based, in the file), and the body — read without ever
//! failing: whatever is wrong is said as a problem with its place.

use std::collections::BTreeMap;

use serde_json::Value;

/// A place in the file (1-based line and column).
pub type At = (usize, usize);

#[derive(Debug, Clone)]
pub struct Definition {
    /// The path as given (what findings name).
    pub path: String,
    /// The file name without `.md`.
    pub stem: String,
    pub front: Result<Front, (At, String)>,
    /// The Markdown after the frontmatter (the whole file when there is none).
    pub body: String,
    /// The line the body starts on.
    pub body_line: usize,
}

#[derive(Debug, Clone)]
pub struct Front {
    /// The frontmatter as JSON (YAML mappings, lists, scalars).
    pub value: Value,
    /// Each top-level key and where it is.
    pub keys: BTreeMap<String, At>,
    /// Each tool of a block or flow list under `tools:`, and where it is.
    pub tools: Vec<(String, At)>,
    /// Read only with the unquoted values that hold `: ` taken as quoted: strict YAML refuses
    /// such a frontmatter, Claude Code reads it with a fallback. Where, and the strict error.
    pub lenient: Option<(At, String)>,
}

impl Front {
    /// Where `key` is, or the frontmatter's opening line.
    pub fn at(&self, key: &str) -> At {
        self.keys.get(key).copied().unwrap_or((1, 1))
    }
}

/// Whether a file looks like a definition: it starts with a frontmatter fence.
pub fn has_frontmatter(text: &str) -> bool {
    text.trim_start_matches('\u{feff}').starts_with("---")
}

pub fn read(path: &str, text: &str) -> Definition {
    let stem = std::path::Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = text.trim_start_matches('\u{feff}');
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Definition {
            path: path.into(),
            stem,
            front: Err((
                (1, 1),
                "no frontmatter: the file must begin with a `---` line, the YAML, and a closing `---`"
                    .into(),
            )),
            body: text.into(),
            body_line: 1,
        };
    }
    let Some(close) = lines
        .iter()
        .skip(1)
        .position(|l| matches!(l.trim_end(), "---" | "..."))
        .map(|i| i + 1)
    else {
        return Definition {
            path: path.into(),
            stem,
            front: Err((
                (1, 1),
                "the frontmatter is never closed (no second `---` line)".into(),
            )),
            body: String::new(),
            body_line: lines.len() + 1,
        };
    };
    let yaml = lines[1..close].join("\n");
    let body = lines[close + 1..].join("\n");
    Definition {
        path: path.into(),
        stem,
        front: parse(&yaml, &lines[1..close]),
        body,
        body_line: close + 2,
    }
}

/// The frontmatter's YAML (its first line is the file's line 2). One that strict YAML refuses
/// only for unquoted values holding `: ` is read again with those values quoted, and says so
/// (`Front::lenient`): Claude Code reads such a file, strict YAML tools do not.
fn parse(yaml: &str, lines: &[&str]) -> Result<Front, (At, String)> {
    let strict = parse_strict(yaml, lines);
    let Err((at, message)) = &strict else {
        return strict;
    };
    if !message.ends_with(COLON_HINT) {
        return strict;
    }
    let quoted: Vec<String> = lines.iter().map(|l| quote_colon_value(l)).collect();
    let quoted_refs: Vec<&str> = quoted.iter().map(String::as_str).collect();
    match parse_strict(&quoted.join("\n"), &quoted_refs) {
        Ok(front) => Ok(Front {
            lenient: Some((*at, message.clone())),
            ..front
        }),
        Err(_) => strict,
    }
}

/// What a strict YAML error caused by an unquoted `: ` in a value ends with.
const COLON_HINT: &str = " (the value holds `: `: put it in quotes, e.g. `description: \"…\"`)";

/// `key: value with: a colon` as `key: "value with: a colon"` (a top-level line whose plain
/// value holds `: `); any other line as it is.
pub fn quote_colon_value(line: &str) -> String {
    let Some((key, value)) = line.split_once(": ") else {
        return line.to_string();
    };
    let value = value.trim();
    let plain = !value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!']);
    if line.starts_with([' ', '\t', '-', '#']) || !value.contains(": ") || !plain {
        return line.to_string();
    }
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    format!("{key}: \"{escaped}\"")
}

/// The frontmatter's YAML, read strictly.
fn parse_strict(yaml: &str, lines: &[&str]) -> Result<Front, (At, String)> {
    let value: Value = serde_saphyr::from_str(yaml).map_err(|e| {
        let message = e.to_string();
        // The parser counts from the frontmatter's first line, the file's line 2; its own
        // place is dropped from the message, which is given the file's.
        let place = yaml_place(&message).map_or((1, 1), |(l, c)| (l + 1, c));
        let said = PLACE_PREFIX.replace(first_line(&message), "").into_owned();
        // A bracket left open makes the parser stop lines later, at the next key: the place
        // to fix is the bracket, so the finding points there and says where the parser stopped.
        match unclosed_bracket(lines, place.0) {
            Some((at, bracket)) => (
                at,
                format!(
                    "invalid YAML: the `{bracket}` opened at line {}, column {} is never closed \
                     (the parser stopped at line {}, column {}: {said})",
                    at.0, at.1, place.0, place.1
                ),
            ),
            None => {
                // The most common break in the wild: a `: ` inside an unquoted value.
                let colon = lines
                    .get(place.0.wrapping_sub(2))
                    .and_then(|l| l.split_once(": "))
                    .is_some_and(|(key, value)| {
                        !key.starts_with([' ', '-'])
                            && value.contains(": ")
                            && !value.starts_with(['"', '\''])
                    });
                let hint = if colon { COLON_HINT } else { "" };
                (place, format!("invalid YAML: {said}{hint}"))
            }
        }
    })?;
    if !value.is_object() {
        return Err((
            (2, 1),
            format!(
                "the frontmatter is {}, not a mapping of fields",
                kind(&value)
            ),
        ));
    }
    let mut keys = BTreeMap::new();
    let mut tools = Vec::new();
    let mut in_tools = false;
    for (i, line) in lines.iter().enumerate() {
        let at_line = i + 2;
        let top = !line.starts_with([' ', '\t', '-', '#']) && !line.trim().is_empty();
        if top {
            in_tools = false;
            if let Some((key, rest)) = line.split_once(':') {
                let key = key.trim().trim_matches(['"', '\'']).to_string();
                keys.entry(key.clone()).or_insert((at_line, 1));
                if key == "tools" {
                    in_tools = true;
                    let offset = line.len() - rest.len();
                    let rest_trim = rest.trim_start();
                    let start = offset + (rest.len() - rest_trim.len());
                    if let Some(inner) = rest_trim.strip_prefix('[') {
                        // A flow list: `tools: [Read, Grep]`.
                        let mut col = start + 2;
                        for item in inner.trim_end().trim_end_matches(']').split(',') {
                            let lead = item.len() - item.trim_start().len();
                            let name = unquote(item.trim());
                            if !name.is_empty() {
                                tools.push((name, (at_line, col + lead)));
                            }
                            col += item.len() + 1;
                        }
                        in_tools = false;
                    } else if !rest_trim.is_empty() {
                        // A scalar (`tools: Read, Grep`): the standard's type error at the key;
                        // Claude Code's comma-separated names, each placed.
                        tools.extend(comma_names(rest_trim, at_line, start + 1));
                        in_tools = false;
                    }
                }
            }
        } else if in_tools {
            let trimmed = line.trim_start();
            if let Some(item) = trimmed.strip_prefix('-') {
                let col =
                    line.len() - trimmed.len() + 1 + (item.len() - item.trim_start().len()) + 1;
                let name = unquote(item.trim());
                if !name.is_empty() {
                    tools.push((name, (at_line, col)));
                }
            }
        }
    }
    Ok(Front {
        value,
        keys,
        tools,
        lenient: None,
    })
}

/// The names of a comma-separated scalar (`Read, Bash(git add, git commit)`, quoted or not)
/// that starts at `column` of `line`, each with its place; commas inside brackets do not split.
pub fn comma_names(scalar: &str, line: usize, column: usize) -> Vec<(String, At)> {
    if scalar.starts_with(['|', '>', '[', '{']) {
        // A block scalar (the names on the lines below) or a flow collection: not placed here.
        return Vec::new();
    }
    let (text, mut col) = match scalar.chars().next() {
        Some(q @ ('"' | '\'')) => (scalar[1..].split(q).next().unwrap_or(""), column + 1),
        _ => (scalar.split(" #").next().unwrap_or(scalar), column),
    };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut item = String::new();
    let mut item_col = col;
    let mut push = |item: &mut String, item_col: usize| {
        let lead = item.len() - item.trim_start().len();
        let name = item.trim();
        if !name.is_empty() {
            out.push((name.to_string(), (line, item_col + lead)));
        }
        item.clear();
    };
    for c in text.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        col += c.len_utf8();
        if c == ',' && depth == 0 {
            push(&mut item, item_col);
            item_col = col;
        } else {
            item.push(c);
        }
    }
    push(&mut item, item_col);
    out
}

/// The flow bracket (`[` or `{`) still open after the frontmatter's lines before the file's
/// line `stop`, and where it was opened (file line and column). Brackets count where a flow
/// collection can begin (a value's start, or inside one), not within plain text or quotes, or
/// after a comment's `#`.
fn unclosed_bracket(lines: &[&str], stop: usize) -> Option<(At, char)> {
    let mut open: Vec<(At, char)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let at_line = i + 2;
        if at_line >= stop {
            break;
        }
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        let mut escaped = false;
        for (col, c) in line.char_indices() {
            if let Some(q) = quote {
                if escaped {
                    escaped = false;
                } else if q == '"' && c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                prev = c;
                continue;
            }
            let value_start = matches!(prev, ' ' | '\t' | ':' | ',' | '[' | '{' | '-');
            match c {
                '#' if prev == ' ' || col == 0 => break,
                '"' | '\'' if value_start => quote = Some(c),
                '[' | '{' if value_start || !open.is_empty() => open.push(((at_line, col + 1), c)),
                ']' | '}' if !open.is_empty() => {
                    open.pop();
                }
                _ => {}
            }
            prev = if c.is_whitespace() { ' ' } else { c };
        }
    }
    open.first().copied()
}

static PLACE_PREFIX: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"^(error: )?line \d+(,? column \d+)?: ").expect("a valid regex")
});

fn unquote(s: &str) -> String {
    s.trim_matches(['"', '\'']).to_string()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// `line N column M` (or `line N`) in a YAML error message.
fn yaml_place(message: &str) -> Option<At> {
    static PLACE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"line (\d+)(?:,? column (\d+))?").expect("a valid regex")
    });
    let c = PLACE.captures(message)?;
    let line = c.get(1)?.as_str().parse().ok()?;
    let column = c.get(2).and_then(|m| m.as_str().parse().ok()).unwrap_or(1);
    Some((line, column))
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Why definition files could not be found or read: a usage error (the paths are the user's;
/// nothing was linted or run).
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    /// A path given, or a directory under it, that cannot be looked at or walked.
    #[error("{}: {cause}", path.display())]
    Find {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    /// A definition file that cannot be read.
    #[error("{}: {cause}", path.display())]
    Read {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
}

impl crate::error::LayerError for DefinitionError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            DefinitionError::Find { .. } | DefinitionError::Read { .. } => Class::Usage,
        }
    }
}

/// Reads each of `files` (lossily decoded: a stray byte is the lint's business, not a read error).
pub fn read_all(files: &[std::path::PathBuf]) -> Result<Vec<Definition>, DefinitionError> {
    files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).map_err(|cause| DefinitionError::Read {
                path: f.clone(),
                cause,
            })?;
            Ok(read(
                &f.display().to_string(),
                &String::from_utf8_lossy(&bytes),
            ))
        })
        .collect()
}

impl Definition {
    /// The frontmatter's `name`, when it has one (a string).
    pub fn name(&self) -> Option<&str> {
        self.front.as_ref().ok()?.value["name"].as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_tools_are_placed_where_they_are_written() {
        let text = "---\nname: scanner\ndescription: \"Scan code.\"\ntools:\n  - Read\n  - \"Grep\"\nmodel: opus\n---\n\n# Body\n";
        let d = read("agents/scanner.md", text);
        let front = d.front.unwrap();
        assert_eq!(d.stem, "scanner");
        assert_eq!(front.at("name"), (2, 1));
        assert_eq!(front.at("model"), (7, 1));
        assert_eq!(
            front.tools,
            vec![("Read".to_string(), (5, 5)), ("Grep".to_string(), (6, 5))]
        );
        assert_eq!(d.body_line, 9);
        assert!(d.body.contains("# Body"));
        let flow = read("x.md", "---\ntools: [Read,  Bash]\n---\n");
        assert_eq!(
            flow.front.unwrap().tools,
            vec![("Read".to_string(), (2, 9)), ("Bash".to_string(), (2, 16))]
        );
    }

    #[test]
    fn what_is_wrong_says_where() {
        assert_eq!(
            read("x.md", "# no frontmatter\n").front.unwrap_err().0,
            (1, 1)
        );
        assert!(read("x.md", "---\nname: a\n")
            .front
            .unwrap_err()
            .1
            .contains("never closed"));
        let list = read("x.md", "---\n- a\n- b\n---\n").front.unwrap_err();
        assert!(list.1.contains("a list, not a mapping"), "{}", list.1);
        let bad = read("x.md", "---\nname: a\ntools: [Read\n---\n")
            .front
            .unwrap_err();
        assert!(bad.1.starts_with("invalid YAML"), "{}", bad.1);
        assert!(bad.0 .0 >= 2, "{:?}", bad.0);
    }

    #[test]
    fn an_unclosed_bracket_is_reported_where_it_opened() {
        // The parser stops at the next key (line 5); the mistake is the `[` of line 4.
        let text = "---\nname: scanner\ndescription: Scan code.\ntools: [Read, Grep\nmodel: opus\n---\nBody.\n";
        let (at, message) = read("x.md", text).front.unwrap_err();
        assert_eq!(at, (4, 8), "{message}");
        assert!(
            message.starts_with("invalid YAML: the `[` opened at line 4, column 8 is never closed (the parser stopped at line 5, column"),
            "{message}"
        );
        // An unquoted `: ` in a value: the parser's place, and what to do; the frontmatter is
        // read with that value quoted (as Claude Code reads it), and says so.
        let text = "---\nname: planner\ndescription: Plan work. Note: it never edits files.\n---\n";
        let front = read("x.md", text).front.unwrap();
        assert_eq!(
            front.value["description"],
            "Plan work. Note: it never edits files."
        );
        let (at, message) = front.lenient.unwrap();
        assert_eq!(at.0, 3, "{message}");
        assert!(
            message
                .ends_with("(the value holds `: `: put it in quotes, e.g. `description: \"…\"`)"),
            "{message}"
        );
        // Brackets closed, quoted or in a comment are not the mistake: the parser's place stays.
        let text = "---\nname: \"a [b\" # c [d\ntools: [Read]\nmodel: - x\n---\n";
        let (at, message) = read("x.md", text).front.unwrap_err();
        assert!(!message.contains("never closed"), "{message}");
        assert_eq!(at.0, 4, "{message}");
    }

    #[test]
    fn a_comma_separated_tools_string_is_placed_name_by_name() {
        let d = read(
            "x.md",
            "---\ntools: Read, Bash(git add, git commit),  Grep # mine\n---\n",
        );
        assert_eq!(
            d.front.unwrap().tools,
            vec![
                ("Read".to_string(), (2, 8)),
                ("Bash(git add, git commit)".to_string(), (2, 14)),
                ("Grep".to_string(), (2, 42)),
            ]
        );
        let quoted = read("x.md", "---\ntools: \"Read, Grep\"\n---\n");
        assert_eq!(
            quoted.front.unwrap().tools,
            vec![("Read".to_string(), (2, 9)), ("Grep".to_string(), (2, 15))]
        );
    }
}
