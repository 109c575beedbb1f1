//! The crate's layers, read from its sources: the engines (probe, mock, transport, report) never
//! name a protocol, no protocol imports another (what two share lives below both), and no
//! module imports itself back through others. Every `crate::…` and
//! `super::…` path in a file (outside comments) is an import of the module it names.
//!
//! Nor does an engine file know a protocol without importing it: no file outside
//! `src/protocols/` (but the top layer, which reads the registry) names a protocol, one of its
//! endpoints or platform paths, or one of its messages' fields in its code. The words are read
//! from the protocols themselves (see [`protocol_words`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Engine folders: generic over protocols.
const ENGINES: [&str; 6] = ["probe", "mock", "proxy", "transport", "report", "judge"];

/// A module by its path from the crate root: `mock::agent`, `protocols` (for protocols/mod.rs).
type Module = String;

pub(crate) fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/mock/agent.rs` → `mock::agent`; `src/protocols/mod.rs` → `protocols`.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts.join("::")
}

/// The paths a line names: `crate::a::b::C` and `super::x::y`, with `{…}` groups of a `use`
/// line expanded one level (`use super::{a, b::C}`).
fn paths_in(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for root in ["crate::", "super::"] {
        let mut rest = line;
        while let Some(at) = rest.find(root) {
            let before = rest[..at].chars().last();
            rest = &rest[at..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let path = rest[..end].trim_end_matches(':').to_string();
            // `self::super::x`, `a_super::x`: not a root.
            let is_root = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            if is_root {
                if rest[end..].starts_with('{') {
                    let group_end = rest.find('}').unwrap_or(rest.len());
                    for item in rest[end + 1..group_end].split(',') {
                        let item = item.trim().split(' ').next().unwrap_or("");
                        if item.is_empty() || item == "self" {
                            out.push(path.clone());
                        } else {
                            out.push(format!("{path}::{item}"));
                        }
                    }
                } else {
                    out.push(path);
                }
            }
            rest = &rest[end..];
        }
    }
    out
}

/// The longest prefix of `path` (from the crate root) that is a module of the crate.
fn resolve(path: &str, modules: &BTreeSet<Module>) -> Option<Module> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| modules.contains(m))
}

/// Module → the modules it imports.
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let me = module_of(&src, file);
        // `super` is the parent module for a file's own items, but the file itself inside its
        // inline `mod tests`.
        let parent = if file.ends_with("mod.rs") || file.ends_with("lib.rs") {
            me.clone()
        } else {
            me.rsplit_once("::")
                .map(|p| p.0.to_string())
                .unwrap_or_default()
        };
        let mut in_tests = false;
        let mut deps = BTreeSet::new();
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if code.starts_with("mod tests") {
                in_tests = true;
            }
            for path in paths_in(code) {
                let absolute = if let Some(rest) = path.strip_prefix("crate::") {
                    rest.to_string()
                } else if let Some(rest) = path.strip_prefix("super::") {
                    let base = if in_tests { &me } else { &parent };
                    if base.is_empty() {
                        rest.to_string()
                    } else {
                        format!("{base}::{rest}")
                    }
                } else {
                    continue;
                };
                if let Some(dep) = resolve(&absolute, &modules).filter(|d| *d != me) {
                    deps.insert(dep);
                }
            }
        }
        graph.insert(me, deps);
    }
    graph
}

/// Every engine module's import of a protocol module.
fn engine_imports(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, deps) in graph {
        let top = module.split("::").next().unwrap_or("");
        if !ENGINES.contains(&top) {
            continue;
        }
        for dep in deps {
            if dep == "protocols" || dep.starts_with("protocols::") {
                wrong.push(format!("{module} imports {dep}"));
            }
        }
    }
    wrong
}

/// The protocol a module belongs to (`protocols::roundtable::rules` → `roundtable`), if any.
fn protocol_of(module: &str) -> Option<&str> {
    module.strip_prefix("protocols::")?.split("::").next()
}

/// Every import of one protocol's module by another protocol's (the registry, `protocols`, and
/// the plug-in traits, `protocols::plugin`, belong to none).
fn cross_protocol_imports(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, deps) in graph {
        let Some(mine) = protocol_of(module).filter(|p| *p != "plugin") else {
            continue;
        };
        for dep in deps {
            if protocol_of(dep).is_some_and(|theirs| theirs != mine && theirs != "plugin") {
                wrong.push(format!("{module} imports {dep}"));
            }
        }
    }
    wrong
}

/// Every loop of imports, as `a → b → a`.
fn loops(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    // Depth-first search; a module met again while on the path closes a loop.
    fn visit(
        m: &str,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        loops: &mut Vec<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == m) {
            loops.push(format!("{} → {m}", path[i..].join(" → ")));
            return;
        }
        path.push(m.to_string());
        for dep in graph.get(m).into_iter().flatten() {
            visit(dep, graph, path, done, loops);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn no_engine_imports_a_protocol() {
    let wrong = engine_imports(&graph());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_protocol_imports_another() {
    let wrong = cross_protocol_imports(&graph());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_imports_have_no_loop() {
    let found = loops(&graph());
    assert!(found.is_empty(), "import loops:\n{}", found.join("\n"));
}

#[test]
fn the_reader_sees_imports_and_loops() {
    assert_eq!(
        paths_in("use crate::mock::{agent::MockAgent, behavior};"),
        ["crate::mock::agent::MockAgent", "crate::mock::behavior"]
    );
    assert_eq!(paths_in("use super::model;"), ["super::model"]);
    assert!(paths_in("let x = my_crate::y;").is_empty());
    let graph = graph();
    assert!(graph["mock::fleet"].contains("mock::agent"), "{graph:?}");
    assert!(
        graph["cli::args"].contains("protocols"),
        "{:?}",
        graph["cli::args"]
    );
    assert!(
        graph["protocols::roundtable::rules"].contains("probe::plugin"),
        "{:?}",
        graph["protocols::roundtable::rules"]
    );
    // The checks can fail: a made-up loop and a made-up engine import are found.
    let mut made_up = graph.clone();
    made_up
        .entry("probe::suite".into())
        .or_default()
        .insert("probe::runner".into());
    made_up
        .entry("probe::runner".into())
        .or_default()
        .insert("probe::suite".into());
    made_up
        .entry("mock::fleet".into())
        .or_default()
        .insert("protocols::roundtable".into());
    assert!(
        loops(&made_up)
            .iter()
            .any(|l| l.contains("probe::runner → probe::suite")
                || l.contains("probe::suite → probe::runner")),
        "{:?}",
        loops(&made_up)
    );
    assert_eq!(
        engine_imports(&made_up),
        ["mock::fleet imports protocols::roundtable"]
    );
    made_up
        .entry("protocols::execute_task::probe".into())
        .or_default()
        .extend(["protocols::roundtable".into(), "protocols::plugin".into()]);
    assert_eq!(
        cross_protocol_imports(&made_up),
        ["protocols::execute_task::probe imports protocols::roundtable"]
    );
}

// ---- protocol knowledge in engine files ---------------------------------------------------------

/// The top layer: it reads the registry, so it may name protocols (`cli` also as a folder, once
/// it is split).
const TOP_LAYER: [&str; 6] = ["cli", "selftest", "fuzz", "main", "lib", "protocols"];

/// Words an engine file may still hold, each with why: `(file, word, why)`.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "src/probe/template.rs",
        "task_id",
        "the `{{ task_id }}` generator: template vocabulary that suites of several protocols use",
    ),
    (
        "src/mock/journal.rs",
        "task_id",
        "the journal's member for the request's id (the kit's journal format); the value is read \
         from the member the protocol names",
    ),
    (
        "src/content.rs",
        "task_id",
        "`Content::task_id`, the generator of a task's id (generated content's vocabulary)",
    ),
    (
        "src/mock/behavior.rs",
        "execute_task",
        "the line quirks' descriptions name the protocol they were made for: the catalogue lists \
         each behaviour with its protocol once the quirks join the behaviour catalogue",
    ),
];

/// What the protocols name, read from them: `(word, what it is)`. Their registry names (and
/// folder spellings), the endpoints their agents serve (but those every protocol serves, such
/// as /health), their platform API's paths, the members the mock engine is told to read or
/// bend, and the compound (`snake_case`) property names of their schemas.
fn protocol_words() -> BTreeMap<String, &'static str> {
    use agent_tck::protocols;
    let mut words = BTreeMap::new();
    for name in protocols::names() {
        words.entry(name.to_string()).or_insert("a protocol's name");
        words
            .entry(name.replace('-', "_"))
            .or_insert("a protocol's name");
    }
    let agents = protocols::agent_protocols();
    let mut served: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &agents {
        for e in p.endpoints() {
            *served.entry(e.name).or_default() += 1;
        }
    }
    for p in &agents {
        for e in p.endpoints() {
            if served[e.name] < agents.len() {
                words
                    .entry(format!("/{}", e.name))
                    .or_insert("an endpoint's path");
                words
                    .entry(e.name.to_string())
                    .or_insert("an endpoint's name");
            }
        }
        if let Some(field) = p.request_id_field() {
            words
                .entry(field.to_string())
                .or_insert("a request's id member");
        }
        let fields = p.answer_fields();
        for f in [fields.identity, fields.number]
            .into_iter()
            .chain(fields.text.iter().copied())
        {
            words.entry(f.to_string()).or_insert("an answer's member");
        }
        if let Some(api) = p.platform_api() {
            words
                .entry(api.agents_path.to_string())
                .or_insert("a platform API's path");
            words
                .entry(api.trigger_path.to_string())
                .or_insert("a platform API's path");
            let registration = (api.registration)(
                &agent_tck::mock::agent::Profile {
                    name: String::new(),
                    domain: String::new(),
                    capabilities: Vec::new(),
                    api_key: None,
                },
                "",
                "",
            );
            for key in registration.as_object().into_iter().flat_map(|o| o.keys()) {
                // `name` and `mode` are words of every kind of code.
                if key.contains('_') {
                    words.entry(key.clone()).or_insert("a registration member");
                }
            }
        }
    }
    for (_, _, text, owner) in protocols::schemas() {
        if owner.is_none() {
            continue;
        }
        let schema: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut names = BTreeSet::new();
        property_names(&schema, &mut names);
        for name in names.into_iter().filter(|n| n.contains('_')) {
            words.entry(name).or_insert("a message's member");
        }
    }
    words
}

/// Every key of every `properties` object in a schema.
fn property_names(schema: &serde_json::Value, out: &mut BTreeSet<String>) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            map.values().for_each(|v| property_names(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

/// A piece of a source file's code: an identifier or a string literal's text.
#[derive(Debug, PartialEq)]
pub(crate) enum Token<'a> {
    Ident(&'a str),
    Literal(&'a str),
}

/// The identifiers and string literals of `code`, up to its `#[cfg(test)] mod tests` (tests
/// need concrete messages) and without its comments.
fn tokens(code: &str) -> Vec<Token<'_>> {
    let code = code
        .find("#[cfg(test)]\nmod tests")
        .map_or(code, |end| &code[..end]);
    lexed(code)
}

