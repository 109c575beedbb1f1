//! A small path language for choosing values in a JSON document: `observations[*].evidence`,
//! `challenges[0].target_agent`, `conditions`. Used by the generic checks (evidence tags,
//! phrases, list caps) so that a suite names its fields as data. `**` alone selects every string
//! in the document (for rules that apply to all text, such as sanitization).
//!
//! A filter picks the items of a list by one of their fields: `votes[?agent_name == "wschema"]`
//! (or `!=`), compared with a JSON literal (`"text"`, `3`, `0.5`, `true`, `null`); `@` is the item
//! itself (`tags[?@ == "security"]`), and the field may be a path with filters of its own
//! (`votes[?reviews[?by == "a"].ok == true]`). An item without the field is selected by neither
//! `==` nor `!=`: a filter never picks an item for what it lacks.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use serde_json::Value;

/// How many parsed paths a thread keeps ([`JsonPath::cached`]).
pub const CACHED: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
    Every,
    /// `**`: every string value in the document.
    AllStrings,
    /// `[?FIELD == VALUE]`: the items of a list that meet the filter.
    Filter(Filter),
}

/// `[?FIELD == VALUE]` or `[?FIELD != VALUE]`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Filter {
    /// Relative to the item; no steps: `@`, the item itself.
    field: JsonPath,
    equal: bool,
    value: Value,
}

impl Filter {
    /// Whether `item` is selected: its field is there and equals (or differs from) the value.
    fn holds(&self, item: &Value) -> bool {
        let found = self.field.select(item);
        !found.is_empty() && found.iter().any(|(_, v)| same(v, &self.value)) == self.equal
    }

    /// `agent_name == "wschema"`, for messages.
    fn describe(&self) -> String {
        format!(
            "{} {} {}",
            self.field.as_str(),
            if self.equal { "==" } else { "!=" },
            self.value
        )
    }
}

/// JSON equality, except that numbers compare by value (`1` and `1.0` are the same).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

/// Why a path does not parse: `path "a..b", column 3: empty field name`. A usage error (a suite
/// or file wrote the path). `column` counts characters from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path {path:?}, column {column}: {what}")]
pub struct PathError {
    pub path: String,
    pub column: usize,
    pub what: String,
}

impl crate::error::LayerError for PathError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// For the loaders and rules that gather one-line messages with `?` (the message unchanged).
impl From<PathError> for String {
    fn from(e: PathError) -> Self {
        e.to_string()
    }
}

