//! The Librarian agent communication protocol (specs/librarian-agent-communication-protocol.md):
//! agents ask a governance server, the Librarian, for approval, context and validation over REST.
//! The messages are JSON (`schemas/librarian/*.json`); the rules the schemas cannot state are
//! here, as functions over `serde_json::Value` that never panic on odd shapes. Both roles use
//! them: the probe judges a Librarian's answers, the mock Librarian judges a client's requests.
//!
//! Where the document leaves a shape open (RequestStatus, ContextQuery, ContextResponse,
//! AgentCapabilities, NodeSummary) the schemas assume the least and say so; [`ASSUMPTIONS`]
//! lists them for the report.

use std::time::Duration;

use serde_json::{json, Value};

use crate::schema::{finding, schemas, Finding};

pub const REQUEST_SCHEMA: &str = "librarian/request";
pub const RESPONSE_SCHEMA: &str = "librarian/response";
pub const STATUS_SCHEMA: &str = "librarian/status";
pub const CONTEXT_REQUEST_SCHEMA: &str = "librarian/context.request";
pub const CONTEXT_RESPONSE_SCHEMA: &str = "librarian/context.response";
pub const CAPABILITIES_SCHEMA: &str = "librarian/capabilities";

pub const REQUEST_TYPES: [&str; 4] = ["APPROVAL", "QUERY", "VALIDATE", "REPORT"];
pub const ACTIONS: [&str; 4] = ["create", "modify", "delete", "read"];
pub const TARGET_TYPES: [&str; 5] = ["architecture", "design", "code", "test", "docs"];
pub const STATUSES: [&str; 4] = ["approved", "rejected", "escalated", "clarification_needed"];

/// The document's `REQUIRED_FIELDS`, per request type.
pub const REQUIRED_FIELDS: [(&str, &[&str]); 4] = [
    ("APPROVAL", &["content", "rationale", "target_type"]),
    ("QUERY", &["content"]),
    ("VALIDATE", &["content", "target_type"]),
    ("REPORT", &["request_id", "completed", "changes_made"]),
];

/// The fields of the document's LibrarianResponse dataclass (all listed, most not Optional).
pub const RESPONSE_FIELDS: [&str; 16] = [
    "request_id",
    "timestamp",
    "processing_time_ms",
    "status",
    "confidence",
    "feedback",
    "violations",
    "suggestions",
    "approved_location",
    "assigned_id",
    "constraints",
    "escalation_reason",
    "human_review_url",
    "estimated_review_time",
    "context",
    "relevant_nodes",
];

/// The protocol settings of the document (`config/protocol.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `max_content_size: 100KB`.
    pub max_content: usize,
    pub max_references: usize,
    pub max_deviations: usize,
    pub max_retries: u32,
    /// `rate_limit: 60/minute per agent`.
    pub per_minute: u32,
    /// `timeouts.response: 10000ms`.
    pub response: Duration,
    /// `timeouts.validation: 5000ms`.
    pub validation: Duration,
}

pub const LIMITS: Limits = Limits {
    max_content: 100 * 1024,
    max_references: 20,
    max_deviations: 5,
    max_retries: 3,
    per_minute: 60,
    response: Duration::from_secs(10),
    validation: Duration::from_secs(5),
};

/// The shapes the document names without giving them, and what the schemas assume of each.
pub const ASSUMPTIONS: &[(&str, &str)] = &[
    (
        "RequestStatus",
        "an object with request_id and status, one of the governance states (upper or lower case)",
    ),
    ("ContextQuery", "an object with agent_id and query"),
    (
        "ContextResponse",
        "a JSON object (context, relevant_nodes typed when present)",
    ),
    (
        "AgentCapabilities",
        "an object with capabilities (strings), and allowed_targets when present",
    ),
    (
        "ViolationDetail",
        "an object with rule and description, as the document's examples read it",
    ),
    ("REPORT.completed", "a boolean"),
];

/// The capability an action needs (the registry's capabilities: read, write, …): a change needs
/// `write`, a read `read`.
pub fn capability_for(action: &str) -> Option<&'static str> {
    match action {
        "create" | "modify" | "delete" => Some("write"),
        "read" => Some("read"),
        _ => None,
    }
}

/// The required fields of `request_type`.
pub fn required_fields(request_type: &str) -> &'static [&'static str] {
    REQUIRED_FIELDS
        .iter()
        .find(|(t, _)| *t == request_type)
        .map(|(_, f)| *f)
        .unwrap_or(&[])
}

/// A governance state (the document's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Pending,
    Validating,
    Approved,
    Rejected,
    Escalated,
    Completed,
}

/// As the document writes it: APPROVED.
impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format!("{self:?}").to_uppercase())
    }
}