/// The identifiers and string literals of the whole of `code`, without its comments. A
/// literal's text is a slice of `code` (its place in it can be found from the pointer).
pub(crate) fn lexed(code: &str) -> Vec<Token<'_>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    while i < bytes.len() {
        let rest = &code[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"…", r#"…"#, br#"…"#: up to the quote followed by as many hashes.
            let open = rest.find('"').unwrap() + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            let len = rest[open..].find(&close).unwrap_or(rest.len() - open);
            out.push(Token::Literal(&rest[open..open + len]));
            i += open + len + close.len();
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push(Token::Literal(&code[i + 1..j.min(bytes.len())]));
            i = j + 1;
        } else if bytes[i] == b'\'' {
            // A char literal ('x', '\n', '"') or a lifetime ('a): skip a char literal whole,
            // so that '"' opens no string.
            let first = usize::from(rest[1..].starts_with('\\')) + 1;
            let close = rest[1..]
                .char_indices()
                .take(first + 2)
                .find(|&(k, c)| c == '\'' && k >= first);
            i += close.map_or(1, |(k, _)| k + 2);
        } else if ident(bytes[i]) {
            let len = rest.bytes().take_while(|&b| ident(b)).count();
            out.push(Token::Ident(&rest[..len]));
            i += len;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// The number of `#`s of a raw string literal starting `text` (`r"`, `r#"`, `br#"`), if one does.
fn raw_string_start(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("br").or_else(|| text.strip_prefix('r'))?;
    let hashes = rest.bytes().take_while(|&b| b == b'#').count();
    rest[hashes..].starts_with('"').then_some(hashes)
}

/// Whether `word` is in `text` on its own: not inside a longer identifier-like word (a path
/// such as `/api/v1/agents` may be followed by `/NAME`).
fn holds_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(part)
            && !text[at + word.len()..].chars().next().is_some_and(part)
    })
}

