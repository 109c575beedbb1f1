//! The round table's agent rules judging answers the kit did not ask for (`probe::traffic`,
//! fed by `agent-tck proxy` and `agent-tck judge`): the suite's traffic cases on the reference
//! agent's answers and on broken ones.

use std::time::Duration;

use serde_json::Value;

use crate::probe::traffic::{
    LiveAnswer, TrafficJudge, TrafficLimits, Unjudged, EXAMPLES, LATENCY_TITLE,
};
use crate::report::{CaseResult, Evidence, Level, Status};
use crate::transport::http::{Error, Response};

use super::reference::ReferenceAgent;
use crate::content::Content;
use crate::mock::Responder;
use crate::probe::template::{self, Fill, RunValues};

const TIMEOUT: Duration = Duration::from_secs(10);

fn roundtable() -> TrafficJudge {
    TrafficJudge::new(
        super::suite().unwrap(),
        TrafficLimits {
            timeout: TIMEOUT,
            ..TrafficLimits::default()
        },
    )
}

/// The request the probe's suite sends as `exchange`: what a platform sends there.
fn request(exchange: &str) -> Value {
    let suite = super::suite().unwrap();
    let mut fill = Fill {
        run: &RunValues::new(7),
        content: Content::new(7, exchange),
        protocol: suite.protocol,
    };
    template::render(
        suite.file.exchanges[exchange].body.as_ref().unwrap(),
        &mut fill,
    )
    .unwrap()
}

/// The request's task, as the proxy reads it (the round table's request id).
fn task_of(request: &Value) -> Option<&str> {
    request["task_id"].as_str()
}

fn response(status: u16, body: impl Into<bytes::Bytes>) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.into(),
        body_exceeded: false,
        elapsed: Duration::from_millis(40),
    }
}

/// The reference agent `name`'s answer to `request` at `endpoint`.
fn reference(name: &str, endpoint: &str, request: &Value) -> Response {
    let reply =
        ReferenceAgent::new(name, 0).respond(endpoint, &serde_json::to_vec(request).unwrap());
    response(reply.status, reply.body)
}

/// `agent` answered `endpoint` with `result`, `at_s` seconds into the run, in 40 ms.
fn tell(
    judge: &TrafficJudge,
    agent: &str,
    endpoint: &str,
    result: Result<Response, Error>,
    at_s: u64,
) {
    let sent = request(endpoint);
    judge.judge(LiveAnswer {
        answer_json: None,
        agent,
        method: "POST",
        path: &format!("/{endpoint}"),
        task: task_of(&sent),
        request: Some(sent.clone()).into(),
        result,
        at: Duration::from_secs(at_s),
        elapsed: Duration::from_millis(40),
    });
}

/// `agent` took part in one deliberation, answering as the reference agent `name` does.
fn deliberate_as(judge: &TrafficJudge, agent: &str, name: &str) {
    for (i, endpoint) in ["analyze", "challenge", "vote"].into_iter().enumerate() {
        let answer = reference(name, endpoint, &request(endpoint));
        tell(judge, agent, endpoint, Ok(answer), i as u64 + 1);
    }
}

fn case<'a>(cases: &'a [CaseResult], id: &str) -> &'a CaseResult {
    cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id} in {:?}", ids(cases)))
}

fn ids(cases: &[CaseResult]) -> Vec<&str> {
    cases.iter().map(|c| c.id.as_str()).collect()
}

fn failed(cases: &[CaseResult]) -> Vec<(&str, &str)> {
    cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| (c.id.as_str(), c.message.as_str()))
        .collect()
}

