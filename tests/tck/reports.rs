//! The reporters: JUnit that parses whatever the agent sent, a JSON report valid against its
//! schema, a console report that ends with the summary line, and no secret anywhere.

use agent_tck::mock::Reply;
use agent_tck::report::{console, json, junit, Report, Status};
use agent_tck::schema::schemas;

use crate::support::*;

/// Bytes no report may carry raw: NUL, an ANSI escape, a CDATA terminator, markup, invalid UTF-8,
/// a right-to-left override and an XML-forbidden U+FFFF.
const HOSTILE: &[u8] = b"{\"agent_name\": \"\x00\x1b[31mred\x1b[0m ]]> <x a='1'>&amp; \xff\xfe \xe2\x80\xae evil \xef\xbf\xbf\"}";

async fn hostile_report() -> Report {
    let agent = stub(|req| match req.endpoint.as_str() {
        "analyze" if req.json().is_object() => Reply {
            status: 200,
            content_type: "application/json",
            body: HOSTILE.into(),
        },
        "health" => Reply {
            status: 200,
            content_type: "text/plain",
            body: b"\x00]]>\x1b[2J\xff".as_slice().into(),
        },
        _ => req.reference(),
    })
    .await;
    probe(&agent.url(), None).await
}

#[deadline::test]
async fn junit_parses_in_the_presence_of_hostile_bytes() {
    let report = hostile_report().await;
    assert_eq!(failed(&report), ["analyze.response"]);
    let xml = junit::to_string(&report);
    assert!(
        !xml.contains('\u{0}') && !xml.contains('\u{1b}') && !xml.contains('\u{ffff}'),
        "raw control bytes in the XML"
    );

    let parsed =
        quick_junit::Report::deserialize_from_str(&xml).expect("quick-junit reads it back");
    let cases: usize = parsed.test_suites.iter().map(|s| s.test_cases.len()).sum();
    assert_eq!(cases, report.cases.len());

    let doc = roxmltree::Document::parse(&xml).expect("a standard XML parser reads it");
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a <failure>");
    assert!(
        failure
            .attribute("message")
            .unwrap()
            .contains("not valid UTF-8"),
        "{:?}",
        failure.attribute("message")
    );
    assert_eq!(failure.attribute("type"), Some("MUST failure"));
    let testcase = failure.parent().unwrap();
    assert_eq!(testcase.attribute("name"), Some("analyze.response [must]"));
    let out = testcase
        .children()
        .find(|n| n.has_tag_name("system-out"))
        .and_then(|n| n.text())
        .expect("system-out");
    assert!(
        out.contains("--- request sent ---") && out.contains("POST "),
        "{out}"
    );
    assert!(
        out.contains("--- answer (excerpt) ---") && out.contains("]]>"),
        "{out}"
    );
    assert!(out.contains("--- reproduce ---\ncurl "), "{out}");
    // The health answer's bytes were reported too, and still parse.
    assert!(doc
        .descendants()
        .any(|n| n.attribute("name") == Some("http.health [may]")));
}

#[deadline::test]
async fn junit_has_a_testsuite_per_endpoint_and_skips_with_reasons() {
    let agent = stub(|req| {
        if req.endpoint == "vote" {
            Reply::error(503, "busy")
        } else {
            req.reference()
        }
    })
    .await;
    let report = probe(&agent.url(), None).await;
    let xml = junit::to_string(&report);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suites: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .map(|n| n.attribute("name").unwrap())
        .collect();
    assert_eq!(
        suites,
        ["agent", "analyze", "challenge", "vote", "auth", "http"]
    );
    let skipped: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("skipped"))
        .map(|n| n.parent().unwrap().attribute("name").unwrap())
        .collect();
    assert!(
        skipped.contains(&"vote.dissent-reason [must]")
            && skipped.contains(&"agent.name-consistent [must]"),
        "{skipped:?}"
    );
    let vote = doc
        .descendants()
        .find(|n| n.attribute("name") == Some("vote"))
        .unwrap();
    // One failure: the /vote answer is a 500; the /vote cases that read it skip.
    assert_eq!(vote.attribute("failures"), Some("1"));
}

#[deadline::test]
async fn the_json_report_is_valid_against_its_schema() {
    for report in [
        hostile_report().await,
        probe(&reference_agent(None).await.url(), None).await,
    ] {
        let text = json::to_string(&report);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let findings = schemas().validate("report", &value);
        assert!(findings.is_empty(), "{findings:?}");
        for field in [
            "tool",
            "version",
            "protocol",
            "target",
            "seed",
            "started_at",
            "duration_ms",
            "summary",
            "cases",
        ] {
            assert!(value.get(field).is_some(), "no {field}");
        }
        let back: Report = serde_json::from_value(value).unwrap();
        assert_eq!(back, report);
    }
}

