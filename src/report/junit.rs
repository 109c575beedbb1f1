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

/// The name of the document's root: `agent-tck` and the report's title, as the HTML page names
/// it (`agent-tck selftest`, `agent-tck probe roundtable`).
pub fn root_name(report: &Report) -> String {
    xml_safe(&format!("agent-tck {}", report.title()))
}

/// The properties every testsuite carries of the specs the run was judged by: `spec`, a line
/// per protocol (the digest whole), and `spec.PROTOCOL.sha256`, the digest alone for a tool
/// to compare; or one `spec` saying the report records none.
pub fn add_spec_properties(suite: &mut TestSuite, report: &Report) {
    for line in report.judged_by_lines(64) {
        suite.add_property(("spec", xml_safe(&line).as_str()));
    }
    for by in &report.judged_by {
        suite.add_property((
            xml_safe(&format!("spec.{}.sha256", by.protocol)).as_str(),
            by.sha256.as_str(),
        ));
    }
}

pub fn to_string(report: &Report) -> String {
    let mut junit = quick_junit::Report::new(root_name(report));
    junit.set_time(Duration::from_millis(report.duration_ms));
    // The groups in the order they first appear, found by name in a map (a report of thousands
    // of groups is not searched once per case).
    let mut groups: Vec<(String, Vec<&CaseResult>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for case in &report.cases {
        let group = suite_name(case);
        match index.get(&group) {
            Some(&i) => groups[i].1.push(case),
            None => {
                index.insert(group.clone(), groups.len());
                groups.push((group, vec![case]));
            }
        }
    }
    let target = xml_safe(&report.target);
    for (group, cases) in groups {
        let mut tally = SuiteTally::default();
        let mut tcs = Vec::with_capacity(cases.len());
        for case in cases {
            tally.count(report, case);
            tcs.push(test_case(report, case));
        }
        // The tally counted them: the cases go in as they are.
        let mut suite = tally.suite(&group, &target, report.seed);
        add_spec_properties(&mut suite, report);
        suite.test_cases = tcs;
        junit.add_test_suite(suite);
    }
    for suite in closing_suites(report) {
        junit.add_test_suite(suite);
    }
    junit.to_string().unwrap_or_else(|e| {
        format!(
            "<?xml version=\"1.0\"?><!-- agent-tck: cannot write JUnit: {} -->",
            xml_safe(&e.to_string()).replace("--", "- -")
        )
    })
}

/// What a testsuite's head says of its cases: how many passed, failed, were skipped, met (for a
/// score) and warned. Counted case by case, so that a merge that writes the cases as it reads
/// them can write the suite's head afterwards.
#[derive(Debug, Clone, Default)]
pub struct SuiteTally {
    tests: usize,
    failures: usize,
    skipped: usize,
    /// Evaluation cases, and those met.
    evaluation: usize,
    met: usize,
    /// SHOULD failures that do not fail the run.
    warnings: usize,
}

impl SuiteTally {
    /// Counts `case` of `report` (whose strictness decides what fails the run).
    pub fn count(&mut self, report: &Report, case: &CaseResult) {
        self.tests += 1;
        match test_case_status(report, case) {
            TestCaseStatus::NonSuccess { .. } => self.failures += 1,
            TestCaseStatus::Skipped { .. } => self.skipped += 1,
            TestCaseStatus::Success { .. } => {}
        }
        if case.kind == Kind::Evaluation {
            self.evaluation += 1;
            self.met += usize::from(case.status == Status::Pass);
        }
        // A SHOULD failure that does not fail the run is a passed testcase: the suite says how
        // many such warnings it holds, so that they are not read as passes.
        self.warnings += usize::from(
            case.kind == Kind::Conformance
                && case.status == Status::Fail
                && case.level == super::Level::Should
                && !report.is_blocking(case),
        );
    }

    /// The suite `group` with the counts and properties, and no testcase yet.
    pub fn suite(&self, group: &str, target: &str, seed: Option<u64>) -> TestSuite {
        let mut suite = TestSuite::new(xml_safe(group));
        if self.evaluation == self.tests {
            suite.add_property(("score", format!("{}/{}", self.met, self.tests).as_str()));
        }
        suite.add_property(("target", target));
        if let Some(seed) = seed {
            suite.add_property(("seed", seed.to_string().as_str()));
        }
        if self.warnings > 0 {
            suite.add_property(("warnings", self.warnings.to_string().as_str()));
        }
        suite.tests = self.tests;
        suite.failures = self.failures;
        suite.skipped = self.skipped;
        suite
    }
}

/// The testsuite a case is in: its group, or `evaluation.GROUP` for an evaluation case.
pub fn suite_name(case: &CaseResult) -> String {
    match case.kind {
        Kind::Conformance => case.group.clone(),
        Kind::Evaluation => format!("evaluation.{}", case.group),
    }
}

/// The suites after the cases': the `--min-score` gate, and a run that judged nothing.
pub fn closing_suites(report: &Report) -> Vec<TestSuite> {
    let mut suites = Vec::new();
    if let (Some(min), Some(score)) = (report.min_score, report.summary.evaluation) {
        // The gate the user set is a testcase of its own, so that JUnit fails when the run does.
        let mut status = TestCaseStatus::success();
        if report.below_min_score() {
            status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(format!("{score}: below --min-score {min}"));
            if let Some(see) = super::explained::id_pointer("evaluation.min-score") {
                status.set_description(format!("see: {see}"));
            }
            status.set_type("--min-score failure");
        }
        let mut tc = TestCase::new(format!("evaluation.min-score [{min}]"), status);
        tc.set_classname(xml_safe(&format!("{}.evaluation", report.protocol)));
        tc.set_system_out(xml_safe(&format!("{score}; --min-score {min}\n")));
        let mut suite = TestSuite::new("evaluation");
        suite.add_test_case(tc);
        suites.push(suite);
    }
    if let Some(cut) = &report.interrupted {
        suites.push(run_case(
            report,
            "run.completed [must]",
            "interrupted",
            &cut.headline(),
        ));
    } else if let Some(why) = report.nothing_judged_reason() {
        suites.push(run_case(
            report,
            "run.judged [must]",
            "nothing judged",
            &why,
        ));
    }
    suites
}

/// The pieces of a JUnit document written one at a time, each exactly as quick-junit writes it
/// inside the whole document (the same indentation): a merge of thousands of reports writes
/// the testcases as it reads them and the suites' heads at the end, never the whole document
/// in memory.
pub mod pieces {
    use super::*;

    const SUITE_END: &str = "\n    </testsuite>";
    const ROOT_END: &str = "\n</testsuites>";

    fn serialized(suites: Vec<TestSuite>, root: Option<&Totals>) -> String {
        let mut junit = quick_junit::Report::new(root.map_or(String::new(), |t| t.name.clone()));
        for suite in suites {
            junit.add_test_suite(suite);
        }
        if let Some(t) = root {
            junit.set_time(t.time);
            (junit.tests, junit.failures, junit.skipped) = (t.tests, t.failures, t.skipped);
        }
        junit.to_string().unwrap_or_default()
    }

    /// One testcase as it reads inside its suite (starting with its line break).
    pub fn test_case(report: &Report, case: &CaseResult) -> String {
        let mut suite = TestSuite::new("s");
        suite.add_test_case(super::test_case(report, case));
        let text = serialized(vec![suite], None);
        match (text.find("\n        <testcase"), text.rfind(SUITE_END)) {
            (Some(a), Some(b)) if a < b => text[a..b].to_string(),
            _ => String::new(),
        }
    }

    /// A suite's opening tag and properties (starting with its line break), without its cases
    /// and closing tag ([`suite_end`]).
    pub fn suite_head(suite: TestSuite) -> String {
        let mut suite = suite;
        suite.test_cases.clear();
        let text = serialized(vec![suite], None);
        match (text.find("\n    <testsuite"), text.rfind(SUITE_END)) {
            (Some(a), Some(b)) if a < b => text[a..b].to_string(),
            _ => String::new(),
        }
    }

    /// A suite's closing tag.
    pub fn suite_end() -> &'static str {
        SUITE_END
    }

    /// A whole suite, cases and all (starting with its line break).
    pub fn whole_suite(suite: TestSuite) -> String {
        let text = serialized(vec![suite], None);
        match (text.find("\n    <testsuite"), text.rfind(ROOT_END)) {
            (Some(a), Some(b)) if a < b => text[a..b].to_string(),
            _ => String::new(),
        }
    }

    /// The document's counts, known at its end.
    #[derive(Debug, Clone, Default)]
    pub struct Totals {
        pub name: String,
        pub time: Duration,
        pub tests: usize,
        pub failures: usize,
        pub skipped: usize,
    }

    impl Totals {
        /// Adds a suite's counts.
        pub fn add(&mut self, suite: &TestSuite) {
            self.tests += suite.tests;
            self.failures += suite.failures;
            self.skipped += suite.skipped;
        }

        /// The document's start: the XML declaration and the root's opening tag.
        pub fn head(&self) -> String {
            let text = serialized(Vec::new(), Some(self));
            match text.rfind(ROOT_END) {
                Some(b) => text[..b].to_string(),
                None => text,
            }
        }

        /// The document's end: the root's closing tag.
        pub fn tail() -> String {
            format!("{ROOT_END}\n")
        }
    }
}

/// A run that judged nothing exits 1, and an interrupted one 130: a failed testcase of its own
/// (`name`), so that JUnit fails when the run does (every skipped case alone reads as green).
fn run_case(report: &Report, name: &str, kind: &str, why: &str) -> TestSuite {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_message(xml_safe(why));
    let id = name.split(' ').next().unwrap_or(name);
    if let Some(see) = super::explained::id_pointer(id) {
        status.set_description(format!("see: {see}"));
    }
    status.set_type(kind);
    let mut tc = TestCase::new(name, status);
    tc.set_classname(xml_safe(&format!("{}.run", report.protocol)));
    tc.set_system_out(xml_safe(&format!("{why}\n")));
    let mut suite = TestSuite::new("run");
    suite.add_test_case(tc);
    suite
}

fn test_case_status(report: &Report, case: &CaseResult) -> TestCaseStatus {
    match case.status {
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
            if let Some(see) = super::explained::pointer(case) {
                s.set_description(format!("see: {see}"));
            }
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
    }
}

fn test_case(report: &Report, case: &CaseResult) -> TestCase {
    let status = test_case_status(report, case);
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
    if let Some(see) = super::explained::pointer(case) {
        out.push_str(&format!("see: {see}\n"));
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
