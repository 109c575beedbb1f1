//! What each deliberation's answer must be (`platform.trigger.expect` in a fleet file): the
//! accepted statuses, and conditions on the JSON answer written with the path language of
//! [`crate::jsonpath`] (filters included: `votes[?agent_name == "wschema"].approve == false`).
//! A condition that does not read is a usage error naming the line and the column; one that
//! does not hold says what was found, and where.

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::jsonpath::{same, JsonPath, PathError};

/// What each trigger's answer must be.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Accepted statuses (default: any 2xx).
    #[serde(default)]
    pub status: Vec<u16>,
    /// Conditions on the JSON answer (see [`Condition`]), each with its place in the file.
    #[serde(default)]
    pub json: Vec<Spanned<String>>,
}

impl Expect {
    /// Every `json:` condition parsed; the first that does not read is the error, with its line.
    pub fn conditions(&self) -> Result<Vec<Condition>, ExpectError> {
        self.json
            .iter()
            .map(|c| {
                Condition::parse(&c.value).map_err(|source| ExpectError {
                    line: c.referenced.line(),
                    source,
                })
            })
            .collect()
    }
}

/// A condition of `platform.trigger.expect.json` that does not read, and its line in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("platform.trigger.expect.json, line {line}: {source}")]
pub struct ExpectError {
    pub line: u64,
    pub source: ConditionError,
}

/// Why a condition does not read: `condition "…", column 22: what is wrong` (the column counts
/// characters of the condition from 1, where there is one place to point at).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("condition {text:?}{}: {what}", column.map(|c| format!(", column {c}")).unwrap_or_default())]
pub struct ConditionError {
    pub text: String,
    pub column: Option<usize>,
    pub what: String,
}

/// A condition on a JSON answer (`platform.trigger.expect.json`):
///
/// - `PATH == VALUE`, `PATH != VALUE`, `PATH exists` — PATH names one value (through a filter:
///   each value the filter picks, and at least one);
/// - `PATH contains VALUE` — the values PATH selects (or the items of the one array it
///   selects) include VALUE; for a string, VALUE is a part of it;
/// - `all(PATH) OP VALUE`, `any(PATH) OP VALUE` — every one, or at least one, of those values;
///   OP is `==` or `!=`, or `<`, `<=`, `>`, `>=` with a number;
/// - `count(PATH) OP N`, OP one of `==`, `!=`, `<`, `<=`, `>`, `>=` — how many there are.
///
/// VALUE is JSON (`3`, `true`, `"a b"`, `null`) or else a bare string (`hangs`); numbers compare
/// by value (`1` is `1.0`).
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    text: String,
    path: JsonPath,
    op: Op,
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(Value),
    Ne(Value),
    Exists,
    Contains(Value),
    All(Cmp, Value),
    Any(Cmp, Value),
    Count(Cmp, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    /// Longest first, so that `<=` is not read as `<`.
    const ALL: [(&'static str, Cmp); 6] = [
        ("==", Cmp::Eq),
        ("!=", Cmp::Ne),
        ("<=", Cmp::Le),
        (">=", Cmp::Ge),
        ("<", Cmp::Lt),
        (">", Cmp::Gt),
    ];

    /// The comparison `text` starts with, and the rest.
    fn read(text: &str) -> Option<(Cmp, &str)> {
        Cmp::ALL
            .iter()
            .find_map(|(s, cmp)| text.strip_prefix(s).map(|rest| (*cmp, rest)))
    }

    fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }

    /// Whether `value` compares so with `want`: equality for any JSON, order for numbers only.
    fn meets(self, value: &Value, want: &Value) -> bool {
        match self {
            Cmp::Eq => same(value, want),
            Cmp::Ne => !same(value, want),
            _ => match (value.as_f64(), want.as_f64()) {
                (Some(a), Some(b)) => self.holds(a, b),
                _ => false,
            },
        }
    }
}

const USAGE: &str = "expected `PATH == VALUE`, `PATH != VALUE`, `PATH exists`, `PATH contains VALUE`, `all(PATH) == VALUE`, `any(PATH) == VALUE` or `count(PATH) == N`";

