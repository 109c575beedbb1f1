//! One exchange between two parties: the unit every rule judges.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who took part in an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "role", content = "name")]
pub enum Party {
    /// The platform (a harness, a server's caller): the kit's probe, or a real one.
    Platform,
    /// An agent, by the name it is registered under (or the probe's name for the agent it
    /// certifies).
    Agent(String),
    /// A server the agents call (a Librarian, a connector's agent server).
    Server,
    /// A client of such a server, by name.
    Client(String),
}

/// A message as it went over the wire: headers (secrets masked before it is recorded) and the
/// body's bytes, as text when they are UTF-8, else base64.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Header names in lower case, in the order they came; values of secret-bearing headers
    /// (`authorization`, keys and tokens) are masked ([`Message::masked`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The body when it is UTF-8 (nearly always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The body in base64 when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
}

/// How the wait for an answer ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Answer {
    /// An answer came: its status (HTTP; None over lines) and message.
    Delivered {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        message: Message,
    },
    /// No answer within the asker's deadline.
    TimedOut,
    /// The connection (or the process) ended without an answer: how, in a few words.
    Failed { what: String },
    /// The run ended before the answer came (the asker's own end, not the answerer's fault).
    Cut,
}

/// One request and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Its number in the run, from 1.
    pub seq: u64,
    pub from: Party,
    pub to: Party,
    /// The HTTP method, when over HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The path (HTTP) or the endpoint a line went to.
    pub endpoint: String,
    /// The probe's case this exchange belongs to, when the probe sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub request: Message,
    pub answer: Answer,
    /// When the request was sent (its last byte), in milliseconds from the run's start.
    pub sent_ms: f64,
    /// When the answer was over, in milliseconds from the run's start (None: it never was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_ms: Option<f64>,
    /// What the producer knew beside the wire (a mock's decision, a schema's findings): read
    /// by the rules that need it, ignored by the others.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

/// Something that happened in a run besides an exchange, which a rule needs to judge the
/// exchanges around it: the run's end, the moment a driver's triggers were all answered, a
/// request that never arrived whole. A recording holds events among its exchanges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// What happened, in the producer's words (`run-end`, `triggers-answered`).
    pub event: String,
    /// When, in milliseconds from the run's start.
    pub at_ms: f64,
    /// What the rules need to know of it.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

/// One line of a recording: an exchange, or an event.
// Nearly every line is an exchange: boxing them to spare the few events' room would cost an
// allocation a line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Exchange(Exchange),
    Event(Event),
}

/// Header names whose values are never recorded.
const SECRET_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "cookie",
];

impl Message {
    /// A message of `headers` and `body`, secrets masked.
    pub fn masked<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        body: &[u8],
    ) -> Message {
        let headers = headers
            .into_iter()
            .map(|(name, value)| {
                let name = name.to_ascii_lowercase();
                let value = if SECRET_HEADERS.contains(&name.as_str()) {
                    mask(value)
                } else {
                    value.to_string()
                };
                (name, value)
            })
            .collect();
        let (text, base64) = match std::str::from_utf8(body) {
            Ok(text) => (Some(text.to_string()), None),
            Err(_) => (None, Some(crate::base64::encode(body))),
        };
        Message {
            headers,
            text,
            base64,
        }
    }

    /// The body's bytes.
    pub fn body(&self) -> Vec<u8> {
        match (&self.text, &self.base64) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(b64)) => crate::base64::decode(b64),
            (None, None) => Vec::new(),
        }
    }

    /// A header's value (the first of that name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A secret's value as recorded: its scheme kept (`Bearer`), the rest masked, so that a
/// recording tells a missing key from a present one and never holds the key.
fn mask(value: &str) -> String {
    match value.split_once(' ') {
        Some((scheme, _)) => format!("{scheme} ***"),
        None => "***".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_that_is_not_utf8_comes_back_byte_for_byte() {
        for body in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"\xff\x00\xfe{",
            b"caf\xe9 \x80\x81",
        ] {
            let message = Message::masked([], body);
            assert_eq!(message.body(), body, "{body:?}");
            assert_eq!(message.text.is_some(), std::str::from_utf8(body).is_ok());
        }
    }

    #[test]
    fn secrets_are_masked_and_their_presence_kept() {
        let message = Message::masked(
            [
                ("Authorization", "Bearer sk-secret"),
                ("Content-Type", "application/json"),
            ],
            b"{}",
        );
        let text = serde_json::to_string(&message).unwrap();
        assert!(!text.contains("sk-secret"), "{text}");
        assert_eq!(message.header("authorization"), Some("Bearer ***"));
        assert_eq!(message.header("content-type"), Some("application/json"));
    }
}
