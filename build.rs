//! Embeds every JSON Schema under `schemas/` in the binary: a protocol's schemas are files in
//! `schemas/<protocol>/`, and adding one needs no line of code (src/schema.rs includes the list
//! this writes). The id of `schemas/a/b.json` is `a/b`; of `x.schema.json`, `x`.
//!
//! Embeds every spec under `specs/` too (`*.md` but the folder's README): src/specs.rs includes
//! the list of (file, text) this writes, and a protocol names its file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let schemas = root.join("schemas");
    println!("cargo:rerun-if-changed=schemas");
    let mut files = Vec::new();
    walk(&schemas, &mut files);
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
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out_dir.join("schemas.rs"), list).expect("OUT_DIR is writable");
    embed_specs(&root, &out_dir);
}

/// `specs/*.md` (but README.md) as `&[(file, text)]`, sorted by file.
fn embed_specs(root: &Path, out_dir: &Path) {
    let specs = root.join("specs");
    println!("cargo:rerun-if-changed=specs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&specs)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.extension().is_some_and(|e| e == "md") && p.file_name().is_some_and(|n| n != "README.md")
    });
    files.sort();
    let mut list = String::from("&[\n");
    for path in &files {
        let file = path.file_name().expect("a file").to_string_lossy();
        writeln!(list, "    ({file:?}, include_str!({:?})),", path.display())
            .expect("a String takes writes");
    }
    list.push(']');
    std::fs::write(out_dir.join("specs.rs"), list).expect("OUT_DIR is writable");
}
