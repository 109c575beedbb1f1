//! `--baseline`, `baseline write`, `report merge` and `report diff` on the command line, over runs
//! of `probe agent-standard --exec` against the mock agent (quick, and no server to start).

use std::process::Output;

use serde_json::Value;

use crate::support::{case_statuses, tck, text, TempDir, EXE};

/// `probe agent-standard --exec` against the mock with `behavior`, and `extra` flags.
fn probe(behavior: &str, extra: &[&str]) -> Output {
    let command = format!(
        "'{EXE}' mock agent --protocol agent-standard --name security-scanner --seed 3 --behavior {behavior}"
    );
    let mut args = vec![
        "probe",
        "agent-standard",
        "--exec",
        &command,
        "--agent",
        "security-scanner",
        "--seed",
        "3",
    ];
    args.extend_from_slice(extra);
    tck(&args)
}

fn json(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The cases that neither passed nor were skipped, with their status.
fn statuses(report: &Value) -> Vec<(String, String)> {
    case_statuses(report)
        .into_iter()
        .filter(|(_, s)| s != "pass" && s != "skip")
        .collect()
}

#[test]
fn a_baseline_written_from_a_run_holds_its_failures_and_goes_stale_when_they_are_fixed() {
    let dir = TempDir::new("baseline");
    let (first, base) = (dir.path("first.json"), dir.path("baseline.yaml"));
    let out = probe("missing-findings,wrong-name", &["--json", &first]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let out = tck(&["baseline", "write", "--from", &first, "--out", &base]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let written = std::fs::read_to_string(&base).unwrap();
    assert!(
        written.contains("- id: \"execute.execute-findings\""),
        "{written}"
    );
    assert!(written.contains("- id: \"plan.agent-name\""), "{written}");

    // The same failures, expected: xfail everywhere, exit 0.
    let (again, junit) = (dir.path("again.json"), dir.path("again.xml"));
    let out = probe(
        "missing-findings,wrong-name",
        &["--baseline", &base, "--json", &again, "--junit", &junit],
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("XFAIL must   execute.execute-findings"),
        "{shown}"
    );
    assert!(
        shown.contains("3 expected failures (--baseline), 0 stale"),
        "{shown}"
    );
    let report = json(&again);
    assert!(statuses(&report).iter().all(|(_, s)| s == "xfail"));
    assert_eq!(report["summary"]["xfailed"], 3);
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &report),
        vec![]
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let skipped: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("skipped"))
        .filter_map(|n| n.attribute("message"))
        .filter(|m| m.starts_with("xfail: expected failure ("))
        .collect();
    assert_eq!(skipped.len(), 3, "{xml}");

    // Fixed: the entries are stale — a warning, a failure under --strict.
    let fixed = dir.path("fixed.json");
    let out = probe("conforming", &["--baseline", &base, "--json", &fixed]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("STALE must   execute.execute-findings"),
        "{shown}"
    );
    assert!(shown.contains("remove it from the baseline"), "{shown}");
    let out = probe("conforming", &["--baseline", &base, "--strict"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    // The summary says why it exits 1 though no case failed: the stale entries, by name.
    let mut stale: Vec<String> = statuses(&json(&first))
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    stale.sort();
    assert_eq!(stale.len(), 3, "{stale:?}");
    let why = shown
        .lines()
        .find(|l| l.starts_with("--strict: "))
        .unwrap_or_else(|| panic!("no --strict line: {shown}"));
    let mut named: Vec<String> = why
        .strip_prefix(
            "--strict: 3 stale baseline entries fail the run (passing now; remove them from the \
             baseline): ",
        )
        .unwrap_or_else(|| panic!("{why}"))
        .split(", ")
        .map(String::from)
        .collect();
    named.sort();
    assert_eq!(named, stale, "{shown}");

    // A bad baseline is a usage error naming its line, before anything runs.
    std::fs::write(&base, "- id: a\n  reason: r\n  until: soon\n").unwrap();
    let out = probe("conforming", &["--baseline", &base]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("baseline.yaml:3: until: \"soon\""),
        "{}",
        text(&out)
    );
}

#[test]
fn shards_merged_give_the_unsharded_verdict_and_a_diff_names_what_changed() {
    let dir = TempDir::new("report-tools");
    let (whole, plan, execute) = (
        dir.path("whole.json"),
        dir.path("plan.json"),
        dir.path("execute.json"),
    );
    let behavior = "metrics-mismatch,missing-scope";
    assert_eq!(probe(behavior, &["--json", &whole]).status.code(), Some(1));
    probe(behavior, &["--json", &plan, "--only", "plan.*"]);
    probe(behavior, &["--json", &execute, "--only", "execute.*"]);
    let merged = dir.path("merged.json");
    let out = tck(&["report", "merge", &plan, &execute, "--json", &merged]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the merged run fails as the whole did"
    );
    let (w, m) = (json(&whole), json(&merged));
    assert_eq!(case_statuses(&w), case_statuses(&m));
    assert_eq!(w["summary"], m["summary"]);
    // execute.metrics is a SHOULD failure without --strict: a warning, not a failure.
    assert_eq!(w["summary"]["warnings"], 1, "{}", w["summary"]);
    let out = probe(behavior, &[]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        shown.trim_end().lines().last(),
        Some(
            format!(
                "{} passed, 1 failed, 1 warning, {} skipped",
                w["summary"]["passed"], w["summary"]["skipped"]
            )
            .as_str()
        ),
        "{shown}"
    );
    // The merge is titled by its command and keeps the runs' one seed.
    assert_eq!(m["command"], "report merge of probe agent-standard");
    assert_eq!(m["seed"], 3);
    let out = tck(&["report", "merge", &plan, &execute]);
    assert!(
        text(&out).contains(" · report merge of probe agent-standard · "),
        "{}",
        text(&out)
    );
    assert_eq!(agent_tck::schema::schemas().validate("report", &m), vec![]);
    // A repeat is not a shard.
    let out = tck(&["report", "merge", &plan, &plan]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("merge shards of one run, not repeats"));

    // Diff: the conforming run fixes both; the other way round, two regressions.
    let good = dir.path("good.json");
    probe("conforming", &["--json", &good]);
    let out = tck(&["report", "diff", &whole, &good]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("fixed (2)"), "{}", text(&out));
    let out = tck(&["report", "diff", &good, &whole]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("REGRESSIONS (1)\n  plan.plan-scope: passed before"),
        "{shown}"
    );
    assert!(
        shown.contains("new warnings (1)\n  execute.metrics"),
        "{shown}"
    );
    // Not a report: the file and the path.
    std::fs::write(dir.path("x.json"), "{\"tool\": \"other\"}").unwrap();
    let out = tck(&["report", "diff", &dir.path("x.json"), &good]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("x.json: not an agent-tck report"),
        "{}",
        text(&out)
    );
}

/// A baseline written on a bad day: a server with no routes (every request 404, as `python3 -m
/// http.server`) gives agent.reachable PASS (a connection, no rule) and one FAIL per endpoint
/// (analyze.response, challenge.response, vote.response), the rest skipped. `baseline write` refuses that report, saying why; a baseline that expects
/// the failure all the same leaves the run judging nothing: exit 1, "nothing judged" in every
/// format, not "1 passed, 0 failed … 2 expected failures", exit 0. (The peer that must not
/// trip it: a real failure on an otherwise judged run, expected: exit 0, above.)
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_cannot_turn_a_run_that_judged_nothing_green() {
    let server = crate::stub_server::spawn(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        axum::Router::new(),
    )
    .await
    .unwrap();
    let url = server.url();
    let blocking = |args: &[&str]| tokio::task::block_in_place(|| tck(args));
    let dir = TempDir::new("baseline-404");
    let (bad, base) = (dir.path("bad.json"), dir.path("baseline.yaml"));
    let probe = |extra: &[&str]| {
        let mut args = vec![
            "probe",
            "roundtable",
            "--url",
            &url,
            "--seed",
            "1",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        blocking(&args)
    };
    let out = probe(&["--json", &bad]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = json(&bad);
    let status = |id: &str| {
        case_statuses(&report)
            .into_iter()
            .find(|(c, _)| c == id)
            .map(|(_, s)| s)
    };
    assert_eq!(status("agent.reachable").as_deref(), Some("pass"));
    for id in ["analyze.response", "challenge.response", "vote.response"] {
        assert_eq!(status(id).as_deref(), Some("fail"), "{id}");
    }
    let reachable = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "agent.reachable")
        .unwrap();
    assert_eq!(reachable["precondition"], true, "{reachable}");
    assert_eq!(report["summary"]["judged_must"], 3, "{}", report["summary"]);

    // Refused: exit 2, one line saying why, no file.
    let out = blocking(&["baseline", "write", "--from", &bad, "--out", &base]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--from {bad}: a baseline of this report would leave nothing judged: its only MUST \
             verdicts are agent.reachable (reachability), the failure of analyze.response, the \
             failure of challenge.response and the failure of vote.response; fix the agent (or \
             --url) first"
        )),
        "{stderr}"
    );
    assert!(!std::path::Path::new(&base).exists());

    // Written by hand all the same: the failure is expected, and the run still judged nothing.
    std::fs::write(
        &base,
        "- id: analyze.response\n  reason: the agent is not deployed yet\n\
         - id: challenge.response\n  reason: the agent is not deployed yet\n\
         - id: vote.response\n  reason: the agent is not deployed yet\n",
    )
    .unwrap();
    let (again, junit, html) = (
        dir.path("again.json"),
        dir.path("again.xml"),
        dir.path("again.html"),
    );
    let out = probe(&[
        "--baseline",
        &base,
        "--json",
        &again,
        "--junit",
        &junit,
        "--html",
        &html,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let why = "nothing judged: no MUST rule was judged (";
    let last = stdout.trim_end().lines().last().unwrap();
    assert!(
        last.contains(why)
            && last
                .contains("3 expected failures by the baseline, 1 reachability only) — not a pass"),
        "{last}"
    );
    let report = json(&again);
    assert_eq!(report["summary"]["judged_must"], 0, "{}", report["summary"]);
    assert_eq!(report["summary"]["xfailed_must"], 3);
    assert_eq!(report["summary"]["precondition_must"], 1);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("name=\"run.judged [must]\"") && xml.contains(why),
        "{xml}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(" · FAIL</title>"), "{page}");
    assert!(page.contains(&format!("<p>exit 1: {why}")), "{page}");

    // And a report that already judged nothing (the baseline applied) is refused too.
    let out = blocking(&["baseline", "write", "--from", &again]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the report judged nothing"),
        "{}",
        text(&out)
    );
    server.stop().await;
}
