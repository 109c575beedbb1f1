//! `probe PROTOCOL --targets FILE` over many targets: compact reports by default (`--full-reports`
//! keeps everything), `--resume` after an interruption or with reports that do not stand, and
//! no progress line off a terminal.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::support::{
    case_statuses, reference_agent, tck, text, Spawned, TempDir, EXE, KEY, RUN_DEADLINE,
};

/// A cheap target of `mock agent --protocol agent-standard`: `name`, the mock's extra flags.
fn standard_target(name: &str, mock_flags: &str) -> String {
    let mock = format!("{EXE} mock agent --protocol agent-standard --seed 4");
    format!("- name: {name}\n  flags: [\"--exec\", \"{mock} {mock_flags}\"]\n")
}

/// The target that passes: the security scanner, probed as one (`--agent`).
fn scanner() -> String {
    let mock = format!("{EXE} mock agent --protocol agent-standard --seed 4");
    format!(
        "- name: scanner\n  flags: [\"--exec\", \"{mock} --name security-scanner\", \
         \"--agent\", \"security-scanner\"]\n"
    )
}

/// Four targets, two of which fail (reviewer's scope, architect's schema).
fn four_targets(dir: &TempDir) -> String {
    let path = dir.path("targets.yaml");
    let list = [
        scanner(),
        standard_target("reviewer", "--name reviewer --behavior missing-scope"),
        standard_target("tester", "--name tester --behavior metrics-mismatch"),
        standard_target("architect", "--name architect --behavior wrong-status"),
    ];
    std::fs::write(&path, format!("targets:\n{}", list.concat())).unwrap();
    path
}

fn probe(args: &[&str]) -> std::process::Output {
    let mut all = vec!["probe", "agent-standard"];
    all.extend_from_slice(args);
    tck(&all)
}