/// The reference agent's answers hold every live case, each on the one answer it judged;
/// the probe's own cases (a connection, a key, deliberate and crafted requests) are not
/// among them.
#[test]
fn conforming_answers_pass_on_evidence() {
    let judge = roundtable();
    deliberate_as(&judge, "alpha", "alpha");
    let cases = judge.cases();
    assert_eq!(failed(&cases), Vec::<(&str, &str)>::new());
    for id in [
        "analyze.response",
        "analyze.field-length",
        "challenge.response",
        "challenge.known-targets",
        "vote.response",
        "agent.name-consistent",
    ] {
        let c = case(&cases, &format!("alpha/{id}"));
        assert_eq!(c.status, Status::Pass, "{id}: {}", c.message);
        assert_eq!(c.evidence.as_ref().unwrap().judged, 1, "{id}");
        assert_eq!(c.group, "agent alpha");
    }
    // The reference agent approved: no dissent to judge, and the skip says so.
    assert_eq!(
        case(&cases, "alpha/vote.dissent-reason").message,
        "none of alpha's 1 /vote answer was judged: nothing to judge: the agent approved: there is no dissent whose reason to judge"
    );
    let vote = case(&cases, "alpha/vote.response");
    assert_eq!(vote.evidence, Some(Evidence::new(1, "/vote answers")));
    assert_eq!(vote.level, Level::Must);
    assert_eq!(vote.spec, "Error Handling; Timeouts; Response Size Limits");
    let latency = case(&cases, "alpha/agent.latency");
    assert_eq!(latency.status, Status::Pass, "{}", latency.message);
    assert_eq!(latency.evidence, Some(Evidence::new(3, "answers")));
    assert_eq!(latency.title, LATENCY_TITLE);
    for probes_own in [
        "agent.reachable",
        "auth.missing-key",
        "http.not-json",
        "analyze.unicode",
        "vote.trade-offs-minority",
    ] {
        assert!(
            !ids(&cases).contains(&format!("alpha/{probes_own}").as_str()),
            "{probes_own}"
        );
    }
}

/// A 500 is one failure, of the response case; the cases that read the answer are not
/// judged on it and say why, and the other endpoints' cases go on.
#[test]
fn a_500_fails_its_response_case_once() {
    let judge = roundtable();
    let analyze = request("analyze");
    judge.judge(LiveAnswer {
        answer_json: None,
        agent: "alpha",
        method: "POST",
        path: "/analyze",
        task: task_of(&analyze),
        request: Some(analyze.clone()).into(),
        result: Ok(response(500, "upstream exploded")),
        at: Duration::from_millis(3_200),
        elapsed: Duration::from_millis(40),
    });
    tell(
        &judge,
        "alpha",
        "analyze",
        Ok(reference("alpha", "analyze", &analyze)),
        4,
    );
    tell(
        &judge,
        "alpha",
        "vote",
        Ok(reference("alpha", "vote", &request("vote"))),
        5,
    );
    let cases = judge.cases();
    let task = analyze["task_id"].as_str().unwrap();
    let response = case(&cases, "alpha/analyze.response");
    assert_eq!(
        response.message,
        format!("alpha broke it in 1 of 2 /analyze answers; first at +3.2 s (task {task}): answered 500; expected 200; body: upstream exploded")
    );
    assert_eq!(
        response.evidence,
        Some(Evidence::new(2, "/analyze answers"))
    );
    assert_eq!(failed(&cases).len(), 1, "{:?}", failed(&cases));
    let content_type = case(&cases, "alpha/analyze.content-type");
    assert_eq!(content_type.status, Status::Pass);
    assert_eq!(
        content_type.message,
        "1 /analyze answer not judged: it needs analyze.response, which failed with no answer to read (answered 500)"
    );
    assert_eq!(case(&cases, "alpha/vote.response").status, Status::Pass);
}

/// A refusal of the platform's credentials is not judged against the agent (a platform that
/// sends no key is the platform rules' to blame); its time still is.
#[test]
fn a_refusal_of_the_platforms_key_is_not_the_agents_failure() {
    let judge = roundtable();
    let body = r#"{"error":"missing Authorization: Bearer <key>"}"#;
    tell(&judge, "alpha", "analyze", Ok(response(401, body)), 1);
    let cases = judge.cases();
    assert_eq!(failed(&cases), Vec::<(&str, &str)>::new());
    let analyze = case(&cases, "alpha/analyze.response");
    assert_eq!(analyze.status, Status::Skip);
    assert_eq!(
        analyze.message,
        "none of alpha's 1 /analyze answer was judged: the agent refused the platform's credentials (401): the key the platform sent is judged by the platform rules, not by this answer"
    );
    assert_eq!(case(&cases, "alpha/agent.latency").status, Status::Pass);
}

