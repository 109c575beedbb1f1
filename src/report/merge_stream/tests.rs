use super::*;
use crate::report::baseline::tests::case;
use crate::report::baseline::Baseline;
use crate::report::{Kind, Level, RunInfo, Status};

use Level::{May, Must, Should};
use Status::{Fail, Pass, Skip, Stale, Xfail};

/// A directory of its own under the system temp dir, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!(
            "agent-tck-merge-stream-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

type Spec<'a> = (&'a str, &'a str, Status, Level, Kind);

fn report(target: &str, strict: bool, min_score: Option<f64>, cases: &[Spec]) -> Report {
    let cases = cases
        .iter()
        .map(|(id, group, status, level, kind)| {
            let mut c = case(id, *status, *level, format!("{id}: {status:?} <&> \u{1}"));
            c.group = group.to_string();
            c.kind = *kind;
            c
        })
        .collect();
    let mut r = RunInfo::start("probe", "roundtable", target, 7, strict)
        .report(cases, &crate::text::Redactor::new(Vec::new()));
    r.min_score = min_score;
    r.summarize();
    r
}

/// Writes the parts to `dir`, merges them both ways: held whole, and streamed.
fn both(
    dir: &Dir,
    reports: &[Report],
    ids: Ids,
    baseline: Option<&Baseline>,
) -> (Report, Merged, String, String) {
    let parts: Vec<Part> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let path = dir.0.join(format!("part-{i}.json"));
            std::fs::write(&path, super::super::json::to_string(r)).unwrap();
            Part {
                name: format!("t{i}"),
                path,
            }
        })
        .collect();
    let survey = Survey::read(parts.clone(), ids, true).unwrap();
    let mut whole = survey.whole().unwrap();
    if let Some(b) = baseline {
        b.apply(&mut whole, &super::super::baseline::today());
    }
    let (json, xml, ctrf, html) = (
        dir.0.join("all.json"),
        dir.0.join("all.xml"),
        dir.0.join("all.ctrf.json"),
        dir.0.join("all.html"),
    );
    let out = Outputs {
        json: Some(&json),
        junit: Some(&xml),
        ctrf: Some(&ctrf),
        html: Some(&html),
        baseline,
    };
    let merged = Survey::read(parts, ids, true)
        .unwrap()
        .write(&out, &AtomicBool::new(false))
        .unwrap();
    // Nothing is left beside the files but the files.
    let mut left: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    left.sort();
    assert_eq!(left, Vec::<String>::new());
    // The streamed CTRF is the whole merge's too.
    assert_eq!(
        std::fs::read_to_string(ctrf).unwrap(),
        super::super::ctrf::to_string(&whole)
    );
    (
        whole,
        merged,
        std::fs::read_to_string(json).unwrap(),
        std::fs::read_to_string(xml).unwrap(),
    )
}

/// The stream's JSON is the whole merge's, its JUnit the whole's JUnit, its summary and
/// exit status the whole's.
fn same_as_whole(name: &str, reports: &[Report], ids: Ids) -> Report {
    let dir = Dir::new(name);
    let (whole, merged, json, xml) = both(&dir, reports, ids, None);
    assert_eq!(json, super::super::json::to_string(&whole), "{name}");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(crate::schema::schemas().validate("report", &value), vec![]);
    assert_eq!(xml, super::super::junit::to_string(&whole), "{name}");
    assert_eq!(merged.head.summary, whole.summary, "{name}");
    assert_eq!(merged.exit, whole.exit_code(), "{name}");
    whole
}

const C: Kind = Kind::Conformance;

