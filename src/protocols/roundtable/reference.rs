//! The conforming round-table agent: what `probe roundtable` is tested against (the self-test,
//! the tests), and the answer the mock's content behaviours (`super::mutate`) break one rule of.
//! Every answer passes the schemas and the semantic rules (a property test proves it). Content
//! comes from `super::content` (`RoundtableContent`), seeded by `--seed` and by the request, so
//! the same request always gets the same answer.

use std::borrow::Cow;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};

use super::content::RoundtableContent;
use crate::content::Content;
use crate::mock::{Answer, Body, Reply, Responder};
use crate::protocols::roundtable::model::{ChallengeRequest, VoteRequest};

#[derive(Debug, Clone)]
pub struct ReferenceAgent {
    pub name: String,
    pub seed: u64,
}

impl ReferenceAgent {
    pub fn new(name: impl Into<String>, seed: u64) -> ReferenceAgent {
        ReferenceAgent {
            name: name.into(),
            seed,
        }
    }

    fn content(&self, endpoint: &str, task_id: &str) -> Content {
        Content::from_parts(self.seed, &[&self.name, endpoint, task_id])
    }
}

/// What /analyze needs of its request: the task_id. The other fields are held to the same shape
/// as [`AnalyzeRequest`] (a string content, an object context, a list of string constraints) but
/// borrowed or skipped, not copied: an analysis is the answer a fleet agent makes most often.
#[derive(Deserialize)]
struct AnalyzeView<'a> {
    #[serde(borrow)]
    task_id: Cow<'a, str>,
    #[serde(borrow, rename = "content")]
    _content: Cow<'a, str>,
    #[serde(default, rename = "context")]
    _context: Option<AnyObject>,
    #[serde(default, borrow, rename = "constraints")]
    _constraints: Option<Vec<Cow<'a, str>>>,
}

/// A JSON object, whatever it holds (its entries are skipped).
struct AnyObject;

impl<'de> Deserialize<'de> for AnyObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = AnyObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyObject, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(AnyObject)
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// Reads a request from the body's JSON value (shared with the engine's checks: parsed once),
/// or says (as a 400) what is wrong with it. From the value, not the bytes: a duplicate key is
/// JSON (the last one counts, as for the schema check), which a typed parse of the bytes refuses.
fn parse<'a, T: Deserialize<'a>>(endpoint: &str, body: &'a Body<'_>) -> Result<T, Reply> {
    let typed = match body.value() {
        Some(value) => T::deserialize(value),
        None => serde_json::from_slice(body.bytes),
    };
    typed.map_err(|e| bad_request(endpoint, e))
}

/// The task_id of an /analyze request: from the members the quick check admitted (the body
/// meets the request schema, so the view would take it: no parse at all), or from the view.
fn analyze_task<'a>(body: &'a Body<'_>) -> Result<Cow<'a, str>, Reply> {
    if let Some(task) = body.admitted().and_then(|members| members.str("task_id")) {
        return Ok(task);
    }
    parse::<AnalyzeView>("analyze", body).map(|view| view.task_id)
}

fn bad_request(endpoint: &str, e: serde_json::Error) -> Reply {
    Reply::error(
        400,
        format!("/{endpoint}: the request body is not a valid {endpoint} request: {e}"),
    )
}

impl Responder for ReferenceAgent {
    fn respond_body(&self, endpoint: &str, body: &Body<'_>) -> Reply {
        match self.answer(Form::Bytes, endpoint, body) {
            Answer::Reply(reply) => reply,
            Answer::Json(status, value) => Reply::json(status, &value),
        }
    }

    fn respond_value(&self, endpoint: &str, body: &Body<'_>) -> Answer {
        self.answer(Form::Value, endpoint, body)
    }
}

/// How an answer is wanted: as bytes, or as a JSON value to bend.
#[derive(Clone, Copy)]
enum Form {
    Bytes,
    Value,
}

impl Form {
    #[inline]
    fn emit(self, status: u16, answer: &impl Serialize) -> Answer {
        match self {
            Form::Bytes => Answer::Reply(Reply::json(status, answer)),
            Form::Value => {
                Answer::Json(status, serde_json::to_value(answer).unwrap_or(Value::Null))
            }
        }
    }

    /// An answer generated as JSON bytes.
    #[inline]
    fn emit_bytes(self, status: u16, bytes: Vec<u8>) -> Answer {
        match self {
            Form::Bytes => Answer::Reply(Reply {
                status,
                content_type: "application/json",
                body: bytes.into(),
            }),
            Form::Value => Answer::Json(
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            ),
        }
    }
}

