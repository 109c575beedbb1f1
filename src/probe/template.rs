//! Request templates. In a suite's request body, a string that is exactly `{{ name }}` or
//! `{{ name(args) }}` is replaced by generated JSON (an object, a list, a string); a placeholder
//! inside a longer string is replaced by generated text.
//!
//! Generators: `task_id` and `task` (one value per run, shared by every exchange, as one
//! deliberation), `sentence`, `word`, `text(N)` (N characters), `unicode` (many scripts), and the
//! suite protocol's own generators.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

pub use super::plugin::FillError;
use super::plugin::SuiteProtocol;
use crate::content::Content;

/// Run-level values: the same task across the whole run.
#[derive(Debug, Clone)]
pub struct RunValues {
    pub task_id: String,
    pub task: String,
}

impl RunValues {
    pub fn new(seed: u64) -> RunValues {
        let mut c = Content::new(seed, "run");
        RunValues {
            task_id: c.task_id(),
            task: c.task_content(),
        }
    }
}

fn placeholder() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\{\{\s*([a-z_]+)\s*(?:\(([^)]*)\))?\s*\}\}").expect("valid regex")
    })
}

/// What a template is filled from: the run's values, the exchange's own stream of generated
/// content, and the protocol's generators.
pub struct Fill<'a> {
    pub run: &'a RunValues,
    pub content: Content,
    pub protocol: &'a dyn SuiteProtocol,
}

/// Fills a template.
pub fn render(template: &Value, f: &mut Fill<'_>) -> Result<Value, FillError> {
    match template {
        Value::String(s) => render_string(s, f),
        Value::Array(items) => items
            .iter()
            .map(|v| render(v, f))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                out.insert(k.clone(), render(v, f)?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

fn render_string(s: &str, f: &mut Fill<'_>) -> Result<Value, FillError> {
    let re = placeholder();
    if let Some(caps) = re.captures(s) {
        if caps.get(0).is_some_and(|m| m.as_str() == s.trim()) {
            return generate(&caps[1], caps.get(2).map_or("", |m| m.as_str()), f);
        }
    } else {
        return Ok(Value::String(s.to_string()));
    }
    let mut out = String::new();
    let mut last = 0;
    for caps in re.captures_iter(s) {
        let m = caps.get(0).expect("group 0 always matches");
        out.push_str(&s[last..m.start()]);
        match generate(&caps[1], caps.get(2).map_or("", |m| m.as_str()), f)? {
            Value::String(text) => out.push_str(&text),
            other => out.push_str(&other.to_string()),
        }
        last = m.end();
    }
    out.push_str(&s[last..]);
    Ok(Value::String(out))
}

/// The `want` whole numbers of a generator's arguments (`text(100)`, `synthesis(1, 2)`).
pub fn numbers(name: &str, args: &str, want: usize) -> Result<Vec<usize>, FillError> {
    let parts: Vec<&str> = args
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if parts.len() != want {
        return Err(FillError::NumberCount {
            name: name.to_string(),
            want,
            args: args.to_string(),
        });
    }
    parts
        .iter()
        .map(|p| {
            p.parse().map_err(|_| FillError::NotANumber {
                name: name.to_string(),
                args: args.to_string(),
                part: p.to_string(),
            })
        })
        .collect()
}

fn generate(name: &str, args: &str, f: &mut Fill<'_>) -> Result<Value, FillError> {
    let (run, c) = (f.run, &mut f.content);
    let no_args = |v: Value| {
        if args.trim().is_empty() {
            Ok(v)
        } else {
            Err(FillError::TakesNoArguments {
                name: name.to_string(),
            })
        }
    };
    match name {
        "task_id" => no_args(Value::String(run.task_id.clone())),
        "task" => no_args(Value::String(run.task.clone())),
        "sentence" => no_args(Value::String(c.sentence())),
        "word" => no_args(Value::String(c.word())),
        "unicode" => no_args(Value::String(c.unicode_text())),
        "text" => {
            let n = numbers(name, args, 1)?[0];
            Ok(Value::String(c.text(n)))
        }
        other => match f.protocol.generate(other, args, c) {
            Some(value) => value,
            None => {
                let mut known = "task_id, task, sentence, word, unicode, text(N)".to_string();
                if !f.protocol.generators().is_empty() {
                    known = format!("{known}, {}", f.protocol.generators());
                }
                Err(FillError::Unknown {
                    name: other.to_string(),
                    known,
                })
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A protocol with one generator: `pair(N)`, a list of N words.
    struct Pairs;

    impl SuiteProtocol for Pairs {
        fn generate(
            &self,
            name: &str,
            args: &str,
            c: &mut Content,
        ) -> Option<Result<Value, FillError>> {
            (name == "pair").then(|| {
                let n = numbers(name, args, 1)?[0];
                Ok(Value::from((0..n).map(|_| c.word()).collect::<Vec<_>>()))
            })
        }

        fn generators(&self) -> &'static str {
            "pair(N)"
        }
    }

    fn fill(t: Value) -> Result<Value, FillError> {
        let run = RunValues::new(1);
        let mut f = Fill {
            run: &run,
            content: Content::new(1, "t"),
            protocol: &Pairs,
        };
        render(&t, &mut f)
    }

    #[test]
    fn whole_values_and_inline_text() {
        let run = RunValues::new(1);
        let v = fill(json!({"id": "{{ task_id }}", "others": "{{ pair(2) }}", "s": "task {{task_id}}!", "n": 3})).unwrap();
        assert_eq!(v["id"], json!(run.task_id));
        assert_eq!(v["others"].as_array().unwrap().len(), 2);
        assert_eq!(v["s"], json!(format!("task {}!", run.task_id)));
        assert_eq!(v["n"], json!(3));
        assert_eq!(
            fill(json!("{{ text(10) }}"))
                .unwrap()
                .as_str()
                .unwrap()
                .chars()
                .count(),
            10
        );
    }

    #[test]
    fn errors_name_the_generator() {
        assert!(fill(json!("{{ nope }}"))
            .unwrap_err()
            .to_string()
            .contains("unknown generator {{ nope }}"));
        assert!(fill(json!("{{ text(x) }}"))
            .unwrap_err()
            .to_string()
            .contains("not a whole number"));
        assert!(fill(json!("{{ pair(1, 2) }}"))
            .unwrap_err()
            .to_string()
            .contains("takes 1"));
        assert!(fill(json!("{{ nope }}"))
            .unwrap_err()
            .to_string()
            .contains("text(N), pair(N))"));
    }
}
