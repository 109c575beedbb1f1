//! The Librarian's cases are data (`suites/librarian.yaml`: ids, levels, titles, spec clauses,
//! and the rule each runs with its arguments); the rules are here. A rule is a small scenario
//! of requests (a valid request and its status, a request missing one field, 61 requests in a
//! minute), run by `probe::run`; the suite loader checks each case's rule and arguments at load.

use std::sync::OnceLock;

use serde_json::Value;

use super::model::{required_fields, REQUEST_TYPES};
use crate::probe::plugin::DriverRules;
use crate::probe::suite::SuiteError;
use crate::probe::Suite as LoadedSuite;

/// The built-in cases: (file, YAML).
pub const SUITE: (&str, &str) = (
    "suites/librarian.yaml",
    include_str!("../../../suites/librarian.yaml"),
);

/// The built-in cases, loaded once.
pub fn suite() -> Result<LoadedSuite, SuiteError> {
    static LOADED: OnceLock<Result<LoadedSuite, SuiteError>> = OnceLock::new();
    LOADED
        .get_or_init(|| LoadedSuite::parse(SUITE.0, SUITE.1, &RULE_NAMES))
        .clone()
}

/// What a case runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scenario {
    /// A valid request of this type gets a schema-valid answer within 10 s.
    ValidRequest(String),
    /// The request_id of a valid request is usable at /agent/status.
    StatusLookup,
    /// An unknown id is 404.
    StatusUnknown,
    /// Another agent's request is not shown to this one.
    StatusNoLeak,
    /// A request of `type` without `field` is not approved.
    MissingField { request_type: String, field: String },
    /// A malformed request (kind) is a 4xx, never a 5xx.
    BadInput(String),
    /// `field` at `size` items (or bytes): refused or not.
    Limit {
        field: String,
        size: usize,
        refused: bool,
    },
    /// A request with deviations under strict mode is refused.
    StrictDeviations,
    /// Credentials (kind) refused: 401/403, never an approval.
    Auth(String),
    /// POST /agent/context answers a ContextResponse.
    Context,
    /// GET /agent/capabilities answers an AgentCapabilities.
    Capabilities,
    /// APPROVAL, then REPORT: the status ends COMPLETED.
    Lifecycle,
    /// A change that asks for a human: if escalated, its status is polled until a decision.
    Escalation,
    /// 61 requests in a minute: the excess is 429.
    RateLimit,
    /// While one agent is limited, another is not.
    RateIsolation,
    /// The 429 says when to come back (Retry-After or rate-limit headers).
    RetryAfter,
    /// /agent/capabilities agrees with the registry (--registry).
    CapabilitiesMatch,
    /// A target outside the agent's allowed_targets is not approved (--registry).
    TargetOutside,
    /// An action outside the agent's capabilities is not approved (--registry).
    ActionOutside,
    /// A token used in the name of an agent not in the registry is refused (--registry).
    Unregistered,
    /// Unicode in every text field gets a valid answer.
    Unicode,
    /// Requests from several agents at once each get their own valid answer.
    Concurrent,
    /// Prompt-injection text in content and rationale does not get a forbidden target approved
    /// (--registry).
    Injection,
    /// Judged across every answer of the run.
    Across(Across),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Across {
    /// Every request answered within the response timeout (10 s).
    WithinTimeout,
    /// Every field of the dataclass present.
    ResponseFields,
    /// The document's expectations (a rejection's violations, an escalation's reason, …).
    Expectations,
    /// A refusal for a missing field names it.
    NamesMissingField,
    /// No answer is a 5xx.
    No5xx,
}

const BAD_INPUTS: [&str; 6] = [
    "wrong-type-content",
    "malformed-json",
    "empty-body",
    "wrong-type",
    "unknown-enum",
    "bad-timestamp",
];
const AUTH_KINDS: [&str; 3] = ["no-token", "wrong-token", "foreign-agent"];
const LIMIT_FIELDS: [&str; 3] = ["content", "references", "deviations"];

