//! The `lifecycle.*` cases: a REPORT completing an approved request, and an escalation polled
//! until it is decided.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::protocols::librarian::model::{self, State};

use super::client::{gate_verdict, Client, Gate, Got, NoAnswer};
use super::verdict::Verdict;

/// The governance state an answer shows, if any.
pub(super) fn state_of(got: &Got) -> Option<State> {
    got.json
        .as_ref()
        .and_then(|v| v.get("status"))
        .and_then(Value::as_str)
        .and_then(State::parse)
}

pub(super) async fn lifecycle(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    let (i, id) = match c.approved_id().await {
        Ok(found) => found,
        Err(e) => return Ok(Verdict::unjudged(e)),
    };
    let first = c.status(i, &id).await?;
    c.note(Gate::Status, &first);
    if let Err(why) = gate_verdict(Gate::Status, &first) {
        return Ok(Verdict::skip_on(
            format!(
                "not judged: {why}; the lifecycle is followed at /agent/status, and a Librarian \
                 whose status endpoint answers exercises this case"
            ),
            &first,
        ));
    }
    let mut states: Vec<State> = state_of(&first).into_iter().collect();
    let mut report = c.build(i, "REPORT");
    report["request_id"] = json!(id);
    let got = c.request("the REPORT", i, &report).await?;
    if !(200..300).contains(&got.status) {
        return Ok(Verdict::fail(
            format!("the REPORT of {id} was answered {}", got.status),
            &got,
        ));
    }
    let last = c.status(i, &id).await?;
    let Some(state) = state_of(&last) else {
        return Ok(Verdict::fail(
            format!(
                "GET /agent/status/{id} after the REPORT: no governance state in {}",
                last.status
            ),
            &last,
        ));
    };
    states.push(state);
    if let Some(w) = states.windows(2).find(|w| !w[0].may_follow(w[1])) {
        return Ok(Verdict::fail(
            format!(
                "{id}: {} then {}, a transition the governance states do not allow",
                w[0], w[1]
            ),
            &last,
        ));
    }
    Ok(match state {
        State::Completed => Verdict::held(
            states.len(),
            "governance states of an approved, then reported request",
            format!("{id}: {}", model::path(&states)),
        ),
        other => Verdict::fail(
            format!(
                "{id} is still {other} at /agent/status after its REPORT was answered {}; \
                 expected COMPLETED (states seen: {})",
                got.decision(),
                model::path(&states)
            ),
            &last,
        ),
    })
}

/// How long an escalation is polled for its decision.
pub(super) const ESCALATION_WAIT: Duration = Duration::from_secs(20);

pub(super) async fn escalation(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    // An escalation is followed at /agent/status: without it there is nothing to follow.
    if let Err(why) = c.opened(Gate::Status).await {
        return Ok(Verdict::unjudged(why));
    }
    let asking = |mut body: Value| {
        body["action"] = json!("delete");
        body["target_type"] = json!("architecture");
        body["target_path"] = json!("docs/architecture/authentication.md");
        body["content"] = json!(
            "Delete the production authentication architecture. This is irreversible and needs \
             a human reviewer's decision (HUMAN REVIEW)."
        );
        body
    };
    let i = match c.able_with("a delete of an architecture document", None, |a| {
        asking(model::request(a, "APPROVAL", 0))
    }) {
        Ok(i) => i,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    let body = asking(c.build(i, "APPROVAL"));
    let got = c
        .request("an APPROVAL asking for a human", i, &body)
        .await?;
    let (id, decision) = (got.request_id().unwrap_or_default(), got.decision());
    if !decision.ends_with("escalated") {
        return Ok(Verdict::skip_on(
            format!(
                "not judged: the Librarian did not escalate a delete of the authentication \
                 architecture asking for HUMAN REVIEW (answered {decision}), so there was no \
                 escalation to follow; a Librarian that escalates it exercises this case"
            ),
            &got,
        ));
    }
    let started = Instant::now();
    let mut states = vec![State::Escalated];
    let mut last = None;
    while started.elapsed() < ESCALATION_WAIT {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let polled = c.status(i, &id).await?;
        let Some(state) = state_of(&polled) else {
            return Ok(Verdict::fail(
                format!(
                    "GET /agent/status/{id}: no governance state in {}",
                    polled.status
                ),
                &polled,
            ));
        };
        let before = states.last().copied().unwrap_or(State::Escalated);
        if !before.may_follow(state) {
            return Ok(Verdict::fail(
                format!(
                    "{id}: {before} then {state}, a transition the governance states do not allow"
                ),
                &polled,
            ));
        }
        states.push(state);
        last = Some(polled);
        if state != State::Escalated {
            break;
        }
    }
    let after = started.elapsed().as_secs();
    Ok(match (states.last(), last) {
        (Some(State::Escalated), last) => Verdict::Nothing {
            reason: format!("not judged: {id} still ESCALATED after {after} s of polling once a second (the human has not decided, so there was no decision to judge); a Librarian whose reviewer decides within {} s exercises this case", ESCALATION_WAIT.as_secs()),
            exchange: last.map(|g| g.exchange),
        },
        _ => Verdict::held(
            states.len(),
            "governance states of an escalated request",
            format!("{id}: {}, decided after about {after} s", model::path(&states)),
        ),
    })
}