/// A NUL the agent repeats from what the platform sent it is the platform's (which
/// forwarded it unstripped), not the agent's; one of the agent's own is the agent's.
#[test]
fn a_phrase_repeated_from_the_request_is_the_senders() {
    let judge = roundtable();
    let mut sent = request("challenge");
    sent["other_analyses"][0]["observations"][0]["finding"] = "spilled\u{0}NUL".into();
    let with_nul = |request: &Value| {
        let mut answer: Value =
            serde_json::from_slice(&reference("alpha", "challenge", request).body).unwrap();
        answer["challenges"][0]["counter_evidence"] = "it said spilled\u{0}NUL".into();
        response(200, serde_json::to_vec(&answer).unwrap())
    };
    for (agent, request) in [("alpha", sent.clone()), ("beta", request("challenge"))] {
        judge.judge(LiveAnswer {
            answer_json: None,
            agent,
            method: "POST",
            path: "/challenge",
            task: None,
            result: Ok(with_nul(&request)),
            request: Some(request).into(),
            at: Duration::from_secs(1),
            elapsed: Duration::from_millis(40),
        });
    }
    let cases = judge.cases();
    let echoed = case(&cases, "alpha/challenge.sanitization");
    assert_eq!(echoed.status, Status::Pass, "{}", echoed.message);
    let own = case(&cases, "beta/challenge.sanitization");
    assert_eq!(own.status, Status::Fail, "{}", own.message);
    assert!(
        own.message.contains("challenges[0].counter_evidence"),
        "{}",
        own.message
    );
}

/// Only the 500: the dependent cases skip, saying why, and judged nothing.
#[test]
fn cases_held_back_by_a_failed_need_skip_saying_so() {
    let judge = roundtable();
    tell(&judge, "alpha", "vote", Ok(response(500, "no")), 1);
    let cases = judge.cases();
    assert_eq!(case(&cases, "alpha/vote.response").status, Status::Fail);
    let dissent = case(&cases, "alpha/vote.dissent-reason");
    assert_eq!(dissent.status, Status::Skip);
    assert_eq!(
        dissent.message,
        "none of alpha's 1 /vote answer was judged: it needs vote.response, which failed with no answer to read (answered 500)"
    );
}

/// A case held back on every answer says what holds it back now: the latest reason.
#[test]
fn a_skip_says_what_holds_the_case_back_at_the_end() {
    let judge = roundtable();
    tell(&judge, "beta", "challenge", Ok(response(500, "no")), 1);
    for endpoint in ["vote", "analyze"] {
        let answer = reference("beta", endpoint, &request(endpoint));
        tell(&judge, "beta", endpoint, Ok(answer), 2);
    }
    let cases = judge.cases();
    assert_eq!(
        case(&cases, "beta/agent.name-consistent").message,
        "none of beta's 3 answers was judged: it needs challenge.response, which failed with no answer to read (answered 500)"
    );
}

/// A dissent with no reason breaks vote.dissent-reason on a real /vote answer (the probe
/// provokes it with a request of its own; traffic holds the platform's).
#[test]
fn a_dissent_without_a_reason_fails_dissent_reason() {
    let judge = roundtable();
    let vote = request("vote");
    let mut answer: Value = serde_json::from_slice(&reference("beta", "vote", &vote).body).unwrap();
    answer["approve"] = Value::Bool(false);
    answer.as_object_mut().unwrap().remove("dissent_reason");
    let body = serde_json::to_vec(&answer).unwrap();
    tell(&judge, "beta", "vote", Ok(response(200, body)), 2);
    tell(
        &judge,
        "beta",
        "vote",
        Ok(reference("beta", "vote", &vote)),
        3,
    );
    let cases = judge.cases();
    let dissent = case(&cases, "beta/vote.dissent-reason");
    assert_eq!(dissent.status, Status::Fail, "{}", dissent.message);
    assert!(
        dissent
            .message
            .starts_with("beta broke it in 1 of 1 /vote answers; first at +2.0 s (task "),
        "{}",
        dissent.message
    );
    assert!(
        dissent
            .message
            .ends_with("dissent_reason: is missing, but approve is false: a dissent must say why"),
        "{}",
        dissent.message
    );
    // The approval gave it nothing to judge: counted apart, and no pass is claimed on it.
    assert_eq!(dissent.evidence, Some(Evidence::new(1, "/vote answers")));
    assert_eq!(case(&cases, "beta/vote.response").status, Status::Pass);
}

