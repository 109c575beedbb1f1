//! The fuzz targets (`agent_tck::fuzz`) on stable: each over its seeds and a few thousand inputs
//! made from them by a fixed-seed mutator, and every input a fuzzer once failed on
//! (`fuzz/regressions/<target>/`). The same functions run under cargo-fuzz (`scripts/fuzz.sh`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use agent_tck::fuzz;

/// Inputs per target (FUZZ_INPUTS overrides): enough to reach the parsers' error paths, small
/// enough for the debug build — `probe_response` evaluates the whole round-table suite on each
/// input (~60 ms in the debug build), so it gets fewer.
fn inputs(target: &str) -> usize {
    // Each input of these targets is dearer: a probe run, or a suite parsed and validated by
    // every protocol that reads suites (3,000 of those took 76 s beside two CPU hogs, past the
    // 60 s a test may take). FUZZ_INPUTS raises the count; scripts/fuzz.sh fuzzes for real.
    let default = match target {
        "probe_response" => 500,
        "suite_yaml" => 1500,
        _ => 3000,
    };
    std::env::var("FUZZ_INPUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The directories a target's seeds come from, under the repository: its own seeds, and for the
/// YAML loaders the project's own files of those kinds. `scripts/fuzz.sh` gives cargo-fuzz the
/// same list.
fn seed_dirs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("fuzz/seeds").join(target)];
    match target {
        "suite_yaml" => dirs.extend([root.join("suites"), root.join("tests/tck/toy")]),
        "config_yaml" => dirs.extend([
            root.join("mocks"),
            root.join("mocks/injection"),
            root.join("suites/execute_task"),
        ]),
        _ => {}
    }
    dirs
}

fn files_in(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// Runs `target` on each input; on a panic, names the input and keeps it in a file to replay.
fn run_all(target: &str, inputs: &[Vec<u8>]) {
    for (i, input) in inputs.iter().enumerate() {
        let outcome = catch_unwind(AssertUnwindSafe(|| fuzz::run(target, input)));
        if let Err(panic) = outcome {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let kept = std::env::temp_dir().join(format!("agent-tck-fuzz-{target}-{i}"));
            std::fs::write(&kept, input).unwrap();
            panic!(
                "fuzz target {target}, input {i} of {} ({} bytes, kept in {}; replay with \
                 `cargo fuzz run {target} {}`): {why}",
                inputs.len(),
                input.len(),
                kept.display(),
                kept.display()
            );
        }
    }
}

fn fuzz_target(target: &str) {
    let seeds: Vec<Vec<u8>> = seed_dirs(target).iter().flat_map(|d| files_in(d)).collect();
    assert!(!seeds.is_empty(), "no seeds for {target}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let regressions = files_in(&root.join("fuzz/regressions").join(target));
    run_all(target, &regressions);
    run_all(
        target,
        &fuzz::mutations(&seeds, inputs(target), 0x5eed_0001),
    );
}

#[test]
fn every_target_has_a_test_here() {
    let here = include_str!("fuzz.rs");
    for (name, _) in fuzz::TARGETS {
        assert!(
            here.contains(&format!("fn {name}() {{")),
            "fuzz target {name} has no test in tests/tck/fuzz.rs"
        );
    }
}

#[test]
fn the_mutator_is_fixed_and_varied() {
    let seeds = vec![
        b"POST / HTTP/1.1\r\n\r\n".to_vec(),
        b"{\"a\": [1]}".to_vec(),
    ];
    let a = fuzz::mutations(&seeds, 500, 7);
    assert_eq!(
        a,
        fuzz::mutations(&seeds, 500, 7),
        "the same seed, other inputs"
    );
    assert_ne!(a, fuzz::mutations(&seeds, 500, 8));
    let distinct: std::collections::HashSet<&Vec<u8>> = a.iter().collect();
    assert!(
        distinct.len() > 400,
        "only {} distinct inputs",
        distinct.len()
    );
}

/// A target whose seeds never get past its first step would fuzz nothing: the recorded answers
/// must read as responses (an HTTP client refuses bytes before its request, say).
#[test]
fn the_response_seeds_read_as_responses() {
    let seeds = files_in(&seed_dirs("probe_response")[0]);
    assert!(seeds.len() >= 5);
    for seed in &seeds {
        let read = fuzz::read_response(seed);
        assert!(read.is_ok(), "a seed did not read: {:?}", read.err());
    }
}

#[test]
fn mock_request() {
    fuzz_target("mock_request");
}

#[test]
fn mock_body() {
    fuzz_target("mock_body");
}

#[test]
fn probe_response() {
    fuzz_target("probe_response");
}

#[test]
fn line_reader() {
    fuzz_target("line_reader");
}

#[test]
fn suite_yaml() {
    fuzz_target("suite_yaml");
}

#[test]
fn config_yaml() {
    fuzz_target("config_yaml");
}
