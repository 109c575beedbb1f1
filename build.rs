//! Embeds every JSON Schema under `schemas/` in the binary: a protocol's schemas are files in
//! `schemas/<protocol>/`, and adding one needs no line of code (src/schema.rs includes the list
//! this writes). The id of `schemas/a/b.json` is `a/b`; of `x.schema.json`, `x`.
//!
//! Likewise every `explain/*.yaml` (the texts `agent-tck explain` prints, one file per protocol
//! and `common.yaml`): src/explain/mod.rs includes the list of (file, text); and every spec under
//! `specs/` (`*.md` but the folder's README): src/specs.rs includes the list of (file, text), and
//! a protocol names its file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// `path` relative to `base`, with `/` between its parts.
fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .expect("under its folder")
        .to_string_lossy()
        .replace('\\', "/")
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    let schemas = root.join("schemas");
    println!("cargo:rerun-if-changed=schemas");
    let mut files = Vec::new();
    walk(&schemas, "json", &mut files);
    files.sort();
    let mut list = String::from("&[\n");
    for path in &files {
        let file = relative(path, &schemas);
        let id = file.trim_end_matches(".json").trim_end_matches(".schema");
        writeln!(
            list,
            "    ({id:?}, {file:?}, include_str!({:?})),",
            path.display()
        )
        .expect("a String takes writes");
    }
    list.push(']');
    std::fs::write(out_dir.join("schemas.rs"), list).expect("OUT_DIR is writable");

    // The explain texts, named as the crate names them (`explain/roundtable.yaml`).
    embed_files(&root, "explain", "yaml", &out_dir.join("explain.rs"), |p| {
        relative(p, &root)
    });
    // The specs, named by their file alone (`roundtable-external-agent-protocol.md`).
    embed_files(&root, "specs", "md", &out_dir.join("specs.rs"), |p| {
        relative(p, &root.join("specs"))
    });
}

/// Every `*.EXT` under `root/dir` (but a README.md) as `&[(name, include_str!(…))]` in `out`,
/// sorted by file.
fn embed_files(root: &Path, dir: &str, ext: &str, out: &Path, name: impl Fn(&Path) -> String) {
    println!("cargo:rerun-if-changed={dir}");
    let mut files = Vec::new();
    walk(&root.join(dir), ext, &mut files);
    files.retain(|p| p.file_name().is_some_and(|n| n != "README.md"));
    files.sort();
    let mut list = String::from("&[\n");
    for path in &files {
        writeln!(
            list,
            "    ({:?}, include_str!({:?})),",
            name(path),
            path.display()
        )
        .expect("a String takes writes");
    }
    list.push(']');
    std::fs::write(out, list).expect("OUT_DIR is writable");
}
