use super::*;
use crate::mock::Body;
use serde_json::json;

fn challenge(observer: &Observer, receiver: &str, others: &[&str]) {
    let body = json!({
        "task_id": "t",
        "content": "c",
        "other_analyses": others.iter().map(|n| json!({"agent_name": n, "domain": "d", "observations": []})).collect::<Vec<_>>(),
    });
    observer.on_request(&Seen {
        seq: 0,
        answer: b"{}",
        agent: receiver,
        expects_key: false,
        endpoint: "challenge",
        auth: AuthSeen::None,
        key_print: 0,
        task: "t",
        body: &Body::new(body.to_string().as_bytes()),
        schema_findings: &[],
        decision: &Decision::default(),
        at: Instant::now(),
    });
}

/// The case counts /challenge requests, as it says: one verdict per request, however many
/// entries its other_analyses has.
#[test]
fn challenge_not_own_counts_requests() {
    let observer = Observer::new(Duration::from_secs(120));
    challenge(&observer, "a", &["b", "a", "c"]);
    challenge(&observer, "b", &["a", "c"]);
    let cases = observer.cases(Served::Fleet);
    let case = cases
        .iter()
        .find(|c| c.id == "platform.challenge-not-own")
        .unwrap();
    assert_eq!(case.status, Status::Fail);
    assert!(
        case.message
            .starts_with("1 of 2 /challenge requests break the rule, e.g.\n  a got its own analysis in other_analyses[1] (task t)"),
        "{}",
        case.message
    );
}

