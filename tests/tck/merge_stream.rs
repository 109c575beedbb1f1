//! `report merge` of hundreds of files through the binary: written as the files are read (past
//! the size a merge holds whole), with the verdicts, summary and exit status of the merge held
//! whole.

use std::time::Duration;

use agent_tck::report::{CaseResult, Evidence, Level, Report, RunInfo, Status};

use crate::support::{tck_within, text, TempDir};

const FILES: usize = 300;
const CASES: usize = 10;

fn target_report(i: usize) -> Report {
    let cases = (0..CASES)
        .map(|n| {
            let mut c = CaseResult::new(
                &format!("rt.case-{n}"),
                &format!("endpoint-{}", n % 3),
                if n % 4 == 0 {
                    Level::Should
                } else {
                    Level::Must
                },
                "a rule",
                "Spec §1",
            );
            match (i * CASES + n) % 97 {
                0 => {
                    c.status = Status::Fail;
                    c.message = format!("agent {i} answered 500 <&>");
                }
                1 => c.skip(format!("agent {i} gave nothing to judge")),
                _ => c.pass_noting(Evidence::new(2, "answers"), String::new(), String::new),
            }
            c
        })
        .collect();
    RunInfo::start("probe", "roundtable", format!("http://agent-{i}"), 7, false)
        .report(cases, &agent_tck::text::Redactor::new(Vec::new()))
}

#[test]
fn report_merge_of_hundreds_of_files_streams_and_agrees_with_the_merge_held_whole() {
    let dir = TempDir::new("merge-stream");
    let mut files = Vec::new();
    for i in 0..FILES {
        let path = dir.path(&format!("agent-{i}.json"));
        std::fs::write(&path, agent_tck::report::json::to_string(&target_report(i))).unwrap();
        files.push(path);
    }
    let (json, xml, html) = (
        dir.path("all.json"),
        dir.path("all.xml"),
        dir.path("all.html"),
    );
    let mut args = vec!["report", "merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", &json, "--junit", &xml, "--html", &html]);
    let out = tck_within(&args, Duration::from_secs(300));
    let shown = text(&out);

    let held: Vec<(String, Report)> = files
        .iter()
        .map(|f| {
            (
                f.clone(),
                agent_tck::report::tools::read(f.as_ref()).unwrap(),
            )
        })
        .collect();
    let whole = agent_tck::report::tools::merge(&held).unwrap();
    assert_eq!(
        out.status.code(),
        Some(i32::from(whole.exit_code().code())),
        "{shown}"
    );
    assert_eq!(whole.exit_code(), 1);
    let streamed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(streamed, serde_json::to_value(&whole).unwrap());

    // The console names the cases that fail, and ends as a merge held whole would.
    assert!(
        shown.contains(&format!(
            "\n\n{} cases from {FILES} parts: the console names the cases that fail the run; \
             --json, --junit and --html hold every case\n  FAIL http://agent-9: rt.case-7: \
             agent 9 answered 500 <&>\n",
            FILES * CASES
        )),
        "{shown}"
    );
    assert!(
        shown.contains(" · report merge of probe roundtable · http://agent-0 + http://agent-1 + "),
        "{shown}"
    );
    assert!(
        shown.contains(" + http://agent-9 + … (300 targets in all) · seed 7\n"),
        "{shown}"
    );
    let counts = agent_tck::report::console::counts(&whole.summary);
    assert!(shown.contains(&format!("\n{counts}")), "{counts}\n{shown}");
    assert!(
        shown.contains(&format!("wrote {json}\nwrote {xml}\nwrote {html}\n")),
        "{shown}"
    );

    let junit = std::fs::read_to_string(&xml).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let root = doc.root_element();
    assert_eq!(
        root.attribute("tests"),
        Some((FILES * CASES).to_string().as_str())
    );
    assert_eq!(
        root.attribute("failures"),
        Some(whole.summary.failing().to_string().as_str())
    );
    let suites = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .count();
    assert_eq!(suites, FILES * 3);
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    // No spool or temporary file is left beside the merged files.
    let hidden: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert_eq!(hidden, Vec::<String>::new());
}

/// A run over 60 targets (~2,400 cases, past what a merge holds whole): the merged report is
/// written as the targets' reports are read back, and is what the merge held whole gives.
#[test]
fn a_run_over_many_targets_streams_its_merged_report() {
    let dir = TempDir::new("targets-stream");
    let mut agent = crate::support::Spawned::tck(
        &[
            "mock",
            "agent",
            "--port",
            "0",
            "--seed",
            "1",
            "--api-key",
            crate::support::KEY,
        ],
        Duration::from_secs(600),
    );
    let url = loop {
        let line = agent.line();
        if let Some(at) = line.find("http://127.0.0.1:") {
            break line[at..].split_whitespace().next().unwrap().to_string();
        }
    };
    const TARGETS: usize = 60;
    let list: String = (0..TARGETS)
        .map(|i| {
            format!(
                "- name: a{i}\n  key: {}\n  flags: [\"--url\", \"{url}\"]\n",
                crate::support::KEY
            )
        })
        .collect();
    let file = dir.path("targets.yaml");
    std::fs::write(&file, format!("targets:\n{list}")).unwrap();
    let (out_dir, json, xml) = (dir.path("out"), dir.path("all.json"), dir.path("all.xml"));
    let html = dir.path("all.html");
    let out = tck_within(
        &[
            "probe",
            "roundtable",
            "--targets",
            &file,
            "--out-dir",
            &out_dir,
            "--seed",
            "1",
            "--json",
            &json,
            "--junit",
            &xml,
            "--html",
            &html,
        ],
        Duration::from_secs(400),
    );
    let shown = text(&out);
    let _ = agent.interrupt(Duration::from_secs(30));

    let held: Vec<(String, Report)> = (0..TARGETS)
        .map(|i| {
            let mut r =
                agent_tck::report::tools::read(format!("{out_dir}/a{i}.json").as_ref()).unwrap();
            for c in &mut r.cases {
                agent_tck::report::tools::prefix(c, &format!("a{i}"));
            }
            (format!("a{i}"), r)
        })
        .collect();
    let whole = agent_tck::report::tools::merge(&held).unwrap();
    assert!(whole.cases.len() > 2_000, "{}", whole.cases.len());
    assert_eq!(
        out.status.code(),
        Some(i32::from(whole.exit_code().code())),
        "{shown}"
    );
    let streamed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(streamed, serde_json::to_value(&whole).unwrap());
    assert_eq!(
        std::fs::read_to_string(&xml).unwrap(),
        agent_tck::report::junit::to_string(&whole)
    );
    assert!(
        shown.contains(&format!("wrote {json}\nwrote {xml}\nwrote {html}\n")),
        "{shown}"
    );
    // The page of many targets, and no key anywhere: the merged files, the targets' reports,
    // the console.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("60 targets"), "the page of many targets");
    let mut files = vec![json.clone(), xml.clone(), html.clone()];
    files.extend((0..TARGETS).map(|i| format!("{out_dir}/a{i}.json")));
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(crate::support::KEY), "the key in {file}");
    }
    assert!(
        !shown.contains(crate::support::KEY),
        "the key on the console"
    );
}
