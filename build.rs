//! Embeds every JSON Schema under `schemas/` in the binary: a protocol's schemas are files in
//! `schemas/<protocol>/`, and adding one needs no line of code (src/schema.rs includes the list
//! this writes). The id of `schemas/a/b.json` is `a/b`; of `x.schema.json`, `x`.
//!
//! Likewise every `explain/*.yaml` (the texts `agent-tck explain` prints, one file per protocol
//! and `common.yaml`): src/explain/mod.rs includes the list of (file, text).

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

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let schemas = root.join("schemas");
    println!("cargo:rerun-if-changed=schemas");
    let mut files = Vec::new();
    walk(&schemas, "json", &mut files);
    files.sort();
    let mut list = String::from("&[\n");
    for path in &files {
        let file = path
            .strip_prefix(&schemas)
            .expect("under schemas/")
            .to_string_lossy()
            .replace('\\', "/");
        let id = file.trim_end_matches(".json").trim_end_matches(".schema");
        writeln!(
            list,
            "    ({id:?}, {file:?}, include_str!({:?})),",
            path.display()
        )
        .expect("a String takes writes");
    }
    list.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("schemas.rs");
    std::fs::write(out, list).expect("OUT_DIR is writable");
    explain_texts(&root);
}

/// `explain/*.yaml` as `&[(file, include_str!(…))]`, in `OUT_DIR/explain.rs`.
fn explain_texts(root: &Path) {
    let dir = root.join("explain");
    println!("cargo:rerun-if-changed=explain");
    let mut files = Vec::new();
    walk(&dir, "yaml", &mut files);
    files.sort();
    let mut list = String::from("&[\n");
    for path in &files {
        let file = path
            .strip_prefix(root)
            .expect("under the crate")
            .to_string_lossy()
            .replace('\\', "/");
        writeln!(list, "    ({file:?}, include_str!({:?})),", path.display())
            .expect("a String takes writes");
    }
    list.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("explain.rs");
    std::fs::write(out, list).expect("OUT_DIR is writable");
}