/// Why a case's rule call is refused (the suite loader names the file and the line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleCallError {
    /// An argument missing, or not of its type (`what`: "a string", "a number", …).
    #[error("{rule}: needs `{key}:` ({what})")]
    Needs {
        rule: String,
        key: &'static str,
        what: &'static str,
    },
    #[error("{rule}: {value:?} is not one of {}", .known.join(", "))]
    NotOneOf {
        rule: String,
        value: String,
        known: &'static [&'static str],
    },
    #[error(
        "{rule}: {field:?} is not a required field of {request_type} (required: {})",
        .required.join(", ")
    )]
    NotRequired {
        rule: String,
        field: String,
        request_type: String,
        required: &'static [&'static str],
    },
    #[error("{rule}: takes no parameters")]
    NoParameters { rule: String },
    #[error("{rule}: no such librarian rule")]
    Unknown { rule: String },
}

impl Scenario {
    /// The scenario a case's rule call names, its arguments checked.
    pub fn of(name: &str, args: &Value) -> Result<Scenario, RuleCallError> {
        let call = Call { name, args };
        Ok(match name {
            "valid_request" => Scenario::ValidRequest(call.one_of("type", &REQUEST_TYPES)?),
            "missing_field" => call.missing_field()?,
            "bad_input" => Scenario::BadInput(call.one_of("kind", &BAD_INPUTS)?),
            "limit" => call.limit()?,
            "auth" => Scenario::Auth(call.one_of("kind", &AUTH_KINDS)?),
            _ => {
                call.none()?;
                parameterless(name).ok_or_else(|| RuleCallError::Unknown { rule: call.rule() })?
            }
        })
    }
}

/// A case's rule call: the rule's name and its arguments, read for the scenario it names.
struct Call<'a> {
    name: &'a str,
    args: &'a Value,
}

impl Call<'_> {
    fn rule(&self) -> String {
        self.name.to_string()
    }

    fn needs(&self, key: &'static str, what: &'static str) -> RuleCallError {
        RuleCallError::Needs {
            rule: self.rule(),
            key,
            what,
        }
    }

    /// The string argument `key`.
    fn text(&self, key: &'static str) -> Result<String, RuleCallError> {
        self.args
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.needs(key, "a string"))
    }

    /// The string argument `key`, one of `known`.
    fn one_of(
        &self,
        key: &'static str,
        known: &'static [&'static str],
    ) -> Result<String, RuleCallError> {
        let value = self.text(key)?;
        if known.contains(&value.as_str()) {
            Ok(value)
        } else {
            Err(RuleCallError::NotOneOf {
                rule: self.rule(),
                value,
                known,
            })
        }
    }

    /// A call with no arguments.
    fn none(&self) -> Result<(), RuleCallError> {
        if self.args.is_null() {
            Ok(())
        } else {
            Err(RuleCallError::NoParameters { rule: self.rule() })
        }
    }

    /// `missing_field`: a request type and one of its required fields.
    fn missing_field(&self) -> Result<Scenario, RuleCallError> {
        let request_type = self.one_of("type", &REQUEST_TYPES)?;
        let field = self.text("field")?;
        if !required_fields(&request_type).contains(&field.as_str()) {
            return Err(RuleCallError::NotRequired {
                rule: self.rule(),
                required: required_fields(&request_type),
                field,
                request_type,
            });
        }
        Ok(Scenario::MissingField {
            request_type,
            field,
        })
    }

    /// `limit`: a field, a size, and whether that size is refused.
    fn limit(&self) -> Result<Scenario, RuleCallError> {
        let field = self.one_of("field", &LIMIT_FIELDS)?;
        let size = self
            .args
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| self.needs("size", "a number"))? as usize;
        let refused = self
            .args
            .get("refused")
            .and_then(Value::as_bool)
            .ok_or_else(|| self.needs("refused", "true or false"))?;
        Ok(Scenario::Limit {
            field,
            size,
            refused,
        })
    }
}