#[deadline::test]
async fn the_report_schema_can_fail() {
    let report = probe(&reference_agent(None).await.url(), None).await;
    let mut value = serde_json::to_value(&report).unwrap();
    value["cases"][0]["status"] = "passed".into();
    value["summary"].as_object_mut().unwrap().remove("failed");
    let findings: Vec<String> = schemas()
        .validate("report", &value)
        .iter()
        .map(|f| f.to_string())
        .collect();
    assert!(
        findings.iter().any(|f| f.starts_with("cases[0].status")),
        "{findings:?}"
    );
    assert!(
        findings.iter().any(|f| f.contains("failed")),
        "{findings:?}"
    );
}

#[deadline::test]
async fn the_api_key_never_appears_in_any_output() {
    // An agent that refuses everything at /vote, quoting the header it got: the key comes back
    // in the answer too, and must be hidden there as well.
    let agent = stub(|req| {
        let auth = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        match req.endpoint.as_str() {
            "vote" => Reply::error(500, format!("I got {auth}")),
            _ if auth == format!("Bearer {KEY}") => req.reference(),
            _ => Reply::error(401, "no"),
        }
    })
    .await;
    let report = probe(&agent.url(), Some(KEY)).await;
    assert_eq!(failed(&report), ["vote.response"]);
    let outputs = [
        console::render(&report, true),
        console::render(&report, false),
        junit::to_string(&report),
        json::to_string(&report),
        agent_tck::report::ctrf::to_string(&report),
        agent_tck::report::html::to_string(&report),
    ];
    for out in &outputs {
        assert!(!out.contains(KEY), "the key leaked:\n{out}");
    }
    assert!(
        outputs[2].contains("Bearer ***")
            && outputs[3].contains("I got Bearer ***")
            && outputs[4].contains("I got Bearer ***"),
        "redacted, not dropped"
    );
}

#[deadline::test]
async fn the_console_report_ends_with_the_counts_and_colours_only_when_asked() {
    let agent = stub(|req| {
        if req.endpoint == "challenge" {
            Reply::error(500, "no")
        } else {
            req.reference()
        }
    })
    .await;
    let report = probe(&agent.url(), None).await;
    let plain = console::render(&report, false);
    let s = &report.summary;
    assert_eq!(
        plain.lines().last().unwrap(),
        format!(
            "{} passed, {} failed, {} skipped",
            s.passed, s.failed, s.skipped
        )
    );
    // One missing answer is one failure: /challenge answered 500.
    assert_eq!(s.failed, 1);
    assert!(!plain.contains('\u{1b}'));
    assert!(plain.contains("FAIL must   challenge.response"), "{plain}");
    assert!(plain.contains("reproduce: curl "), "{plain}");
    assert!(
        plain.contains("SKIP must   challenge.counter-evidence"),
        "{plain}"
    );
    assert!(console::render(&report, true).contains("\u{1b}[1;31mFAIL"));
}

#[deadline::test]
async fn excerpts_are_bounded() {
    let huge = format!("{{\"agent_name\": \"{}\"}}", "é".repeat(2_000_000));
    let agent = stub(move |req| {
        if req.endpoint == "analyze" {
            Reply {
                status: 200,
                content_type: "application/json",
                body: huge.clone().into(),
            }
        } else {
            req.reference()
        }
    })
    .await;
    let report = probe(&agent.url(), None).await;
    let case = case(&report, "analyze.response");
    assert_eq!(case.status, Status::Fail);
    // The 2-million-character answer is JSON: every /analyze case reads it, and each keeps an
    // excerpt of it, never the whole (nor does any message).
    let readers: Vec<_> = report
        .cases
        .iter()
        .filter(|c| {
            c.exchange
                .response
                .as_deref()
                .is_some_and(|r| r.contains("éééé"))
        })
        .collect();
    assert!(
        readers.len() > 10,
        "{} cases read the answer",
        readers.len()
    );
    for c in &report.cases {
        let answer = c.exchange.response.as_deref().unwrap_or("");
        assert!(
            answer.chars().count() < 10_000 && c.message.chars().count() < 10_000,
            "{}: {} characters",
            c.id,
            answer.chars().count()
        );
    }
    // Bounded as a whole: forty cases with their excerpts, and the 100,000-character request
    // of analyze.long-content inlined in its reproduce line, not 4 MB.
    assert!(json::to_string(&report).len() < 400_000);
}

