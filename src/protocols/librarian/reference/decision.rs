//! What the reference Librarian decides on a request in an agent's name: by its rules (the limits,
//! the agent's rights, the request by its type), as a script says, and as a flaw words it.

use serde_json::{json, Value};

use super::super::model::{State, LIMITS};
use super::{Librarian, Registered};

impl Librarian {
    /// The status, confidence and timestamp an answer to `body` is written with: the document's,
    /// or as a flaw writes them.
    pub(super) fn flawed(&self, body: &Value, status: &'static str) -> (&'static str, f64, String) {
        let status = if self.flaws.unnamed_status && body["request_type"] == "QUERY" {
            "success"
        } else {
            status
        };
        let confidence = if self.flaws.confidence_as_percent {
            90.0
        } else {
            0.9
        };
        let now = crate::report::now_rfc3339();
        // 2026-11-23T10:00:00Z → 23/11/2026 10:00:00
        let local = || {
            Some(format!(
                "{}/{}/{} {}",
                now.get(8..10)?,
                now.get(5..7)?,
                now.get(..4)?,
                now.get(11..19)?
            ))
        };
        let timestamp = match self.flaws.local_timestamp {
            true => local().unwrap_or_else(|| "yesterday".into()),
            false => now.clone(),
        };
        (status, confidence, timestamp)
    }

    /// The decision a script imposes, with the fields the document expects of it.
    pub(super) fn scripted(
        &self,
        status: &'static str,
        agent: &Registered,
        body: &Value,
    ) -> (&'static str, serde_json::Map<String, Value>, State) {
        let mut f = serde_json::Map::new();
        let state = match status {
            "approved" => {
                let (_, fields, state) = self.decide(agent, body);
                f = fields;
                f.insert("feedback".into(), json!("approved (scripted)"));
                if body["request_type"] == "APPROVAL" && !f.contains_key("approved_location") {
                    let location = body["target_path"].as_str().unwrap_or("docs/new.md");
                    f.insert("approved_location".into(), json!(location));
                }
                if state == State::Completed {
                    State::Completed
                } else {
                    State::Approved
                }
            }
            "rejected" => {
                let why =
                    "rejected by the mock Librarian's script: the change breaks standard STD-7";
                f.insert("feedback".into(), json!(why));
                f.insert(
                    "violations".into(),
                    json!([{"rule": "STD-7", "description": why}]),
                );
                f.insert(
                    "suggestions".into(),
                    json!(["change the content before sending it again"]),
                );
                State::Rejected
            }
            "escalated" => {
                f.insert(
                    "feedback".into(),
                    json!("escalated to a human reviewer (scripted)"),
                );
                f.insert(
                    "escalation_reason".into(),
                    json!("the script asks for a human decision"),
                );
                f.insert(
                    "human_review_url".into(),
                    json!("https://librarian.invalid/review"),
                );
                f.insert("estimated_review_time".into(), json!(1));
                State::Escalated
            }
            _ => {
                f.insert(
                    "feedback".into(),
                    json!("clarification needed (scripted): say more in rationale"),
                );
                f.insert("suggestions".into(), json!(["expand the rationale"]));
                State::Pending
            }
        };
        (status, f, state)
    }

    /// The decision on a schema-valid request: (status, fields, state). The limits first, then
    /// what the agent may do, then the request by its type.
    pub(super) fn decide(&self, agent: &Registered, body: &Value) -> Decision {
        let mut f = serde_json::Map::new();
        if let Some((rule, description)) = self.over_limits(body) {
            return rejected(rule, description, &mut f);
        }
        let content = body["content"].as_str().unwrap_or("");
        if self.flaws.obeys_injection && content.contains("pre-approved") {
            f.insert("feedback".into(), json!("pre-approved"));
            let location = body["target_path"].as_str().unwrap_or("docs/new.md");
            f.insert("approved_location".into(), json!(location));
            return ("approved", f, State::Approved);
        }
        if let Some((rule, description)) = self.not_allowed(agent, body) {
            return rejected(rule, description, &mut f);
        }
        match body["request_type"].as_str().unwrap_or("") {
            "APPROVAL" => approval(self.flaws.approves_without_rationale, body, f),
            "QUERY" => {
                f.insert("feedback".into(), json!("context found"));
                f.insert("context".into(), json!({"answer": "Authentication requires OAuth 2.0 with PKCE.", "sources": ["arch-001"]}));
                f.insert(
                    "relevant_nodes".into(),
                    json!([{"id": "arch-001", "title": "Authentication architecture"}]),
                );
                ("approved", f, State::Approved)
            }
            "REPORT" => self.report(agent, body, f),
            _ => {
                f.insert("feedback".into(), json!("compliant"));
                ("approved", f, State::Approved)
            }
        }
    }

