//! The HTML report: a hostile agent's `<script>` is shown as text, in the file and in a real
//! browser (headless Chromium, when installed: `.ci/run` installs it); a fleet's report plots its
//! requests over time.

use std::process::Command;

use crate::support::{run_within, tck, TempDir, RUN_DEADLINE};
const PAYLOAD: &str = "<script>document.body.setAttribute('data-pwned','1')</script>";

#[test]
fn a_hostile_answer_is_text_in_the_file_and_in_the_browser() {
    let dir = TempDir::new("html-hostile");
    let agent = dir.path("agent.sh");
    std::fs::write(&agent, format!("#!/bin/sh\necho \"{PAYLOAD}\"\n")).unwrap();
    let html = dir.path("report.html");
    let out = tck(&[
        "probe",
        "agent-standard",
        "--exec",
        &format!("sh {agent}"),
        "--mode",
        "plan",
        "--html",
        &html,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let escaped =
        "&lt;script&gt;document.body.setAttribute(&#39;data-pwned&#39;,&#39;1&#39;)&lt;/script&gt;";
    assert!(page.contains(escaped), "the answer, escaped");
    assert!(!page.contains(PAYLOAD));
    assert!(page.contains("exit 1: 1 case fails the run: plan.json-last"));

    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| crate::support::shell_succeeds(&format!("command -v {c}")));
    let Some(_) = chromium else {
        eprintln!("chromium is not installed: the browser half of this test did not run");
        return;
    };
    let (png, dom) = (dir.path("shot.png"), dir.path("dom.html"));
    let mut screenshot = Command::new("scripts/html-screenshot.sh");
    screenshot.args([
        "--html", &html, "--png", &png, "--dom", &dom, "--height", "900",
    ]);
    let out = run_within(screenshot, RUN_DEADLINE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shot = std::fs::read(&png).unwrap();
    assert!(shot.starts_with(b"\x89PNG"), "a PNG screenshot");
    let dom = std::fs::read_to_string(&dom).unwrap();
    assert!(dom.contains("plan.json-last"), "the browser built the page");
    assert!(
        !dom.contains("data-pwned=\"1\""),
        "the agent's script did not run"
    );
    assert!(
        dom.contains("&lt;script&gt;document.body.setAttribute"),
        "it is text on the page"
    );
    // Our own filter script ran (it marks the page when it is set up).
    assert!(
        dom.contains("data-filters=\"ready\""),
        "{}",
        &dom[..dom.len().min(2000)]
    );
}

#[deadline::test]
async fn a_fleet_report_plots_its_requests_over_time() {
    let at = crate::support::roundtable();
    let agent = agent_tck::mock::agent::MockAgent::new(
        at.protocol,
        agent_tck::mock::agent::Profile {
            name: "steady".into(),
            domain: "general review".into(),
            capabilities: Vec::new(),
            api_key: None,
        },
        agent_tck::mock::behavior::parse_list("conforming", at).unwrap(),
        1,
    );
    let (url, stop, report) = crate::support::mock_session(at.protocol, agent).await;
    let probe = crate::support::probe(&url, None).await;
    assert!(!probe.cases.is_empty());
    // The probe's own page, from a fast run (a local mock agent answers within a millisecond or
    // so; whole milliseconds once read those cases as 0 and left the page without a plot): each
    // endpoint's answer times are plotted, in µs or ms.
    let probe_page = agent_tck::report::html::to_string(&probe);
    for endpoint in ["analyze", "challenge", "vote"] {
        assert!(
            probe_page.contains(&format!("{endpoint}: answer time")),
            "{endpoint}: {}",
            probe
                .cases
                .iter()
                .map(|c| format!("{} {} {}µs", c.group, c.id, c.duration_us))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    assert!(probe_page.contains("p50, p90, p99 marked"));
    stop.send(()).unwrap();
    let report = report.await.unwrap().unwrap();
    assert!(report.timeline.len() > 5, "{:?}", report.timeline);
    assert!(report
        .timeline
        .iter()
        .all(|s| s.lane == "steady [conforming]"));
    let page = agent_tck::report::html::to_string(&report);
    // Titled by the command, and the target is the platform, not one of the agents.
    assert!(
        page.contains(" · mock fleet (roundtable)</h1>"),
        "{}",
        &page[..2000]
    );
    assert_eq!(
        report.target,
        format!("the platform that called {url}"),
        "one agent: the platform is what called it"
    );
    assert!(page.contains("requests over time, by agent"));
    assert!(page.contains("/analyze: answer time"));
    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &value),
        vec![]
    );
}