/// A part cut short by Ctrl-C makes the merge cut short: both merges mark it (the counts
/// added, its ids not reached named by part), exit 130 whatever the cases say, and the
/// page's header and the part's row say INTERRUPTED; the whole part passed.
#[test]
fn a_merge_of_an_interrupted_part_is_marked_interrupted() {
    let whole = report("http://a", false, None, &[("a.one", "a", Pass, Must, C)]);
    let mut cut = report(
        "http://a",
        false,
        None,
        &[("b.one", "b", Pass, Must, C), ("b.two", "b", Skip, Must, C)],
    );
    cut.interrupted = Some(crate::report::Interruption::of(
        crate::report::Signal::Interrupt,
        std::time::Duration::from_millis(2_100),
        &cut.cases,
        |c| c.id != "b.two",
    ));
    let parts = [whole, cut];
    let merged = same_as_whole("interrupted", &parts, Ids::ByClash);
    assert_eq!(merged.exit_code(), Exit::Interrupted);
    let i = merged.interrupted.clone().unwrap();
    assert_eq!((i.judged, i.cases, i.not_reached_count), (1, 2, 1));
    assert_eq!(i.not_reached, vec!["t1: b.two".to_string()]);
    assert!(
            merged
                .notes
                .iter()
                .any(|n| n.starts_with("1 of 2 parts interrupted, so is the merge (no verdict): t1: INTERRUPTED (Ctrl-C) after 2.1 s")),
            "{:?}",
            merged.notes
        );
    let dir = Dir::new("interrupted-page");
    let (_, streamed, _, xml) = both(&dir, &parts, Ids::ByClash, None);
    assert_eq!(streamed.exit, Exit::Interrupted);
    assert!(xml.contains("run.completed [must]"), "{xml}");
    let page = std::fs::read_to_string(dir.0.join("all.html")).unwrap();
    assert!(page.contains(" · INTERRUPTED</title>"), "{page}");
    assert!(
            page.contains("<p>exit 130: INTERRUPTED (Ctrl-C) after 2.1 s — 1 of 2 cases judged, 1 not reached; not a verdict — 1 of 2 parts interrupted</p>"),
            "{page}"
        );
    // The rows: the whole part passed, the cut one says so (its reason, the headline).
    assert!(
        page.contains(r#"["t0","PASS",1,0,0,0,[],0,null]"#),
        "{page}"
    );
    assert!(
        page.contains(r#"["t1","INTERRUPTED",1,0,0,1,[],0,"INTERRUPTED (Ctrl-C) after 2.1 s"#),
        "{page}"
    );
    // A diff against the cut run notes it.
    let diff = crate::report::tools::diff(&parts[0], &parts[1]);
    let shown = crate::report::tools::render_diff(&diff, "a.json", "b.json");
    assert!(
        shown.contains("note: b.json is of an interrupted run, INTERRUPTED (Ctrl-C) after 2.1 s"),
        "{shown}"
    );
}
const E: Kind = Kind::Evaluation;

/// `--baseline` in a merge written as it reads: each case marked by its merged id as it is
/// met, the notes (expired, unseen entries) the whole merge's.
#[test]
fn a_baseline_marks_each_case_by_its_merged_id_as_the_whole_merge_does() {
    let parts = [
        report(
            "http://a",
            false,
            None,
            &[("x", "g", Fail, Must, C), ("y", "g", Pass, Must, C)],
        ),
        report(
            "http://b",
            false,
            None,
            &[("x", "g", Fail, Must, C), ("z", "g", Fail, Must, C)],
        ),
    ];
    let baseline = Baseline::parse(
        "baseline.yaml",
        concat!(
            "- id: \"http://a: x\"\n  reason: known\n",
            "- id: y\n  reason: fixed since\n",
            "- id: z\n  reason: old\n  until: 2000-01-01\n",
            "- id: gone\n  reason: removed\n",
        ),
    )
    .unwrap();
    let dir = Dir::new("baseline");
    let (whole, merged, json, _) = both(&dir, &parts, Ids::ByClash, Some(&baseline));
    // (The JUnit differs by design: a streamed suite names its own target.)
    assert_eq!(json, super::super::json::to_string(&whole));
    assert_eq!(merged.head.summary, whole.summary);
    assert_eq!((merged.exit, merged.failing_total), (whole.exit_code(), 2));
    let status = |id: &str| whole.cases.iter().find(|c| c.id == id).unwrap().status;
    assert_eq!(status("http://a: x"), Xfail);
    assert_eq!(
        status("y"),
        Stale,
        "an id no other part has keeps no prefix"
    );
    assert_eq!(status("http://b: x"), Fail);
    assert_eq!(status("z"), Fail, "expired: judged as usual");
    assert!(
        whole
            .notes
            .iter()
            .any(|n| n == "baseline: expired, judged as usual: z (until 2000-01-01)")
            && whole
                .notes
                .iter()
                .any(|n| n == "baseline: listed but not in this run: gone"),
        "{:?}",
        whole.notes
    );
}

#[test]
fn the_stream_writes_what_the_whole_merge_holds_and_exits_as_it_would() {
    let t = "http://a";
    // Shards of one run, an empty one among them; a MUST failure.
    let w = same_as_whole(
        "shards",
        &[
            report(
                t,
                false,
                None,
                &[("x", "g", Pass, Must, C), ("y", "h", Fail, Must, C)],
            ),
            report(t, false, None, &[]),
            report(t, false, None, &[("z", "g", Pass, Must, C)]),
        ],
        Ids::ByClash,
    );
    assert_eq!(w.exit_code(), 1);
    // A SHOULD failure and a stale entry: warnings, unless strict.
    let lenient = [
        report(
            t,
            false,
            None,
            &[("a", "g", Pass, Must, C), ("b", "g", Fail, Should, C)],
        ),
        report(
            t,
            false,
            None,
            &[("c", "g", Stale, Must, C), ("d", "h", Xfail, Must, C)],
        ),
        report(t, false, None, &[("e", "g", Fail, May, C)]),
    ];
    assert_eq!(
        same_as_whole("lenient", &lenient, Ids::ByClash).exit_code(),
        0
    );
    let mut strict = lenient.clone();
    strict[1].strict = true;
    assert_eq!(
        same_as_whole("strict", &strict, Ids::ByClash).exit_code(),
        1
    );
    // Evaluation, with --min-score met and not met.
    let scored = |min| {
        [
            report(
                t,
                false,
                min,
                &[("m", "s", Pass, May, E), ("n", "s", Fail, May, E)],
            ),
            report(
                t,
                false,
                min,
                &[("o", "s", Pass, May, E), ("p", "g", Pass, Must, C)],
            ),
        ]
    };
    assert_eq!(
        same_as_whole("met", &scored(Some(0.5)), Ids::ByClash).exit_code(),
        0
    );
    assert_eq!(
        same_as_whole("below", &scored(Some(0.9)), Ids::ByClash).exit_code(),
        1
    );
    // A gated evaluation case that failed fails the run without a MUST failure.
    let gated = [report(
        t,
        false,
        None,
        &[("q", "s", Fail, Must, E), ("r", "g", Pass, Must, C)],
    )];
    assert_eq!(same_as_whole("gated", &gated, Ids::ByClash).exit_code(), 1);
    // Every MUST case skipped: nothing judged.
    let nothing = [
        report(t, false, None, &[("u", "g", Skip, Must, C)]),
        report(
            t,
            false,
            None,
            &[("v", "g", Skip, Must, C), ("w", "g", Pass, May, C)],
        ),
    ];
    let w = same_as_whole("nothing", &nothing, Ids::ByClash);
    assert!(w.judged_nothing());
    // Targets by name: every id prefixed, the same ids in every target.
    let fleet: Vec<Report> = ["http://a", "http://b", "http://c"]
        .iter()
        .map(|t| {
            report(
                t,
                false,
                None,
                &[("x", "g", Pass, Must, C), ("y", "g", Fail, Should, C)],
            )
        })
        .collect();
    let dir = Dir::new("by-name");
    let (whole, merged, json, _) = both(&dir, &fleet, Ids::ByName, None);
    assert_eq!(json, super::super::json::to_string(&whole));
    assert_eq!(merged.exit, whole.exit_code());
    let ids: Vec<&str> = whole.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["t0: x", "t0: y", "t1: x", "t1: y", "t2: x", "t2: y"]);
}

#[test]
fn targets_that_share_ids_are_told_apart_and_a_suite_names_its_own_target() {
    let dir = Dir::new("clash");
    let parts = [
        report(
            "http://a",
            false,
            None,
            &[("x", "g", Pass, Must, C), ("y", "g", Pass, Must, C)],
        ),
        report("http://b", false, None, &[("x", "g", Fail, Must, C)]),
    ];
    let (whole, merged, json, xml) = both(&dir, &parts, Ids::ByClash, None);
    assert_eq!(json, super::super::json::to_string(&whole));
    assert_eq!(merged.exit, whole.exit_code());
    assert_eq!(
        merged.failing,
        [("http://b: x".to_string(), "x: Fail <&> \u{1}".to_string())]
    );
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let targets: Vec<(String, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .map(|s| {
            let target = s
                .descendants()
                .find(|p| p.has_tag_name("property") && p.attribute("name") == Some("target"))
                .and_then(|p| p.attribute("value"))
                .unwrap_or_default();
            (s.attribute("name").unwrap().to_string(), target.to_string())
        })
        .collect();
    assert_eq!(
        targets,
        [
            ("http://a: g".to_string(), "http://a".to_string()),
            ("g".to_string(), "http://a".to_string()),
            ("http://b: g".to_string(), "http://b".to_string())
        ]
    );
    // The same run twice: refused as the whole merge refuses it, naming both files.
    let twice = [parts[0].clone(), parts[0].clone()];
    let files: Vec<Part> = twice
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let path = dir.0.join(format!("twice-{i}.json"));
            std::fs::write(&path, super::super::json::to_string(r)).unwrap();
            Part {
                name: path.display().to_string(),
                path,
            }
        })
        .collect();
    let e = Survey::read(files.clone(), Ids::ByClash, true)
        .err()
        .unwrap();
    let held: Vec<(String, Report)> = files
        .iter()
        .map(|p| (p.name.clone(), twice[0].clone()))
        .collect();
    assert_eq!(Some(e.clone()), tools::merge(&held).err());
    assert!(e.to_string().starts_with("case x is in both "), "{e}");
}