fn json(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A merged report's verdicts: every case's (id, status), and the summary.
fn verdicts(path: &str) -> (BTreeSet<(String, String)>, Value) {
    let report = json(path);
    (
        case_statuses(&report).into_iter().collect(),
        report["summary"].clone(),
    )
}

/// The targets that ran: those with a line of their own (`  NAME   PASS · …`).
fn ran(shown: &str) -> Vec<String> {
    shown
        .lines()
        .filter(|l| l.starts_with("  ") && (l.contains(" PASS · ") || l.contains(" FAIL · ")))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// Nothing of the progress line in a run's output (off a terminal).
fn assert_no_progress(shown: &str) {
    assert!(!shown.contains('\r'), "{shown:?}");
    assert!(!shown.contains(" done · "), "{shown}");
    assert!(!shown.contains("targets/s"), "{shown}");
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passing_target_s_report_is_compact_and_full_reports_keeps_everything() {
    let agent = reference_agent(Some(KEY)).await;
    let wrong_key = "wrong-key-9d1c7e55";
    let dir = TempDir::new("targets-compact");
    let file = dir.path("targets.yaml");
    std::fs::write(
        &file,
        format!(
            "targets:\n- name: good\n  url: {url}\n  key: {KEY}\n\
             - name: wrong\n  url: {url}\n  key: {wrong_key}\n",
            url = agent.url()
        ),
    )
    .unwrap();
    let run = |out_dir: &str, more: &[&str]| {
        let mut args = vec![
            "probe",
            "roundtable",
            "--targets",
            &file,
            "--out-dir",
            out_dir,
            "--timeout",
            "60s",
        ];
        args.extend_from_slice(more);
        tokio::task::block_in_place(|| tck(&args))
    };
    let compact = dir.path("compact");
    let merged = dir.path("all.json");
    let (junit, html) = (dir.path("all.xml"), dir.path("all.html"));
    let out = run(
        &compact,
        &["--json", &merged, "--junit", &junit, "--html", &html],
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert_no_progress(&shown);
    let good = json(&format!("{compact}/good.json"));
    let cases = good["cases"].as_array().unwrap();
    assert!(cases.iter().any(|c| c["id"] == "analyze.long-content"));
    for c in cases {
        assert_eq!(c["status"], "pass", "{c}");
        assert!(
            c.get("exchange").is_none(),
            "a passing case keeps no exchange: {c}"
        );
        assert!(c["evidence"]["judged"].as_u64().unwrap() >= 1, "{c}");
        assert!(
            c["message"].as_str().unwrap().chars().count() <= 240 + 40,
            "{c}"
        );
    }
    let notes = good["notes"].to_string();
    assert!(notes.contains("--full-reports keeps everything"), "{notes}");
    assert_eq!(good["fingerprint"].as_str().unwrap().len(), 16, "{good}");
    let wrong = json(&format!("{compact}/wrong.json"));
    let failing: Vec<&Value> = wrong["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .collect();
    assert!(!failing.is_empty(), "{wrong}");
    for c in &failing {
        assert!(
            c["exchange"]["request"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "a failing case keeps its exchange: {c}"
        );
    }
    // Each target's JUnit and HTML only with --full-reports: the merged files hold them all.
    let listed = |dir: &str| -> BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(
        listed(&compact),
        BTreeSet::from(["good.json".into(), "wrong.json".into()])
    );
    let whole = dir.path("whole");
    let out = run(
        &whole,
        &["--full-reports", "--junit", &junit, "--html", &html],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        listed(&whole),
        [
            "good.html",
            "good.json",
            "good.xml",
            "wrong.html",
            "wrong.json",
            "wrong.xml"
        ]
        .map(String::from)
        .into()
    );
    let full = json(&format!("{whole}/good.json"));
    let long = full["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "analyze.long-content")
        .unwrap();
    assert!(long["exchange"]["reproduce"].as_str().unwrap().len() > 100_000);
    assert!(
        !full["notes"].to_string().contains("compacted"),
        "{}",
        full["notes"]
    );
    assert_ne!(
        full["fingerprint"], good["fingerprint"],
        "a full report is another run"
    );
    let size = |path: String| std::fs::metadata(path).unwrap().len();
    assert!(
        size(format!("{compact}/good.json")) * 5 < size(format!("{whole}/good.json")),
        "a compact report is a fraction of the full one"
    );
    // No key in any file written nor on the console, hashed or not.
    for file in [
        merged.clone(),
        junit.clone(),
        html.clone(),
        format!("{compact}/good.json"),
        format!("{compact}/wrong.json"),
    ]
    .into_iter()
    .chain(listed(&whole).into_iter().map(|f| format!("{whole}/{f}")))
    {
        let bytes = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for key in [KEY, wrong_key] {
            assert!(!bytes.contains(key), "{key} in {file}");
        }
    }
    for key in [KEY, wrong_key] {
        assert!(!shown.contains(key), "{key} on the console");
    }
    agent.stop().await;
}

/// A run cut short by Ctrl-C says how to finish it; `--resume` then runs only the targets not
/// done, and its merged report and exit status are those of one run without interruption. A
/// run afresh (no --resume) first removes the reports an earlier run left.
#[test]
fn an_interrupted_run_finishes_with_resume() {
    let dir = TempDir::new("targets-resume");
    let file = dir.path("targets.yaml");
    let scanner = scanner();
    let finishing = format!(
        "targets:\n{scanner}{}",
        standard_target("second", "--name reviewer --behavior missing-scope")
    );
    let stuck =
        format!("targets:\n{scanner}- name: second\n  flags: [\"--exec\", \"sleep 600\"]\n");
    let out_dir = dir.path("reports");
    // One run without interruption: what the resumed one must give.
    std::fs::write(&file, &finishing).unwrap();
    let whole = dir.path("whole.json");
    let same = [
        "--targets",
        &file,
        "--out-dir",
        &out_dir,
        "--timeout",
        "300s",
    ];
    let out = probe(&[&same[..], &["--json", &whole]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(std::path::Path::new(&format!("{out_dir}/second.json")).exists());

    // Afresh, with the second target stuck: Ctrl-C once the first is done.
    std::fs::write(&file, &stuck).unwrap();
    let cut = dir.path("cut.json");
    let mut run = Spawned::tck(
        &[&["probe", "agent-standard"][..], &same, &["--json", &cut]].concat(),
        RUN_DEADLINE,
    );
    assert!(run.line().contains("2 of 2 targets"));
    let row = run.line();
    assert_eq!(row.split_whitespace().next(), Some("scanner"), "{row}");
    let out = run.interrupt(Duration::from_secs(30));
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(130), "{shown}");
    assert!(
        shown.contains(
            "interrupted (Ctrl-C): 1 of 2 targets done, their reports written; the rest are \
             not run: run the same command with --resume to finish"
        ),
        "{shown}"
    );
    assert_no_progress(&shown);
    assert!(
        !std::path::Path::new(&format!("{out_dir}/second.json")).exists(),
        "the earlier run's report of a target not done this time is gone"
    );

    // Resumed, the same command (the stuck target mended): only the second runs.
    std::fs::write(&file, &finishing).unwrap();
    let resumed = dir.path("resumed.json");
    let out = probe(&[&same[..], &["--json", &resumed, "--resume"]].concat());
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(&format!(
            "resumed 1 of 2 targets from {out_dir} (its report is complete and of this \
             version and flags); 1 to run"
        )),
        "{shown}"
    );
    assert_eq!(ran(&shown), ["second"], "{shown}");
    assert!(shown.contains("2 targets: 1 passed, 1 failed"), "{shown}");
    assert_eq!(verdicts(&resumed), verdicts(&whole));
}

/// A report of another version, without a fingerprint, cut short, or made with other flags
/// does not stand: its target is run again and the console says why.
#[test]
fn a_report_that_does_not_stand_is_run_again_and_the_console_says_why() {
    let dir = TempDir::new("targets-stale");
    let file = four_targets(&dir);
    let out_dir = dir.path("reports");
    let whole = dir.path("whole.json");
    let out = probe(&["--targets", &file, "--out-dir", &out_dir, "--json", &whole]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert_no_progress(&shown);
    let at = |name: &str| format!("{out_dir}/{name}.json");
    let mut other_version = json(&at("scanner"));
    other_version["version"] = "0.0.1-other".into();
    std::fs::write(at("scanner"), other_version.to_string()).unwrap();
    let bytes = std::fs::read(at("reviewer")).unwrap();
    std::fs::write(at("reviewer"), &bytes[..bytes.len() / 2]).unwrap();
    let mut unmarked = json(&at("tester"));
    unmarked.as_object_mut().unwrap().remove("fingerprint");
    std::fs::write(at("tester"), unmarked.to_string()).unwrap();

    let resumed = dir.path("resumed.json");
    let out = probe(&[
        "--targets",
        &file,
        "--out-dir",
        &out_dir,
        "--json",
        &resumed,
        "--resume",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    let said = |line: &str| shown.lines().any(|l| l == line);
    assert!(
        said(&format!(
            "  scanner                  run again: its report is of agent-tck 0.0.1-other, this is {}",
            env!("CARGO_PKG_VERSION")
        )),
        "{shown}"
    );
    assert!(
        shown.lines().any(|l| l.starts_with(
            "  reviewer                 run again: its report does not read back (not JSON: EOF"
        )),
        "{shown}"
    );
    assert!(
        said(
            "  tester                   run again: its report has no fingerprint (an older \
              agent-tck, or not a run over --targets)"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("resumed 1 of 4 targets from"),
        "architect's report stands: {shown}"
    );
    let mut again = ran(&shown);
    again.sort();
    assert_eq!(again, ["reviewer", "scanner", "tester"], "{shown}");
    assert_eq!(verdicts(&resumed), verdicts(&whole));
    assert_no_progress(&shown);

    // Another flag: every target is run again, for that reason.
    let out = probe(&[
        "--targets",
        &file,
        "--out-dir",
        &out_dir,
        "--resume",
        "--timeout",
        "61s",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert_eq!(
        shown
            .lines()
            .filter(|l| l.ends_with("run again: its report was made with other flags"))
            .count(),
        4,
        "{shown}"
    );
    assert!(
        shown.contains("--resume: no report in ") && shown.contains("; 4 to run"),
        "{shown}"
    );
    assert_eq!(ran(&shown).len(), 4, "{shown}");
    // The same again: all four stand.
    let out = probe(&[
        "--targets",
        &file,
        "--out-dir",
        &out_dir,
        "--resume",
        "--timeout",
        "61s",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("resumed 4 of 4 targets from"), "{shown}");
    assert!(ran(&shown).is_empty(), "{shown}");
    assert!(shown.contains("4 targets: 2 passed, 2 failed"), "{shown}");
}
