//! The crate's layers, read from its sources: the engines (probe, mock, transport, report) never
//! name a protocol, no protocol imports another (what two share lives below both), and no
//! module imports itself back through others. Every `crate::…` and
//! `super::…` path in a file (outside comments) is an import of the module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Engine folders: generic over protocols.
const ENGINES: [&str; 4] = ["probe", "mock", "transport", "report"];

/// A module by its path from the crate root: `mock::agent`, `protocols` (for protocols/mod.rs).
type Module = String;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
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