/// A part of one passing case, written to `dir` as `file`.
fn one_case_part(dir: &Dir, file: &str) -> PathBuf {
    let path = dir.0.join(file);
    let part = report("t", false, None, &[("x", "g", Pass, Must, C)]);
    std::fs::write(&path, super::super::json::to_string(&part)).unwrap();
    path
}

#[test]
fn a_file_that_is_not_a_report_is_named_with_its_json_path_and_nothing_is_written() {
    let dir = Dir::new("bad");
    let good = one_case_part(&dir, "good.json");
    let bad = dir.0.join("bad.json");
    std::fs::write(&bad, r#"{"tool": "agent-tck", "cases": 3}"#).unwrap();
    let parts = vec![
        Part {
            name: "good.json".into(),
            path: good,
        },
        Part {
            name: "bad.json".into(),
            path: bad.clone(),
        },
    ];
    let e = Survey::read(parts, Ids::ByClash, true)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with(&format!("{}: not an agent-tck report: ", bad.display())),
        "{e}"
    );
    let names: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2);
}

#[test]
fn a_part_that_fails_to_read_midway_leaves_the_old_files_whole_and_no_spool() {
    let dir = Dir::new("midway");
    let good = dir.0.join("good.json");
    let one = report("t", false, None, &[("x", "g", Pass, Must, C)]);
    std::fs::write(&good, super::super::json::to_string(&one)).unwrap();
    // Its head and ids read (the first pass), its case does not (no status).
    let mut broken: serde_json::Value = serde_json::to_value(&one).unwrap();
    broken["cases"][0]["id"] = "y".into();
    broken["cases"][0].as_object_mut().unwrap().remove("status");
    let bad = dir.0.join("bad.json");
    std::fs::write(&bad, broken.to_string()).unwrap();
    let (json, xml) = (dir.0.join("all.json"), dir.0.join("all.xml"));
    std::fs::write(&json, "OLD").unwrap();
    let parts = vec![
        Part {
            name: "good.json".into(),
            path: good,
        },
        Part {
            name: "bad.json".into(),
            path: bad.clone(),
        },
    ];
    let survey = Survey::read(parts, Ids::ByClash, true).unwrap();
    let out = Outputs {
        json: Some(&json),
        junit: Some(&xml),
        ctrf: None,
        html: None,
        baseline: None,
    };
    let e = survey
        .write(&out, &AtomicBool::new(false))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "{}: not an agent-tck report: cases[0]: required field \"status\" is missing",
            bad.display()
        )),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&json).unwrap(), "OLD");
    assert!(!xml.exists());
    let mut names: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["all.json", "bad.json", "good.json"]);
}

#[test]
fn a_merge_interrupted_between_parts_writes_nothing_and_leaves_no_spool() {
    let dir = Dir::new("stop");
    let path = one_case_part(&dir, "p.json");
    let json = dir.0.join("all.json");
    let survey = Survey::read(
        vec![Part {
            name: "p".into(),
            path,
        }],
        Ids::ByClash,
        false,
    )
    .unwrap();
    let out = Outputs {
        json: Some(&json),
        junit: Some(&json.with_extension("xml")),
        ctrf: None,
        html: None,
        baseline: None,
    };
    let e = survey.write(&out, &AtomicBool::new(true)).err().unwrap();
    assert!(matches!(e, MergeStreamError::Interrupted), "{e}");
    let names: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("p.json")]);
}