/// Whether `word` is compound (`task_id`, `execute-task`, `/analyze`): no English sentence
/// holds it by chance, so a literal that holds it anywhere names it. A plain word (`finding`,
/// `roundtable`) names the protocol's only as a literal of its own (`body["finding"]`), and
/// never as an identifier.
fn compound(word: &str) -> bool {
    word.contains(['_', '-', '/'])
}

/// Every protocol word `code` (the text of `file`) holds: in its string literals, and as an
/// identifier for words with `_` (see [`compound`]). Each as `file: `word` (what it is)`.
fn protocol_knowledge(file: &str, code: &str, words: &BTreeMap<String, &str>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for token in tokens(code) {
        for (word, what) in words {
            let hit = match token {
                Token::Literal(text) if compound(word) => holds_word(text, word),
                Token::Literal(text) => text == word,
                Token::Ident(name) => word.contains('_') && name == word,
            };
            if hit && !ALLOWED.iter().any(|(f, w, _)| *f == file && w == word) {
                found.insert(format!("{file}: `{word}` ({what})"));
            }
        }
    }
    found.into_iter().collect()
}

/// Every engine file's protocol knowledge.
fn engine_knowledge() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let words = protocol_words();
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let module = module_of(&src, &file);
        let top = module.split("::").next().unwrap_or("");
        // A `tests.rs` is a test module in a file of its own (`#[cfg(test)] mod tests;`): tests
        // need concrete messages, as in an inline one.
        if TOP_LAYER.contains(&top) || module.is_empty() || file.ends_with("tests.rs") {
            continue;
        }
        let name = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let code = std::fs::read_to_string(&file).unwrap();
        found.extend(protocol_knowledge(&name, &code, &words));
    }
    found
}

