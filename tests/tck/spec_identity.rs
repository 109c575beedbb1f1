//! Every report names the spec it judged by (the document's title and file, its version as it
//! gives one or "no version given", the SHA-256 of the text carried) and the suite's version, in
//! every format; `--version` lists them; `report diff` and `report merge` say when runs were
//! judged by different ones, and a report written before they were recorded says "not
//! recorded". And CTRF (`--ctrf`), checked against its published schema.

use serde_json::Value;

use agent_tck::report::{CaseResult, Evidence, Kind, Level, Report, RunInfo, Status};
use agent_tck::text::Redactor;

use crate::support::{reference_agent, tck, text, TempDir};

const SPEC_FILE: &str = "specs/roundtable-external-agent-protocol.md";

/// The SHA-256 of the round table's spec as it is in the repository.
fn roundtable_digest() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SPEC_FILE);
    agent_tck::specs::sha256_hex(&std::fs::read_to_string(path).unwrap())
}

fn json(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The published CTRF schema (tests/fixtures/ctrf/README.md says where it comes from): the
/// findings of `document` against it.
fn ctrf_findings(document: &Value) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ctrf/ctrf.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(document)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// `agent-tck --version`: the version line, then a line per protocol with its spec file, its
/// version (none given) and the whole digest, which is the file's.
#[test]
fn version_lists_each_protocols_spec_and_its_digest() {
    let out = tck(&["--version"]);
    assert!(out.status.success(), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines[0], format!("agent-tck {}", agent_tck::VERSION));
    assert_eq!(
        lines.len(),
        1 + agent_tck::protocols::REGISTRY.len(),
        "{printed}"
    );
    assert_eq!(
        lines[1],
        format!(
            "roundtable: {SPEC_FILE} (\"External Agent Protocol\"), no version given, sha256 {}",
            roundtable_digest()
        )
    );
    for p in agent_tck::protocols::REGISTRY {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("specs")
            .join(p.spec().file);
        let digest = agent_tck::specs::sha256_hex(&std::fs::read_to_string(path).unwrap());
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("{}: ", p.name())) && l.ends_with(&digest)),
            "{}: {printed}",
            p.name()
        );
    }
}

/// A probe's console, JSON, JUnit, HTML and CTRF each name the spec, its version (none given),
/// its digest and the built-in suite's version; the JUnit root is named as the page is.
#[deadline::test]
async fn every_format_of_a_probe_names_the_spec_it_judged_by() {
    let agent = reference_agent(None).await;
    let url = agent.url();
    let dir = TempDir::new("spec-identity");
    let paths = ["r.json", "r.xml", "r.ctrf.json", "r.html"].map(|f| dir.path(f));
    let args = paths.clone();
    let out = tokio::task::spawn_blocking(move || {
        tck(&[
            "probe",
            "roundtable",
            "--url",
            &url,
            "--seed",
            "5",
            "--only",
            "analyze.*",
            "--json",
            &args[0],
            "--junit",
            &args[1],
            "--ctrf",
            &args[2],
            "--html",
            &args[3],
        ])
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let digest = roundtable_digest();
    let line = format!(
        "roundtable: judged by \"External Agent Protocol\" ({SPEC_FILE}, no version given, \
         sha256 {}); built-in suite of agent-tck {}",
        &digest[..12],
        agent_tck::VERSION
    );
    let console = String::from_utf8_lossy(&out.stdout);
    assert_eq!(console.lines().nth(1), Some(line.as_str()), "{console}");

    let report = json(&paths[0]);
    let by = &report["judged_by"][0];
    assert_eq!(
        (&by["protocol"], &by["file"], &by["sha256"]),
        (
            &Value::from("roundtable"),
            &Value::from(SPEC_FILE),
            &Value::from(digest.as_str())
        )
    );
    assert!(by.get("version").is_none(), "{by}");
    assert_eq!(
        by["suite"],
        serde_json::json!({ "kit": agent_tck::VERSION })
    );
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &report),
        vec![]
    );

    let xml = std::fs::read_to_string(&paths[1]).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.root_element().attribute("name"),
        Some("agent-tck probe roundtable")
    );
    let suites: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert!(!suites.is_empty());
    for suite in suites.iter().filter(|s| s.attribute("name") != Some("run")) {
        let property = |name: &str| {
            suite
                .descendants()
                .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
                .and_then(|n| n.attribute("value"))
                .map(str::to_string)
        };
        assert_eq!(property("spec.roundtable.sha256"), Some(digest.clone()));
        let full = line.replace(&digest[..12], &digest);
        assert_eq!(property("spec"), Some(full));
    }

    let page = std::fs::read_to_string(&paths[3]).unwrap();
    assert!(
        page.contains(&format!("<dt>spec</dt><dd>roundtable: judged by &quot;External Agent Protocol&quot; ({SPEC_FILE}, no version given, sha256 {digest})")),
        "{page}"
    );

    let ctrf = json(&paths[2]);
    assert_eq!(ctrf_findings(&ctrf), Vec::<String>::new());
    let env = &ctrf["results"]["environment"];
    assert_eq!(env["reportName"], "agent-tck probe roundtable");
    assert_eq!(
        env["extra"]["agent-tck/judged_by"][0]["sha256"],
        digest.as_str()
    );
    agent.stop().await;
}

