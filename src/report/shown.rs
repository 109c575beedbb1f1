//! What the reporters show of a run's counts, title and seed, side by side (tests only: the
//! console, HTML and JUnit reporters each read the same summary).

use super::console::render;
use crate::report::{CaseResult, Evidence, Level, Report, RunInfo, Status};
use crate::text::Redactor;

fn run(strict: bool, seed: Option<u64>, statuses: &[(Level, Status)]) -> Report {
    let cases = statuses
        .iter()
        .enumerate()
        .map(|(i, (level, status))| {
            let mut c = CaseResult::new(&format!("x.case-{i}"), "x", *level, "a rule", "S");
            match status {
                Status::Pass => c.pass(Evidence::new(1, "request"), String::new),
                Status::Fail => c.fail("broken"),
                other => {
                    c.status = *other;
                    c.evidence = Some(Evidence::new(1, "request"));
                    c.message = "listed".into();
                }
            }
            c
        })
        .collect();
    RunInfo::start("probe", "p", "http://127.0.0.1:1", seed, strict)
        .report(cases, &Redactor::new(None))
}

fn last(report: &Report) -> String {
    render(report, false).lines().last().unwrap().to_string()
}

#[test]
fn a_should_failure_without_strict_is_a_warning_not_a_failure() {
    let cases = [
        (Level::Must, Status::Pass),
        (Level::Should, Status::Fail),
        (Level::May, Status::Fail),
    ];
    let report = run(false, Some(3), &cases);
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.summary.warnings, 1);
    assert_eq!(report.summary.failed, 2, "the JSON field keeps its meaning");
    assert_eq!(
        last(&report),
        "1 passed, 0 failed, 1 warning, 1 noted (MAY), 0 skipped"
    );
    let html = crate::report::html::to_string(&report);
    assert!(
        html.contains(
            "<dt>counts</dt><dd>1 passed, 0 failed, 1 warning, 1 noted (MAY), 0 skipped</dd>"
        ),
        "{html}"
    );
    let xml = crate::report::junit::to_string(&report);
    assert!(
        xml.contains(r#"<property name="warnings" value="1"/>"#),
        "{xml}"
    );
    let strict = run(true, Some(3), &cases);
    assert_eq!(strict.exit_code(), 1);
    assert_eq!(
        last(&strict),
        "1 passed, 1 failed, 1 noted (MAY), 0 skipped"
    );
}

#[test]
fn strict_stale_entries_are_named_as_why_the_run_fails() {
    let report = run(
        true,
        Some(3),
        &[(Level::Must, Status::Pass), (Level::Must, Status::Stale)],
    );
    assert_eq!(report.exit_code(), 1);
    let shown = render(&report, false);
    assert!(
        shown.contains(
            "\n--strict: 1 stale baseline entry fails the run (passing now; remove it from \
             the baseline): x.case-1\n"
        ),
        "{shown}"
    );
    let html = crate::report::html::to_string(&report);
    assert!(
        html.contains(
            "exit 1: --strict: 1 stale baseline entry (passing now; remove from the \
             baseline): x.case-1"
        ),
        "{html}"
    );
    // Without --strict it is a warning: no such line.
    let lenient = run(
        false,
        Some(3),
        &[(Level::Must, Status::Pass), (Level::Must, Status::Stale)],
    );
    assert!(!render(&lenient, false).contains("--strict:"));
}

#[test]
fn a_run_without_a_seed_shows_none_and_a_command_titles_the_report() {
    let seeded = run(false, Some(7), &[(Level::Must, Status::Pass)]);
    assert!(
        render(&seeded, false)
            .lines()
            .next()
            .unwrap()
            .ends_with(" · probe p · http://127.0.0.1:1 · seed 7"),
        "{}",
        render(&seeded, false)
    );
    let mut seedless = run(false, None, &[(Level::Must, Status::Pass)]);
    seedless.command = Some("lint agents".into());
    let first = render(&seedless, false).lines().next().unwrap().to_string();
    assert!(
        first.ends_with(" · lint agents · http://127.0.0.1:1"),
        "{first}"
    );
    let html = crate::report::html::to_string(&seedless);
    assert!(!html.contains("<dt>seed</dt>"), "{html}");
    assert!(
        html.contains("<title>agent-tck lint agents · PASS</title>"),
        "{html}"
    );
    let xml = crate::report::junit::to_string(&seedless);
    assert!(!xml.contains(r#"name="seed""#), "{xml}");
}
