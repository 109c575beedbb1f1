//! The round-table External Agent Protocol (specs/roundtable-external-agent-protocol.md):
//! POST /analyze, /challenge, /vote. Types mirror `schemas/roundtable/*.json` (a test proves it);
//! the functions below are the rules a schema cannot express. They read `serde_json::Value`s,
//! because they judge what an agent actually sent, and they never panic on odd shapes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schema::finding;
use crate::schema::Finding;
use crate::text::excerpt_str;

/// The three endpoints, in deliberation order.
pub const ENDPOINTS: [&str; 3] = ["analyze", "challenge", "vote"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyzeRequest {
    pub task_id: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<serde_json::Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    Warning,
    Info,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub finding: String,
    pub evidence: String,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
}

/// The /analyze response; also each entry of /challenge's `other_analyses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentAnalysis {
    pub agent_name: String,
    pub domain: String,
    pub observations: Vec<Observation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendations: Option<Vec<Recommendation>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChallengeRequest {
    pub task_id: String,
    pub content: String,
    pub other_analyses: Vec<AgentAnalysis>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Challenge {
    pub target_agent: String,
    pub finding_challenged: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_evidence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Concession {
    pub target_agent: String,
    pub finding_accepted: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentChallenge {
    pub agent_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenges: Option<Vec<Challenge>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concessions: Option<Vec<Concession>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyFinding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Synthesis {
    pub recommended_direction: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_findings: Option<Vec<KeyFinding>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_offs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minority_views: Option<Vec<Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteRequest {
    pub task_id: String,
    pub content: String,
    pub synthesis: Synthesis,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentVote {
    pub agent_name: String,
    pub approve: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<String>>,
    /// Serialized as `null` when absent, as the spec's example shows.
    #[serde(default)]
    pub dissent_reason: Option<String>,
}

fn is_blank(value: Option<&Value>) -> Option<&'static str> {
    match value {
        None => Some("is missing"),
        Some(Value::Null) => Some("is null"),
        Some(Value::String(s)) if s.trim().is_empty() => Some("is empty"),
        Some(Value::String(_)) => None,
        Some(_) => Some("is not a string"),
    }
}

/// A dissent (`approve: false`) carries a non-empty `dissent_reason` (spec: POST /vote).
pub fn dissent_has_reason(vote: &Value) -> Vec<Finding> {
    if vote.get("approve") != Some(&Value::Bool(false)) {
        return Vec::new();
    }
    match is_blank(vote.get("dissent_reason")) {
        Some(how) => vec![finding(
            "dissent_reason",
            format!("{how}, but approve is false: a dissent must say why"),
        )],
        None => Vec::new(),
    }
}

/// Every challenge carries non-empty `counter_evidence` (spec: POST /challenge).
pub fn challenges_have_counter_evidence(challenge: &Value) -> Vec<Finding> {
    items(challenge, "challenges")
        .filter_map(|(i, c)| {
            is_blank(c.get("counter_evidence")).map(|how| {
                finding(
                    format!("challenges[{i}].counter_evidence"),
                    format!("{how}: a challenge must include counter-evidence"),
                )
            })
        })
        .collect()
}

/// Challenges and concessions name an agent that was in the request's `other_analyses`.
pub fn targets_are_known(challenge: &Value, request: &Value) -> Vec<Finding> {
    let known: Vec<&str> = request
        .get("other_analyses")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("agent_name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let listed = if known.is_empty() {
        "other_analyses was empty".to_string()
    } else {
        format!("other_analyses named {}", known.join(", "))
    };
    let mut out = Vec::new();
    for list in ["challenges", "concessions"] {
        for (i, item) in items(challenge, list) {
            let target = item
                .get("target_agent")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !known.contains(&target) {
                out.push(finding(
                    format!("{list}[{i}].target_agent"),
                    format!(
                        "{} is not an agent of this round table ({listed})",
                        excerpt_str(&Value::from(target).to_string(), 80)
                    ),
                ));
            }
        }
    }
    out
}

/// `agent_name` is the same at every endpoint. `names` holds (endpoint, the name it answered).
pub fn agent_name_consistent(names: &[(String, String)]) -> Vec<Finding> {
    let Some((first_endpoint, first)) = names.first() else {
        return Vec::new();
    };
    names
        .iter()
        .skip(1)
        .filter(|(_, name)| name != first)
        .map(|(endpoint, name)| {
            finding(
                format!("/{endpoint} agent_name"),
                format!(
                    "{} differs from {} answered by /{first_endpoint}",
                    quoted(name),
                    quoted(first)
                ),
            )
        })
        .collect()
}

fn quoted(text: &str) -> String {
    excerpt_str(&Value::from(text).to_string(), 80)
}

fn items<'a>(value: &'a Value, list: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    value
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dissent_rule() {
        assert!(dissent_has_reason(&json!({"approve": true})).is_empty());
        assert!(dissent_has_reason(&json!({"approve": false, "dissent_reason": "x"})).is_empty());
        for bad in [
            json!({"approve": false}),
            json!({"approve": false, "dissent_reason": null}),
            json!({"approve": false, "dissent_reason": "  "}),
        ] {
            let f = dissent_has_reason(&bad);
            assert_eq!(f.len(), 1, "{bad}");
            assert_eq!(f[0].path, "dissent_reason");
        }
    }

    #[test]
    fn counter_evidence_rule() {
        let c = json!({"challenges": [{"counter_evidence": "x"}, {"counter_evidence": ""}, {}]});
        let f = challenges_have_counter_evidence(&c);
        assert_eq!(
            f.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            [
                "challenges[1].counter_evidence",
                "challenges[2].counter_evidence"
            ]
        );
    }

    #[test]
    fn target_rule() {
        let req = json!({"other_analyses": [{"agent_name": "a"}, {"agent_name": "b"}]});
        let c = json!({"challenges": [{"target_agent": "a"}], "concessions": [{"target_agent": "ghost"}]});
        let f = targets_are_known(&c, &req);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].path, "concessions[0].target_agent");
        assert!(
            f[0].message.contains("\"ghost\"") && f[0].message.contains("a, b"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn name_rule() {
        let n = |e: &str, a: &str| (e.to_string(), a.to_string());
        assert!(agent_name_consistent(&[n("analyze", "x"), n("challenge", "x")]).is_empty());
        let f = agent_name_consistent(&[n("analyze", "x"), n("challenge", "x"), n("vote", "y")]);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].to_string(),
            "/vote agent_name: \"y\" differs from \"x\" answered by /analyze"
        );
    }
}