/// States in the order seen, for a person: `APPROVED → COMPLETED`.
pub fn path(states: &[State]) -> String {
    states
        .iter()
        .map(State::to_string)
        .collect::<Vec<_>>()
        .join(" → ")
}

impl State {
    /// Upper or lower case, as servers write it.
    pub fn parse(text: &str) -> Option<State> {
        Some(match text.to_ascii_uppercase().as_str() {
            "PENDING" => State::Pending,
            "VALIDATING" => State::Validating,
            "APPROVED" => State::Approved,
            "REJECTED" => State::Rejected,
            "ESCALATED" => State::Escalated,
            "COMPLETED" => State::Completed,
            _ => return None,
        })
    }

    /// Whether `next` may be observed after `self` (PENDING → VALIDATING → APPROVED | REJECTED |
    /// ESCALATED → COMPLETED; a human decides an escalation; a poller may miss states between).
    pub fn may_follow(self, next: State) -> bool {
        use State::*;
        if self == next {
            return true;
        }
        match self {
            Pending => next != Pending,
            Validating => !matches!(next, Pending),
            Escalated => matches!(next, Approved | Rejected | Completed),
            Approved => next == Completed,
            Rejected | Completed => false,
        }
    }
}

/// A valid request of `request_type` from `agent` (the document's examples, filled in).
pub fn request(agent: &str, request_type: &str, n: usize) -> Value {
    let base = json!({
        "agent_id": agent,
        "agent_type": "code-generator",
        "session_id": format!("sess-tck-{n}"),
        "timestamp": crate::report::now_rfc3339(),
        "request_type": request_type,
        "references": ["arch-001", "req-045"],
        "context_used": [],
        "deviations": [],
    });
    let mut r = base;
    match request_type {
        "APPROVAL" => {
            r["action"] = json!("create");
            r["target_type"] = json!("design");
            r["target_path"] = json!(format!("docs/design/feature-{n}.md"));
            r["content"] = json!("# New Feature Design\n\nA cache in front of the search service.");
            r["rationale"] = json!("Implementing user story US-123");
        }
        "QUERY" => {
            r["action"] = json!("read");
            r["content"] = json!("What are the current authentication requirements?");
        }
        "VALIDATE" => {
            r["action"] = json!("modify");
            r["target_type"] = json!("code");
            r["target_path"] = json!("src/auth/login.py");
            r["content"] = json!("def login(user, password):\n    return check(user, password)\n");
            r["rationale"] = json!("Would this change comply?");
        }
        _ => {
            r["action"] = json!("create");
            r["request_id"] = json!("unknown");
            r["completed"] = json!(true);
            r["changes_made"] = json!(["docs/design/feature.md created"]);
        }
    }
    r
}