/// An agent with no /vote answer has its /vote cases skipped, saying so; one the run has
/// but never heard from, all of them; answers to a path with no traffic exchange are
/// judged by nothing.
#[test]
fn an_agent_with_no_vote_answers_has_skips_that_say_so() {
    let judge = roundtable();
    tell(
        &judge,
        "beta",
        "analyze",
        Ok(reference("beta", "analyze", &request("analyze"))),
        1,
    );
    judge.expect("gamma");
    judge.judge(LiveAnswer {
        answer_json: None,
        agent: "delta",
        method: "GET",
        path: "/health",
        task: None,
        request: None.into(),
        result: Ok(response(200, "{}")),
        at: Duration::ZERO,
        elapsed: Duration::from_millis(5),
    });
    let cases = judge.cases();
    let vote = case(&cases, "beta/vote.response");
    assert_eq!(vote.status, Status::Skip);
    assert_eq!(vote.message, "no /vote answer from beta came through");
    assert_eq!(case(&cases, "beta/analyze.response").status, Status::Pass);
    let names = case(&cases, "beta/agent.name-consistent");
    assert_eq!(names.status, Status::Skip);
    assert_eq!(
        names.message,
        "none of beta's 1 answer was judged: no /challenge answer came through yet"
    );
    assert_eq!(
        case(&cases, "gamma/agent.name-consistent").message,
        "no /analyze, /challenge or /vote answer from gamma came through"
    );
    assert_eq!(
        case(&cases, "gamma/agent.latency").message,
        "no answer from gamma came through"
    );
    assert!(cases
        .iter()
        .filter(|c| c.id.starts_with("gamma/"))
        .all(|c| c.status == Status::Skip));
    assert_eq!(
        judge.unjudged_agents(),
        vec![Unjudged {
            agent: "delta".into(),
            answers: 1
        }]
    );
    assert_eq!(case(&cases, "delta/analyze.response").status, Status::Skip);
}

/// An answer past --timeout, or none within it, breaks the latency case; one within it
/// holds it. The answer itself is still judged by its own cases.
#[test]
fn a_slow_answer_fails_latency() {
    let judge = roundtable();
    let vote = request("vote");
    for (agent, elapsed) in [("alpha", 9_000), ("beta", 12_500)] {
        judge.judge(LiveAnswer {
            answer_json: None,
            agent,
            method: "POST",
            path: "/vote",
            task: task_of(&vote),
            request: Some(vote.clone()).into(),
            result: Ok(reference(agent, "vote", &vote)),
            at: Duration::from_secs(1),
            elapsed: Duration::from_millis(elapsed),
        });
    }
    judge.judge(LiveAnswer {
        answer_json: None,
        agent: "gamma",
        method: "POST",
        path: "/vote",
        task: task_of(&vote),
        request: Some(vote.clone()).into(),
        result: Err(Error::Timeout {
            deadline: TIMEOUT,
            phase: "no response head received".into(),
        }),
        at: Duration::from_secs(1),
        elapsed: TIMEOUT,
    });
    let cases = judge.cases();
    assert_eq!(case(&cases, "alpha/agent.latency").status, Status::Pass);
    let slow = case(&cases, "beta/agent.latency");
    assert_eq!(slow.status, Status::Fail);
    assert!(
        slow.message
            .starts_with("beta broke it in 1 of 1 answers; first at +1.0 s (/vote, task ")
            && slow
                .message
                .ends_with("answered in 12s 500ms, over --timeout (10s)"),
        "{}",
        slow.message
    );
    assert_eq!(case(&cases, "beta/vote.response").status, Status::Pass);
    let none = case(&cases, "gamma/agent.latency");
    assert_eq!(none.status, Status::Fail);
    assert!(
        none.message.contains("no complete answer within 10s"),
        "{}",
        none.message
    );
}

/// agent_name is compared across an agent's latest /analyze, /challenge and /vote answers.
#[test]
fn names_that_differ_across_exchanges_fail_name_consistency() {
    let judge = roundtable();
    let analyze = request("analyze");
    tell(
        &judge,
        "alpha",
        "analyze",
        Ok(reference("alpha", "analyze", &analyze)),
        1,
    );
    tell(
        &judge,
        "alpha",
        "challenge",
        Ok(reference("alpha", "challenge", &request("challenge"))),
        2,
    );
    tell(
        &judge,
        "alpha",
        "vote",
        Ok(reference("alpha-v2", "vote", &request("vote"))),
        3,
    );
    let cases = judge.cases();
    let names = case(&cases, "alpha/agent.name-consistent");
    assert_eq!(names.status, Status::Fail, "{}", names.message);
    assert!(
        names
            .message
            .starts_with("alpha broke it in 1 of 1 answers; first at +3.0 s (/vote, task "),
        "{}",
        names.message
    );
    assert!(names.message.contains("alpha-v2"), "{}", names.message);
    // Before the vote, the first two answers left it nothing to compare.
    assert_eq!(names.evidence, Some(Evidence::new(1, "answers")));
}