/// Reads a path left to right; `pos` is a byte offset into `text`.
struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn wrong(&self, at: usize, what: impl Into<String>) -> PathError {
        PathError {
            path: self.text.to_string(),
            column: self.text[..at].chars().count() + 1,
            what: what.into(),
        }
    }

    fn skip_spaces(&mut self) {
        self.pos = self.text.len() - self.rest().trim_start().len();
    }

    /// Fields and brackets up to the end of the text; `nested` (a filter's field): up to what
    /// cannot continue a field (a space, an operator, `]`).
    fn steps(&mut self, nested: bool) -> Result<Vec<Step>, PathError> {
        let mut steps = Vec::new();
        let mut first = true;
        loop {
            let key_at = self.pos;
            if nested && first && self.peek() == Some('@') {
                self.pos += 1;
            } else {
                let key = self.key(nested);
                if key.is_empty() && (!first || self.peek() != Some('[')) {
                    return Err(self.wrong(key_at, "empty field name"));
                }
                if !key.is_empty() {
                    steps.push(Step::Key(key.to_string()));
                }
            }
            while self.peek() == Some('[') {
                steps.push(self.bracket()?);
            }
            first = false;
            match self.peek() {
                None => return Ok(steps),
                Some('.') => self.pos += 1,
                Some(_) if nested => return Ok(steps),
                Some(_) => {
                    return Err(
                        self.wrong(self.pos, format!("unexpected {:?} after ']'", self.rest()))
                    )
                }
            }
        }
    }

    /// A field name: up to `.` or `[` (in a filter, also up to a space, an operator or `]`).
    fn key(&mut self, nested: bool) -> &'a str {
        let ends = |c: char| {
            c == '.'
                || c == '['
                || (nested && (c == ']' || c.is_whitespace() || "=!<>".contains(c)))
        };
        let rest = self.rest();
        let len = rest.find(ends).unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    /// `[*]`, `[N]` or `[?FIELD OP VALUE]`, from its `[`.
    fn bracket(&mut self) -> Result<Step, PathError> {
        let open = self.pos;
        self.pos += 1;
        if self.peek() == Some('?') {
            self.pos += 1;
            return self.filter(open).map(Step::Filter);
        }
        let Some(len) = self.rest().find(']') else {
            return Err(self.wrong(open, "'[' without ']'"));
        };
        let inner = &self.rest()[..len];
        let step = match inner {
            "*" => Step::Every,
            _ => Step::Index(inner.parse().map_err(|_| {
                self.wrong(
                    open + 1,
                    format!("[{inner}] is neither [*], an index nor a filter [?FIELD == VALUE]"),
                )
            })?),
        };
        self.pos += len + 1;
        Ok(step)
    }

    /// The filter after `[?`, up to and with its `]`.
    fn filter(&mut self, open: usize) -> Result<Filter, PathError> {
        const SHAPE: &str = "[?FIELD == VALUE] or [?FIELD != VALUE]";
        self.skip_spaces();
        let field_at = self.pos;
        if matches!(self.peek(), None | Some('=' | '!' | ']')) {
            return Err(self.wrong(
                field_at,
                format!("a filter names a field first: {SHAPE} (`@` is the item itself)"),
            ));
        }
        let steps = self.steps(true)?;
        let field = JsonPath {
            text: self.text[field_at..self.pos].to_string(),
            steps,
        };
        self.skip_spaces();
        let op_at = self.pos;
        let equal = if self.rest().starts_with("==") {
            true
        } else if self.rest().starts_with("!=") {
            false
        } else {
            let found = self.rest().split_whitespace().next().unwrap_or_default();
            return Err(self.wrong(
                op_at,
                if found.is_empty() {
                    format!("the filter ends after {}: {SHAPE}", field.text)
                } else {
                    format!("expected == or != after {}, found {found:?}", field.text)
                },
            ));
        };
        self.pos += 2;
        self.skip_spaces();
        let value = self.literal()?;
        self.skip_spaces();
        match self.peek() {
            Some(']') => self.pos += 1,
            None => return Err(self.wrong(open, "'[' without ']'")),
            Some(_) => {
                return Err(self.wrong(
                    self.pos,
                    format!("expected ']' to end the filter, found {:?}", self.rest()),
                ))
            }
        }
        Ok(Filter {
            field,
            equal,
            value,
        })
    }

    /// A JSON string, number, boolean or null.
    fn literal(&mut self) -> Result<Value, PathError> {
        let at = self.pos;
        let rest = self.rest();
        if rest.starts_with('"') {
            let mut escaped = false;
            let close = rest.char_indices().skip(1).find_map(|(i, c)| {
                let closes = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                closes.then_some(i)
            });
            let Some(close) = close else {
                return Err(self.wrong(at, "a string without its closing '\"'"));
            };
            let quoted = &rest[..=close];
            let value = serde_json::from_str(quoted)
                .map_err(|e| self.wrong(at, format!("{quoted} is not a JSON string: {e}")))?;
            self.pos += close + 1;
            return Ok(value);
        }
        let len = rest
            .find(|c: char| c.is_whitespace() || c == ']')
            .unwrap_or(rest.len());
        let token = &rest[..len];
        if token.is_empty() {
            return Err(self.wrong(
                at,
                "a filter compares with a value: \"text\", a number, true, false or null",
            ));
        }
        match serde_json::from_str::<Value>(token) {
            Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => {
                self.pos += len;
                Ok(v)
            }
            _ => Err(self.wrong(
                at,
                format!("{token} is not a JSON value: a string is quoted, \"{token}\""),
            )),
        }
    }
}

