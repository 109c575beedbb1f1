//! JUnit XML: one testsuite per group (endpoint), one testcase per case; evaluation cases (what
//! an agent chose to do in a scenario) in testsuites of their own, `evaluation.SCENARIO`, where an
//! unmet expectation is a `<failure>` only when it fails the run (gated).
//!
//! quick-junit escapes markup; the strings we hand it were already made printable by
//! `text::excerpt` (no NUL or other characters XML 1.0 forbids), and [`xml_safe`] guards the rest,
//! so the file parses in standard consumers whatever bytes the agent sent.

use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

use super::{CaseResult, Kind, Report, Status};

pub fn to_string(report: &Report) -> String {
    let mut junit =
        quick_junit::Report::new(format!("agent-tck {} {}", report.role, report.protocol));
    junit.set_time(Duration::from_millis(report.duration_ms));
    // The groups in the order they first appear, found by name in a map (a report of thousands
    // of groups is not searched once per case).
    let mut groups: Vec<(String, Vec<&CaseResult>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for case in &report.cases {
        let group = match case.kind {
            Kind::Conformance => case.group.clone(),
            Kind::Evaluation => format!("evaluation.{}", case.group),
        };
        match index.get(&group) {
            Some(&i) => groups[i].1.push(case),
            None => {
                index.insert(group.clone(), groups.len());
                groups.push((group, vec![case]));
            }
        }
    }
    let target = xml_safe(&report.target);
    let seed = report.seed.map(|s| s.to_string());
    for (group, cases) in groups {
        let mut suite = TestSuite::new(xml_safe(&group));
        if cases.iter().all(|c| c.kind == Kind::Evaluation) {
            let met = cases.iter().filter(|c| c.status == Status::Pass).count();
            suite.add_property(("score", format!("{met}/{}", cases.len()).as_str()));
        }
        // A SHOULD failure that does not fail the run is a passed testcase: the suite says how
        // many such warnings it holds, so that they are not read as passes.
        let warnings = cases
            .iter()
            .filter(|c| {
                c.kind == Kind::Conformance
                    && c.status == Status::Fail
                    && c.level == super::Level::Should
                    && !report.is_blocking(c)
            })
            .count();
        for case in cases {
            suite.add_test_case(test_case(report, case));
        }
        suite.add_property(("target", target.as_str()));
        if let Some(seed) = &seed {
            suite.add_property(("seed", seed.as_str()));
        }
        if warnings > 0 {
            suite.add_property(("warnings", warnings.to_string().as_str()));
        }
        junit.add_test_suite(suite);
    }
    if let (Some(min), Some(score)) = (report.min_score, report.summary.evaluation) {
        // The gate the user set is a testcase of its own, so that JUnit fails when the run does.
        let mut status = TestCaseStatus::success();
        if report.below_min_score() {
            status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(format!("{score}: below --min-score {min}"));
            status.set_type("--min-score failure");
        }
        let mut tc = TestCase::new(format!("evaluation.min-score [{min}]"), status);
        tc.set_classname(xml_safe(&format!("{}.evaluation", report.protocol)));
        tc.set_system_out(xml_safe(&format!("{score}; --min-score {min}\n")));
        let mut suite = TestSuite::new("evaluation");
        suite.add_test_case(tc);
        junit.add_test_suite(suite);
    }
    if report.judged_nothing() {
        junit.add_test_suite(nothing_judged(report));
    }
    junit.to_string().unwrap_or_else(|e| {
        format!(
            "<?xml version=\"1.0\"?><!-- agent-tck: cannot write JUnit: {} -->",
            xml_safe(&e.to_string()).replace("--", "- -")
        )
    })
}

/// A run that judged nothing exits 1: a failed testcase of its own, so that JUnit fails when the
/// run does (every skipped case alone reads as green).
fn nothing_judged(report: &Report) -> TestSuite {
    let why = format!(
        "nothing judged: all {} MUST case(s) skipped for want of evidence (not a pass)",
        report.summary.must
    );
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_message(why.as_str());
    status.set_type("nothing judged");
    let mut tc = TestCase::new("run.judged [must]", status);
    tc.set_classname(xml_safe(&format!("{}.run", report.protocol)));
    tc.set_system_out(format!("{why}\n"));
    let mut suite = TestSuite::new("run");
    suite.add_test_case(tc);
    suite
}

fn test_case(report: &Report, case: &CaseResult) -> TestCase {
    let status = match case.status {
        Status::Pass => TestCaseStatus::success(),
        Status::Skip => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(xml_safe(&case.message));
            s
        }
        // JUnit agrees with the exit status: only a failure that fails the run is a <failure>;
        // a SHOULD or MAY failure that does not is a passed testcase carrying the warning (a
        // `warning` property and the reason in system-out), so dashboards stay green when the
        // run passed.
        Status::Fail if report.is_blocking(case) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(xml_safe(&case.message));
            s.set_type(format!("{} failure", case.level.as_str().to_uppercase()));
            s
        }
        Status::Fail => TestCaseStatus::success(),
        // An expected failure (--baseline): skipped, with the baseline's reason.
        Status::Xfail => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(xml_safe(&format!("xfail: {}", case.message)));
            s
        }
        Status::Stale if report.is_blocking(case) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(xml_safe(&case.message));
            s.set_type("stale baseline entry");
            s
        }
        Status::Stale => TestCaseStatus::success(),
    };
    let warning = matches!(case.status, Status::Fail | Status::Stale) && !report.is_blocking(case);
    let unmet = warning && case.kind == Kind::Evaluation;
    let mut tc = TestCase::new(
        xml_safe(&format!("{} [{}]", case.id, case.level.as_str())),
        status,
    );
    tc.set_classname(xml_safe(&format!("{}.{}", report.protocol, case.group)));
    tc.set_time(Duration::from_micros(
        case.duration_us.max(case.duration_ms * 1000),
    ));
    // JUnit's time has millisecond places: work under a millisecond would read as 0.000.
    if case.duration_ms == 0 && case.duration_us > 0 {
        tc.add_property(("duration", case.duration_text().as_str()));
    }
    let mut out = format!("{}\nspec: {}\n", case.title, case.spec);
    if let Some(e) = &case.evidence {
        tc.add_property(("judged", e.judged.to_string().as_str()));
        tc.add_property(("evidence", xml_safe(&e.to_string()).as_str()));
        out.push_str(&format!("{}\n", xml_safe(&e.to_string())));
    }
    if unmet {
        tc.add_property((
            "evaluation",
            "unmet (scored, not failed: gate with `level: must` or --min-score)",
        ));
        out.push_str("UNMET expectation: scored; it does not fail the run\n");
    } else if warning && case.status == Status::Stale {
        tc.add_property((
            "warning",
            "stale baseline entry: the case passed (--strict fails the run on it)",
        ));
        out.push_str("WARNING: listed as an expected failure, but it passed\n");
    } else if warning {
        tc.add_property((
            "warning",
            format!(
                "{} failed (a warning: it does not fail the run; --strict makes it one)",
                case.level.as_str().to_uppercase()
            )
            .as_str(),
        ));
        out.push_str(&format!(
            "WARNING: {} case failed; it does not fail the run (--strict would)\n",
            case.level.as_str().to_uppercase()
        ));
    }
    if !case.message.is_empty() {
        out.push_str(&format!("message: {}\n", case.message));
    }
    if let Some(request) = &case.exchange.request {
        out.push_str(&format!("\n--- request sent ---\n{request}\n"));
    }
    if let Some(response) = &case.exchange.response {
        out.push_str(&format!("\n--- answer (excerpt) ---\n{response}\n"));
    }
    if let Some(cmd) = &case.exchange.reproduce {
        out.push_str(&format!("\n--- reproduce ---\n{cmd}\n"));
    }
    tc.set_system_out(xml_safe(&out));
    tc
}

/// Replaces the characters XML 1.0 cannot carry at all (most C0 controls, surrogates cannot occur
/// in a Rust string, U+FFFE/U+FFFF) with visible escapes.
pub fn xml_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:04x}}}", c as u32))
            }
            _ => out.push(c),
        }
    }
    out
}