/// A user's suite file (`--suite`) is named with its own digest beside the kit's version.
#[deadline::test]
async fn a_user_suite_is_named_with_its_digest() {
    let agent = reference_agent(None).await;
    let url = agent.url();
    let dir = TempDir::new("spec-identity-suite");
    let suite = dir.path("mine.yaml");
    let text_of = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/suites/roundtable.yaml"
    ))
    .unwrap();
    std::fs::write(&suite, &text_of).unwrap();
    let report = dir.path("r.json");
    let (s, r) = (suite.clone(), report.clone());
    let out = tokio::task::spawn_blocking(move || {
        tck(&[
            "probe",
            "roundtable",
            "--url",
            &url,
            "--suite",
            &s,
            "--only",
            "analyze.*",
            "--json",
            &r,
        ])
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let digest = agent_tck::specs::sha256_hex(&text_of);
    assert_eq!(
        json(&report)["judged_by"][0]["suite"],
        serde_json::json!({ "kit": agent_tck::VERSION, "file": suite, "sha256": digest })
    );
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        console.contains(&format!(
            "; suite {suite} (sha256 {}) run by agent-tck {}",
            &digest[..12],
            agent_tck::VERSION
        )),
        "{console}"
    );
    agent.stop().await;
}

fn case(id: &str, level: Level, status: Status) -> CaseResult {
    let mut c = CaseResult::new(id, "g", level, "a rule", "§ 3");
    match status {
        Status::Pass => c.pass(Evidence::new(1, "answer"), String::new),
        Status::Fail => c.fail("broke it"),
        Status::Skip => c.skip("nothing to judge"),
        other => {
            c.fail("broke it");
            c.status = other;
        }
    }
    c
}

/// A report of the round table with a case of every status, named by the spec it was judged
/// by (as the command line names a run's report).
fn every_status(strict: bool) -> Report {
    let mut unmet = case("e.unmet", Level::May, Status::Fail);
    unmet.kind = Kind::Evaluation;
    let cases = vec![
        case("a.pass", Level::Must, Status::Pass),
        case("a.fail", Level::Must, Status::Fail),
        case("a.warn", Level::Should, Status::Fail),
        case("a.info", Level::May, Status::Fail),
        case("a.skip", Level::Must, Status::Skip),
        case("a.xfail", Level::Must, Status::Xfail),
        case("a.stale", Level::Must, Status::Stale),
        unmet,
    ];
    let mut report = RunInfo::start("probe", "roundtable", "http://t", 1, strict)
        .report(cases, &Redactor::new(None));
    agent_tck::protocols::stamp(&mut report);
    report
}

