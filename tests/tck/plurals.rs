//! Counts in the number they ask for (issue 39, point 13): no string literal in `src/` writes a
//! noun as `noun(s)`. A message counts with `text::count(n, "nouns")` (`1 callback`, `2
//! callbacks`) or picks the singular or plural where the count is not next to the noun.
//! Comments may say `(s)`; code such as `Some(s)` is no literal and is not read.

use std::path::{Path, PathBuf};

use super::layers::{lexed, sources, Token};

/// Literals that keep `(s)` after a letter, each with the file, the text around it, and why.
const ALLOWED: [(&str, &str, &str); 1] = [(
    "src/report/targets_page.rs",
    "d.appendChild(s);",
    "the targets page's script: a JavaScript call with the argument `s`, not a noun",
)];

/// Every `(s)` after a letter in a string literal of `code`, as `file:line: …text…`, but those
/// [`ALLOWED`] for `file`.
fn optional_plurals(file: &str, code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for token in lexed(code) {
        let Token::Literal(text) = token else {
            continue;
        };
        for (at, _) in text.match_indices("(s)") {
            if !text[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphabetic())
            {
                continue;
            }
            let allowed = ALLOWED.iter().any(|(f, context, _)| {
                let from = context.find("(s)").unwrap();
                *f == file
                    && at >= from
                    && text
                        .get(at - from..)
                        .is_some_and(|rest| rest.starts_with(context))
            });
            if allowed {
                continue;
            }
            // Thirty characters before, twenty after.
            let start = text[..at]
                .char_indices()
                .rev()
                .nth(29)
                .map_or(0, |(i, _)| i);
            let end = text[at + 3..]
                .char_indices()
                .nth(20)
                .map_or(text.len(), |(i, _)| at + 3 + i);
            let around = &text[start..end];
            // The literal is a slice of `code`: its line is the count of newlines before it.
            let offset = text.as_ptr() as usize - code.as_ptr() as usize + at;
            let line = code[..offset].matches('\n').count() + 1;
            found.push(format!("{file}:{line}: …{around}…"));
        }
    }
    found
}

fn source_files() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let name = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (name, f)
        })
        .collect()
}

#[test]
fn no_message_counts_with_an_optional_plural() {
    let mut found = Vec::new();
    for (name, path) in source_files() {
        found.extend(optional_plurals(
            &name,
            &std::fs::read_to_string(path).unwrap(),
        ));
    }
    assert!(
        found.is_empty(),
        "write counts with text::count(n, \"nouns\") (1 noun, 2 nouns), not noun(s):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_plural_scan_reads_literals_not_comments_or_code() {
    let code = "// a comment may say callback(s)\n\
                fn f(n: u64) -> String {\n\
                    if let Some(s) = g() { return s; }\n\
                    format!(\"{n} callback(s) sent\")\n\
                }\n\
                const R: &str = r#\"2 answer(s)\"#;\n\
                const N: &str = \"(s) alone, 2 (s)\";\n";
    assert_eq!(
        optional_plurals("src/x.rs", code),
        [
            "src/x.rs:4: …{n} callback(s) sent…",
            "src/x.rs:6: …2 answer(s)…"
        ]
    );
    // The allowed script call is allowed in its own file only, and no other `(s)` beside it.
    let script = "const S: &str = \"d.appendChild(s); 3 row(s)\";";
    assert_eq!(
        optional_plurals("src/report/targets_page.rs", script),
        ["src/report/targets_page.rs:1: …d.appendChild(s); 3 row(s)…"]
    );
    assert_eq!(
        optional_plurals(
            "src/report/html.rs",
            "const S: &str = \"d.appendChild(s);\";"
        ),
        ["src/report/html.rs:1: …d.appendChild(s);…"]
    );
}