impl JsonPath {
    /// Parses `a.b[*].c[0]` and `votes[?agent_name == "x"].approve`; the error says where
    /// (the column) it goes wrong.
    pub fn parse(text: &str) -> Result<JsonPath, PathError> {
        if text == "**" {
            return Ok(JsonPath {
                text: text.to_string(),
                steps: vec![Step::AllStrings],
            });
        }
        let steps = Parser { text, pos: 0 }.steps(false)?;
        Ok(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the path may select several values (`[*]`, `**`; a filter picks items, but a
    /// condition on it is meant for the one it names).
    pub fn selects_many(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s, Step::Every | Step::AllStrings))
    }

    /// Whether the path has a filter (`[?…]`).
    pub fn has_filter(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Filter(_)))
    }

    /// The path `text` parsed, kept for the thread: a judge reads the same few paths in every
    /// answer, and parsing them each time was a fiftieth of its work. Up to [`CACHED`] paths
    /// are kept (then the cache starts again).
    pub fn cached(text: &str) -> Result<Rc<JsonPath>, PathError> {
        thread_local! {
            static PATHS: RefCell<HashMap<String, Rc<JsonPath>>> = RefCell::new(HashMap::new());
        }
        if let Some(path) = PATHS.with(|p| p.borrow().get(text).cloned()) {
            return Ok(path);
        }
        let path = Rc::new(JsonPath::parse(text)?);
        PATHS.with(|p| {
            let mut paths = p.borrow_mut();
            if paths.len() >= CACHED {
                paths.clear();
            }
            paths.insert(text.to_string(), Rc::clone(&path));
        });
        Ok(path)
    }

    /// Calls `f` with every value the path reaches and its place (as [`select`] gives them),
    /// in the same order, rendering no place it is not asked for.
    ///
    /// [`select`]: Self::select
    pub fn each<'v>(&self, root: &'v Value, f: &mut impl FnMut(&Place<'_>, &'v Value)) {
        fn go<'v>(
            steps: &[Step],
            at: &Place<'_>,
            value: &'v Value,
            f: &mut impl FnMut(&Place<'_>, &'v Value),
        ) {
            let Some((step, rest)) = steps.split_first() else {
                f(at, value);
                return;
            };
            match step {
                Step::Key(k) => {
                    if let Some(v) = value.get(k) {
                        go(rest, &Place::Key(at, k), v, f);
                    }
                }
                Step::Index(i) => {
                    if let Some(v) = value.get(i) {
                        go(rest, &Place::Index(at, *i), v, f);
                    }
                }
                Step::Every | Step::Filter(_) => {
                    for (i, v) in value.as_array().into_iter().flatten().enumerate() {
                        if let Step::Filter(filter) = step {
                            if !filter.holds(v) {
                                continue;
                            }
                        }
                        go(rest, &Place::Index(at, i), v, f);
                    }
                }
                Step::AllStrings => {}
            }
        }
        match self.steps.as_slice() {
            [Step::AllStrings] => each_string_value(root, f),
            // The document itself: `select` names its place "".
            [] => go(&[], &Place::Rendered(""), root, f),
            steps => go(steps, &Place::Root, root, f),
        }
    }

    /// Calls `f` with every string the path reaches and its place (as [`select`] writes it),
    /// in the same order, rendering no place it is not asked for.
    ///
    /// [`select`]: Self::select
    pub fn each_string<'v>(&self, root: &'v Value, f: &mut impl FnMut(&Place<'_>, &'v str)) {
        self.each(root, &mut |at, value| {
            if let Value::String(s) = value {
                f(at, s);
            }
        });
    }

    /// Every value the path reaches, with its concrete path (`observations[2].evidence`).
    pub fn select<'a>(&self, root: &'a Value) -> Vec<(String, &'a Value)> {
        if self.steps == [Step::AllStrings] {
            return string_values(root);
        }
        let mut current = vec![(String::new(), root)];
        for step in &self.steps {
            current = apply(step, current);
        }
        current
    }

    /// When the path selects nothing in `root`, why: the first step that found nothing, and
    /// for a filter, the values the field had (`no item of votes has agent_name == "x"
    /// (agent_name found: "a", "b")`). None when it selects something.
    pub fn why_nothing(&self, root: &Value) -> Option<String> {
        if self.steps == [Step::AllStrings] {
            return string_values(root)
                .is_empty()
                .then(|| "the document holds no string".to_string());
        }
        let mut current = vec![(String::new(), root)];
        for step in &self.steps {
            let next = apply(step, current.clone());
            if next.is_empty() {
                return Some(explain(step, &current));
            }
            current = next;
        }
        None
    }
}

/// The values one step reaches from each of `current`.
fn apply<'a>(step: &Step, current: Vec<(String, &'a Value)>) -> Vec<(String, &'a Value)> {
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
            Step::Every | Step::Filter(_) => {
                if let Some(items) = value.as_array() {
                    next.extend(
                        items
                            .iter()
                            .enumerate()
                            .filter(|(_, v)| match step {
                                Step::Filter(f) => f.holds(v),
                                _ => true,
                            })
                            .map(|(i, v)| (format!("{at}[{i}]"), v)),
                    );
                }
            }
            Step::AllStrings => {}
        }
    }
    next
}

