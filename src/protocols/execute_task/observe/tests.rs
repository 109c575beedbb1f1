use super::*;
use crate::mock::decision::Decision;
use crate::mock::journal::AuthSeen;
use crate::mock::Body;
use crate::report::Status;
use serde_json::json;

#[test]
fn tool_results_in_every_form_a_harness_may_send() {
    let spec = "Tool 'lookup' returned: {\"ok\": true}. Continue.";
    assert_eq!(tool_result(spec, "lookup", true), Ok(()));
    assert_eq!(
        tool_result("Tool 'lookup' is not available. Continue.", "lookup", true),
        Ok(())
    );
    assert_eq!(
        tool_result(
            "GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.",
            "refund",
            true
        ),
        Ok(())
    );
    for dict in [
        "{'status': 'policy_violation', 'message': 'Amount 100 exceeds 50'}",
        "{'error': 'GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50.'}",
    ] {
        assert_eq!(tool_result(dict, "refund", true), Ok(()));
        assert!(python_repr(dict), "{dict}");
    }
    assert!(!python_repr("Tool 'x' returned: {\"a\": 1}. Continue."));
    assert!(!python_repr("GOVERNANCE ERROR: Amount 100 exceeds 50."));
    let err = tool_result("Please continue with the task.", "lookup", true).unwrap_err();
    assert!(err.contains("does not name it"), "{err}");
}

/// Feeds one request (and the mock's answer to it) to the observer.
fn request(o: &HarnessObserver, seq: u64, turn: u64, task: &str, history: Value, answer: Value) {
    let body = json!({"task_description": task, "turn": turn, "conversation_history": history});
    feed(o, seq, body, answer);
}

/// Feeds one request body (and the mock's answer to it) to the observer.
fn feed(o: &HarnessObserver, seq: u64, body: Value, answer: Value) {
    let answer = answer.to_string();
    o.on_request(&Seen {
        seq,
        agent: "a",
        expects_key: false,
        endpoint: "execute_task",
        auth: AuthSeen::None,
        key_print: 0,
        task: "",
        body: &Body::new(body.to_string().as_bytes()),
        schema_findings: &[],
        decision: &Decision::default(),
        answer: answer.as_bytes(),
        at: std::time::Instant::now(),
    });
}

fn status(o: &HarnessObserver, id: &str) -> (Status, String) {
    let c = o
        .cases(Served::OneAgent)
        .into_iter()
        .find(|c| c.id == id)
        .unwrap();
    (c.status, c.message)
}

#[test]
fn a_loop_past_five_turns_breaks_the_default_limit_and_a_dict_is_noted() {
    let o = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
    let call = json!({"action": "call_tool", "tool_name": "refund", "tool_params": {}});
    let mut history: Vec<Value> = Vec::new();
    let mut task = "Refund ord_1.".to_string();
    for turn in 1..=7 {
        request(&o, turn, turn, &task, json!(history), call.clone());
        history.push(json!({"role": "user", "content": task}));
        history.push(json!({"role": "assistant", "content": call.to_string()}));
        task = if turn == 1 {
            "{'status': 'policy_violation', 'message': 'too much'}".into()
        } else {
            "Tool 'refund' returned: {}. Continue.".into()
        };
    }
    let (s, m) = status(&o, "harness.turn-limit-default");
    assert_eq!(s, Status::Fail, "{m}");
    assert!(
        m.contains("turn 6, past the spec's default limit of 5"),
        "{m}"
    );
    // No limit stated: 7 turns is not yet "no limit at all".
    assert_eq!(status(&o, "harness.turn-limit").0, Status::Pass);
    let (s, m) = status(&o, "harness.reference-forms");
    assert_eq!(s, Status::Pass);
    assert!(
        m.contains("a policy violation as a Python dict's repr"),
        "{m}"
    );
    for id in [
        "harness.turns",
        "harness.history",
        "harness.tool-results",
        "harness.loop-ends",
    ] {
        assert_eq!(status(&o, id).0, Status::Pass, "{id}: {}", status(&o, id).1);
    }
}

