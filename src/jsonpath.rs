//! A small path language for choosing values in a JSON document: `observations[*].evidence`,
//! `challenges[0].target_agent`, `conditions`. Used by the generic checks (evidence tags,
//! phrases, list caps) so that a suite names its fields as data. `**` alone selects every string
//! in the document (for rules that apply to all text, such as sanitization).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
    Every,
    /// `**`: every string value in the document.
    AllStrings,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

/// Why a path does not parse: `path "a..b": empty field name`. A usage error (a suite or file
/// wrote the path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path {path:?}: {what}")]
pub struct PathError {
    pub path: String,
    pub what: String,
}

impl From<PathError> for crate::error::Error {
    fn from(e: PathError) -> Self {
        crate::error::Error::Usage(e.to_string())
    }
}

/// For the loaders and rules that gather one-line messages with `?` (the message unchanged).
impl From<PathError> for String {
    fn from(e: PathError) -> Self {
        e.to_string()
    }
}

impl JsonPath {
    /// Parses `a.b[*].c[0]`; the error says where it goes wrong.
    pub fn parse(text: &str) -> Result<JsonPath, PathError> {
        let wrong = |what: String| PathError {
            path: text.to_string(),
            what,
        };
        if text == "**" {
            return Ok(JsonPath {
                text: text.to_string(),
                steps: vec![Step::AllStrings],
            });
        }
        let mut steps = Vec::new();
        for (n, part) in text.split('.').enumerate() {
            let (key, mut rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if key.is_empty() && (n > 0 || rest.is_empty()) {
                return Err(wrong("empty field name".into()));
            }
            if !key.is_empty() {
                steps.push(Step::Key(key.to_string()));
            }
            while !rest.is_empty() {
                let end = rest
                    .find(']')
                    .ok_or_else(|| wrong("'[' without ']'".into()))?;
                let inner = &rest[1..end];
                steps.push(match inner {
                    "*" => Step::Every,
                    _ => Step::Index(
                        inner
                            .parse()
                            .map_err(|_| wrong(format!("[{inner}] is neither [*] nor an index")))?,
                    ),
                });
                rest = &rest[end + 1..];
                if !rest.is_empty() && !rest.starts_with('[') {
                    return Err(wrong(format!("unexpected {rest:?} after ']'")));
                }
            }
        }
        Ok(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every value the path reaches, with its concrete path (`observations[2].evidence`).
    pub fn select<'a>(&self, root: &'a Value) -> Vec<(String, &'a Value)> {
        if self.steps == [Step::AllStrings] {
            return string_values(root);
        }
        let mut current = vec![(String::new(), root)];
        for step in &self.steps {
            let mut next = Vec::new();
            for (at, value) in current {
                match step {
                    Step::Key(k) => {
                        if let Some(v) = value.get(k) {
                            next.push((
                                if at.is_empty() {
                                    k.clone()
                                } else {
                                    format!("{at}.{k}")
                                },
                                v,
                            ));
                        }
                    }
                    Step::Index(i) => {
                        if let Some(v) = value.get(i) {
                            next.push((format!("{at}[{i}]"), v));
                        }
                    }
                    Step::Every => {
                        if let Some(items) = value.as_array() {
                            next.extend(
                                items
                                    .iter()
                                    .enumerate()
                                    .map(|(i, v)| (format!("{at}[{i}]"), v)),
                            );
                        }
                    }
                    Step::AllStrings => {}
                }
            }
            current = next;
        }
        current
    }
}

/// Every string in a document with its path, in document order (for length limits).
pub fn strings(root: &Value) -> Vec<(String, &str)> {
    string_values(root)
        .into_iter()
        .map(|(at, v)| (at, v.as_str().unwrap_or_default()))
        .collect()
}

/// Every string value in a document with its path, in document order.
fn string_values(root: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::from("$"), root)];
    while let Some((at, value)) = stack.pop() {
        match value {
            Value::String(_) => out.push((at, value)),
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate().rev() {
                    stack.push((
                        if at == "$" {
                            format!("[{i}]")
                        } else {
                            format!("{at}[{i}]")
                        },
                        v,
                    ));
                }
            }
            Value::Object(map) => {
                let entries: Vec<_> = map.iter().collect();
                for (k, v) in entries.into_iter().rev() {
                    stack.push((
                        if at == "$" {
                            k.clone()
                        } else {
                            format!("{at}.{k}")
                        },
                        v,
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_with_wildcards_and_indexes() {
        let doc =
            json!({"observations": [{"evidence": "a"}, {"evidence": "b"}, {}], "x": [[1, 2]]});
        let p = JsonPath::parse("observations[*].evidence").unwrap();
        let got: Vec<_> = p
            .select(&doc)
            .into_iter()
            .map(|(p, v)| format!("{p}={v}"))
            .collect();
        assert_eq!(
            got,
            [
                "observations[0].evidence=\"a\"",
                "observations[1].evidence=\"b\""
            ]
        );
        let p = JsonPath::parse("x[0][1]").unwrap();
        assert_eq!(p.select(&doc)[0].1, &json!(2));
    }

    #[test]
    fn bad_paths_say_why() {
        assert_eq!(
            JsonPath::parse("a[x]").unwrap_err().to_string(),
            "path \"a[x]\": [x] is neither [*] nor an index"
        );
        assert!(JsonPath::parse("a[")
            .unwrap_err()
            .to_string()
            .contains("without ']'"));
        assert!(JsonPath::parse("a[x]")
            .unwrap_err()
            .to_string()
            .contains("neither"));
        assert!(JsonPath::parse("a..b")
            .unwrap_err()
            .to_string()
            .contains("empty field"));
    }

    #[test]
    fn strings_in_document_order() {
        let doc = json!({"a": "1", "b": [{"c": "2"}, "3"]});
        let got: Vec<_> = strings(&doc)
            .into_iter()
            .map(|(p, s)| format!("{p}={s}"))
            .collect();
        assert_eq!(got, ["a=1", "b[0].c=2", "b[1]=3"]);
        let every: Vec<String> = JsonPath::parse("**")
            .unwrap()
            .select(&doc)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(every, ["a", "b[0].c", "b[1]"]);
    }
}
