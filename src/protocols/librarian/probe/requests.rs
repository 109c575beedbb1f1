//! The `request.*` and `status.*` cases: valid requests of each type answered with a
//! LibrarianResponse, and a request's status looked up (its own, an unknown one, another agent's).

use std::time::Instant;

use serde_json::json;

use crate::protocols::librarian::model::{self, LIMITS};
use crate::schema::{findings_message, schemas};

use super::client::{gate_verdict, request_gate, Client, Gate, NoAnswer};
use super::verdict::{a_librarian_response, unauthorized_unknown, Verdict};

pub(super) async fn valid_request(c: &mut Client<'_>, t: &str) -> Result<Verdict, NoAnswer> {
    let (i, body) = if t == "REPORT" {
        // The agent whose APPROVAL was approved reports it.
        let (i, id) = match c.approved_id().await {
            Ok(found) => found,
            Err(e) => return Ok(Verdict::unjudged(e)),
        };
        let mut body = c.build(i, t);
        body["request_id"] = json!(id);
        (i, body)
    } else {
        match c.able(t) {
            Ok(i) => (i, c.build(i, t)),
            Err(why) => return Ok(Verdict::unjudged(why)),
        }
    };
    let started = Instant::now();
    let got = c.request(&format!("a valid {t}"), i, &body).await?;
    let elapsed = started.elapsed();
    if t != "REPORT" {
        c.note(request_gate(t), &got);
    }
    if let Some(skip) = unauthorized_unknown(c, &format!("a valid {t}"), &got) {
        return Ok(skip);
    }
    if let Err(failed) = a_librarian_response(&body, &got) {
        return Ok(failed);
    }
    if elapsed > LIMITS.response {
        return Ok(Verdict::fail(
            format!(
                "answered in {} ms, past the response timeout (10 s)",
                elapsed.as_millis()
            ),
            &got,
        ));
    }
    Ok(Verdict::held(
        1,
        format!("valid {t} requests answered"),
        format!("{} in {} ms", got.decision(), elapsed.as_millis()),
    ))
}

pub(super) async fn status_lookup(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    let (i, id) = match c.approved_id().await {
        Ok(found) => found,
        Err(e) => return Ok(Verdict::unjudged(e)),
    };
    let got = c.status(i, &id).await?;
    c.note(Gate::Status, &got);
    if got.status != 200 {
        return Ok(Verdict::fail(
            format!(
                "GET /agent/status/{id} answered {}; expected 200",
                got.status
            ),
            &got,
        ));
    }
    let Some(v) = &got.json else {
        return Ok(Verdict::fail("the answer is not JSON", &got));
    };
    let findings = schemas().validate(model::STATUS_SCHEMA, v);
    if !findings.is_empty() {
        return Ok(Verdict::fail(
            format!(
                "{} (RequestStatus's shape is assumed: request_id and status)",
                findings_message(&findings)
            ),
            &got,
        ));
    }
    if v["request_id"].as_str() != Some(id.as_str()) {
        return Ok(Verdict::fail(
            format!("request_id: {} is not {id}", v["request_id"]),
            &got,
        ));
    }
    Ok(Verdict::held(
        1,
        "status lookups of an approved request",
        format!("{id}: {}", v["status"]),
    ))
}

pub(super) async fn status_unknown(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    if let Err(why) = c.opened(Gate::Status).await {
        return Ok(Verdict::unjudged(why));
    }
    let id = format!("tck-no-such-request-{}", c.s.common.seed);
    let got = c.status(0, &id).await?;
    Ok(if got.status == 404 {
        Verdict::held(1, "lookups of an unknown request_id", "404")
    } else {
        Verdict::fail(
            format!(
                "GET /agent/status/{id} answered {}; expected 404",
                got.status
            ),
            &got,
        )
    })
}

pub(super) async fn status_no_leak(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    let (i, id) = match c.approved_id().await {
        Ok(found) => found,
        Err(e) => return Ok(Verdict::unjudged(e)),
    };
    // The owner must see its own request first: a 404 to everyone hides nothing.
    let own = c.status(i, &id).await?;
    c.note(Gate::Status, &own);
    if let Err(why) = gate_verdict(Gate::Status, &own) {
        return Ok(Verdict::skip_on(
            format!(
                "not judged: {why}; another agent's 404 means something only once the owner \
                 can look its request up, and a Librarian whose status endpoint answers the \
                 owner exercises this case"
            ),
            &own,
        ));
    }
    let owner = c.agent(i).map(|(a, _)| a.clone()).unwrap_or_default();
    let other = usize::from(i == 0);
    let got = c.status(other, &id).await?;
    Ok(if matches!(got.status, 403 | 404) {
        Verdict::held(
            1,
            "lookups of another agent's request",
            format!("another agent asking about {owner}'s {id}: {}", got.status),
        )
    } else {
        Verdict::fail(
            format!("another agent was answered {} about {owner}'s request {id}: expected 403 or 404, nothing of it", got.status),
            &got,
        )
    })
}
