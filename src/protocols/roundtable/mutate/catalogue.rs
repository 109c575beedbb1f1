//! The round table's catalogue of content behaviours, and the mutations the engine applies
//! by name.

use serde_json::Value;

use crate::mock::args::unknown_variant;
use crate::mock::behavior::{Behavior, Plays};
use crate::mock::injection;
use crate::mock::protocol::{Mutating, Mutation};

use super::forwarded::{ansi_escapes, inject, null_bytes};
use super::limits::{oversized_field, too_many_items};
use super::speculation::speculative;
use super::wrong_schema::{wrong_schema, WrongSchema};

/// The round table's content behaviours (`mock behaviors` lists them with the engine's).
pub const BEHAVIORS: &[Behavior] = &[
    Behavior {
        name: "wrong-schema",
        what: "variants: missing-field, wrong-type, severity-enum, confidence-range, approve-string, dissent-without-reason",
        rule: "response field tables (a string \"false\" must not count as approval)",
        expects: "",
        plays: Plays::Content(|a| {
            let v = a.get("variant", true).unwrap_or("missing-field");
            let variant = WrongSchema::parse(v).ok_or_else(|| {
                unknown_variant(a.item(), v, WrongSchema::ALL.iter().map(|m| m.name()))
            })?;
            Ok(Box::new(WrongSchemaIn(variant)))
        }),
    },
    Behavior {
        name: "oversized-field",
        what: "one string over chars=N characters (default 60000)",
        rule: "Response Size Limits: 50,000 characters per field",
        expects: "",
        plays: Plays::Content(|a| {
            Ok(Box::new(OversizedField {
                chars: a.number("chars", true, 60_000)?,
            }))
        }),
    },
    Behavior {
        name: "too-many-items",
        what: "count=N observations/challenges (default 101), conditions=N (default 21)",
        rule: "lists the platform caps",
        expects: "",
        plays: Plays::Content(|a| {
            Ok(Box::new(TooManyItems {
                count: a.number("count", true, 101)?,
                conditions: a.number("conditions", false, 21)?,
            }))
        }),
    },
    Behavior {
        name: "null-bytes",
        what: "NUL characters in the forwarded strings",
        rule: "Response Sanitization: null bytes stripped",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::NullBytes))),
    },
    Behavior {
        name: "ansi-escapes",
        what: "terminal escape sequences in the forwarded strings",
        rule: "Response Sanitization",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::AnsiEscapes))),
    },
    Behavior {
        name: "speculative",
        what: "evidence full of the phrases the evidence pipeline flags",
        rule: "Response Sanitization: evidence enforcement",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::Speculative))),
    },
    Behavior {
        name: "injection",
        what: "prompt-injection payloads (mocks/injection/) with canary tokens in finding, evidence, counter_evidence, rationale, conditions; select=ID|FAMILY[+...], per_answer=N",
        rule: "Response Sanitization: injection scanned",
        expects: "",
        plays: Plays::Content(|a| injection::Injection::parse(a, inject)),
    },
];

#[derive(Debug)]
pub(super) struct WrongSchemaIn(WrongSchema);

impl Mutation for WrongSchemaIn {
    fn apply(&self, answer: &mut Value, at: &mut Mutating<'_>) -> bool {
        wrong_schema(self.0, at.endpoint, answer)
    }
}

#[derive(Debug)]
pub(super) struct OversizedField {
    chars: usize,
}

impl Mutation for OversizedField {
    fn apply(&self, answer: &mut Value, at: &mut Mutating<'_>) -> bool {
        oversized_field(at.endpoint, answer, self.chars)
    }
}

#[derive(Debug)]
pub(super) struct TooManyItems {
    count: usize,
    conditions: usize,
}

impl Mutation for TooManyItems {
    fn apply(&self, answer: &mut Value, at: &mut Mutating<'_>) -> bool {
        too_many_items(at.endpoint, answer, self.count, self.conditions)
    }
}

/// The edits of the forwarded strings that take no argument.
#[derive(Debug)]
pub(super) enum Edit {
    NullBytes,
    AnsiEscapes,
    Speculative,
}

impl Mutation for Edit {
    fn apply(&self, answer: &mut Value, at: &mut Mutating<'_>) -> bool {
        match self {
            Edit::NullBytes => null_bytes(at.endpoint, answer),
            Edit::AnsiEscapes => ansi_escapes(at.endpoint, answer),
            Edit::Speculative => speculative(at.endpoint, answer),
        }
    }
}