/// `t` with everything inside brackets blanked out (`_`), byte for byte: a filter's operators
/// and strings (`[?name == "a contains b"]`) are not the condition's own.
fn outside_brackets(t: &str) -> String {
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    t.chars()
        .map(|c| {
            let inside = depth > 0;
            if inside && quoted {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    quoted = false;
                }
            } else if inside && c == '"' {
                quoted = true;
            } else if c == '[' {
                depth += 1;
            } else if c == ']' && inside {
                depth -= 1;
            }
            if inside || depth > 0 {
                "_".repeat(c.len_utf8())
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl Condition {
    /// Reads one condition; the error names the column where there is one place to point at.
    pub fn parse(text: &str) -> Result<Condition, ConditionError> {
        let t = text.trim();
        let m = outside_brackets(t);
        // Byte offsets in `t` (and `m`, which has the same layout) to a column in `t`.
        let column = |at: usize| t[..at].chars().count() + 1;
        let wrong = |at: Option<usize>, what: String| ConditionError {
            text: t.to_string(),
            column: at.map(column),
            what,
        };
        let offset = |part: &str| part.as_ptr() as usize - t.as_ptr() as usize;
        // `name(PATH) REST`: PATH and REST (trimmed) as parts of `t`.
        let wrapped = |name: &str| -> Option<(&str, &str)> {
            let after = m.strip_prefix(name)?.trim_start();
            let open = t.len() - after.len();
            after.strip_prefix('(')?;
            let close = open + m[open..].find(')')?;
            Some((&t[open + 1..close], t[close + 1..].trim()))
        };
        let (path, op) = if let Some((path, rest)) = wrapped("count") {
            let (cmp, n) = Cmp::read(rest).ok_or_else(|| wrong(None, USAGE.into()))?;
            let n = n.trim();
            let count: usize = n.parse().map_err(|_| {
                wrong(
                    Some(offset(n)),
                    format!("count(…) compares with a whole number, not {n:?}"),
                )
            })?;
            (path, Op::Count(cmp, count))
        } else if let Some((name, (path, rest))) = wrapped("all")
            .map(|w| ("all", w))
            .or_else(|| wrapped("any").map(|w| ("any", w)))
        {
            let Some((cmp, value)) = Cmp::read(rest) else {
                return Err(wrong(
                    Some(offset(rest)),
                    format!(
                        "{name}(PATH) takes == VALUE or != VALUE, or <, <=, >, >= and a number"
                    ),
                ));
            };
            let v = literal(value);
            if !matches!(cmp, Cmp::Eq | Cmp::Ne) && !v.is_number() {
                return Err(wrong(
                    Some(offset(value.trim_start())),
                    format!("{name}(PATH) compares with <, <=, >, >= a number, not {value:?}"),
                ));
            }
            (
                path,
                if name == "all" {
                    Op::All(cmp, v)
                } else {
                    Op::Any(cmp, v)
                },
            )
        } else if m.ends_with(" exists") {
            (&t[..t.len() - " exists".len()], Op::Exists)
        } else if let Some(i) = m.find(" contains ") {
            (&t[..i], Op::Contains(literal(&t[i + " contains ".len()..])))
        } else if let Some(i) = m.find("!=") {
            (&t[..i], Op::Ne(literal(&t[i + 2..])))
        } else if let Some(i) = m.find("==") {
            (&t[..i], Op::Eq(literal(&t[i + 2..])))
        } else {
            // An unclosed bracket hides the operator: the path language says where it is.
            if t.contains('[') {
                if let Err(e) = JsonPath::parse(t) {
                    return Err(wrong(None, format!("{USAGE}; {}", e.what)).at_path(t, 0, &e));
                }
            }
            return Err(wrong(None, USAGE.into()));
        };
        let path = path.trim();
        let parsed = JsonPath::parse(path)
            .map_err(|e| wrong(None, e.what.clone()).at_path(t, offset(path), &e))?;
        if matches!(op, Op::Eq(_) | Op::Ne(_)) && parsed.selects_many() {
            return Err(wrong(
                None,
                format!(
                    "{path} selects several values, and == compares one: say all({path}) == \
                     VALUE, any({path}) == VALUE, {path} contains VALUE or count({path}) == N"
                ),
            ));
        }
        Ok(Condition {
            text: t.to_string(),
            path: parsed,
            op,
        })
    }

    /// None when it holds, else what was found.
    pub fn violation(&self, answer: &Value) -> Option<String> {
        let s = Selected::of(self, answer);
        let text = &self.text;
        match &self.op {
            Op::Exists if s.found.is_empty() => Some(s.nothing("absent")),
            Op::Exists => None,
            Op::Eq(want) | Op::Ne(want) if s.filtered => {
                s.each_equal(want, matches!(self.op, Op::Eq(_)))
            }
            Op::Eq(want) => match s.found.first() {
                Some((_, v)) if same(v, want) => None,
                Some((_, v)) => Some(format!("{text}: found {}", shown(v))),
                None => Some(format!("{text}: absent")),
            },
            Op::Ne(want) => match s.found.first() {
                Some((_, v)) if same(v, want) => Some(format!("{text}: found {}", shown(v))),
                _ => None,
            },
            Op::Contains(want) => s.contains(want),
            Op::All(cmp, want) => s.all(*cmp, want),
            Op::Any(cmp, want) => s.any(*cmp, want),
            Op::Count(cmp, n) => s.count(*cmp, *n),
        }
    }
}

/// A value as a failure shows it.
fn shown(v: &Value) -> String {
    crate::text::excerpt_str(&v.to_string(), 200)
}

/// What a condition's path selected in an answer, and how the condition's failures on it are
/// said.
struct Selected<'a> {
    condition: &'a Condition,
    answer: &'a Value,
    found: Vec<(String, &'a Value)>,
    /// The values a list operator looks at: those selected, or the items of the one array.
    items: Vec<(String, &'a Value)>,
    /// Through a filter, nothing selected is a failure that says which step found nothing;
    /// elsewhere the words are those of before filters (`absent`, `selects nothing`).
    filtered: bool,
}

impl<'a> Selected<'a> {
    fn of(condition: &'a Condition, answer: &'a Value) -> Selected<'a> {
        let found = condition.path.select(answer);
        let items: Vec<(String, &Value)> = match found.as_slice() {
            [(path, Value::Array(list))] => list
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{path}[{i}]"), v))
                .collect(),
            _ => found.iter().map(|(p, v)| (p.clone(), *v)).collect(),
        };
        Selected {
            condition,
            answer,
            found,
            items,
            filtered: condition.path.has_filter(),
        }
    }

    /// The first ten items, and how many more.
    fn listed(&self) -> String {
        let first: Vec<String> = self.items.iter().take(10).map(|(_, v)| shown(v)).collect();
        let more = self.items.len().saturating_sub(10);
        format!(
            "[{}{}]",
            first.join(", "),
            if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            }
        )
    }

    /// Nothing selected: through a filter, which step found nothing, else `plain`.
    fn nothing(&self, plain: &str) -> String {
        let text = &self.condition.text;
        match self.condition.path.why_nothing(self.answer) {
            Some(why) if self.filtered => format!("{text}: selects nothing: {why}"),
            _ => format!("{text}: {plain}"),
        }
    }

    /// `PATH == VALUE` (`equal`) or `PATH != VALUE` through a filter: on each value it picks.
    fn each_equal(&self, want: &Value, equal: bool) -> Option<String> {
        if self.found.is_empty() {
            return Some(self.nothing("absent"));
        }
        let off: Vec<&(String, &Value)> = self
            .found
            .iter()
            .filter(|(_, v)| same(v, want) != equal)
            .collect();
        // `found X (where)`, for the first of the values that fail, and how many more do.
        off.first().map(|(at, v)| {
            let more = match off.len() {
                1 => String::new(),
                n => format!(", and {} more of {}", n - 1, self.found.len()),
            };
            format!("{}: found {} ({at}){more}", self.condition.text, shown(v))
        })
    }

    fn contains(&self, want: &Value) -> Option<String> {
        let text = &self.condition.text;
        if let ([(_, Value::String(s))], Value::String(part)) = (self.found.as_slice(), want) {
            return (!s.contains(part.as_str()))
                .then(|| format!("{text}: found {}", shown(&Value::String(s.clone()))));
        }
        if self.found.is_empty() {
            return Some(self.nothing("absent"));
        }
        (!self.items.iter().any(|(_, v)| same(v, want))).then(|| {
            format!(
                "{text}: not among {}: {}",
                crate::text::count(self.items.len() as u64, "values"),
                self.listed()
            )
        })
    }

    fn all(&self, cmp: Cmp, want: &Value) -> Option<String> {
        if self.items.is_empty() {
            return Some(self.nothing("selects nothing"));
        }
        let off: Vec<&(String, &Value)> = self
            .items
            .iter()
            .filter(|(_, v)| !cmp.meets(v, want))
            .collect();
        let verb = match cmp {
            Cmp::Eq | Cmp::Ne => "differ",
            _ => "do not meet it",
        };
        off.first().map(|(path, v)| {
            format!(
                "{}: {} of {} {verb}, e.g. {path} = {}",
                self.condition.text,
                off.len(),
                self.items.len(),
                shown(v)
            )
        })
    }

    fn any(&self, cmp: Cmp, want: &Value) -> Option<String> {
        if self.items.iter().any(|(_, v)| cmp.meets(v, want)) {
            None
        } else if self.items.is_empty() {
            Some(self.nothing("selects nothing"))
        } else {
            Some(format!(
                "{}: none of {}: {}",
                self.condition.text,
                crate::text::count(self.items.len() as u64, "values"),
                self.listed()
            ))
        }
    }

    fn count(&self, cmp: Cmp, n: usize) -> Option<String> {
        let text = &self.condition.text;
        let count = self.items.len();
        (!cmp.holds(count, n)).then(|| match self.condition.path.why_nothing(self.answer) {
            Some(why) if self.filtered => format!("{text}: found {count} [] ({why})"),
            _ => format!("{text}: found {count} {}", self.listed()),
        })
    }
}

impl ConditionError {
    /// Points at the column where the path language found `e`, the path starting at byte
    /// `start` of the condition `t`.
    fn at_path(mut self, t: &str, start: usize, e: &PathError) -> ConditionError {
        self.column = Some(t[..start].chars().count() + e.column);
        self
    }
}

/// A JSON literal, or the text as a string.
fn literal(text: &str) -> Value {
    let t = text.trim();
    serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_parse_and_judge() {
        let answer = json!({"status": "completed", "votes": [{"approve": true}], "n": 3});
        let ok = [
            "status == completed",
            "n == 3",
            "n == 3.0",
            "votes[0].approve == true",
            "status exists",
            "status != failed",
        ];
        for c in ok {
            assert_eq!(Condition::parse(c).unwrap().violation(&answer), None, "{c}");
        }
        let bad = [
            ("status == failed", "found \"completed\""),
            ("missing exists", "absent"),
            ("n != 3", "found 3"),
        ];
        for (c, why) in bad {
            let v = Condition::parse(c).unwrap().violation(&answer).unwrap();
            assert!(v.contains(why), "{c}: {v}");
        }
        assert!(Condition::parse("status is completed")
            .unwrap_err()
            .to_string()
            .contains("expected"));
    }

    #[test]
    fn list_conditions_say_what_they_found() {
        let answer = json!({
            "excluded": [{"agent": "broken-json"}, {"agent": "slow"}],
            "votes": [{"approve": true}, {"approve": false}, {"approve": true}],
            "message": "two agents timed out",
            "empty": []
        });
        for ok in [
            "excluded[*].agent contains slow",
            "count(excluded) == 2",
            "count(excluded[*]) >= 2",
            "count(empty) == 0",
            "any(votes[*].approve) == false",
            "all(excluded[*].agent) != hangs",
            "message contains timed out",
            "count(missing) < 1",
        ] {
            assert_eq!(
                Condition::parse(ok).unwrap().violation(&answer),
                None,
                "{ok}"
            );
        }
        for (bad, why) in [
            (
                "excluded[*].agent contains hangs",
                "hangs: not among 2 values: [\"broken-json\", \"slow\"]",
            ),
            (
                "count(excluded) == 3",
                "count(excluded) == 3: found 2 [{\"agent\":\"broken-json\"}, {\"agent\":\"slow\"}]",
            ),
            (
                "all(votes[*].approve) == true",
                "1 of 3 differ, e.g. votes[1].approve = false",
            ),
            ("any(excluded[*].agent) == hangs", "none of 2 values"),
            ("all(empty) == 1", "selects nothing"),
            ("message contains crashed", "found \"two agents timed out\""),
        ] {
            let v = Condition::parse(bad).unwrap().violation(&answer).unwrap();
            assert!(v.contains(why), "{bad}: {v}");
        }
        // == on a wildcard compares one value: said at load, with what to write instead.
        let e = Condition::parse("excluded[*].agent == hangs")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("contains") && e.contains("all(excluded[*].agent)"),
            "{e}"
        );
        assert_eq!(
            Condition::parse("count(excluded) == many")
                .unwrap_err()
                .to_string(),
            "condition \"count(excluded) == many\", column 20: count(…) compares with a whole number, not \"many\""
        );
        assert_eq!(
            Condition::parse("all(votes) > many").unwrap_err().to_string(),
            "condition \"all(votes) > many\", column 14: all(PATH) compares with <, <=, >, >= a number, not \" many\""
        );
        assert_eq!(
            Condition::parse("any(votes) ~ 1").unwrap_err().to_string(),
            "condition \"any(votes) ~ 1\", column 12: any(PATH) takes == VALUE or != VALUE, or <, <=, >, >= and a number"
        );
    }

    /// An answer shaped as a round-table platform's (KangaKode/aiscaffold's
    /// `RoundTableResultResponse`): its own agents vote first, the fleet's after them.
    fn deliberation() -> Value {
        json!({
            "task_id": "t-1",
            "status": "completed",
            "consensus_reached": true,
            "approval_rate": 0.75,
            "analyses": [
                {"agent_name": "architect", "domain": "architecture", "confidence": 0.8},
                {"agent_name": "security", "domain": "security", "confidence": 0.9},
                {"agent_name": "wschema", "domain": "schemas", "confidence": 0.4},
            ],
            "votes": [
                {"agent_name": "architect", "approve": true, "conditions": ["add tests"], "dissent_reason": null},
                {"agent_name": "security", "approve": true, "conditions": [], "dissent_reason": null},
                {"agent_name": "skeptic", "approve": true, "conditions": [], "dissent_reason": null},
                {"agent_name": "wschema", "approve": false, "conditions": [], "dissent_reason": "the schema drifts"},
            ],
        })
    }

    #[test]
    fn filtered_conditions_hold_or_say_what_they_found() {
        let answer = deliberation();
        for ok in [
            r#"votes[?agent_name == "wschema"].approve == false"#,
            r#"votes[?agent_name == "wschema"].dissent_reason exists"#,
            r#"votes[?agent_name == "wschema"].dissent_reason contains drifts"#,
            r#"votes[?agent_name != "wschema"].approve == true"#,
            r#"votes[?agent_name == "architect"].conditions contains "add tests""#,
            r#"votes[?agent_name == "architect"].approve != false"#,
            r#"count(votes[?approve == false]) == 1"#,
            r#"count(votes[?agent_name == "nobody"]) == 0"#,
            r#"all(votes[?agent_name != "wschema"].approve) == true"#,
            r#"any(votes[?approve == true].agent_name) == skeptic"#,
            r#"all(analyses[*].confidence) >= 0.4"#,
            r#"any(analyses[?domain == "security"].confidence) > 0.85"#,
            r#"all(analyses[*].confidence) < 1"#,
            r#"any(votes[*].agent_name) == wschema"#,
            // A filter's operators and strings are not the condition's.
            r#"votes[?dissent_reason == "the schema drifts"].agent_name == wschema"#,
            r#"count(votes[?dissent_reason != "a ) b contains c == d"]) == 4"#,
        ] {
            assert_eq!(
                Condition::parse(ok).unwrap().violation(&answer),
                None,
                "{ok}"
            );
        }
        for (bad, said) in [
            (
                r#"votes[?agent_name == "wschema"].approve == true"#,
                r#"votes[?agent_name == "wschema"].approve == true: found false (votes[3].approve)"#,
            ),
            (
                r#"votes[?agent_name != "skeptic"].approve == true"#,
                r#"votes[?agent_name != "skeptic"].approve == true: found false (votes[3].approve)"#,
            ),
            (
                r#"votes[?approve == true].conditions == []"#,
                r#"votes[?approve == true].conditions == []: found ["add tests"] (votes[0].conditions)"#,
            ),
            (
                r#"votes[?approve == true].dissent_reason != null"#,
                r#"votes[?approve == true].dissent_reason != null: found null (votes[0].dissent_reason), and 2 more of 3"#,
            ),
            (
                r#"votes[?agent_name == "wschem"].approve == false"#,
                r#"votes[?agent_name == "wschem"].approve == false: selects nothing: no item of votes has agent_name == "wschem" (agent_name found: "architect", "security", "skeptic", "wschema")"#,
            ),
            (
                r#"votes[?agent_name == "wschem"].approve != true"#,
                "selects nothing: no item of votes has agent_name == \"wschem\"",
            ),
            (
                r#"votes[?agent_name == "wschem"] exists"#,
                "selects nothing: no item of votes has agent_name == \"wschem\"",
            ),
            (
                r#"votes[?agent_name == "wschem"].conditions contains x"#,
                "selects nothing: no item of votes has agent_name == \"wschem\"",
            ),
            (
                r#"all(votes[?agent_name == "wschem"].approve) == true"#,
                r#"all(votes[?agent_name == "wschem"].approve) == true: selects nothing: no item of votes has agent_name == "wschem""#,
            ),
            (
                r#"any(votes[?agent_name == "wschem"].approve) == true"#,
                "selects nothing: no item of votes has agent_name == \"wschem\"",
            ),
            (
                r#"count(votes[?agent_name == "wschem"]) == 1"#,
                r#"count(votes[?agent_name == "wschem"]) == 1: found 0 [] (no item of votes has agent_name == "wschem""#,
            ),
            (
                r#"count(votes[?approve == false]) == 0"#,
                r#"found 1 [{"agent_name":"wschema""#,
            ),
            (
                r#"all(analyses[*].confidence) > 0.5"#,
                "all(analyses[*].confidence) > 0.5: 1 of 3 do not meet it, e.g. analyses[2].confidence = 0.4",
            ),
            (
                r#"any(analyses[*].confidence) >= 1"#,
                "none of 3 values: [0.8, 0.9, 0.4]",
            ),
            (
                r#"votes[?agent_name == "wschema"].dissent_reason contains agrees"#,
                r#"found "the schema drifts""#,
            ),
        ] {
            let v = Condition::parse(bad).unwrap().violation(&answer).unwrap();
            assert!(v.contains(said), "{bad}:\n{v}");
        }
    }

    #[test]
    fn bad_filtered_conditions_name_the_column() {
        for (text, error) in [
            (
                r#"votes[?agent_name == wschema].approve == false"#,
                r#"condition "votes[?agent_name == wschema].approve == false", column 22: wschema is not a JSON value: a string is quoted, "wschema""#,
            ),
            (
                r#"  all(votes[?agent_name = "w"].approve) == true"#,
                r#"condition "all(votes[?agent_name = \"w\"].approve) == true", column 23: expected == or != after agent_name, found "=""#,
            ),
            (
                r#"count(votes[?approve == yes]) == 1"#,
                r#"condition "count(votes[?approve == yes]) == 1", column 25: yes is not a JSON value: a string is quoted, "yes""#,
            ),
            (
                r#"votes[?agent_name == "w".approve == false"#,
                r#"condition "votes[?agent_name == \"w\".approve == false", column 25: expected `PATH == VALUE`, `PATH != VALUE`, `PATH exists`, `PATH contains VALUE`, `all(PATH) == VALUE`, `any(PATH) == VALUE` or `count(PATH) == N`; expected ']' to end the filter, found ".approve == false""#,
            ),
            (
                r#"votes[?].approve exists"#,
                r#"condition "votes[?].approve exists", column 8: a filter names a field first: [?FIELD == VALUE] or [?FIELD != VALUE] (`@` is the item itself)"#,
            ),
            (
                r#"votes[*].approve == true"#,
                "condition \"votes[*].approve == true\": votes[*].approve selects several values, and == compares one: say all(votes[*].approve) == VALUE, any(votes[*].approve) == VALUE, votes[*].approve contains VALUE or count(votes[*].approve) == N",
            ),
        ] {
            assert_eq!(
                Condition::parse(text).unwrap_err().to_string(),
                error,
                "{text}"
            );
        }
    }

    #[test]
    fn a_bad_condition_names_its_line() {
        let expect: Expect = serde_saphyr::from_str(
            "status: [200]\njson:\n  - status == completed\n  - 'votes[?agent_name == x].approve == false'\n",
        )
        .unwrap();
        assert_eq!(
            expect.conditions().unwrap_err().to_string(),
            "platform.trigger.expect.json, line 4: condition \"votes[?agent_name == x].approve == false\", column 22: x is not a JSON value: a string is quoted, \"x\""
        );
    }
}