/// Each agent is judged and reported on its own, in the order of their names.
#[test]
fn two_agents_are_reported_separately() {
    let judge = roundtable();
    tell(&judge, "beta", "vote", Ok(response(500, "down")), 1);
    deliberate_as(&judge, "alpha", "alpha");
    let cases = judge.cases();
    assert_eq!(case(&cases, "alpha/vote.response").status, Status::Pass);
    let beta = case(&cases, "beta/vote.response");
    assert_eq!(beta.status, Status::Fail);
    assert_eq!(beta.group, "agent beta");
    assert!(
        beta.message.starts_with("beta broke it"),
        "{}",
        beta.message
    );
    let first_beta = cases
        .iter()
        .position(|c| c.id.starts_with("beta/"))
        .unwrap();
    assert!(cases[..first_beta]
        .iter()
        .all(|c| c.id.starts_with("alpha/")));
    assert!(cases[first_beta..]
        .iter()
        .all(|c| c.id.starts_with("beta/")));
    // Suite order within an agent, the judge's own latency case first.
    let alpha: Vec<&str> = ids(&cases[..first_beta]);
    assert_eq!(alpha[0], "alpha/agent.latency");
    let at = |id: &str| alpha.iter().position(|c| *c == id).unwrap();
    assert!(at("alpha/agent.name-consistent") < at("alpha/analyze.response"));
    assert!(at("alpha/analyze.response") < at("alpha/vote.response"));
}

/// Answers judged from several threads at once are each counted once.
#[test]
fn answers_from_several_threads_are_each_counted() {
    fn shared<T: Send + Sync>(_: &T) {}
    let judge = roundtable();
    shared(&judge);
    let vote = request("vote");
    let answer = reference("alpha", "vote", &vote);
    std::thread::scope(|s| {
        for agent in ["alpha", "beta", "alpha", "beta"] {
            let (judge, answer) = (&judge, answer.clone());
            s.spawn(move || {
                for at in 0..25 {
                    tell(judge, agent, "vote", Ok(answer.clone()), at);
                }
            });
        }
    });
    let cases = judge.cases();
    for agent in ["alpha", "beta"] {
        let vote = case(&cases, &format!("{agent}/vote.response"));
        assert_eq!(vote.evidence, Some(Evidence::new(50, "/vote answers")));
    }
}

/// Memory is bounded: past EXAMPLES failures only the counts grow.
#[test]
fn failures_past_the_examples_are_counted_not_kept() {
    let judge = roundtable();
    for at in 1..=5 {
        tell(&judge, "alpha", "vote", Ok(response(503, "busy")), at);
    }
    let cases = judge.cases();
    let vote = case(&cases, "alpha/vote.response");
    assert!(
        vote.message
            .starts_with("alpha broke it in 5 of 5 /vote answers; first at +1.0 s"),
        "{}",
        vote.message
    );
    assert_eq!(
        vote.message.matches("; then at ").count(),
        EXAMPLES - 1,
        "{}",
        vote.message
    );
    assert!(!vote.message.contains("+4.0 s"), "{}", vote.message);
    assert_eq!(
        vote.message.matches("answered 503").count(),
        1,
        "{}",
        vote.message
    );
    assert!(
        vote.message
            .ends_with("; then at +3.0 s (task 3688ff6f5f4d): the same"),
        "{}",
        vote.message
    );
}

/// The suite loader holds the markings to what the judge can use.
#[test]
fn the_loader_refuses_traffic_markings_it_cannot_use() {
    let (file, text) = super::SUITE;
    let load = |text: &str| {
        crate::probe::Suite::parse(file, text, &super::rules::Suite)
            .map(drop)
            .unwrap_err()
            .to_string()
    };
    let twice = text.replacen(
        "  analyze-minimal:\n    path: /analyze\n",
        "  analyze-minimal:\n    path: /analyze\n    traffic: true\n",
        1,
    );
    assert_ne!(twice, text);
    let e = load(&twice);
    assert!(
        e.contains(
            "exchanges analyze and analyze-minimal are both traffic: true for POST /analyze"
        ),
        "{e}"
    );
    let own = text.replacen("    # In traffic: every real /vote answer.\n    traffic: true\n", "", 1).replacen(
        "    exchange: vote\n    needs_answer: [vote.response]\n    checks: [{content_type",
        "    exchange: vote\n    traffic: true\n    needs_answer: [vote.response]\n    checks: [{content_type",
        1,
    );
    assert_ne!(own, text);
    let e = load(&own);
    assert!(
        e.contains(
            "case vote.content-type: traffic: true: its exchange vote is the traffic one already"
        ),
        "{e}"
    );
    let none = text.replacen(
        "    exchange: health\n",
        "    exchange: health\n    traffic: true\n",
        1,
    );
    assert_ne!(none, text);
    let e = load(&none);
    assert!(
        e.contains("case http.health: traffic: true: no exchange is traffic: true for GET /health"),
        "{e}"
    );
}

