//! What came back from an exchange: the request as sent, the answer (or why there was none),
//! and the answer's body as JSON, parsed once for every check that reads it.

use std::sync::OnceLock;

use serde_json::Value;

pub use super::dupkeys::Parsed;

use super::exchange::AuthMode;
use crate::text::{excerpt, excerpt_str};
use crate::transport::http::{Error as HttpError, Response};

/// A request as sent and what came back; shared by every case that reads the same exchange.
pub struct Outcome {
    pub auth: AuthMode,
    /// The body sent as its bytes, when it is read only if a case asks ([`Self::body_sent`]).
    sent_bytes: Option<bytes::Bytes>,
    sent: OnceLock<Option<Value>>,
    pub result: Result<Response, HttpError>,
    parsed: OnceLock<Result<Value, AnswerError>>,
    /// The keys the answer repeats, found as it was parsed (here, or by the proxy that gave
    /// it parsed): set with `parsed` when that holds an object.
    duplicates: OnceLock<Vec<crate::schema::Finding>>,
}

/// A request's body as a judge is given it: read already, or its bytes, read only if a case
/// asks (most answers the proxy judges are judged without the request: reading each was a
/// twentieth of its CPU per answer).
pub enum Sent {
    Read(Option<Value>),
    Bytes(bytes::Bytes),
}

impl From<Option<Value>> for Sent {
    fn from(value: Option<Value>) -> Sent {
        Sent::Read(value)
    }
}

impl Outcome {
    pub fn new(
        auth: AuthMode,
        body_sent: Option<Value>,
        result: Result<Response, HttpError>,
    ) -> Outcome {
        Outcome::parsed(auth, Sent::Read(body_sent), result, None)
    }

    /// The JSON body sent, when it was JSON.
    pub fn body_sent(&self) -> Option<&Value> {
        self.sent
            .get_or_init(|| {
                let bytes = self.sent_bytes.as_ref()?;
                serde_json::from_slice(bytes).ok()
            })
            .as_ref()
    }

    /// [`new`](Self::new), with the answer's body already parsed (`json`: what
    /// `serde_json` read of it, when that was one object; else it is parsed again, for the
    /// reason it is not one).
    pub fn parsed(
        auth: AuthMode,
        sent: Sent,
        result: Result<Response, HttpError>,
        json: Option<Parsed>,
    ) -> Outcome {
        let mut outcome = Outcome {
            auth,
            sent_bytes: None,
            sent: OnceLock::new(),
            result,
            parsed: OnceLock::new(),
            duplicates: OnceLock::new(),
        };
        match sent {
            Sent::Read(value) => outcome.sent = OnceLock::from(value),
            Sent::Bytes(bytes) => outcome.sent_bytes = Some(bytes),
        }
        match (&outcome.result, json) {
            (
                Ok(r),
                Some(Parsed {
                    value: v @ Value::Object(_),
                    duplicates,
                }),
            ) if !r.body_exceeded => {
                let _ = outcome.parsed.set(Ok(v));
                let _ = outcome.duplicates.set(duplicates);
            }
            _ => {}
        }
        outcome
    }