impl ReferenceAgent {
    #[inline]
    fn answer(&self, form: Form, endpoint: &str, body: &Body<'_>) -> Answer {
        let answer = match endpoint {
            "analyze" => analyze_task(body).map(|task_id| {
                // Most answers are under 2 KiB: one allocation.
                let mut out = Vec::with_capacity(2048);
                self.content(endpoint, &task_id).analysis_json(
                    &self.name,
                    Some("general review"),
                    &mut out,
                );
                form.emit_bytes(200, out)
            }),
            "challenge" => parse::<ChallengeRequest>(endpoint, body).map(|r| {
                form.emit(
                    200,
                    &self
                        .content(endpoint, &r.task_id)
                        .challenge_response(&self.name, &r),
                )
            }),
            "vote" => parse::<VoteRequest>(endpoint, body).map(|r| {
                form.emit(
                    200,
                    &self
                        .content(endpoint, &r.task_id)
                        .vote_response(&self.name, &r),
                )
            }),
            "health" => Ok(form.emit(200, &json!({"status": "ok", "agent_name": self.name}))),
            other => Err(Reply::error(404, format!("no endpoint /{other}"))),
        };
        answer.unwrap_or_else(Answer::Reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::roundtable::model::AnalyzeRequest;

    /// The borrowed view of /analyze takes and refuses exactly what the full request type does,
    /// from a parsed value and from raw bytes (with escapes, which cannot be borrowed).
    #[test]
    fn analyze_view_accepts_what_the_request_type_accepts() {
        let bodies = [
            r#"{"task_id":"t","content":"c"}"#,
            r#"{"task_id":"t\u00e9","content":"a \"quoted\" c","extra":1}"#,
            r#"{"task_id":"t","content":"c","context":{"a":[1,{"b":null}]},"constraints":["x"]}"#,
            r#"{"task_id":"t","content":"c","context":null,"constraints":null}"#,
            r#"{"task_id":"t","content":"c","context":[1]}"#,
            r#"{"task_id":"t","content":"c","context":"s"}"#,
            r#"{"task_id":"t","content":"c","constraints":[1]}"#,
            r#"{"task_id":"t","content":"c","constraints":"x"}"#,
            r#"{"task_id":"t"}"#,
            r#"{"content":"c"}"#,
            r#"{"task_id":1,"content":"c"}"#,
            r#"{"task_id":"t","content":null}"#,
            r#"["t","c"]"#,
            r#"{}"#,
        ];
        let mut accepted = 0;
        for body in bodies {
            let full = serde_json::from_str::<AnalyzeRequest>(body);
            let value: Value = serde_json::from_str(body).unwrap();
            let from_value = AnalyzeView::deserialize(&value);
            let request = Body::new(body.as_bytes());
            let from_body = parse::<AnalyzeView>("analyze", &request);
            assert_eq!(full.is_ok(), from_value.is_ok(), "{body} (parsed)");
            assert_eq!(full.is_ok(), from_body.is_ok(), "{body} (body)");
            if let (Ok(full), Ok(view)) = (full, from_body) {
                assert_eq!(full.task_id, view.task_id, "{body}");
                accepted += 1;
            }
        }
        // The first four, and the array: serde reads a struct from a sequence too (the observer's
        // schema check is what flags such a request).
        assert_eq!(accepted, 5);
    }

    /// A duplicate key is JSON (the last one counts, for the schema check too): a valid request,
    /// answered — not refused because a typed parse of the bytes rejects duplicate fields (found
    /// by the mock_body fuzz target when the body stopped being parsed to a value first).
    #[test]
    fn a_request_with_a_duplicate_key_is_answered() {
        let agent = ReferenceAgent::new("a", 1);
        for endpoint in ["analyze", "challenge"] {
            let body = br#"{"task_id":"x","task_id":"t","content":"c","other_analyses":[]}"#;
            let checked = Body::checked(body, Some("roundtable/analyze.request"));
            assert!(checked.admitted().is_none(), "the skim declines duplicates");
            let reply = agent.respond_body(endpoint, &checked);
            assert_eq!(reply.status, 200, "/{endpoint}: {:?}", reply.body);
        }
        let once = agent.respond("analyze", br#"{"task_id":"t","content":"c"}"#);
        let twice = agent.respond("analyze", br#"{"task_id":"x","task_id":"t","content":"c"}"#);
        assert_eq!(once.body, twice.body, "the last task_id counts");
    }
}
