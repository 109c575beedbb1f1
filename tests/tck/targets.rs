//! `probe PROTOCOL --targets FILE`: a report per target, a summary matrix, one merged report;
//! `--shard K/N`: N shard runs merged give the cases and verdicts of one run over the list.

use std::collections::BTreeSet;

use serde_json::Value;

use std::time::Duration;

use crate::support::{case_statuses, tck, text, Spawned, TempDir, EXE, RUN_DEADLINE};

fn targets_file(dir: &TempDir) -> String {
    let mock = format!("{EXE} mock agent --protocol agent-standard --seed 4");
    let path = dir.path("targets.yaml");
    std::fs::write(
        &path,
        format!(
            "targets:\n\
             - name: scanner\n  flags: [\"--exec\", \"{mock} --name security-scanner\", \"--agent\", \"security-scanner\"]\n\
             - name: reviewer\n  flags: [\"--exec\", \"{mock} --name reviewer --behavior missing-scope\"]\n\
             - name: tester\n  flags: [\"--exec\", \"{mock} --name tester --behavior metrics-mismatch\"]\n\
             - name: architect\n  flags: [\"--exec\", \"{mock} --name architect --behavior wrong-status\"]\n"
        ),
    )
    .unwrap();
    path
}

/// `agent-tck probe agent-standard --targets FILE`, then `more`.
fn probe_targets(file: &str, more: &[&str]) -> std::process::Output {
    let mut args = vec!["probe", "agent-standard", "--targets", file];
    args.extend_from_slice(more);
    tck(&args)
}

/// The run over `targets_file`'s list: exit 1, and the matrix with a row per target and the
/// count (2 of 4 fail).
fn assert_matrix(out: &std::process::Output) {
    let shown = text(out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    let row = |words: &[&str]| {
        shown
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == words)
    };
    assert!(row(&["reviewer", "FAIL", "plan.plan-scope"]), "{shown}");
    assert!(row(&["scanner", "PASS", "-"]), "{shown}");
    assert!(shown.contains("4 targets: 2 passed, 2 failed"), "{shown}");
}

fn verdicts(path: &str) -> (BTreeSet<(String, String)>, Value) {
    let report: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let cases = case_statuses(&report).into_iter().collect();
    (cases, report["summary"].clone())
}