/// The scenario of a rule that takes no parameters, if `name` is one.
fn parameterless(name: &str) -> Option<Scenario> {
    Some(match name {
        "status_lookup" => Scenario::StatusLookup,
        "status_unknown" => Scenario::StatusUnknown,
        "status_no_leak" => Scenario::StatusNoLeak,
        "strict_deviations" => Scenario::StrictDeviations,
        "context" => Scenario::Context,
        "capabilities" => Scenario::Capabilities,
        "lifecycle" => Scenario::Lifecycle,
        "escalation" => Scenario::Escalation,
        "rate_limit" => Scenario::RateLimit,
        "rate_isolation" => Scenario::RateIsolation,
        "retry_after" => Scenario::RetryAfter,
        "capabilities_match" => Scenario::CapabilitiesMatch,
        "target_outside" => Scenario::TargetOutside,
        "action_outside" => Scenario::ActionOutside,
        "unregistered" => Scenario::Unregistered,
        "unicode" => Scenario::Unicode,
        "concurrent" => Scenario::Concurrent,
        "injection" => Scenario::Injection,
        "within_timeout" => Scenario::Across(Across::WithinTimeout),
        "response_fields" => Scenario::Across(Across::ResponseFields),
        "expectations" => Scenario::Across(Across::Expectations),
        "names_missing_field" => Scenario::Across(Across::NamesMissingField),
        "no_5xx" => Scenario::Across(Across::No5xx),
        _ => return None,
    })
}

const RULES: [&str; 28] = [
    "retry_after",
    "escalation",
    "capabilities_match",
    "target_outside",
    "action_outside",
    "unregistered",
    "unicode",
    "concurrent",
    "injection",
    "valid_request",
    "status_lookup",
    "status_unknown",
    "status_no_leak",
    "missing_field",
    "bad_input",
    "limit",
    "strict_deviations",
    "auth",
    "context",
    "capabilities",
    "lifecycle",
    "rate_limit",
    "rate_isolation",
    "within_timeout",
    "response_fields",
    "expectations",
    "names_missing_field",
    "no_5xx",
];

/// The Librarian as the suite engine sees it: rule names and their arguments, checked at load.
pub static RULE_NAMES: DriverRules = DriverRules::new(
    &RULES,
    |name, args| {
        Scenario::of(name, args)
            .map(drop)
            .map_err(|e| e.to_string())
    },
    "probe librarian",
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The loader checks each case's rule and arguments through the vocabulary, naming the line.
    #[test]
    fn a_bad_rule_or_argument_is_refused_at_load() {
        let suite = |check: &str| {
            format!("protocol: librarian\ntitle: t\nspec: s\ncases:\n  - id: a.b\n    level: must\n    title: t\n    spec: s\n    checks: [{check}]\n")
        };
        assert!(LoadedSuite::parse(
            "x.yaml",
            &suite("{valid_request: {type: QUERY}}"),
            &RULE_NAMES
        )
        .is_ok());
        for (bad, why) in [
            ("{valid_request: {type: SHOUT}}", "\"SHOUT\" is not one of"),
            (
                "{missing_field: {type: QUERY, field: rationale}}",
                "not a required field of QUERY",
            ),
            ("{lifecycle: {x: 1}}", "takes no parameters"),
        ] {
            let e = LoadedSuite::parse("x.yaml", &suite(bad), &RULE_NAMES)
                .err()
                .unwrap()
                .to_string();
            assert!(e.starts_with("x.yaml:") && e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_refused_rule_call_says_which_rule_and_what_of_it_word_for_word() {
        let refused = |name: &str, args: Value| Scenario::of(name, &args).unwrap_err().to_string();
        assert_eq!(
            refused("valid_request", serde_json::json!({})),
            "valid_request: needs `type:` (a string)"
        );
        assert_eq!(
            refused("auth", serde_json::json!({"kind": "nope"})),
            "auth: \"nope\" is not one of no-token, wrong-token, foreign-agent"
        );
        assert_eq!(
            refused("limit", serde_json::json!({"field": "content", "size": 10})),
            "limit: needs `refused:` (true or false)"
        );
        assert_eq!(
            refused("limit", serde_json::json!({"field": "content"})),
            "limit: needs `size:` (a number)"
        );
        assert_eq!(refused("sing", Value::Null), "sing: no such librarian rule");
        assert_eq!(
            Scenario::of("lifecycle", &serde_json::json!({"x": 1})),
            Err(RuleCallError::NoParameters {
                rule: "lifecycle".into()
            })
        );
    }
}