/// Why `step` found nothing from `current` (which is not empty).
fn explain(step: &Step, current: &[(String, &Value)]) -> String {
    let name = |at: &str| {
        if at.is_empty() {
            "the document".to_string()
        } else {
            at.to_string()
        }
    };
    let (first_at, first) = (&current[0].0, current[0].1);
    let here = match current.len() {
        1 => name(first_at),
        n => format!("{} (and {} more)", name(first_at), n - 1),
    };
    let lists: Vec<&Vec<Value>> = current.iter().filter_map(|(_, v)| v.as_array()).collect();
    match step {
        Step::Key(k) => format!("{here} has no {k}"),
        Step::Index(i) => match first.as_array() {
            Some(items) => format!("{here} has no item [{i}] (it has {})", items.len()),
            None => format!("{here} is not a list"),
        },
        _ if lists.is_empty() => format!("{here} is not a list"),
        _ if lists.iter().all(|l| l.is_empty()) => format!("{here} is an empty list"),
        Step::Filter(f) => {
            let items = lists.iter().flat_map(|l| l.iter());
            let (mut values, mut without) = (Vec::new(), 0usize);
            for item in items {
                let found = f.field.select(item);
                if found.is_empty() {
                    without += 1;
                }
                for (_, v) in found {
                    let shown = crate::text::excerpt_str(&v.to_string(), 60);
                    if !values.contains(&shown) {
                        values.push(shown);
                    }
                }
            }
            let field = f.field.as_str();
            let mut seen = Vec::new();
            if !values.is_empty() {
                let more = values.len().saturating_sub(10);
                seen.push(format!(
                    "{field} found: {}{}",
                    values[..values.len().min(10)].join(", "),
                    if more > 0 {
                        format!(", … {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
            if without > 0 {
                seen.push(format!(
                    "{} without {field}",
                    crate::text::count(without as u64, "items")
                ));
            }
            format!(
                "no item of {here} has {} ({})",
                f.describe(),
                seen.join("; ")
            )
        }
        Step::Every | Step::AllStrings => format!("{here} is an empty list"),
    }
}

/// Every string in a document with its path, in document order (for length limits).
pub fn strings(root: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    each_string(root, &mut |at, s| out.push((at.to_string(), s)));
    out
}

/// Every string value in a document with its path, in document order.
fn string_values(root: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    each_string_value(root, &mut |at, value| out.push((at.to_string(), value)));
    out
}

/// Where a value sits in a document, rendered only when asked for (`observations[2].evidence`;
/// `$` for the root itself): a judge reads every string of every answer, and needs the path of
/// the few it finds fault with.
#[derive(Clone, Copy)]
pub enum Place<'p> {
    Root,
    Key(&'p Place<'p>, &'p str),
    Index(&'p Place<'p>, usize),
    /// A path already rendered.
    Rendered(&'p str),
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Root => f.write_str("$"),
            Place::Rendered(at) => f.write_str(at),
            Place::Key(Place::Root, key) => f.write_str(key),
            Place::Index(Place::Root, i) => write!(f, "[{i}]"),
            Place::Key(parent, key) => write!(f, "{parent}.{key}"),
            Place::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// Calls `f` with every string of a document and its place, in document order, allocating
/// nothing. Deep documents are bounded by the parser (serde_json stops at 128 levels).
pub fn each_string<'v>(root: &'v Value, f: &mut impl FnMut(&Place<'_>, &'v str)) {
    each_string_value(root, &mut |at, value| {
        if let Value::String(s) = value {
            f(at, s)
        }
    });
}

fn each_string_value<'v>(root: &'v Value, f: &mut impl FnMut(&Place<'_>, &'v Value)) {
    fn walk<'v>(at: &Place<'_>, value: &'v Value, f: &mut impl FnMut(&Place<'_>, &'v Value)) {
        match value {
            Value::String(_) => f(at, value),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(&Place::Index(at, i), item, f);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    walk(&Place::Key(at, key), item, f);
                }
            }
            _ => {}
        }
    }
    walk(&Place::Root, root, f);
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
            "path \"a[x]\", column 3: [x] is neither [*], an index nor a filter [?FIELD == VALUE]"
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

    /// `each` and `each_string`, which render a place only when asked, reach the values and
    /// strings `select` does, in its order, at the places it writes (and `**` those of
    /// `strings`); a cached path is the path parsed.
    #[test]
    fn each_string_walks_as_select_does() {
        let doc = json!({"a": "1", "b": [{"c": "2", "d": 3}, "3", ["4", {"e": "5"}]],
            "votes": votes()["votes"], "s": "top"});
        let paths = [
            "a",
            "b[0].c",
            "b[*]",
            "b[2][*]",
            "b[2][1].e",
            "b[*].c",
            "d",
            "b[9]",
            "**",
            "votes[?agent_name == \"sec\"].agent_name",
            "votes[?approve != true].reviews[*].by",
            "votes[*].tags[0]",
            "s",
        ];
        for path in paths {
            let path = JsonPath::parse(path).unwrap();
            let selected: Vec<String> = path
                .select(&doc)
                .into_iter()
                .filter_map(|(at, v)| Some(format!("{at}={}", v.as_str()?)))
                .collect();
            let mut walked = Vec::new();
            path.each_string(&doc, &mut |at, s| walked.push(format!("{at}={s}")));
            assert_eq!(walked, selected, "{}", path.as_str());
            let every: Vec<String> = path
                .select(&doc)
                .into_iter()
                .map(|(at, v)| format!("{at}={v}"))
                .collect();
            let mut each = Vec::new();
            JsonPath::cached(path.as_str())
                .unwrap()
                .each(&doc, &mut |at, v| each.push(format!("{at}={v}")));
            assert_eq!(each, every, "{}", path.as_str());
        }
        assert!(JsonPath::cached("a[").is_err());
        assert!(!JsonPath::parse("b[*].c").unwrap().select(&doc).is_empty());
        let mut all = Vec::new();
        each_string(&doc, &mut |at, s| all.push((at.to_string(), s)));
        assert_eq!(all, strings(&doc));
        // The document itself, when it is a string.
        let mut root = Vec::new();
        each_string(&json!("x"), &mut |at, s| root.push(format!("{at}={s}")));
        assert_eq!(root, ["$=x"]);
        assert_eq!(strings(&json!("x")), [("$".to_string(), "x")]);
    }

    fn picked(path: &str, doc: &Value) -> Vec<String> {
        JsonPath::parse(path)
            .unwrap()
            .select(doc)
            .into_iter()
            .map(|(p, v)| format!("{p}={v}"))
            .collect()
    }

    fn votes() -> Value {
        json!({"votes": [
            {"agent_name": "arch", "approve": true, "confidence": 0.5},
            {"agent_name": "sec", "approve": true, "confidence": 1},
            {"agent_name": "wschema", "approve": false, "confidence": 1.0,
             "reviews": [{"by": "a", "ok": true}]},
            {"approve": true, "tags": ["x"]}
        ]})
    }

    #[test]
    fn filters_pick_items_by_a_field() {
        let doc = votes();
        assert_eq!(
            picked(r#"votes[?agent_name == "wschema"].approve"#, &doc),
            ["votes[2].approve=false"]
        );
        assert_eq!(
            picked(r#"votes[?agent_name == "nobody"]"#, &doc),
            [] as [&str; 0]
        );
        // != picks the items that have the field with another value, not the one without it.
        assert_eq!(
            picked(r#"votes[?agent_name != "arch"].agent_name"#, &doc),
            [
                "votes[1].agent_name=\"sec\"",
                "votes[2].agent_name=\"wschema\""
            ]
        );
        assert_eq!(
            picked("votes[?approve == false].agent_name", &doc),
            ["votes[2].agent_name=\"wschema\""]
        );
        assert_eq!(picked("votes[?approve != true]", &doc).len(), 1);
        // Numbers by value: 1 and 1.0 are the same.
        assert_eq!(
            picked("votes[?confidence == 1].agent_name", &doc),
            [
                "votes[1].agent_name=\"sec\"",
                "votes[2].agent_name=\"wschema\""
            ]
        );
        assert_eq!(picked("votes[?confidence != 0.5]", &doc).len(), 2);
        assert_eq!(picked("votes[?confidence == null]", &doc).len(), 0);
        let nulls = json!({"a": [{"x": null}, {"x": 1}]});
        assert_eq!(picked("a[?x == null]", &nulls), ["a[0]={\"x\":null}"]);
        // `@` is the item; a field may be a path, with a filter of its own.
        let tags = json!({"tags": ["a", "b b", "a"]});
        assert_eq!(
            picked(r#"tags[?@ == "a"]"#, &tags),
            ["tags[0]=\"a\"", "tags[2]=\"a\""]
        );
        assert_eq!(picked(r#"tags[?@ != "a"]"#, &tags), ["tags[1]=\"b b\""]);
        assert_eq!(
            picked(r#"votes[?reviews[?by == "a"].ok == true].agent_name"#, &doc),
            ["votes[2].agent_name=\"wschema\""]
        );
        assert_eq!(picked(r#"votes[?reviews[0].by == "b"]"#, &doc).len(), 0);
        // Strings may hold what the path language spends: `]`, `.`, `==`, escaped quotes.
        let odd = json!({"a": [{"n": "x] == \"y\".z"}]});
        assert_eq!(picked(r#"a[?n == "x] == \"y\".z"].n"#, &odd).len(), 1);
        // A filter on what is not a list picks nothing.
        assert_eq!(picked(r#"votes[0][?agent_name == "arch"]"#, &doc).len(), 0);
        let p = JsonPath::parse(r#"votes[?agent_name == "x"]"#).unwrap();
        assert!(p.has_filter() && !p.selects_many());
        assert!(JsonPath::parse("votes[*]").unwrap().selects_many());
    }

    #[test]
    fn a_path_that_selects_nothing_says_where() {
        let doc = votes();
        let why = |path: &str| JsonPath::parse(path).unwrap().why_nothing(&doc);
        assert_eq!(why(r#"votes[?agent_name == "arch"]"#), None);
        assert_eq!(
            why(r#"votes[?agent_name == "wscheme"].approve"#).unwrap(),
            "no item of votes has agent_name == \"wscheme\" (agent_name found: \"arch\", \"sec\", \"wschema\"; 1 item without agent_name)"
        );
        assert_eq!(
            why(r#"votes[?agent_name == "arch"].dissent_reason"#).unwrap(),
            "votes[0] has no dissent_reason"
        );
        assert_eq!(why("ballots[*]").unwrap(), "the document has no ballots");
        assert_eq!(why("votes[9]").unwrap(), "votes has no item [9] (it has 4)");
        assert_eq!(
            why("votes[*].tags[?@ == 1]").unwrap(),
            "no item of votes[3].tags has @ == 1 (@ found: \"x\")"
        );
        assert_eq!(
            JsonPath::parse("v[?a == 1]")
                .unwrap()
                .why_nothing(&json!({"v": []}))
                .unwrap(),
            "v is an empty list"
        );
        assert_eq!(
            JsonPath::parse("v[?a == 1]")
                .unwrap()
                .why_nothing(&json!({"v": {"a": 1}}))
                .unwrap(),
            "v is not a list"
        );
    }

    #[test]
    fn bad_filters_name_the_column() {
        let err = |path: &str| JsonPath::parse(path).unwrap_err();
        let cases = [
            (r#"votes[?agent_name == wschema]"#, 22, "wschema is not a JSON value: a string is quoted, \"wschema\""),
            (r#"votes[?agent_name = "wschema"]"#, 19, "expected == or != after agent_name, found \"=\""),
            (r#"votes[?agent_name contains "w"]"#, 19, "expected == or != after agent_name, found \"contains\""),
            (r#"votes[?agent_name"#, 18, "the filter ends after agent_name: [?FIELD == VALUE] or [?FIELD != VALUE]"),
            (r#"votes[?== "w"]"#, 8, "a filter names a field first: [?FIELD == VALUE] or [?FIELD != VALUE] (`@` is the item itself)"),
            (r#"votes[?agent_name == ]"#, 22, "a filter compares with a value: \"text\", a number, true, false or null"),
            (r#"votes[?agent_name == "w"#, 22, "a string without its closing '\"'"),
            (r#"votes[?agent_name == "w""#, 6, "'[' without ']'"),
            (r#"votes[?agent_name == "w" x]"#, 26, "expected ']' to end the filter, found \"x]\""),
            (r#"votes[?a..b == 1]"#, 10, "empty field name"),
            (r#"votes[?a[x] == 1]"#, 10, "[x] is neither [*], an index nor a filter [?FIELD == VALUE]"),
            (r#"votes[?a == "w"]x"#, 17, "unexpected \"x\" after ']'"),
        ];
        for (path, column, what) in cases {
            let e = err(path);
            assert_eq!((e.column, e.what.as_str()), (column, what), "{path}");
        }
        assert_eq!(
            err("votes[?a = 1]").to_string(),
            "path \"votes[?a = 1]\", column 10: expected == or != after a, found \"=\""
        );
    }
}