#[test]
fn a_list_of_targets_gives_a_report_each_a_matrix_and_a_merged_report() {
    let dir = TempDir::new("targets");
    let file = targets_file(&dir);
    let (out_dir, all) = (dir.path("reports"), dir.path("all.json"));
    let out = probe_targets(
        &file,
        &[
            "--out-dir",
            &out_dir,
            "--target-concurrency",
            "2",
            "--timeout",
            "60s",
            "--json",
            &all,
        ],
    );
    assert_matrix(&out);
    for name in ["scanner", "reviewer", "tester", "architect"] {
        let (cases, _) = verdicts(&format!("{out_dir}/{name}.json"));
        assert!(!cases.is_empty(), "{name}");
    }
    let (cases, summary) = verdicts(&all);
    assert!(cases.contains(&("reviewer: plan.plan-scope".into(), "fail".into())));
    assert!(cases.contains(&("tester: execute.metrics".into(), "fail".into())));
    assert_eq!(
        summary["failed_must"], 3,
        "reviewer's scope, architect's schema twice"
    );

    // Bad lists are usage errors naming the place.
    std::fs::write(dir.path("bad.yaml"), "targets:\n  - name: a b\n").unwrap();
    let out = probe_targets(&dir.path("bad.yaml"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("bad.yaml:2: name \"a b\""),
        "{}",
        text(&out)
    );
    let out = probe_targets(&file, &["--shard", "3/2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--shard \"3/2\""), "{}", text(&out));
}

/// Without a merged report asked for, each target's report is dropped once written: the matrix
/// and the exit status come from what is kept of each run, and say the same.
#[test]
fn without_a_merged_report_the_matrix_and_the_exit_status_are_the_same() {
    let dir = TempDir::new("targets-unmerged");
    let file = targets_file(&dir);
    let out_dir = dir.path("reports");
    let out = probe_targets(&file, &["--out-dir", &out_dir, "--timeout", "60s"]);
    assert_matrix(&out);
    assert!(std::path::Path::new(&format!("{out_dir}/tester.json")).exists());
}

#[test]
fn shards_merged_give_what_one_run_over_the_list_gives() {
    let dir = TempDir::new("targets-shards");
    let file = targets_file(&dir);
    let whole = dir.path("whole.json");
    probe_targets(&file, &["--out-dir", &dir.path("w"), "--json", &whole]);
    let expected = verdicts(&whole);
    for n in [2, 3] {
        let mut shards = Vec::new();
        for k in 1..=n {
            let json = dir.path(&format!("shard-{k}-of-{n}.json"));
            let out = probe_targets(
                &file,
                &[
                    "--shard",
                    &format!("{k}/{n}"),
                    "--out-dir",
                    &dir.path(&format!("s{k}")),
                    "--json",
                    &json,
                ],
            );
            assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
            shards.push(json);
        }
        let merged = dir.path(&format!("merged-{n}.json"));
        let mut args = vec!["report", "merge"];
        args.extend(shards.iter().map(String::as_str));
        args.extend(["--json", &merged]);
        let out = tck(&args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert_eq!(verdicts(&merged), expected, "{n} shards");
    }
}

/// The last line of the report of a fleet no platform called.
const FLEET_REPORT: &str = "0 passed, 0 failed, 14 skipped · nothing judged";

#[test]
fn fleet_shards_serve_every_agent_once() {
    let mut served: Vec<String> = Vec::new();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let mut fleet = Spawned::tck(
            &[
                "mock", "fleet", "--preset", "chaos", "--port", "0", "--quiet", "--shard", &shard,
            ],
            RUN_DEADLINE,
        );
        let header = fleet.line();
        let count: usize = header
            .split(" · ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{header}"));
        for _ in 0..count {
            let line = fleet.line();
            served.push(
                line.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        // Ctrl-C right after the banner: the fleet has its handler by then, stops and reports
        // (even with SIGINT ignored, as under nohup); one that does not is killed after 20 s.
        let out = fleet.interrupt(Duration::from_secs(20));
        // Exit 1: no platform called it, so nothing was judged (not a pass).
        assert_eq!(out.status.code(), Some(1), "shard {shard}: {}", text(&out));
        assert!(
            text(&out).contains(FLEET_REPORT),
            "shard {shard}: no report: {}",
            text(&out)
        );
    }
    let unique: BTreeSet<&String> = served.iter().collect();
    assert_eq!(
        unique.len(),
        served.len(),
        "no agent in two shards: {served:?}"
    );
    assert_eq!(
        served.len(),
        23,
        "the chaos preset's agents, each in one shard: {served:?}"
    );
}

/// Ctrl-C during a run over targets: the targets done keep their reports (and the merged report
/// holds them), the one still running is listed as not run, the line every judging command
/// prints on Ctrl-C says how many were done, and the exit is 130.
#[test]
fn an_interrupted_run_over_targets_keeps_the_targets_done() {
    let dir = TempDir::new("targets-interrupted");
    let mock = format!("{EXE} mock agent --protocol agent-standard --seed 4");
    let file = dir.path("targets.yaml");
    std::fs::write(
        &file,
        format!(
            "targets:\n\
             - name: scanner\n  flags: [\"--exec\", \"{mock} --name security-scanner\", \"--agent\", \"security-scanner\"]\n\
             - name: stuck\n  flags: [\"--exec\", \"sleep 600\"]\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path("reports");
    let merged = dir.path("merged.json");
    let mut run = Spawned::tck(
        &[
            "probe",
            "agent-standard",
            "--targets",
            &file,
            "--out-dir",
            &out_dir,
            "--json",
            &merged,
            "--timeout",
            "300s",
        ],
        RUN_DEADLINE,
    );
    // The banner, then the row of the target that finished; the other one is still running.
    assert!(run.line().contains("2 of 2 targets"));
    let row = run.line();
    assert!(row.split_whitespace().next() == Some("scanner"), "{row}");
    let out = run.interrupt(Duration::from_secs(30));
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(130), "{shown}");
    assert!(
        shown.contains("interrupted (Ctrl-C): 1 of 2 targets done, their reports written; the rest are not run"),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["stuck", "not", "run:", "interrupted", "(Ctrl-C)"]),
        "{shown}"
    );
    assert!(std::path::Path::new(&format!("{out_dir}/scanner.json")).exists());
    assert!(!std::path::Path::new(&format!("{out_dir}/stuck.json")).exists());
    let (cases, _) = verdicts(&merged);
    assert!(!cases.is_empty(), "the merged report holds the target done");
}
