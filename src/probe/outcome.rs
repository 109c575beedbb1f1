//! What came back from an exchange: the request as sent, the answer (or why there was none),
//! and the answer's body as JSON, parsed once for every check that reads it.

use std::sync::OnceLock;

use serde_json::Value;

use super::exchange::AuthMode;
use crate::text::{excerpt, excerpt_str};
use crate::transport::http::{Error as HttpError, Response};

/// A request as sent and what came back; shared by every case that reads the same exchange.
pub struct Outcome {
    pub auth: AuthMode,
    /// The JSON body sent, when it was JSON.
    pub body_sent: Option<Value>,
    pub result: Result<Response, HttpError>,
    parsed: OnceLock<Result<Value, String>>,
}

impl Outcome {
    pub fn new(
        auth: AuthMode,
        body_sent: Option<Value>,
        result: Result<Response, HttpError>,
    ) -> Outcome {
        Outcome {
            auth,
            body_sent,
            result,
            parsed: OnceLock::new(),
        }
    }

    /// The body as JSON, parsed once.
    pub fn json(&self, max_body: usize) -> Result<&Value, String> {
        let response = self.result.as_ref().map_err(|e| e.to_string())?;
        self.parsed
            .get_or_init(|| parse_body(response, max_body))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Parses a body as one JSON object, saying precisely why it is not one.
pub fn parse_body(response: &Response, max_body: usize) -> Result<Value, String> {
    if response.body_exceeded {
        return Err(body_too_large(response, max_body));
    }
    let body = &response.body;
    if body.is_empty() {
        return Err("the body is empty; expected a JSON object".into());
    }
    if let Err(e) = std::str::from_utf8(body) {
        let at = e.valid_up_to();
        return Err(format!("the body is not valid UTF-8: byte 0x{:02x} at offset {at} (JSON must be UTF-8, RFC 8259)", body[at]));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!("the body is JSON but not an object: {}", excerpt_str(&other.to_string(), 120))),
        Err(e) if e.to_string().contains("recursion limit") => Err(format!(
            "the body is not usable JSON: nested deeper than 128 levels ({e}); a platform parser would refuse or crash on it"
        )),
        Err(e) => Err(format!("the body is not valid JSON: {e}; body begins: {}", excerpt(&body[..body.len().min(200)], 200))),
    }
}

pub fn body_too_large(response: &Response, max_body: usize) -> String {
    format!(
        "the body exceeds {max_body} bytes (--max-body; the platform truncates or rejects it): stopped reading after {} bytes",
        response.body.len()
    )
}