#[test]
fn a_nul_escape_is_told_from_an_escaped_backslash() {
    assert!(has_nul_escape(br#"{"a":"x\u0000y"}"#));
    assert!(has_nul_escape(br#"{"a":"\\\u0000"}"#));
    assert!(!has_nul_escape(br#"{"a":"\\u0000"}"#));
    assert!(!has_nul_escape(br#"{"a":"u0000"}"#));
}

#[test]
fn task_ids_are_kept_short_and_whole_characters() {
    assert_eq!(ShortId::new("a1b2c3").to_string(), "a1b2c3");
    let uuid = "3f2a9c1e-7b4d-4e8f-9a0b-1c2d3e4f5a6b";
    assert_eq!(ShortId::new(uuid).to_string(), "3f2a9c1e-7b4d-4e8f-9a0…");
    assert_eq!(
        ShortId::new(&"é".repeat(20)).to_string(),
        format!("{}…", "é".repeat(11))
    );
}

#[test]
fn what_an_answer_planned_is_judged_against_the_timeout() {
    let timeout = Duration::from_secs(1);
    let plan = |applied: &[&str], ttfb_ms, unusable: Option<&str>| {
        let decision = Decision {
            applied: applied.iter().map(|s| s.to_string()).collect(),
            ttfb_ms,
            unusable: unusable.map(str::to_string),
            ..Decision::default()
        };
        Planned::of(&decision, timeout)
    };
    assert_eq!(plan(&[], 0, None), Planned::Clean);
    assert_eq!(plan(&["slow:10ms"], 10, None), Planned::Usable);
    assert_eq!(plan(&["slow:2s"], 2000, None), Planned::TimedOut);
    assert_eq!(plan(&["hang"], 0, Some("never answers")), Planned::TimedOut);
    assert_eq!(
        plan(&["http-error"], 0, Some("answered 500")),
        Planned::Failed
    );
}

/// A phase request from the platform to `agent` in task `t`, answered with `answer` planned
/// by the behaviours `applied`.
fn request(
    observer: &Observer,
    agent: &str,
    endpoint: &str,
    body: Value,
    answer: &[u8],
    applied: &[&str],
) {
    let decision = Decision {
        applied: applied.iter().map(|s| s.to_string()).collect(),
        ..Decision::default()
    };
    observer.on_request(&Seen {
        seq: 0,
        answer,
        agent,
        expects_key: false,
        endpoint,
        auth: AuthSeen::None,
        key_print: 0,
        task: "t",
        body: &Body::new(body.to_string().as_bytes()),
        schema_findings: &[],
        decision: &decision,
        at: Instant::now(),
    });
}

fn case(observer: &Observer, id: &str) -> CaseResult {
    observer
        .cases(Served::Fleet)
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

/// A platform that cuts an over-long string at 50,000 characters and appends its marker
/// (" [truncated]", 12 characters) fails, told as that rather than as "50012 characters";
/// one that cuts it at 50,000 passes; one that forwards it whole is told its length.
#[test]
fn a_truncation_marker_past_the_limit_is_named_as_one() {
    let long = format!("[fact] {}", "x".repeat(MAX_FIELD_CHARS));
    let analysis =
        json!({"agent_name": "big", "domain": "d", "observations": [{"evidence": long}]});
    let forwarded = |evidence: &str| {
        let observer = Observer::new(Duration::from_secs(120));
        request(
            &observer,
            "big",
            "analyze",
            json!({"task_id": "t"}),
            analysis.to_string().as_bytes(),
            &["oversized-field"],
        );
        let mut item = analysis.clone();
        item["observations"][0]["evidence"] = json!(evidence);
        request(
            &observer,
            "other",
            "challenge",
            json!({"task_id": "t", "other_analyses": [item]}),
            b"{}",
            &[],
        );
        case(&observer, "platform.field-truncated")
    };
    let cut: String = long.chars().take(MAX_FIELD_CHARS).collect();
    let marked = forwarded(&format!("{cut} [truncated]"));
    assert_eq!(marked.status, Status::Fail, "{}", marked.message);
    assert!(
        marked.message.contains(r#"other /challenge: other_analyses[0].observations[0].evidence from big (task t): 50,000 characters (the agent's string, cut there) plus a 12-character marker " [truncated]": 50012 in all, over the limit (the marker counts)"#),
        "{}",
        marked.message
    );
    let exact = forwarded(&cut);
    assert_eq!(exact.status, Status::Pass, "{}", exact.message);
    let whole = forwarded(&long);
    assert_eq!(whole.status, Status::Fail, "{}", whole.message);
    assert!(
        whole.message.contains("from big (task t): 50007 characters: the agent's string forwarded whole, not truncated"),
        "{}",
        whole.message
    );
}

/// /analyze then /vote, no /challenge (a platform that goes straight to the vote): one
/// transition measured, not "no task reached two phases".
#[test]
fn phase_latency_counts_any_two_phases_a_task_reached() {
    let observer = Observer::new(Duration::from_secs(120));
    request(
        &observer,
        "a",
        "analyze",
        json!({"task_id": "t"}),
        b"{}",
        &[],
    );
    let skipped = case(&observer, "platform.phase-latency");
    assert_eq!(skipped.status, Status::Skip, "{}", skipped.message);
    assert!(
        skipped
            .message
            .starts_with("no task reached two of the phases (/analyze, /challenge, /vote)"),
        "{}",
        skipped.message
    );
    request(&observer, "a", "vote", json!({"task_id": "t"}), b"{}", &[]);
    let latency = case(&observer, "platform.phase-latency");
    assert_eq!(latency.status, Status::Pass, "{}", latency.message);
    assert!(
        latency.message.starts_with("analyze → vote: median ")
            && latency.message.ends_with(" over 1 task")
            && !latency.message.contains("challenge"),
        "{}",
        latency.message
    );
    // With /challenge between them, /analyze → /vote is not measured over it.
    request(
        &observer,
        "a",
        "challenge",
        json!({"task_id": "t"}),
        b"{}",
        &[],
    );
    let latency = case(&observer, "platform.phase-latency");
    assert!(
        !latency.message.contains("analyze → vote")
            && latency.message.contains("analyze → challenge")
            && latency.message.contains("challenge → vote"),
        "{}",
        latency.message
    );
}

/// A request to `agent` in task t carrying `auth` (its key fingerprinted `print`), answered
/// `status` at once (401: the fleet's refusal for the credentials; 500: an error the agent's
/// behaviour planned), the answer delivered whole. `body`: the request's.
fn answered(
    observer: &Observer,
    seq: u64,
    (agent, endpoint, body): (&str, &str, Value),
    (auth, print): (AuthSeen, u64),
    status: u16,
) {
    let decision = Decision {
        status,
        unusable: match status {
            200 => None,
            401 => Some("refused: 401 wrong API key".into()),
            _ => Some(format!("answered {status}")),
        },
        applied: if status == 500 {
            vec!["http-error".into()]
        } else {
            Vec::new()
        },
        ..Decision::default()
    };
    let at = Instant::now();
    observer.on_request(&Seen {
        seq,
        answer: b"{}",
        agent,
        expects_key: auth != AuthSeen::None,
        endpoint,
        auth,
        key_print: print,
        task: "t",
        body: &Body::new(body.to_string().as_bytes()),
        schema_findings: &[],
        decision: &decision,
        at,
    });
    observer.on_answer(&Answered {
        seq,
        agent,
        endpoint,
        task: "t",
        received: at,
        delivered: &Delivered {
            outcome: Outcome::Complete,
            bytes: 2,
            ttfb: Some(Duration::ZERO),
            total: Duration::ZERO,
        },
        ended: None,
        at,
    });
}

/// Two impostors at alpha's URL, each with its own wrong key, called beside alpha (with its
/// key) in either order: their refusals are not alpha failing, so gamma's getting alpha's
/// analysis breaks no rule, and alpha was called once; the impostors count as agents that
/// failed once each and were not called again.
#[test]
fn a_refusal_for_credentials_is_another_callers_whichever_call_came_first() {
    let analyze = |agent| (agent, "analyze", json!({"task_id": "t"}));
    let impostor = |n| (AuthSeen::Wrong, n);
    for alpha_first in [false, true] {
        let observer = Observer::new(Duration::from_secs(120));
        answered(&observer, 1, analyze("broken"), (AuthSeen::None, 0), 500);
        answered(&observer, 2, analyze("gamma"), (AuthSeen::None, 0), 200);
        let order = if alpha_first { [4, 3, 5] } else { [3, 4, 5] };
        answered(&observer, order[0], analyze("alpha"), impostor(1), 401);
        answered(
            &observer,
            order[1],
            analyze("alpha"),
            (AuthSeen::Ok, 7),
            200,
        );
        answered(&observer, order[2], analyze("alpha"), impostor(2), 401);
        let others = json!({"task_id": "t", "other_analyses": [{"agent_name": "alpha", "domain": "d", "observations": []}]});
        answered(
            &observer,
            6,
            ("gamma", "challenge", others),
            (AuthSeen::None, 0),
            200,
        );
        let no_failed = case(&observer, "platform.challenge-no-failed");
        assert_eq!(no_failed.status, Status::Pass, "{}", no_failed.message);
        assert!(
            no_failed.message.ends_with("2 requests to alpha with a key that is not alpha's were refused 401: each counted as a call to another agent registered at alpha's URL, not as alpha failing; the fleet cannot tell this from the platform sending alpha itself a wrong key, which platform.bearer judges"),
            "{}",
            no_failed.message
        );
        let recalled = case(&observer, "platform.failed-not-recalled");
        assert_eq!(recalled.status, Status::Pass, "{}", recalled.message);
        assert_eq!(
            recalled.evidence.map(|e| e.judged),
            Some(3),
            "broken and the two impostors"
        );
    }
}

/// A platform that calls one impostor (one wrong key) twice in a phase calls a failed agent
/// again: it breaks the rule, the impostor named as what it is.
#[test]
fn a_caller_refused_twice_in_a_phase_was_called_again() {
    let observer = Observer::new(Duration::from_secs(120));
    let analyze = || ("alpha", "analyze", json!({"task_id": "t"}));
    answered(
        &observer,
        1,
        ("gamma", "analyze", json!({"task_id": "t"})),
        (AuthSeen::None, 0),
        200,
    );
    answered(&observer, 2, analyze(), (AuthSeen::Wrong, 1), 401);
    answered(&observer, 3, analyze(), (AuthSeen::Wrong, 1), 401);
    let recalled = case(&observer, "platform.failed-not-recalled");
    assert_eq!(recalled.status, Status::Fail, "{}", recalled.message);
    assert!(
        recalled.message.contains("\n  another agent registered at alpha's URL (a key that is not alpha's) /analyze (task t): called 2 times"),
        "{}",
        recalled.message
    );
}

/// The timeout and its grace are told apart, never as a sum: "(2m + 7s)" read as 127 s.
#[test]
fn the_timeout_and_its_grace_read_as_two_things() {
    let observer = Observer::new(Duration::from_secs(120));
    let gives_up = case(&observer, "platform.gives-up");
    assert_eq!(
        gives_up.title,
        format!(
            "the platform gives up on an agent that does not answer within its timeout 2m (and {} of grace), closing the request's connection",
            humantime::format_duration(grace(Duration::from_secs(120)))
        )
    );
    assert!(!gives_up.title.contains(" + "), "{}", gives_up.title);
    assert!(observer
        .expectation()
        .starts_with("expected to give up within its timeout 2m (and "));
}

/// A fleet without keys gives platform.bearer nothing to judge: the skip names the fleet
/// file's field as the file takes it (`api_key:`; `key:` is refused as unknown).
#[test]
fn the_bearer_skip_names_the_field_the_fleet_file_takes() {
    let observer = Observer::new(Duration::from_secs(120));
    request(
        &observer,
        "a",
        "analyze",
        json!({"task_id": "t"}),
        b"{}",
        &[],
    );
    let bearer = case(&observer, "platform.bearer");
    assert_eq!(bearer.status, Status::Skip, "{}", bearer.message);
    assert!(
        bearer.message.contains("give an agent a key (`api_key: KEY` on an agent of the fleet file; `mock agent --api-key KEY`)"),
        "{}",
        bearer.message
    );
    // Followed, the hint loads; the old one (`key:`) did not.
    let with = |field: &str| {
        crate::mock::fleet::FleetFile::parse(
            "f.yaml",
            &format!("agents:\n  - {{ name: a, {field}: k }}\n"),
        )
    };
    assert!(with("api_key").is_ok());
    assert!(with("key").is_err());
}

/// With no request, every case is a skip that says why: none is left to the report model's
/// fallbacks.
#[test]
fn with_nothing_seen_every_case_says_why_it_was_not_judged() {
    let observer = Observer::new(Duration::from_secs(120));
    for mut case in observer.cases(Served::Fleet) {
        assert_eq!(case.status, Status::Skip, "{}", case.id);
        case.settle();
        assert!(
            !case.message.starts_with(crate::report::NO_REASON)
                && case.message.contains("no request reached the fleet"),
            "{}: {}",
            case.id,
            case.message
        );
    }
}
