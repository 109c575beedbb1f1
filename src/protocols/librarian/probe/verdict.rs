//! What a scenario finds (a [`Verdict`]), and the judging its groups share: how an answer to a
//! faulty request stands to the rule that it is refused, and what a valid request's answer must be.

use serde_json::Value;

use crate::protocols::librarian::model::judge_answer;
use crate::report::{Evidence, Exchange};
use crate::schema::findings_message;

use super::client::{Client, Got, Unjudged};

/// What a scenario found: its rule held on evidence, broken, or nothing to judge (and why).
pub(super) enum Verdict {
    Held {
        evidence: Evidence,
        note: String,
    },
    Broken {
        message: String,
        exchange: Option<Exchange>,
    },
    Nothing {
        reason: String,
        exchange: Option<Exchange>,
    },
}

impl Verdict {
    /// The rule held on `judged` `of` (a plural noun phrase), with a note on what was seen.
    pub(super) fn held(judged: usize, of: impl Into<String>, note: impl Into<String>) -> Verdict {
        Verdict::Held {
            evidence: Evidence::new(judged as u64, of),
            note: note.into(),
        }
    }

    pub(super) fn fail(message: impl Into<String>, got: &Got) -> Verdict {
        Verdict::Broken {
            message: message.into(),
            exchange: Some(got.exchange.clone()),
        }
    }

    /// A failure with no one exchange to show.
    pub(super) fn broken(message: impl Into<String>) -> Verdict {
        Verdict::Broken {
            message: message.into(),
            exchange: None,
        }
    }

    /// Nothing to judge; `reason` says what was missing and what would exercise the case.
    pub(super) fn skip(reason: impl Into<String>) -> Verdict {
        Verdict::Nothing {
            reason: reason.into(),
            exchange: None,
        }
    }

    /// Nothing to judge, for the reason `why`.
    pub(super) fn unjudged(why: impl Into<Unjudged>) -> Verdict {
        Verdict::skip(why.into().to_string())
    }

    /// Nothing to judge in this answer, shown with it.
    pub(super) fn skip_on(reason: impl Into<String>, got: &Got) -> Verdict {
        Verdict::Nothing {
            reason: reason.into(),
            exchange: Some(got.exchange.clone()),
        }
    }
}

/// How an answer to a faulty request stands to the rule that it is refused.
pub(super) enum Refusal {
    /// A 4xx for it, or a LibrarianResponse that does not approve it.
    Refused,
    /// Approved, or taken with a 2xx that is no decision at all (what it was).
    Taken(String),
    /// An answer that says nothing of the fault (what it was): 404/405, as if there were no
    /// such endpoint, or 429, the rate limit (after the client's own retries).
    Elsewhere(String),
}

pub(super) fn refusal(got: &Got) -> Refusal {
    match got.status {
        404 | 405 => Refusal::Elsewhere(format!(
            "answered {}, as if there were no such endpoint",
            got.status
        )),
        429 => Refusal::Elsewhere("still rate limited after 3 retries (429)".into()),
        400..=499 => Refusal::Refused,
        _ if got.approved() => Refusal::Taken("approved".into()),
        _ if got.decided() => Refusal::Refused,
        s if (200..300).contains(&s) => Refusal::Taken(format!(
            "answered {s} with no LibrarianResponse decision, neither a 4xx nor a refusal"
        )),
        s => Refusal::Elsewhere(format!("answered {s}")),
    }
}

/// The skip of a case whose faulty request got an answer that says nothing of the fault.
pub(super) fn says_nothing(what: &str, why: &str, got: &Got) -> Verdict {
    Verdict::skip_on(
        format!(
            "not judged: {what} was {why}, which says nothing of the fault; a Librarian that \
             answers it for what it is (a 4xx or a decision) exercises this case"
        ),
        got,
    )
}

/// A 403 to a valid request when no registry says whether its agent may make it: a right
/// refusal as likely as a wrong one, so nothing to judge.
pub(super) fn unauthorized_unknown(c: &Client<'_>, what: &str, got: &Got) -> Option<Verdict> {
    (got.status == 403 && c.s.registry.is_none()).then(|| {
        Verdict::skip_on(
            format!(
                "not judged: {what} was refused 403, and no registry says whether its agent may \
                 make it; give --registry (the Librarian's config/agents.yaml) so that the kit \
                 asks with an agent that may, or give first a --token agent that may"
            ),
            got,
        )
    })
}

/// The answer to a valid request `body`: 2xx, JSON, and a LibrarianResponse whose MUST rules
/// hold; or the failing verdict that says which of these it is not.
pub(super) fn a_librarian_response(body: &Value, got: &Got) -> Result<(), Verdict> {
    if !(200..300).contains(&got.status) {
        return Err(Verdict::fail(
            format!(
                "answered {}; expected 200 with a LibrarianResponse",
                got.status
            ),
            got,
        ));
    }
    if got.json.is_none() {
        return Err(Verdict::fail("the answer is not JSON", got));
    }
    match judge_answer(Some(body), got.status, got.json.as_ref()) {
        Some(judged) if !judged.must.is_empty() => {
            Err(Verdict::fail(findings_message(&judged.must), got))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What `refusal` makes of an answer: the Refused, Taken or Elsewhere it is, and its words.
    fn classed(status: u16, json: Option<Value>) -> (&'static str, String) {
        match refusal(&Got::answered(status, json)) {
            Refusal::Refused => ("refused", String::new()),
            Refusal::Taken(what) => ("taken", what),
            Refusal::Elsewhere(what) => ("elsewhere", what),
        }
    }

    #[test]
    fn an_answer_to_a_faulty_request_is_a_refusal_a_taking_or_says_nothing() {
        let none = String::new;
        assert_eq!(classed(400, None), ("refused", none()));
        assert_eq!(classed(403, None), ("refused", none()));
        assert_eq!(
            classed(200, Some(json!({"status": "rejected"}))),
            ("refused", none())
        );
        assert_eq!(
            classed(200, Some(json!({"status": "approved"}))),
            ("taken", "approved".into())
        );
        assert_eq!(
            classed(204, None),
            (
                "taken",
                "answered 204 with no LibrarianResponse decision, neither a 4xx nor a refusal"
                    .into()
            )
        );
        assert_eq!(
            classed(404, None),
            (
                "elsewhere",
                "answered 404, as if there were no such endpoint".into()
            )
        );
        assert_eq!(
            classed(405, None),
            (
                "elsewhere",
                "answered 405, as if there were no such endpoint".into()
            )
        );
        assert_eq!(
            classed(429, None),
            (
                "elsewhere",
                "still rate limited after 3 retries (429)".into()
            )
        );
        assert_eq!(classed(500, None), ("elsewhere", "answered 500".into()));
        assert_eq!(classed(302, None), ("elsewhere", "answered 302".into()));
    }
}