/// What a Librarian's answer to `request` breaks: the schema's findings (a MUST) and the
/// document's softer expectations (each a SHOULD), apart.
pub fn check_response(request: &Value, answer: &Value) -> (Vec<Finding>, Vec<Finding>) {
    let must = schemas().validate(RESPONSE_SCHEMA, answer);
    let mut should = Vec::new();
    let status = answer.get("status").and_then(Value::as_str).unwrap_or("");
    let non_empty = |field: &str| match answer.get(field) {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        _ => false,
    };
    should.extend(unexplained_rejection(answer));
    match status {
        "escalated" if !non_empty("escalation_reason") => should.push(finding(
            "escalation_reason",
            "an escalation gives no reason",
        )),
        "approved"
            if request.get("action").and_then(Value::as_str) == Some("create")
                && request.get("request_type").and_then(Value::as_str) == Some("APPROVAL")
                && !non_empty("approved_location") =>
        {
            should.push(finding(
                "approved_location",
                "an approved create says nowhere to place the content",
            ))
        }
        _ => {}
    }
    let request_type = request
        .get("request_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    if request_type == "QUERY"
        && status == "approved"
        && !non_empty("context")
        && !non_empty("relevant_nodes")
    {
        should.push(finding(
            "context",
            "a QUERY answer carries neither context nor relevant_nodes",
        ));
    }
    if let Some(fits) = status_fits(request_type, status) {
        should.push(fits);
    }
    if let Some(object) = answer.as_object() {
        let missing: Vec<&str> = RESPONSE_FIELDS
            .iter()
            .copied()
            .filter(|f| !object.contains_key(*f))
            .collect();
        if !missing.is_empty() {
            should.push(finding(
                "$",
                format!(
                    "LibrarianResponse fields missing: {} (the document's dataclass lists them all; null or [] when empty)",
                    missing.join(", ")
                ),
            ));
        }
    }
    (must, should)
}

/// A rejection that names no violation (the document's "Handling Rejection" reads
/// `response.violations` to fix and resubmit), whatever was asked: a refusal of a limit breach
/// (six deviations, strict mode, a secret) is as much a rejection as one of a valid request.
pub fn unexplained_rejection(answer: &Value) -> Option<Finding> {
    let named = match answer.get("violations") {
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    (answer.get("status").and_then(Value::as_str) == Some("rejected") && !named).then(|| {
        finding(
            "violations",
            "a rejection carries no violation: the agent cannot tell what to fix",
        )
    })
}

/// An answer of POST /agent/request judged as the probe and the fleet both judge every answer
/// they get; None when it is nothing to judge (a 4xx or a 5xx that is no rejection: the cases
/// of refusals and of 5xx judge those).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Breaks of the response schema (MUST): a 2xx is a LibrarianResponse.
    pub must: Vec<Finding>,
    /// The document's expectations (SHOULD): all of them for an answer to a valid request;
    /// for any other, that a rejection names its violations.
    pub should: Vec<Finding>,
}

/// Judges `answer` (the parsed body; None: not JSON), answered `status` to `request` (None: a
/// body that is not JSON).
pub fn judge_answer(
    request: Option<&Value>,
    status: u16,
    answer: Option<&Value>,
) -> Option<Judged> {
    let valid = request.is_some_and(|r| schemas().validate(REQUEST_SCHEMA, r).is_empty());
    let two = (200..300).contains(&status);
    match (answer, request) {
        (None, _) if two => Some(Judged {
            must: vec![finding("$", "the answer is not JSON")],
            should: Vec::new(),
        }),
        (Some(answer), Some(request)) if two && valid => {
            let (must, should) = check_response(request, answer);
            Some(Judged { must, should })
        }
        (Some(answer), _) if two => Some(Judged {
            must: schemas().validate(RESPONSE_SCHEMA, answer),
            should: unexplained_rejection(answer).into_iter().collect(),
        }),
        (Some(answer), _) if answer.get("status").and_then(Value::as_str) == Some("rejected") => {
            Some(Judged {
                must: Vec::new(),
                should: unexplained_rejection(answer).into_iter().collect(),
            })
        }
        _ => None,
    }
}

/// The header of a 429 that says when to come back: Retry-After, or a rate-limit header
/// (`X-RateLimit-*`, `RateLimit-*`) — the document's "check rate limit headers".
pub fn says_when_to_return(headers: &[(String, String)]) -> Option<&(String, String)> {
    headers.iter().find(|(n, _)| {
        let n = n.to_ascii_lowercase();
        n == "retry-after" || n.starts_with("x-ratelimit") || n.starts_with("ratelimit")
    })
}

/// A status that does not fit the request type: a QUERY or a REPORT is not escalated to a human.
fn status_fits(request_type: &str, status: &str) -> Option<Finding> {
    (matches!(request_type, "QUERY" | "REPORT") && status == "escalated").then(|| {
        finding(
            "status",
            format!("a {request_type} escalated to a human: nothing in it asks for a decision"),
        )
    })
}

/// Whether the answer names `field` (in its feedback, violations or suggestions): a refusal
/// for a missing field SHOULD say which.
pub fn names_field(answer: &Value, field: &str) -> bool {
    crate::jsonpath::strings(answer)
        .iter()
        .any(|(_, text)| text.contains(field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_requests_are_valid_and_break_when_a_required_field_goes() {
        for t in REQUEST_TYPES {
            let r = request("claude-3", t, 1);
            assert_eq!(schemas().validate(REQUEST_SCHEMA, &r), vec![], "{t}");
            for field in required_fields(t) {
                let mut broken = r.clone();
                broken.as_object_mut().unwrap().remove(*field);
                let findings = schemas().validate(REQUEST_SCHEMA, &broken);
                assert!(
                    findings.iter().any(|f| f.message.contains(field)),
                    "{t} without {field}: {findings:?}"
                );
            }
        }
        let mut bad = request("a", "APPROVAL", 1);
        bad["target_type"] = json!("everything");
        bad["timestamp"] = json!("yesterday");
        let findings = schemas().validate(REQUEST_SCHEMA, &bad);
        assert!(
            findings.iter().any(|f| f.path.contains("target_type")),
            "{findings:?}"
        );
        assert!(
            findings.iter().any(|f| f.path.contains("timestamp")),
            "{findings:?}"
        );
    }

    #[test]
    fn answers_are_judged_by_schema_and_by_the_documents_expectations() {
        let approval = request("a", "APPROVAL", 1);
        let full = json!({
            "request_id": "r1", "timestamp": "2026-11-23T10:00:00Z", "processing_time_ms": 12,
            "status": "approved", "confidence": 0.9, "feedback": "ok", "violations": [],
            "suggestions": [], "approved_location": "docs/design/x.md", "assigned_id": "n1",
            "constraints": [], "escalation_reason": null, "human_review_url": null,
            "estimated_review_time": null, "context": null, "relevant_nodes": null
        });
        assert_eq!(check_response(&approval, &full), (vec![], vec![]));
        let mut rejected = full.clone();
        rejected["status"] = json!("rejected");
        let (must, should) = check_response(&approval, &rejected);
        assert!(must.is_empty());
        assert_eq!(should[0].path, "violations");
        let mut wrong = full.clone();
        wrong["confidence"] = json!(1.5);
        wrong["violations"] = json!([{"rule": "x"}]);
        let (must, _) = check_response(&approval, &wrong);
        assert!(must.iter().any(|f| f.path == "confidence"), "{must:?}");
        assert!(
            must.iter().any(|f| f.message.contains("description")),
            "{must:?}"
        );
        let (_, should) =
            check_response(&approval, &json!({"request_id": "r", "status": "approved"}));
        assert!(should.iter().any(|f| f.path == "approved_location"));
        assert!(should.iter().any(|f| f.message.contains("fields missing")));
        let mut query_answer = full.clone();
        query_answer["context"] = json!(null);
        let (_, should) = check_response(&request("a", "QUERY", 1), &query_answer);
        assert!(should.iter().any(|f| f.path == "context"), "{should:?}");
        query_answer["status"] = json!("escalated");
        query_answer["escalation_reason"] = json!("why not");
        let (_, should) = check_response(&request("a", "QUERY", 1), &query_answer);
        assert!(should.iter().any(|f| f.path == "status"), "{should:?}");
    }

    /// Every rejection is judged for its violations, whatever was asked and whatever its HTTP
    /// status; a refusal that is no LibrarianResponse is not the shared judge's to judge.
    #[test]
    fn every_rejection_is_judged_and_a_2xx_is_held_to_the_schema() {
        let valid = request("a", "APPROVAL", 1);
        let mut over = valid.clone();
        over["deviations"] = json!([{}, {}, {}, {}, {}, {}]);
        let mut invalid = valid.clone();
        invalid.as_object_mut().unwrap().remove("rationale");
        let silent = json!({"status": "rejected", "violations": []});
        for (asked, status) in [
            (Some(&over), 200),
            (Some(&over), 422),
            (Some(&invalid), 200),
            (None, 400),
        ] {
            let judged = judge_answer(asked, status, Some(&silent)).unwrap();
            assert!(
                judged.should.iter().any(|f| f.path == "violations"),
                "{status}: {judged:?}"
            );
        }
        let named =
            json!({"status": "rejected", "violations": [{"rule": "r", "description": "d"}]});
        assert_eq!(
            judge_answer(None, 422, Some(&named)).map(|j| j.should),
            Some(vec![])
        );
        assert_eq!(
            judge_answer(Some(&valid), 400, Some(&json!({"detail": "no"}))),
            None
        );
        assert_eq!(judge_answer(Some(&valid), 500, None), None);
        let not_json = judge_answer(Some(&valid), 200, None).unwrap();
        assert_eq!(not_json.must[0].message, "the answer is not JSON");
        let odd = json!({"request_id": "r", "status": "success", "confidence": 90});
        let must = judge_answer(None, 200, Some(&odd)).unwrap().must;
        assert!(must.iter().any(|f| f.path == "status"), "{must:?}");
        assert!(must.iter().any(|f| f.path == "confidence"), "{must:?}");
    }

    #[test]
    fn a_429_says_when_to_come_back_by_retry_after_or_a_rate_limit_header() {
        let h = |n: &str| vec![(n.to_string(), "7".to_string())];
        for says in ["Retry-After", "x-ratelimit-reset", "RateLimit-Reset"] {
            assert!(says_when_to_return(&h(says)).is_some(), "{says}");
        }
        assert_eq!(says_when_to_return(&h("content-type")), None);
    }

    #[test]
    fn governance_states_move_forward_only() {
        use State::*;
        assert!(Pending.may_follow(Validating));
        assert!(Validating.may_follow(Approved));
        assert!(
            Pending.may_follow(Completed),
            "a poller may miss states between"
        );
        assert!(Escalated.may_follow(Approved));
        assert!(Approved.may_follow(Completed));
        assert!(!Approved.may_follow(Rejected));
        assert!(!Rejected.may_follow(Approved));
        assert!(!Completed.may_follow(Pending));
        assert!(!Validating.may_follow(Pending));
        assert_eq!(State::parse("completed"), Some(Completed));
        assert_eq!(State::parse("DONE"), None);
    }
}
