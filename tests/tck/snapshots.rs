//! Seeded output, pinned: the same seed gives byte-identical output on every machine and in every
//! release, or a seed printed in a report cannot replay its run. Each test renders what a seed
//! makes into text and compares it with a file under `tests/snapshots/` (or, for the hash, with
//! published values). A change of seed, stream name, hash or generator changes the text and fails
//! the test; when the change is meant, `UPDATE_SNAPSHOTS=1 cargo test --test tck snapshots::`
//! rewrites the files, and the diff shows what every seed now makes.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{json, Value};

use agent_tck::content::Content;
use agent_tck::probe::template::{self, Fill, RunValues};
use agent_tck::text::{fnv1a, Fnv1a};

use crate::support::{tck, text, TempDir, EXE};

/// Compares `actual` with `tests/snapshots/NAME.txt` (or writes it, under `UPDATE_SNAPSHOTS`).
#[track_caller]
fn assert_snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    if expected == actual {
        return;
    }
    let at = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    panic!(
        "{}: differs from line {}:\n  expected: {:?}\n  actual:   {:?}\n(whole output:\n{actual})",
        path.display(),
        at + 1,
        expected.lines().nth(at),
        actual.lines().nth(at),
    );
}

/// The published FNV-1a 64-bit test vectors (Fowler, Noll, Vo; as in the IETF draft): the hash
/// behind every seeded stream, canary and shard.
#[test]
fn fnv1a_is_the_published_64_bit_hash() {
    assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    assert_eq!(Fnv1a::default().0, Fnv1a::OFFSET);
    // `write_str` puts the length (8 bytes, little-endian) before the text.
    let mut framed = Fnv1a::default();
    framed.write_str("ab");
    let mut by_hand = Fnv1a::default();
    by_hand.write(&2u64.to_le_bytes());
    by_hand.write(b"ab");
    assert_eq!(framed.0, by_hand.0);
    assert_eq!(framed.0, 0x9c60_01d3_28a9_4690);
}

#[test]
fn injection_canaries_are_pinned() {
    use agent_tck::mock::injection::{canary, find_canaries};
    let mut out = String::new();
    for seed in [0, 1, 42] {
        for agent in ["reference-agent", "security-scanner"] {
            for payload in ["role-override", "tool-exfiltration"] {
                for n in 0..2 {
                    let token = canary(seed, agent, payload, n);
                    assert_eq!(
                        find_canaries(&format!("say {token}!")),
                        std::slice::from_ref(&token)
                    );
                    writeln!(out, "{seed} {agent} {payload} {n} {token}").unwrap();
                }
            }
        }
    }
    assert_snapshot("canaries", &out);
}

/// Every generator of the shared content, on one seeded stream, then the per-run values.
#[test]
fn generated_content_is_pinned() {
    let mut out = String::new();
    for seed in [0, 42] {
        let mut c = Content::new(seed, "snapshot");
        writeln!(out, "seed {seed}").unwrap();
        writeln!(out, "task_id {}", c.task_id()).unwrap();
        writeln!(out, "below(1000) {}", c.below(1000)).unwrap();
        writeln!(out, "word {}", c.word()).unwrap();
        writeln!(out, "sentence {}", c.sentence()).unwrap();
        writeln!(out, "business_goal {}", c.business_goal()).unwrap();
        writeln!(out, "catch_phrase {}", c.catch_phrase()).unwrap();
        writeln!(out, "file_name {}", c.file_name()).unwrap();
        writeln!(out, "dir_path {}", c.dir_path()).unwrap();
        writeln!(out, "task_content {}", c.task_content()).unwrap();
        writeln!(out, "text(60) {}", c.text(60)).unwrap();
        writeln!(out, "unicode_text {}", c.unicode_text()).unwrap();
        writeln!(out, "confidence_hundredths {}", c.confidence_hundredths()).unwrap();
        let run = RunValues::new(seed);
        writeln!(out, "run.task_id {}", run.task_id).unwrap();
        writeln!(out, "run.task {}", run.task).unwrap();
    }
    // A stream named by parts is the stream of the joined name.
    assert_eq!(
        Content::from_parts(42, &["agent", "analyze", "3"]).task_id(),
        Content::new(42, "agent/analyze/3").task_id()
    );
    assert_snapshot("content", &out);
}

/// Fills `template` as the probe fills a request of the suite of `protocol`, for `seed` and the
/// exchange `stream`.
fn filled(
    protocol: &dyn agent_tck::probe::plugin::SuiteProtocol,
    seed: u64,
    stream: &str,
    template: &Value,
) -> String {
    let run = RunValues::new(seed);
    let mut fill = Fill {
        run: &run,
        content: Content::new(seed, stream),
        protocol,
    };
    let value = template::render(template, &mut fill).expect("the template renders");
    serde_json::to_string_pretty(&value).unwrap()
}

