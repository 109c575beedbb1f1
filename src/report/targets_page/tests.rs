use super::*;
use crate::report::{Evidence, Level, RunInfo};
use crate::text::Redactor;

/// A fresh folder of this test's own, removed afterwards.
struct TestDir(PathBuf);

impl TestDir {
    fn new(name: &str) -> TestDir {
        let path = std::env::temp_dir().join(format!(
            "agent-tck-{name}-{}-{}",
            std::process::id(),
            PAGES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TestDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn passing(id: &str) -> CaseResult {
    let mut c = CaseResult::new(id, "analyze", Level::Must, "a rule", "§1");
    c.pass(Evidence::new(2, "answers"), String::new);
    c.set_duration(std::time::Duration::from_millis(7));
    c.exchange = Exchange {
        request: Some("POST /analyze".into()),
        response: Some("HTTP/1.1 200 OK".into()),
        reproduce: Some("curl http://127.0.0.1:1/analyze".into()),
    };
    c
}

fn failing(id: &str, message: &str) -> CaseResult {
    let mut c = passing(id);
    c.fail(message);
    c
}

fn report(cases: Vec<CaseResult>) -> Report {
    RunInfo::start("probe", "roundtable", "http://127.0.0.1:1", 1, false)
        .report(cases, &Redactor::new(Vec::new()))
}

fn head() -> Report {
    report(Vec::new())
}

/// The JSON text of the `<script type="application/json" id="ID">` block.
fn block<'a>(page: &'a str, id: &str) -> &'a str {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = page.find(&open).unwrap_or_else(|| panic!("no block {id}")) + open.len();
    let end = start + page[start..].find("</script>").unwrap();
    &page[start..end]
}

/// Part `i`'s JSON: its line of its block.
fn line(page: &str, i: usize) -> &str {
    let chunk = block(page, &format!("c-{}", i / CHUNK));
    chunk
        .lines()
        .nth(i % CHUNK)
        .unwrap_or_else(|| panic!("no part {i}"))
}

fn written(dir: &TestDir, parts: &[(&str, Report)], passed: bool) -> String {
    let path = dir.path().join("all.html");
    let mut page = TargetsPage::create(&path).unwrap();
    for (name, r) in parts {
        page.add(name, r).unwrap();
    }
    page.finish(&head(), Exit::failed_if(!passed)).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["all.html"], "no spool nor temporary file left");
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn a_parts_cases_round_trip_through_its_block() {
    let dir = TestDir::new("page-round-trip");
    let mut cases = vec![
        passing("analyze.status"),
        failing("analyze.schema", "$.x: bad"),
    ];
    let page = written(&dir, &[("alpha", report(cases.clone()))], false);
    let part: serde_json::Value = serde_json::from_str(line(&page, 0)).unwrap();
    let back: Vec<CaseResult> = serde_json::from_value(part["cases"].clone()).unwrap();
    // All but a passing case's exchange, which is left to the target's own report.
    cases[0].exchange = Exchange::default();
    assert_eq!(back, cases);
    assert_eq!(part["name"], "alpha");
    assert_eq!(part["cases"][1]["shown"]["word"], "FAIL");
    assert_eq!(part["cases"][1]["shown"]["open"], true);
    assert_eq!(
        part["cases"][0]["shown"]["after"],
        "(judged 2 answers) (7 ms)"
    );
    assert_eq!(part["counts"], "1 passed, 1 failed, 0 skipped");
    assert_eq!(part["why"], "exit 1: 1 case fails the run: analyze.schema");
}

#[test]
fn the_matrix_row_says_fail_and_names_the_failing_cases() {
    let dir = TestDir::new("page-rows");
    let many: Vec<CaseResult> = (0..9)
        .map(|i| failing(&format!("c.{i}"), "no"))
        .chain([passing("c.ok")])
        .collect();
    let parts = [
        ("alpha", report(vec![passing("a.ok")])),
        ("beta", report(many)),
    ];
    let page = written(&dir, &parts, false);
    let rows: serde_json::Value = serde_json::from_str(block(&page, "rows")).unwrap();
    assert_eq!(
        rows,
        serde_json::json!([
            ["alpha", "PASS", 1, 0, 0, 0, [], 0, null],
            [
                "beta",
                "FAIL",
                1,
                9,
                0,
                0,
                ["c.0", "c.1", "c.2", "c.3", "c.4", "c.5"],
                3,
                null
            ]
        ])
    );
    assert!(page.contains("<p>exit 1: 1 of 2 targets fails the run: beta</p>"));
    assert!(page.contains("<p class=\"targets\">2 targets: 1 passed, 1 failed</p>"));
    // The counts by level and status, added over the parts.
    assert!(page.contains("<tr><td>must</td><td>2</td><td>9</td><td>0</td>"));
    assert!(page.contains("data-filters"), "the script");
    // The script comes before the parts' data: the matrix is drawn while they load.
    assert!(page.find("<script>").unwrap() < page.find("id=\"c-0\"").unwrap());
}

#[test]
fn a_part_that_fails_with_no_failing_case_says_why_in_its_row() {
    let dir = TestDir::new("page-reason");
    let mut unjudged = CaseResult::new("a.must", "a", Level::Must, "t", "§1");
    unjudged.skip("no answer came");
    let page = written(&dir, &[("gamma", report(vec![unjudged]))], false);
    let rows: serde_json::Value = serde_json::from_str(block(&page, "rows")).unwrap();
    assert_eq!(rows[0][1], "FAIL");
    assert_eq!(
        rows[0][8],
        "nothing judged: the one MUST case skipped for want of evidence (not a pass)"
    );
}

#[test]
fn hostile_strings_stay_text() {
    let dir = TestDir::new("page-hostile");
    let hostile = "</script><script>document.body.dataset.pwned='1'</script>\
                       <img src=x onerror=alert(1)><!-- \u{2028}\u{2029}\u{1}\u{1b}[31m&amp;";
    let mut c = failing("analyze.schema", hostile);
    c.exchange.response = Some(hostile.into());
    c.exchange.request = Some(hostile.into());
    let mut r = report(vec![c, passing("analyze.status")]);
    r.target = hostile.into();
    r.notes.push(hostile.into());
    let name = "<b>beta</b>";
    let mut head = head();
    head.target = hostile.into();
    head.notes.push(hostile.into());
    let path = dir.path().join("all.html");
    let mut page = TargetsPage::create(&path).unwrap();
    page.add(name, &r).unwrap();
    page.finish(&head, Exit::Failed).unwrap();
    let page = std::fs::read_to_string(&path).unwrap();
    // Our blocks (the rows, one per part) and our script; nothing else opens or closes one.
    assert_eq!(page.matches("<script").count(), 3);
    assert_eq!(page.matches("</script>").count(), 3);
    for raw in ["<img", "<b>", "<!--", "pwned='1'</"] {
        assert!(!page.contains(raw), "{raw:?} is in the page");
    }
    // Text in the markup may hold them; a script block may not (JavaScript before ES2019
    // ends a line there).
    for id in ["rows", "c-0"] {
        let data = block(&page, id);
        assert!(
            !data.contains(['\u{2028}', '\u{2029}', '<', '>', '&']),
            "{data}"
        );
    }
    assert!(
        page.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "the head's, escaped"
    );
    assert!(page.contains("1 of 1 target fails the run: &lt;b&gt;beta&lt;/b&gt;"));
    // The data still says what the agent sent, to be shown as text.
    let part: serde_json::Value = serde_json::from_str(line(&page, 0)).unwrap();
    assert_eq!(part["cases"][0]["message"], hostile);
    assert_eq!(part["notes"][0], hostile);
    assert_eq!(part["target"], hostile);
    // Exchanges are shown as the one-report page shows them: control characters visible.
    let shown = part["cases"][0]["exchange"]["response"].as_str().unwrap();
    assert!(
        shown.contains("\\x01\\x1b[31m") && shown.contains("</script>"),
        "{shown}"
    );
    let rows: serde_json::Value = serde_json::from_str(block(&page, "rows")).unwrap();
    assert_eq!(rows[0][0], name);
    // The script writes text only as text.
    assert!(!SCRIPT.contains("innerHTML") && !SCRIPT.contains("insertAdjacentHTML"));
}

#[test]
fn parts_go_a_hundred_to_a_block_a_line_each() {
    let dir = TestDir::new("page-chunks");
    let parts: Vec<(String, Report)> = (0..250)
        .map(|i| (format!("t-{i}"), report(vec![passing("a.ok")])))
        .collect();
    let parts: Vec<(&str, Report)> = parts.iter().map(|(n, r)| (n.as_str(), r.clone())).collect();
    let page = written(&dir, &parts, true);
    assert_eq!(
        page.matches("<script type=\"application/json\" id=\"c-")
            .count(),
        3
    );
    assert_eq!(block(&page, "c-2").lines().count(), 50);
    for i in [0, 99, 100, 249] {
        let part: serde_json::Value = serde_json::from_str(line(&page, i)).unwrap();
        assert_eq!(part["name"], format!("t-{i}"));
    }
    assert!(
        page.contains("CHUNK=100,"),
        "the script knows the block size"
    );
}

#[test]
fn a_page_of_no_part_says_so() {
    let dir = TestDir::new("page-empty");
    let page = written(&dir, &[], true);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.ends_with("</body></html>\n"));
    assert_eq!(block(&page, "rows"), "[]");
    assert!(page.contains("No target in this report"));
    assert!(page.contains("<p>exit 0: none of the 0 targets fails the run</p>"));
    assert!(page.contains("0 targets: 0 passed, 0 failed"));
}

#[test]
fn memory_kept_per_part_is_its_row_not_its_size() {
    let dir = TestDir::new("page-memory");
    let path = dir.path().join("all.html");
    let mut page = TargetsPage::create(&path).unwrap();
    let huge = "x".repeat(1 << 20);
    for i in 0..200 {
        let mut c = failing(&format!("case.{i}"), &huge);
        c.exchange.response = Some(huge.clone());
        let mut ok = passing("case.ok");
        ok.message = huge.clone();
        page.add(&format!("target-{i:03}"), &report(vec![c, ok]))
            .unwrap();
    }
    // A name of ten bytes, one kept id of eight, and the row's fixed size.
    let per_row = page.kept_bytes() / 200;
    assert!(per_row < 256, "{per_row} bytes kept per part");
    assert!(page.buf.capacity() <= BUF_KEPT, "{}", page.buf.capacity());
    page.spool.flush().unwrap();
    let spooled = std::fs::metadata(&page.spool_file.path).unwrap().len();
    // Two messages of at most 8,000 characters, a 4,000-character answer: 200 × ~20 KB.
    assert!(spooled < 200 * 24_000, "{spooled} bytes spooled");
    page.finish(&head(), Exit::Failed).unwrap();
}

#[test]
fn a_page_dropped_unfinished_leaves_no_file() {
    let dir = TestDir::new("page-dropped");
    let path = dir.path().join("all.html");
    let mut page = TargetsPage::create(&path).unwrap();
    page.add("alpha", &report(vec![passing("a.ok")])).unwrap();
    let spool = page.spool_file.path.clone();
    assert!(spool.exists());
    assert_eq!(spool.parent(), Some(dir.path()), "next to the page");
    drop(page);
    assert!(!spool.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn script_json_escapes_what_could_end_a_block() {
    let mut out = Vec::new();
    let json = serde_json::to_vec(&"a</script>&<!--\u{2028}é\u{2029}").unwrap();
    write_script_json(&mut out, &json).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        r#""a\u003c/script\u003e\u0026\u003c!--\u2028é\u2029""#
    );
    let back: String = serde_json::from_str(&text).unwrap();
    assert_eq!(back, "a</script>&<!--\u{2028}é\u{2029}");
}