/// A harness that stops a never-ending agent at 5 without the user saying its limit: its
/// own max_turns of 5 and the default look the same, so the default is not judged.
#[test]
fn a_stop_at_five_does_not_tell_the_default_from_a_configured_limit() {
    let o = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
    let call = json!({"action": "call_tool", "tool_name": "refund", "tool_params": {}});
    let mut history: Vec<Value> = Vec::new();
    let mut task = "Refund ord_1.".to_string();
    for turn in 1..=5 {
        request(&o, turn, turn, &task, json!(history), call.clone());
        history.push(json!({"role": "user", "content": task}));
        history.push(json!({"role": "assistant", "content": call.to_string()}));
        task = "Tool 'refund' returned: {}. Continue.".into();
    }
    let (s, m) = status(&o, "harness.turn-limit-default");
    assert_eq!(s, Status::Skip, "{m}");
    assert!(
        m.starts_with("1 conversation the agent never ended, the longest stopped at turn 5: within the spec's default of 5, but a limit configured to 5")
            && m.contains("the default was not judged"),
        "{m}"
    );
    assert_eq!(status(&o, "harness.turn-limit").0, Status::Pass);
}

#[test]
fn a_turn_after_a_final_answer_breaks_the_loop_end() {
    let o = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
    let done = json!({"action": "final_answer", "summary": "ok"});
    request(&o, 0, 1, "Say hi.", json!([]), done.clone());
    let history = json!([{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": done.to_string()}]);
    request(&o, 1, 2, "Continue.", history, done);
    let (s, m) = status(&o, "harness.loop-ends");
    assert_eq!(s, Status::Fail, "{m}");
    assert!(
        m.contains("turn 2 came after final_answer at turn 1"),
        "{m}"
    );
}

/// Two conversations without `turn`, side by side, each 5 requests long: counted apart (the
/// shortest chain goes on), so neither runs past the limit of 5.
#[test]
fn turnless_conversations_side_by_side_are_counted_apart() {
    let expect = PlatformExpect {
        timeout: Duration::from_secs(5),
        max_turns: Some(5),
    };
    let o = HarnessObserver::new(expect);
    let call = json!({"action": "call_tool", "tool_name": "lookup_order", "tool_params": {}});
    let result = "Tool 'lookup_order' returned: {}. Continue.";
    let mut seq = 0;
    for n in 0..5 {
        for first in ["Look up A-1.", "Look up B-2."] {
            let task = if n == 0 { first } else { result };
            feed(&o, seq, json!({ "task_description": task }), call.clone());
            seq += 1;
        }
    }
    let (s, m) = status(&o, "harness.turn-limit");
    assert_eq!(s, Status::Pass, "{m}");
    assert!(
        m.contains("2 conversations the agent never ended, the longest stopped at turn 5"),
        "{m}"
    );
    // A sixth request in one of them is past the limit.
    feed(&o, seq, json!({ "task_description": result }), call);
    let (s, m) = status(&o, "harness.turn-limit");
    assert_eq!(s, Status::Fail, "{m}");
    assert!(m.contains("request 6 of a conversation"), "{m}");
}

/// `conversation_history` is optional in the spec's Request Body: a harness that sends `turn`
/// but no history is not failed for a history it did not send (the case says how many went
/// without); one that sends a history that does not grow is.
#[test]
fn a_history_not_sent_is_not_judged_and_one_sent_wrong_is() {
    let call = json!({"action": "call_tool", "tool_name": "lookup", "tool_params": {}});
    let without = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
    for turn in 1..=3 {
        let task = if turn == 1 {
            "Find ord_1.".to_string()
        } else {
            "Tool 'lookup' returned: {}. Continue.".to_string()
        };
        feed(
            &without,
            turn,
            json!({"task_description": task, "turn": turn}),
            call.clone(),
        );
    }
    let (s, m) = status(&without, "harness.history");
    assert_eq!(s, Status::Skip, "{m}");
    assert!(
        m.contains("2 requests continued a conversation without conversation_history (optional in the spec's Request Body), so they were not judged on it"),
        "{m}"
    );
    assert_eq!(status(&without, "harness.turns").0, Status::Pass);
    let empty = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
    request(&empty, 1, 1, "Find ord_1.", json!([]), call.clone());
    request(
        &empty,
        2,
        2,
        "Tool 'lookup' returned: {}. Continue.",
        json!([]),
        call,
    );
    let (s, m) = status(&empty, "harness.history");
    assert_eq!(s, Status::Fail, "{m}");
    assert!(m.contains("the previous exchange is not in it"), "{m}");
}