/// A short key (`--api-key wrong`) is masked where it was sent, not searched for: the agent's
/// "wrong API key" stays readable, and the report says why the key was not searched for.
#[deadline::test]
async fn a_short_key_is_masked_where_sent_and_messages_stay_readable() {
    let agent = crate::support::reference_agent(Some(crate::support::KEY)).await;
    let report = crate::support::probe(&agent.url(), Some("wrong")).await;
    let texts: Vec<String> = report
        .cases
        .iter()
        .flat_map(|c| {
            [
                &c.exchange.request,
                &c.exchange.response,
                &c.exchange.reproduce,
            ]
            .into_iter()
            .flatten()
            .cloned()
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("{\"error\":\"wrong API key\"}")),
        "the agent's answer is shown as it was"
    );
    assert!(texts
        .iter()
        .any(|t| t.contains("authorization: Bearer ***")));
    assert!(
        !texts.iter().any(|t| t.contains("Bearer wrong")),
        "{texts:?}"
    );
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    assert!(report.notes[0].contains("shorter than 8 characters"));
    let json = agent_tck::report::json::to_string(&report);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(agent_tck::schema::schemas()
        .validate("report", &value)
        .is_empty());
    let console = agent_tck::report::console::render(&report, false);
    assert!(
        console.contains("note: a key shorter than 8 characters"),
        "{console}"
    );
}

/// A failure's reproduce command is printed whole on the console, so that it can be pasted.
#[deadline::test]
async fn the_console_prints_reproduce_commands_whole() {
    let agent = crate::support::mutated("vote", |_, answer| {
        answer["approve"] = serde_json::json!("false");
    })
    .await;
    let report = crate::support::probe(&agent.url(), None).await;
    let failed = report
        .cases
        .iter()
        .find(|c| c.status == agent_tck::report::Status::Fail && c.exchange.reproduce.is_some())
        .expect("a failure with a reproduce command");
    let cmd = failed.exchange.reproduce.as_ref().unwrap();
    assert!(cmd.len() > 400, "a long command: {} characters", cmd.len());
    let console = agent_tck::report::console::render(&report, false);
    assert!(console.contains(cmd.as_str()), "{console}");
}

/// JUnit agrees with the exit status: a SHOULD failure that does not fail the run is a passed
/// testcase with a `warning` property; under --strict it is a <failure>.
#[deadline::test]
async fn junit_warnings_are_passed_testcases_unless_strict() {
    // Conforming but for one SHOULD rule: answers labelled text/plain.
    let agent = stub(|req| {
        let mut reply = req.reference();
        if reply.status == 200 {
            reply.content_type = "text/plain";
        }
        reply
    })
    .await;
    let mut report = probe(&agent.url(), None).await;
    assert_eq!(report.exit_code(), 0);
    let warned: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id.clone())
        .collect();
    assert!(
        !warned.is_empty() && warned.iter().all(|id| id.ends_with("content-type")),
        "{warned:?}"
    );
    let xml = junit::to_string(&report);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("failure"))
            .count(),
        0,
        "{xml}"
    );
    let property = doc
        .descendants()
        .find(|n| n.has_tag_name("property") && n.attribute("name") == Some("warning"))
        .expect("a warning property");
    assert!(property
        .attribute("value")
        .unwrap()
        .starts_with("SHOULD failed"));
    report.strict = true;
    let xml = junit::to_string(&report);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failures: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .map(|n| n.attribute("type").unwrap())
        .collect();
    assert_eq!(failures.len(), warned.len(), "{xml}");
    assert!(failures.iter().all(|t| *t == "SHOULD failure"));
}

/// The self-test's pair: `probe execute-task` over stdio against the kit's own mock agent. The
/// mock prints its own report (ending with its counts) on stderr; `stdio.engine-log` quotes
/// those lines as the agent's stderr, so that none of them reads as this run's verdict.
#[test]
fn the_stdio_agents_stderr_is_quoted_not_read_as_the_verdict() {
    let dir = TempDir::new("engine-log");
    let json = dir.path("report.json");
    let agent = format!("'{EXE}' mock agent --protocol execute-task --stdio --name judge");
    let out = tck(&["probe", "execute-task", "--stdio", &agent, "--json", &json]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let log = report
        .cases
        .iter()
        .find(|c| c.id == "stdio.engine-log")
        .expect("stdio.engine-log");
    let mut lines = log.message.lines();
    let first = lines.next().unwrap();
    assert!(
        first.starts_with("stderr: ")
            && first.contains("; process group ended")
            && first.ends_with(" of stderr, quoted:"),
        "{}",
        log.message
    );
    let quoted: Vec<&str> = lines.collect();
    assert!(!quoted.is_empty(), "{}", log.message);
    assert!(
        quoted.iter().all(|l| l.starts_with("  stderr> ")),
        "{}",
        log.message
    );
    // The mock's own counts are among them, quoted.
    assert!(
        quoted.iter().any(|l| l.ends_with(" skipped")),
        "{}",
        log.message
    );
    // On the console, the run's own counts are the last line; the mock's are only quoted.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let counts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" passed, ") && l.ends_with(" skipped"))
        .collect();
    assert_eq!(counts.len(), 2, "{stdout}");
    assert!(counts[0].trim_start().starts_with("stderr> "), "{stdout}");
    assert_eq!(
        Some(counts[1]),
        stdout.trim_end().lines().last(),
        "{stdout}"
    );
}