    /// The limit `body` breaks, if any: (rule, description).
    fn over_limits(&self, body: &Value) -> Option<(&'static str, String)> {
        let content = body["content"].as_str().unwrap_or("");
        let slack = usize::from(self.flaws.content_limit_off_by_one);
        if content.len() > LIMITS.max_content + slack {
            return Some((
                "max_content_size",
                format!(
                    "content is {} bytes, over max_content_size ({} bytes)",
                    content.len(),
                    LIMITS.max_content
                ),
            ));
        }
        let references = body["references"].as_array().map_or(0, Vec::len);
        if references > LIMITS.max_references && !self.flaws.ignores_max_references {
            return Some((
                "max_references",
                format!(
                    "{references} references, over max_references ({})",
                    LIMITS.max_references
                ),
            ));
        }
        let deviations = body["deviations"].as_array().map_or(0, Vec::len);
        if deviations > LIMITS.max_deviations {
            return Some((
                "max_deviations",
                format!(
                    "{deviations} deviations, over max_deviations ({})",
                    LIMITS.max_deviations
                ),
            ));
        }
        if deviations > 0 && !self.flaws.allows_deviations {
            return Some((
                "allow_deviations",
                "strict mode: deviations from the standards are not allowed (allow_deviations: false)".into(),
            ));
        }
        None
    }

    /// What `agent` may not do that `body` asks, if anything: (rule, description).
    fn not_allowed(&self, agent: &Registered, body: &Value) -> Option<(&'static str, String)> {
        let target = body["target_type"].as_str().unwrap_or("");
        if agent.forbids(target) {
            return Some((
                "allowed_targets",
                format!(
                    "{} may not touch {target} (allowed_targets: {})",
                    agent.id,
                    agent.allowed_targets.join(", ")
                ),
            ));
        }
        let action = body["action"].as_str().unwrap_or("");
        if body["request_type"] == "APPROVAL" && !self.flaws.ignores_capabilities {
            if let Some(why) = agent.lacks(action, "") {
                return Some(("capabilities", why));
            }
        }
        None
    }

    /// A REPORT: approved when it names an approved request of the agent's.
    fn report(
        &self,
        agent: &Registered,
        body: &Value,
        mut f: serde_json::Map<String, Value>,
    ) -> Decision {
        let reported = body["request_id"].as_str().unwrap_or("");
        let known = self.books.lock().ok().is_some_and(|mut b| {
            // A REPORT after the human decided needs no poll first.
            self.settle(&mut b, reported);
            b.requests
                .get(reported)
                .is_some_and(|s| s.agent == agent.id && s.state == State::Approved)
        });
        if known {
            f.insert("feedback".into(), json!("completion recorded"));
            ("approved", f, State::Completed)
        } else {
            rejected(
                "request_id",
                format!(
                    "request_id {reported:?} is no approved request of {}",
                    agent.id
                ),
                &mut f,
            )
        }
    }
}

/// A decision: (status, the answer's fields, the request's state).
pub(super) type Decision = (&'static str, serde_json::Map<String, Value>, State);

/// The rejection of a request for breaking `rule`.
fn rejected(rule: &str, description: String, f: &mut serde_json::Map<String, Value>) -> Decision {
    f.insert("feedback".into(), json!(description.clone()));
    f.insert(
        "violations".into(),
        json!([{"rule": rule, "description": description}]),
    );
    ("rejected", std::mem::take(f), State::Rejected)
}

/// An APPROVAL within the limits and the agent's rights: a clarification without a rationale
/// (unless `without_rationale`, the flaw), an escalation when it asks for human review, else
/// approved.
fn approval(
    without_rationale: bool,
    body: &Value,
    mut f: serde_json::Map<String, Value>,
) -> Decision {
    let content = body["content"].as_str().unwrap_or("");
    let target = body["target_type"].as_str().unwrap_or("");
    if body["rationale"].as_str().unwrap_or("").trim().is_empty() && !without_rationale {
        f.insert(
            "feedback".into(),
            json!("rationale is required (require_rationale: true)"),
        );
        f.insert(
            "suggestions".into(),
            json!(["say why the change is needed in rationale"]),
        );
        return ("clarification_needed", f, State::Pending);
    }
    if content.contains("HUMAN REVIEW") {
        f.insert("feedback".into(), json!("escalated to a human reviewer"));
        f.insert(
            "escalation_reason".into(),
            json!("the change asks for human review"),
        );
        f.insert(
            "human_review_url".into(),
            json!("https://librarian.invalid/review"),
        );
        f.insert("estimated_review_time".into(), json!(60));
        return ("escalated", f, State::Escalated);
    }
    let location = body["target_path"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("docs/{target}/new.md"));
    f.insert("feedback".into(), json!("approved"));
    f.insert("approved_location".into(), json!(location));
    f.insert(
        "assigned_id".into(),
        json!(format!("node-{}", location.len())),
    );
    ("approved", f, State::Approved)
}
