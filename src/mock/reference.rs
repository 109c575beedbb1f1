//! The conforming round-table agent: every answer passes the schemas and the semantic rules (a
//! property test proves it). Content comes from `protocol::content`, seeded by `--seed` and by the
//! request, so the same request always gets the same answer.

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{Reply, Responder};
use crate::protocol::content::Content;
use crate::protocol::roundtable::{AnalyzeRequest, ChallengeRequest, VoteRequest};

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
        Content::new(self.seed, &format!("{}/{endpoint}/{task_id}", self.name))
    }
}

/// Parses a request body (or reads the caller's parse of it), or says (as a 400) what is wrong
/// with it.
fn parse<T: DeserializeOwned>(
    endpoint: &str,
    body: &[u8],
    parsed: Option<&Value>,
) -> Result<T, Reply> {
    let typed = match parsed {
        Some(value) => T::deserialize(value),
        None => serde_json::from_slice(body),
    };
    typed.map_err(|e| {
        Reply::error(
            400,
            format!("/{endpoint}: the request body is not a valid {endpoint} request: {e}"),
        )
    })
}

impl Responder for ReferenceAgent {
    fn respond(&self, endpoint: &str, body: &[u8]) -> Reply {
        self.respond_parsed(endpoint, body, None)
    }

    fn respond_parsed(&self, endpoint: &str, body: &[u8], parsed: Option<&Value>) -> Reply {
        let answer = match endpoint {
            "analyze" => parse::<AnalyzeRequest>(endpoint, body, parsed).map(|r| {
                let mut analysis = self.content(endpoint, &r.task_id).analysis(&self.name);
                analysis.domain = "general review".into();
                Reply::json(200, &analysis)
            }),
            "challenge" => parse::<ChallengeRequest>(endpoint, body, parsed).map(|r| {
                Reply::json(
                    200,
                    &self
                        .content(endpoint, &r.task_id)
                        .challenge_response(&self.name, &r),
                )
            }),
            "vote" => parse::<VoteRequest>(endpoint, body, parsed).map(|r| {
                Reply::json(
                    200,
                    &self
                        .content(endpoint, &r.task_id)
                        .vote_response(&self.name, &r),
                )
            }),
            "health" => Ok(Reply::json(
                200,
                &json!({"status": "ok", "agent_name": self.name}),
            )),
            other => Err(Reply::error(404, format!("no endpoint /{other}"))),
        };
        answer.unwrap_or_else(|e| e)
    }
}