#[test]
fn no_engine_file_names_a_protocols_endpoints_or_fields() {
    let found = engine_knowledge();
    assert!(
        found.is_empty(),
        "engine files that know a protocol (move the knowledge into the protocol's folder and \
         let the protocol tell the engine):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_knowledge_checker_reads_code_not_comments() {
    let words = protocol_words();
    // Read from the protocols, not listed here: each kind is there.
    for (word, what) in [
        ("roundtable", "a protocol's name"),
        ("execute_task", "a protocol's name"),
        ("/analyze", "an endpoint's path"),
        ("/api/v1/agents", "a platform API's path"),
        ("task_id", "a request's id member"),
        ("counter_evidence", "an answer's member"),
    ] {
        assert_eq!(words.get(word), Some(&what), "{word}");
    }
    assert!(
        !words.contains_key("health"),
        "every protocol serves /health"
    );
    let made_up = r##"//! Posts to /analyze (a comment: fine).
use serde_json::json;
/* "roundtable" in a block comment */
fn post(base: &str, body: &serde_json::Value) -> String {
    let path = ('"', '\'', '\n'); // char literals open no string: "finding"
    let task_id = body["task_id"].as_str();
    let _ = (path, task_id, r#"{"note": "/analyzer is another word"}"#);
    let note = "a finding, a roundtable: plain words in a sentence";
    format!("{base}/api/v1/agents/{note}", json!({"kind": "connector"}))
}
#[cfg(test)]
mod tests {
    const BODY: &str = r#"{"agent_name": "a"}"#;
}
"##;
    assert_eq!(
        protocol_knowledge("src/mock/made_up.rs", made_up, &words),
        [
            "src/mock/made_up.rs: `/api/v1/agents` (a platform API's path)",
            "src/mock/made_up.rs: `connector` (a protocol's name)",
            "src/mock/made_up.rs: `task_id` (a request's id member)",
        ]
    );
    // An allowed word is allowed in its own file only.
    assert!(protocol_knowledge("src/probe/template.rs", "let a = \"task_id\";", &words).is_empty());
    assert_eq!(
        protocol_knowledge("src/probe/runner.rs", "let a = \"task_id\";", &words),
        ["src/probe/runner.rs: `task_id` (a request's id member)"]
    );
}