/// CTRF's statuses are the run's: a failure that fails it is `failed`, one that does not
/// (WARN, INFO, UNMET, XFAIL) is `other`, never `passed`; a stale entry fails only under
/// --strict. The document is valid against the published schema, which can fail.
#[test]
fn ctrf_maps_every_status_as_the_run_reads_it_and_is_valid() {
    for strict in [false, true] {
        let report = every_status(strict);
        let doc: Value =
            serde_json::from_str(&agent_tck::report::ctrf::to_string(&report)).unwrap();
        assert_eq!(ctrf_findings(&doc), Vec::<String>::new());
        let got: Vec<(String, String, String)> = doc["results"]["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["status"].as_str().unwrap().to_string(),
                    t["rawStatus"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want = |id: &str, status: &str, raw: &str| (id.into(), status.into(), raw.into());
        let (warn, stale) = if strict {
            (
                want("a.warn", "failed", "FAIL"),
                want("a.stale", "failed", "STALE"),
            )
        } else {
            (
                want("a.warn", "other", "WARN"),
                want("a.stale", "passed", "STALE"),
            )
        };
        assert_eq!(
            got,
            vec![
                want("a.pass", "passed", "PASS"),
                want("a.fail", "failed", "FAIL"),
                warn,
                want("a.info", "other", "INFO"),
                want("a.skip", "skipped", "SKIP"),
                want("a.xfail", "other", "XFAIL"),
                stale,
                want("e.unmet", "other", "UNMET"),
            ],
            "strict {strict}"
        );
        let summary = &doc["results"]["summary"];
        let failed = if strict { 3 } else { 1 };
        assert_eq!(
            (&summary["tests"], &summary["failed"], &summary["skipped"]),
            (&Value::from(8), &Value::from(failed), &Value::from(1))
        );
        let first = &doc["results"]["tests"][1];
        assert_eq!(
            (
                &first["labels"]["level"],
                &first["labels"]["spec"],
                &first["message"]
            ),
            (
                &Value::from("must"),
                &Value::from("§ 3"),
                &Value::from("broke it")
            )
        );
        assert_eq!(doc["results"]["extra"]["agent-tck/exit"], 1);
        assert_eq!(
            doc["results"]["environment"]["extra"]["agent-tck/judged_by"][0]["sha256"],
            roundtable_digest()
        );
    }
    // The schema check can fail: a status CTRF has no word for, a field outside `extra`.
    let mut bad: Value =
        serde_json::from_str(&agent_tck::report::ctrf::to_string(&every_status(false))).unwrap();
    bad["results"]["tests"][0]["status"] = "warn".into();
    bad["results"]["tests"][1]["level"] = "must".into();
    let findings = ctrf_findings(&bad);
    assert_eq!(findings.len(), 2, "{findings:?}");
}

/// A report written before reports named their spec: its JSON, as such a kit wrote it.
fn old(report: &Report) -> String {
    let mut value = serde_json::to_value(report).unwrap();
    value.as_object_mut().unwrap().remove("judged_by");
    value.to_string()
}

/// `report diff` says, per protocol, when two runs were judged against different specs (or
/// suites), or when one records none; two runs of the same spec say nothing of it.
#[test]
fn report_diff_says_when_the_specs_differ_or_are_not_recorded() {
    let dir = TempDir::new("spec-identity-diff");
    let now = every_status(false);
    let mut other_spec = now.clone();
    other_spec.judged_by[0].sha256 = "0".repeat(64);
    let mut other_suite = now.clone();
    other_suite.judged_by[0].suite.file = Some("mine.yaml".into());
    other_suite.judged_by[0].suite.sha256 = Some("1".repeat(64));
    let files = [
        ("now.json", agent_tck::report::json::to_string(&now)),
        ("spec.json", agent_tck::report::json::to_string(&other_spec)),
        (
            "suite.json",
            agent_tck::report::json::to_string(&other_suite),
        ),
        ("old.json", old(&now)),
    ];
    for (name, text) in &files {
        std::fs::write(dir.path(name), text).unwrap();
    }
    let diff = |a: &str, b: &str| {
        let out = tck(&["report", "diff", &dir.path(a), &dir.path(b)]);
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let same = diff("now.json", "now.json");
    assert!(!same.contains("note: roundtable"), "{same}");
    let spec = diff("now.json", "spec.json");
    assert!(
        spec.contains("note: roundtable: judged against different specs: a change may come from the spec, not the agent")
            && spec.contains(&format!("sha256 {}", &roundtable_digest()[..12]))
            && spec.contains("sha256 000000000000"),
        "{spec}"
    );
    let suite = diff("now.json", "suite.json");
    assert!(
        suite.contains("note: roundtable: judged by different suites")
            && suite.contains("suite mine.yaml (sha256 111111111111)"),
        "{suite}"
    );
    let old_new = diff("old.json", "now.json");
    assert!(
        old_new.contains("the spec is recorded by one report only")
            && old_new.contains(&format!("old.json: {}", agent_tck::specs::NOT_RECORDED)),
        "{old_new}"
    );
    let both_old = diff("old.json", "old.json");
    assert!(
        both_old.contains("neither report records the spec it was judged by"),
        "{both_old}"
    );
}

/// `report merge` keeps each part's spec and notes when they differ (a merge is made, not
/// refused); a merge of reports that record none says "not recorded" in every format, and
/// names no spec of its own.
#[test]
fn report_merge_notes_different_specs_and_old_reports_say_not_recorded() {
    let dir = TempDir::new("spec-identity-merge");
    let now = every_status(false);
    let mut other = now.clone();
    other.target = "http://u".into();
    other.judged_by[0].sha256 = "0".repeat(64);
    std::fs::write(
        dir.path("now.json"),
        agent_tck::report::json::to_string(&now),
    )
    .unwrap();
    std::fs::write(
        dir.path("other.json"),
        agent_tck::report::json::to_string(&other),
    )
    .unwrap();
    std::fs::write(dir.path("old.json"), old(&now)).unwrap();
    let merged = dir.path("m.json");
    let out = tck(&[
        "report",
        "merge",
        &dir.path("now.json"),
        &dir.path("other.json"),
        "--json",
        &merged,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        console.contains("roundtable: the parts were judged against different specs or suites")
            && console.contains("sha256 000000000000"),
        "{console}"
    );
    let value = json(&merged);
    assert_eq!(
        value["judged_by"].as_array().map(Vec::len),
        Some(2),
        "{value}"
    );

    let paths = ["o.json", "o.xml", "o.ctrf.json", "o.html"].map(|f| dir.path(f));
    let out = tck(&[
        "report",
        "merge",
        &dir.path("old.json"),
        "--json",
        &paths[0],
        "--junit",
        &paths[1],
        "--ctrf",
        &paths[2],
        "--html",
        &paths[3],
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = format!("spec: {}", agent_tck::specs::NOT_RECORDED);
    let console = String::from_utf8_lossy(&out.stdout);
    assert_eq!(console.lines().nth(1), Some(said.as_str()), "{console}");
    assert!(json(&paths[0]).get("judged_by").is_none());
    for path in &paths[1..] {
        let written = std::fs::read_to_string(path).unwrap();
        assert!(written.contains(&said), "{path}: {written}");
    }
    let ctrf = json(&paths[2]);
    assert_eq!(ctrf_findings(&ctrf), Vec::<String>::new());
}

/// The self-test's report: its duration is the whole run's (the matrices too, not only the
/// reference agents' probes), its JUnit root is named as its page is (`agent-tck selftest`), and
/// it names the spec of the protocol it tested.
#[test]
fn a_selftest_report_is_named_and_timed_as_the_run() {
    let _heavy = crate::support::heavy_blocking();
    let dir = TempDir::new("spec-identity-selftest");
    let (j, x, h) = (dir.path("s.json"), dir.path("s.xml"), dir.path("s.html"));
    let started = std::time::Instant::now();
    let out = tck(&[
        "selftest",
        "--protocol",
        "librarian",
        "--seed",
        "3",
        "--quiet",
        "--json",
        &j,
        "--junit",
        &x,
        "--html",
        &h,
    ]);
    let wall = started.elapsed().as_millis() as u64;
    assert!(out.status.success(), "{}", text(&out));
    let report = json(&j);
    let took = report["duration_ms"].as_u64().unwrap();
    // The process's start and the writing of the files are all the run leaves out.
    assert!(
        took <= wall && took * 10 >= wall * 8,
        "the report says {took} ms of a {wall} ms run"
    );
    assert_eq!(report["judged_by"][0]["protocol"], "librarian");
    let xml = std::fs::read_to_string(&x).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.root_element().attribute("name"),
        Some("agent-tck selftest")
    );
    let page = std::fs::read_to_string(&h).unwrap();
    assert!(
        page.contains("<title>agent-tck selftest · PASS</title>"),
        "{page}"
    );
}