/// An answer passed on unjudged (`--judging spare`, the judge behind) is counted in each case
/// that would have judged it, and said why; its latency is still judged. With none judged,
/// the case is skipped, saying so.
#[test]
fn answers_passed_over_are_counted_and_said_why() {
    let judge = roundtable();
    let analyze = request("analyze");
    let live = |elapsed: Duration| LiveAnswer {
        answer_json: None,
        agent: "alpha",
        method: "POST",
        path: "/analyze",
        task: task_of(&analyze),
        request: Some(analyze.clone()).into(),
        result: Ok(reference("alpha", "analyze", &analyze)),
        at: Duration::from_secs(2),
        elapsed,
    };
    let why = "passed on unjudged: the judge fell behind";
    judge.pass_over(live(Duration::from_millis(40)), why);
    judge.pass_over(live(Duration::from_secs(12)), why);
    tell(
        &judge,
        "alpha",
        "analyze",
        Ok(reference("alpha", "analyze", &analyze)),
        4,
    );
    judge.pass_over(
        LiveAnswer {
            answer_json: None,
            path: "/vote",
            ..live(Duration::from_millis(40))
        },
        why,
    );
    let cases = judge.cases();
    let response = case(&cases, "alpha/analyze.response");
    assert_eq!(response.status, Status::Pass);
    assert_eq!(
        response.evidence,
        Some(Evidence::new(1, "/analyze answers"))
    );
    assert_eq!(
        response.message,
        "2 /analyze answers not judged: passed on unjudged: the judge fell behind"
    );
    let vote = case(&cases, "alpha/vote.response");
    assert_eq!(vote.status, Status::Skip);
    assert!(
        vote.message.contains("passed on unjudged"),
        "{}",
        vote.message
    );
    // The latency of an answer passed over is judged: 12 s is past the 10 s timeout.
    let latency = cases
        .iter()
        .find(|c| c.id == "alpha/agent.latency")
        .expect("the latency case");
    assert_eq!(latency.status, Status::Fail, "{}", latency.message);
}

/// Judged on spare CPU, the answers still queued when the run ends are judged before the
/// verdicts are drawn.
#[deadline::test]
async fn answers_queued_for_the_spare_judge_are_judged_before_the_verdicts() {
    use crate::proxy::judging::{Answer, Judge, Judging};
    let judge = Judge::new(std::sync::Arc::new(roundtable()), Judging::Spare, 2);
    let analyze = request("analyze");
    for (i, agent) in ["alpha", "beta"].iter().cycle().take(40).enumerate() {
        judge.judge(
            i % 2,
            Answer {
                agent: agent.to_string(),
                method: "POST".into(),
                path: "/analyze".into(),
                task: task_of(&analyze).map(str::to_string),
                request: serde_json::to_vec(&analyze).unwrap().into(),
                result: Ok(reference(agent, "analyze", &analyze)),
                answer_json: None,
                at: Duration::from_secs(1),
                elapsed: Duration::from_millis(40),
            },
        );
    }
    judge.finish().await;
    let cases = judge.traffic().cases();
    for agent in ["alpha", "beta"] {
        let response = case(&cases, &format!("{agent}/analyze.response"));
        assert_eq!(response.status, Status::Pass, "{}", response.message);
        assert_eq!(
            response.evidence,
            Some(Evidence::new(20, "/analyze answers"))
        );
    }
    // After the end, an answer is passed over, not lost.
    judge.judge(
        0,
        Answer {
            agent: "alpha".into(),
            method: "POST".into(),
            path: "/analyze".into(),
            task: None,
            request: serde_json::to_vec(&analyze).unwrap().into(),
            result: Ok(reference("alpha", "analyze", &analyze)),
            answer_json: None,
            at: Duration::from_secs(2),
            elapsed: Duration::from_millis(40),
        },
    );
    let after = judge.traffic().cases();
    let response = case(&after, "alpha/analyze.response");
    assert_eq!(
        response.evidence,
        Some(Evidence::new(20, "/analyze answers"))
    );
    assert!(
        response.message.contains("1 /analyze answer not judged"),
        "{}",
        response.message
    );
}
