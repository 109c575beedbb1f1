//! The page of many targets in a real browser (headless Chromium, when installed: `.ci/run`
//! installs it; without it the test says so and checks the file only): the matrix is drawn by the
//! page's script, a target opened by `#p-N` shows its cases, and what the agents sent — in a
//! message, an answer, a target's name — stays text.

use std::process::Command;

use agent_tck::report::targets_page::TargetsPage;
use agent_tck::report::{CaseResult, Evidence, Level, Report, RunInfo};
use agent_tck::text::Redactor;

use crate::support::{run_within, TempDir, RUN_DEADLINE};

const IMG: &str =
    "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">";
const SCRIPT: &str =
    "</script><script>document.documentElement.setAttribute('data-pwned','script')</script>";

fn report(failing: bool) -> Report {
    let mut ok = CaseResult::new("analyze.status", "analyze", Level::Must, "200", "§1");
    ok.pass(Evidence::new(1, "answer"), String::new);
    let mut cases = vec![ok];
    if failing {
        let mut bad = CaseResult::new("analyze.schema", "analyze", Level::Must, "a schema", "§1");
        bad.fail(format!("$.votes[0]: {IMG} \u{2028}"));
        bad.exchange.response = Some(SCRIPT.into());
        cases.push(bad);
    }
    RunInfo::start("probe", "p", "http://127.0.0.1:1", 1, false)
        .report(cases, &Redactor::new(Vec::new()))
}

#[test]
fn a_page_of_targets_opens_a_target_in_the_browser_and_keeps_hostile_text_as_text() {
    let dir = TempDir::new("targets-page");
    let html = dir.path("all.html");
    let mut page = TargetsPage::create(std::path::Path::new(&html)).unwrap();
    for i in 0..150 {
        page.add(&format!("agent-{i:03}"), &report(false)).unwrap();
    }
    page.add("<b>hostile</b>", &report(true)).unwrap();
    let head = RunInfo::start("probe", "p", "151 targets", 1, false)
        .report(Vec::new(), &Redactor::new(Vec::new()));
    page.finish(&head, agent_tck::report::Exit::Failed).unwrap();
    let file = std::fs::read_to_string(&html).unwrap();
    assert!(file.contains("exit 1: 1 of 151 targets fails the run: &lt;b&gt;hostile&lt;/b&gt;"));
    assert!(!file.contains("<img") && !file.contains("setAttribute('data-pwned','script')</"));

    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| crate::support::shell_succeeds(&format!("command -v {c}")));
    if chromium.is_none() {
        eprintln!("chromium is not installed: the browser half of this test did not run");
        return;
    }
    let (png, dom) = (dir.path("shot.png"), dir.path("dom.html"));
    let mut browser = Command::new("scripts/html-screenshot.sh");
    browser.args([
        "--html",
        &html,
        "--fragment",
        "p-150",
        "--png",
        &png,
        "--dom",
        &dom,
        "--height",
        "900",
    ]);
    let out = run_within(browser, RUN_DEADLINE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = std::fs::read_to_string(&dom).unwrap();
    assert!(dom.contains("data-filters=\"ready\""), "the script ran");
    assert!(!dom.contains("data-pwned=\""), "no agent's script ran");
    // The failing target first, opened (#p-150), its failure open, the rest on pages of 100.
    assert!(
        dom.contains("<tr class=\"row\" id=\"t-150\""),
        "{}",
        &dom[..3000]
    );
    assert!(dom.contains("<td>&lt;b&gt;hostile&lt;/b&gt;</td>"));
    assert!(dom.contains("<details class=\"case\" open=\"\"><summary><span class=\"w FAIL\">FAIL</span> must analyze.schema"));
    assert!(
        dom.contains("$.votes[0]: &lt;img src=x onerror="),
        "the message, as text"
    );
    assert!(
        dom.contains("&lt;/script&gt;&lt;script&gt;document"),
        "the answer, as text"
    );
    assert_eq!(
        dom.matches("<tr class=\"row\"").count(),
        100,
        "one page of rows"
    );
    assert!(dom.contains("targets 1–100 of 151"));
}