    /// The body as JSON, parsed once.
    pub fn json(&self, max_body: usize) -> Result<&Value, AnswerError> {
        let response = self.result.as_ref().map_err(|e| AnswerError::NoAnswer {
            cause: e.to_string(),
        })?;
        self.parsed
            .get_or_init(|| {
                parse_answer(response, max_body).map(|p| {
                    let _ = self.duplicates.set(p.duplicates);
                    p.value
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The keys the answer repeats (Err: it is no JSON object, as [`json`](Self::json) says).
    pub fn duplicate_keys(
        &self,
        max_body: usize,
    ) -> Result<&[crate::schema::Finding], AnswerError> {
        self.json(max_body)?;
        Ok(self.duplicates.get().map_or(&[], Vec::as_slice))
    }
}

impl Outcome {
    /// Why the answer is none a protocol's rules can read, if it is not: no answer at all, a
    /// status outside 2xx (an error page, a 404 from an endpoint that does not exist), or a
    /// body that is not one JSON object within `max_body`. A readable answer may still break
    /// the schema: that is a verdict on it, not a reason to leave it unjudged.
    pub fn unreadable(&self, max_body: usize) -> Option<String> {
        match &self.result {
            Err(e) => Some(e.to_string()),
            Ok(r) if !(200..300).contains(&r.status) => Some(format!("answered {}", r.status)),
            Ok(_) => self.json(max_body).err().map(|e| e.to_string()),
        }
    }
}

/// Why a peer's answer cannot be read as one JSON object. Not an error of the run: the peer's
/// fault, which breaks the check that needed the answer (the message is the case's FAIL line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The exchange itself failed (refused, timed out, cut off).
    #[error("{cause}")]
    NoAnswer { cause: String },
    #[error("the body exceeds {max_body} bytes (--max-body; the platform truncates or rejects it): stopped reading after {read} bytes")]
    TooLarge { max_body: usize, read: usize },
    #[error("the body is empty; expected a JSON object")]
    Empty,
    #[error("the body is not valid UTF-8: byte 0x{byte:02x} at offset {offset} (JSON must be UTF-8, RFC 8259)")]
    NotUtf8 { byte: u8, offset: usize },
    /// `shown`: an excerpt of the value.
    #[error("the body is JSON but not an object: {shown}")]
    NotAnObject { shown: String },
    #[error("the body is not usable JSON: nested deeper than 128 levels ({cause}); a platform parser would refuse or crash on it")]
    TooDeep { cause: String },
    /// `begins`: an excerpt of the body's first bytes.
    #[error("the body is not valid JSON: {cause}; body begins: {begins}")]
    NotJson { cause: String, begins: String },
}

/// A judgement written with `?` (`Verdict::of`) ends broken with the answer's fault as its
/// message.
impl From<AnswerError> for String {
    fn from(e: AnswerError) -> String {
        e.to_string()
    }
}

/// Parses a body as one JSON object, saying precisely why it is not one.
pub fn parse_body(response: &Response, max_body: usize) -> Result<Value, AnswerError> {
    parse_answer(response, max_body).map(|p| p.value)
}

/// [`parse_body`], with the keys the body repeats.
fn parse_answer(response: &Response, max_body: usize) -> Result<Parsed, AnswerError> {
    if response.body_exceeded {
        return Err(body_too_large(response, max_body));
    }
    let body = &response.body;
    if body.is_empty() {
        return Err(AnswerError::Empty);
    }
    // serde_json checks each string it reads is UTF-8, and a byte past ASCII anywhere else is
    // no JSON: a body it parses is UTF-8, and only a failure asks which it broke (checking the
    // whole body first was an eighth of the parse).
    let parsed = super::dupkeys::parse(body);
    if let (Err(_), Err(e)) = (&parsed, std::str::from_utf8(body)) {
        let offset = e.valid_up_to();
        return Err(AnswerError::NotUtf8 {
            byte: body[offset],
            offset,
        });
    }
    match parsed {
        Ok(
            p @ Parsed {
                value: Value::Object(_),
                ..
            },
        ) => Ok(p),
        Ok(Parsed { value: other, .. }) => Err(AnswerError::NotAnObject {
            shown: excerpt_str(&other.to_string(), 120),
        }),
        Err(e) if e.to_string().contains("recursion limit") => Err(AnswerError::TooDeep {
            cause: e.to_string(),
        }),
        Err(e) => Err(AnswerError::NotJson {
            cause: e.to_string(),
            begins: excerpt(&body[..body.len().min(200)], 200),
        }),
    }
}

/// A body cut off at `max_body` (`--max-body`).
pub fn body_too_large(response: &Response, max_body: usize) -> AnswerError {
    AnswerError::TooLarge {
        max_body,
        read: response.body.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn response(body: &[u8], body_exceeded: bool) -> Response {
        Response {
            status: 200,
            headers: Vec::new(),
            body: bytes::Bytes::copy_from_slice(body),
            body_exceeded,
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn an_unreadable_answer_says_why_in_one_line() {
        let why = |body: &[u8], exceeded| parse_body(&response(body, exceeded), 4).unwrap_err();
        assert_eq!(why(b"", false), AnswerError::Empty);
        assert_eq!(
            why(b"", false).to_string(),
            "the body is empty; expected a JSON object"
        );
        assert_eq!(
            why(b"{\"a\":\xff}", false).to_string(),
            "the body is not valid UTF-8: byte 0xff at offset 5 (JSON must be UTF-8, RFC 8259)"
        );
        assert_eq!(
            why(b"[1]", false).to_string(),
            "the body is JSON but not an object: [1]"
        );
        assert_eq!(
            why(b"{\"a\":1}x", true).to_string(),
            "the body exceeds 4 bytes (--max-body; the platform truncates or rejects it): stopped reading after 8 bytes"
        );
        assert!(matches!(why(b"{", false), AnswerError::NotJson { .. }));
        assert_eq!(
            String::from(AnswerError::Empty),
            AnswerError::Empty.to_string()
        );
    }

    /// An answer parsed before (by the proxy, for its faults) is read as parsed; a value that
    /// is no object, or the body of an answer cut at its limit, is read again and judged for
    /// what it is.
    #[test]
    fn an_answer_parsed_before_is_not_parsed_again_unless_it_is_no_object() {
        let parsed = |body: &[u8], exceeded, json: Value| {
            Outcome::parsed(
                AuthMode::Default,
                Sent::Bytes(bytes::Bytes::from_static(b"{\"sent\": 1}")),
                Ok(response(body, exceeded)),
                Some(Parsed {
                    value: json,
                    duplicates: Vec::new(),
                }),
            )
        };
        // The value given wins: proof that the body was not parsed again.
        let given = parsed(b"{\"a\":1}", false, serde_json::json!({"a": 2}));
        assert_eq!(given.json(100).unwrap(), &serde_json::json!({"a": 2}));
        // The request's bytes, read when asked.
        assert_eq!(given.body_sent(), Some(&serde_json::json!({"sent": 1})));
        let list = parsed(b"[1]", false, serde_json::json!([1]));
        assert!(matches!(
            list.json(100),
            Err(AnswerError::NotAnObject { .. })
        ));
        let cut = parsed(b"{\"a\":1}", true, serde_json::json!({"a": 1}));
        assert!(matches!(cut.json(4), Err(AnswerError::TooLarge { .. })));
        let none = Outcome::parsed(
            AuthMode::Default,
            Sent::Bytes(bytes::Bytes::from_static(b"not json")),
            Ok(response(b"{}", false)),
            None,
        );
        assert_eq!(none.json(100).unwrap(), &serde_json::json!({}));
        assert_eq!(none.body_sent(), None);
    }

    /// The keys an answer repeats are found as it is parsed, here or by whoever gave it parsed;
    /// an answer that is no object has none to judge.
    #[test]
    fn repeated_keys_are_found_with_the_parse_or_after_it() {
        let outcome = |body: &'static [u8], given: Option<Parsed>| {
            Outcome::parsed(
                AuthMode::Default,
                Sent::Read(None),
                Ok(response(body, false)),
                given,
            )
        };
        let twice = br#"{"a":1,"a":2}"#;
        let parsed = outcome(twice, None);
        assert_eq!(parsed.json(100).unwrap(), &serde_json::json!({"a": 2}));
        assert_eq!(parsed.duplicate_keys(100).unwrap()[0].path, "a");
        let given = outcome(
            twice,
            Some(Parsed {
                value: serde_json::json!({"a": 2}),
                duplicates: Vec::new(),
            }),
        );
        // What the parser that gave it found is what counts: it read these very bytes.
        assert!(given.duplicate_keys(100).unwrap().is_empty());
        assert!(outcome(b"[1]", None).duplicate_keys(100).is_err());
    }
}
