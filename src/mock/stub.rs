//! A protocol for the engine's own tests: two POST endpoints and /health, one content
//! behaviour (`shout`: the answer's `text` in capitals), and an agent that echoes its name.

use serde_json::Value;

use super::behavior::kind::{Behavior, Kind, Plays};
use super::protocol::{AgentProtocol, AnswerFields, Endpoint, Mutating, Mutation};
use super::{Body, Reply, Responder};

pub struct Stub {
    name: &'static str,
    behaviors: &'static [Behavior],
}

/// The stub protocol, with its behaviour `shout`.
pub static STUB: Stub = Stub {
    name: "stub",
    behaviors: BEHAVIORS,
};

/// Another protocol, with no content behaviours.
pub static OTHER: Stub = Stub {
    name: "other",
    behaviors: &[],
};

const ENDPOINTS: &[Endpoint] = &[
    Endpoint::post("ask", None),
    Endpoint::post("tell", None),
    Endpoint::health(),
];

const BEHAVIORS: &[Behavior] = &[
    Behavior {
        name: "shout",
        what: "the answer's text in capitals",
        rule: "none",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Shout))),
    },
    // A transport's quirk, as a protocol served over stdio has them: the engine plays it.
    Behavior {
        name: "stdio-banner",
        what: "a non-JSON line on stdout before the first answer",
        rule: "none",
        expects: "",
        plays: Plays::Engine(|_| Ok(Kind::StdioBanner)),
    },
];

#[derive(Debug)]
struct Shout;

impl Mutation for Shout {
    fn apply(&self, answer: &mut Value, _: &mut Mutating<'_>) -> bool {
        let text = answer["text"].as_str().unwrap_or("").to_uppercase();
        answer["text"] = Value::String(text);
        true
    }
}

struct Echo(String);

impl Responder for Echo {
    fn respond_body(&self, endpoint: &str, _body: &Body<'_>) -> Reply {
        Reply::json(
            200,
            &serde_json::json!({"agent": self.0, "text": format!("at {endpoint}")}),
        )
    }
}

impl AgentProtocol for Stub {
    fn name(&self) -> &'static str {
        self.name
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        ENDPOINTS
    }

    fn answer_fields(&self) -> &'static AnswerFields {
        &AnswerFields {
            identity: "agent",
            text: &["text"],
            number: "score",
        }
    }

    fn reference(&self, name: &str, _seed: u64) -> Box<dyn Responder> {
        Box::new(Echo(name.to_string()))
    }

    fn behaviors(&self) -> &'static [Behavior] {
        self.behaviors
    }
}
