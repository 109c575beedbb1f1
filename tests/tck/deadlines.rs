//! No test can hang: every in-process async test runs under `#[deadline::test]` (tokio's test
//! with a deadline, macros/deadline), and a test that starts a process goes through
//! `support.rs`, which kills it at its deadline and checks its exit status.

use std::path::{Path, PathBuf};

/// The deadline fires: a test that waits for what never comes fails, naming itself, instead
/// of hanging the suite.
#[deadline::test(secs = 1)]
#[should_panic(
    expected = "test `a_test_that_waits_forever_fails_at_its_deadline` passed its deadline of 1 s"
)]
async fn a_test_that_waits_forever_fails_at_its_deadline() {
    std::future::pending::<()>().await;
}

/// A test that ends in time gives back what its body gave (here, an error, which fails it as
/// the body would have without the deadline).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_that_ends_in_time_keeps_its_outcome() -> Result<(), String> {
    tokio::task::yield_now().await;
    Ok(())
}

/// Every async test in the crate's sources and in its test suites has a deadline: none is a bare
/// `#[tokio::test]`, and no test starts a process with a bare `.output()` outside `support.rs`
/// (which bounds every process it starts).
#[test]
fn every_async_test_has_a_deadline_and_no_process_is_waited_for_unbounded() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests"] {
        crate::layers::sources(&root.join(dir), &mut files);
    }
    // Spelt in two pieces, so that this file does not find itself.
    let (bare_test, bare_output) = (concat!("#[tokio", "::test"), concat!(".out", "put()"));
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(&root).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains(bare_test) {
                found.push(format!("{}:{}: a bare {bare_test}]", rel.display(), i + 1));
            }
            if code.contains(bare_output) && rel.starts_with("tests") && !is_support(rel) {
                found.push(format!("{}:{}: a bare {bare_output}", rel.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "tests that can hang (use #[deadline::test] and support.rs's runners):\n{}",
        found.join("\n")
    );
}

fn is_support(rel: &Path) -> bool {
    rel.ends_with("tests/tck/support.rs")
}
