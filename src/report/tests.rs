use super::*;

fn case(level: Level) -> CaseResult {
    CaseResult::new("x.rule", "x", level, "a rule", "Spec")
}

#[test]
fn a_case_starts_unjudged_and_passes_only_on_evidence() {
    let mut c = case(Level::Must);
    assert_eq!(c.status, Status::Skip);
    c.pass(Evidence::new(0, "requests"), || "no request came".into());
    assert_eq!(
        (c.status, c.message.as_str()),
        (Status::Skip, "no request came")
    );
    assert!(c.evidence.is_none());
    c.pass(Evidence::new(3, "requests"), String::new);
    assert_eq!(c.status, Status::Pass);
    assert_eq!(
        c.evidence.as_ref().unwrap().to_string(),
        "judged 3 requests"
    );
}

#[test]
fn settling_turns_an_unexplained_verdict_into_a_skip_that_says_so() {
    let mut pass = case(Level::Must);
    pass.status = Status::Pass;
    pass.message = "looked fine".into();
    pass.settle();
    assert_eq!(pass.status, Status::Skip);
    assert_eq!(pass.message, format!("{NO_EVIDENCE} (looked fine)"));
    let mut silent = case(Level::Should);
    silent.settle();
    assert_eq!(
        (silent.status, silent.message.as_str()),
        (Status::Skip, NO_REASON)
    );
    let mut held = case(Level::Must);
    held.pass(Evidence::new(1, "answer"), String::new);
    held.settle();
    assert_eq!(held.status, Status::Pass);
}

#[test]
fn a_run_whose_must_cases_were_all_skipped_is_not_green() {
    let run = || RunInfo::start("mock", "p", "t", 1, false);
    let mut may = case(Level::May);
    may.pass(Evidence::new(2, "notes"), String::new);
    let skipped = vec![case(Level::Must), case(Level::Must), may.clone()];
    let report = run().report(skipped, &Redactor::new(None));
    assert!(report.judged_nothing());
    assert_eq!(report.exit_code(), 1);
    let mut judged = case(Level::Must);
    judged.pass(Evidence::new(1, "request"), String::new);
    let report = run().report(vec![case(Level::Must), judged, may], &Redactor::new(None));
    assert!(!report.judged_nothing());
    assert_eq!(report.exit_code(), 0);
    // A run with no MUST case at all is not "nothing judged" by this rule.
    let report = run().report(vec![case(Level::Should)], &Redactor::new(None));
    assert!(!report.judged_nothing());
}

/// An expected failure and a reachability-only pass judge no MUST rule: a run of only
/// those judged nothing, whatever the baseline says; one real verdict is enough.
#[test]
fn xfail_and_preconditions_are_not_judged() {
    let run = || RunInfo::start("probe", "p", "t", 1, false);
    let mut reachable = case(Level::Must).precondition();
    reachable.pass(Evidence::new(1, "connection"), String::new);
    let mut expected = case(Level::Must);
    expected.status = Status::Xfail;
    let report = run().report(
        vec![reachable.clone(), expected.clone(), case(Level::Must)],
        &Redactor::new(None),
    );
    assert!(report.judged_nothing());
    assert_eq!(report.exit_code(), 1);
    assert_eq!(
        report.nothing_judged_reason().unwrap(),
        "nothing judged: no MUST rule was judged (1 skipped, 1 expected failure by the \
             baseline, 1 reachability only) — not a pass"
    );
    let mut judged = case(Level::Must);
    judged.pass(Evidence::new(1, "answer"), String::new);
    let report = run().report(vec![reachable, expected, judged], &Redactor::new(None));
    assert!(!report.judged_nothing());
    assert_eq!(report.exit_code(), 0);
    // The precondition mark is written only when set.
    let json = serde_json::to_value(&report.cases).unwrap();
    assert_eq!(json[0]["precondition"], true);
    assert!(json[2].get("precondition").is_none(), "{}", json[2]);
}

/// A report written before `judged_must` was counted reads as it did: judged unless every
/// MUST case was skipped.
#[test]
fn an_older_summary_falls_back_to_the_skipped_must_cases() {
    let old: Summary = serde_json::from_str(
        r#"{"passed":1,"failed":0,"skipped":2,"failed_must":0,"failed_should":0,
               "failed_may":0,"skipped_must":2,"must":3}"#,
    )
    .unwrap();
    assert_eq!((old.judged_must, old.judged()), (None, 1));
    let none: Summary = serde_json::from_str(
        r#"{"passed":0,"failed":0,"skipped":2,"failed_must":0,"failed_should":0,
               "failed_may":0,"skipped_must":2,"must":2}"#,
    )
    .unwrap();
    assert_eq!(none.judged(), 0);
}

/// An interrupted report exits 130 whatever its cases say, and every format says so.
#[test]
fn an_interrupted_report_is_no_verdict() {
    let mut passed = case(Level::Must);
    passed.pass(Evidence::new(1, "answer"), String::new);
    let mut report = RunInfo::start("probe", "p", "t", 1, false)
        .report(vec![passed, case(Level::Must)], &Redactor::new(None));
    assert_eq!(report.exit_code(), 0);
    report.interrupted = Some(Interruption::of(
        Signal::Terminate,
        std::time::Duration::from_millis(2_140),
        &report.cases,
        |c| c.status != Status::Skip,
    ));
    assert_eq!(report.exit_code(), Exit::Interrupted);
    let headline = "INTERRUPTED (SIGTERM) after 2.1 s — 1 of 2 cases judged, 1 not \
                        reached; not a verdict";
    assert_eq!(report.interrupted.as_ref().unwrap().headline(), headline);
    let console = console::render(&report, false);
    assert!(console.trim_end().ends_with(headline), "{console}");
    let page = html::to_string(&report);
    assert!(page.contains("<title>agent-tck probe p · INTERRUPTED</title>"));
    assert!(page.contains(&format!(
        "<h1>INTERRUPTED · probe p</h1><p>exit 130: {headline}</p>"
    )));
    let xml = junit::to_string(&report);
    assert!(
        xml.contains("run.completed [must]") && xml.contains(headline),
        "{xml}"
    );
    let json = json::to_string(&report);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["interrupted"]["by"], "SIGTERM");
    assert_eq!(crate::schema::schemas().validate("report", &value), vec![]);
    let back: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
}

#[test]
fn sub_millisecond_work_keeps_its_microseconds() {
    let mut c = case(Level::Must);
    c.set_duration(std::time::Duration::from_micros(412));
    assert_eq!((c.duration_ms, c.duration_text().as_str()), (0, "412 µs"));
    c.set_duration(std::time::Duration::from_micros(12_400));
    assert_eq!(c.duration_text(), "12 ms");
}

#[test]
fn evidence_is_redacted_like_every_other_string() {
    let mut c = case(Level::Must);
    c.pass(
        Evidence::new(1, "answers to key s3cret-key-0123"),
        String::new,
    );
    let report = RunInfo::start("probe", "p", "t", 1, false)
        .report(vec![c], &Redactor::new(Some("s3cret-key-0123".into())));
    let of = &report.cases[0].evidence.as_ref().unwrap().of;
    assert!(!of.contains("s3cret-key-0123"), "{of}");
}