/// The suite templates' generators, the engine's (`task_id`, `task`, `word`, `sentence`,
/// `text(N)`, `unicode`) and the round table's (`analyses(N)`, `synthesis(T, M)`).
#[test]
fn roundtable_request_templates_are_pinned() {
    let template = json!({
        "task_id": "{{ task_id }}",
        "content": "{{ task }}",
        "note": "by {{ word }}: {{ sentence }}",
        "text": "{{ text(40) }}",
        "unicode": "{{ unicode }}",
        "other_analyses": "{{ analyses(2) }}",
        "synthesis": "{{ synthesis(2, 1) }}",
    });
    let protocol = agent_tck::protocols::roundtable::rules::Suite;
    let out = format!(
        "{}\n{}\n",
        filled(&protocol, 42, "challenge", &template),
        filled(&protocol, 7, "vote-minority", &template)
    );
    assert_snapshot("roundtable-templates", &out);
}

/// The conforming round-table agent's answers are generated from its name and seed.
#[test]
fn reference_agent_answers_are_pinned() {
    use agent_tck::mock::Responder;
    use agent_tck::protocols::roundtable::reference::ReferenceAgent;
    let protocol = agent_tck::protocols::roundtable::rules::Suite;
    let mut out = String::new();
    for (endpoint, template) in [
        (
            "analyze",
            json!({"task_id": "{{ task_id }}", "content": "{{ task }}"}),
        ),
        (
            "challenge",
            json!({"task_id": "{{ task_id }}", "content": "{{ task }}", "other_analyses": "{{ analyses(2) }}"}),
        ),
        (
            "vote",
            json!({"task_id": "{{ task_id }}", "content": "{{ task }}", "synthesis": "{{ synthesis(1, 1) }}"}),
        ),
    ] {
        let request = filled(&protocol, 42, endpoint, &template);
        let reply =
            ReferenceAgent::new("reference-agent", 42).respond(endpoint, request.as_bytes());
        writeln!(
            out,
            "{endpoint} {} {}\n{}",
            reply.status,
            reply.content_type,
            String::from_utf8_lossy(&reply.body)
        )
        .unwrap();
    }
    assert_snapshot("reference-answers", &out);
}

/// The fixed-seed mutator standing in for a fuzzer: the same seeds and seed, the same inputs.
#[test]
fn fuzz_mutations_are_pinned() {
    let seeds = vec![
        b"POST /analyze HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}".to_vec(),
        b"{\"task_id\": \"t\", \"content\": \"c\"}".to_vec(),
    ];
    let mut out = String::new();
    for input in agent_tck::fuzz::mutations(&seeds, 12, 7) {
        writeln!(out, "{}", input.escape_ascii()).unwrap();
    }
    assert_snapshot("fuzz-mutations", &out);
}

/// `mock agents --seed N` writes the same set of agents (names, files, descriptions) for the same
/// seed, and its agents answer the same; the directory and the binary's path are the only things
/// that vary, and are masked.
#[test]
fn mock_agents_set_is_pinned() {
    let dir = TempDir::new("snapshot-agents");
    let set = dir.path("set");
    let out = tck(&[
        "mock", "agents", "--dir", &set, "--count", "5", "--seed", "7",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mask = |s: &str| s.replace(&set, "<DIR>").replace(EXE, "<EXE>");
    let mut shown = mask(&String::from_utf8_lossy(&out.stdout));
    let mut files = Vec::new();
    collect(std::path::Path::new(&set), &mut files);
    files.sort();
    for file in files {
        let body = std::fs::read_to_string(&file).unwrap_or_else(|e| format!("<{e}>"));
        write!(
            shown,
            "--- {}\n{}",
            mask(&file.display().to_string()),
            mask(&body)
        )
        .unwrap();
    }
    // The graph is the same for every seed at this size; the agents' answers are drawn from it.
    for agent in ["brainstormer", "tester"] {
        for mode in ["plan", "execute"] {
            let out = tck(&[
                "mock",
                "agent",
                "--protocol",
                "agent-standard",
                "--name",
                agent,
                "--seed",
                "7",
                "--mode",
                mode,
                "--task",
                "Review the project",
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out));
            write!(
                shown,
                "--- {agent} {mode}\n{}",
                String::from_utf8_lossy(&out.stdout)
            )
            .unwrap();
        }
    }
    assert_snapshot("mock-agents-seed-7", &shown);
}

fn collect(dir: &std::path::Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, into);
        } else {
            into.push(path);
        }
    }
}
