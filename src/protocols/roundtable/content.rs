//! Round-table content: analyses, challenges, votes and the syntheses a platform sends, built
//! from the seeded words and phrases of [`Content`]. The probe's templates (`analyses(N)`,
//! `synthesis(T, M)`) and the reference agent's answers both come from here, so that the same
//! seed always gives the same deliberation.

use crate::content::{Content, Json, Sink};
use crate::json_out;

use super::model::{
    AgentAnalysis, AgentChallenge, AgentVote, Challenge, ChallengeRequest, Concession, KeyFinding,
    Observation, Recommendation, Severity, Synthesis, VoteRequest,
};

/// The round table's messages, generated.
pub trait RoundtableContent {
    /// A snake_case agent name, unique by `index` within one round table.
    fn agent_name(&mut self, index: usize) -> String;

    fn domain(&mut self) -> &'static str;

    /// Evidence carrying a well-formed level tag and no speculation.
    fn evidence(&mut self) -> String;

    fn push_evidence(&mut self, out: &mut impl Sink);

    fn severity(&mut self) -> Severity;

    fn observation(&mut self) -> Observation;

    /// An observation, written as JSON (the struct form reads this back).
    fn observation_json(&mut self, out: &mut Vec<u8>);

    fn recommendation(&mut self) -> Recommendation;

    fn recommendation_json(&mut self, out: &mut Vec<u8>);

    /// An analysis by `agent_name` with 1 to 3 observations.
    fn analysis(&mut self, agent_name: &str) -> AgentAnalysis;

    /// The same, written as JSON: what a mock agent answers /analyze, generated straight into
    /// the answer's bytes. `domain`: the one to write in place of the drawn one.
    fn analysis_json(&mut self, agent_name: &str, domain: Option<&str>, out: &mut Vec<u8>);

    /// Analyses by `count` distinct agents.
    fn analyses(&mut self, count: usize) -> Vec<AgentAnalysis>;

    fn synthesis(&mut self, trade_offs: usize, minority_views: usize) -> Synthesis;

    /// The reference agent's answer to /challenge: it challenges one finding of every other
    /// agent and concedes another where there is one; nothing when there is no one to challenge.
    fn challenge_response(
        &mut self,
        agent_name: &str,
        request: &ChallengeRequest,
    ) -> AgentChallenge;

    /// The reference agent's vote: it dissents (with a reason) when the synthesis carries
    /// minority views, and otherwise approves with conditions.
    fn vote_response(&mut self, agent_name: &str, request: &VoteRequest) -> AgentVote;
}

impl RoundtableContent for Content {
    /// A snake_case agent name, unique by `index` within one round table.
    #[inline]
    fn agent_name(&mut self, index: usize) -> String {
        const ROLES: [&str; 5] = ["analyst", "reviewer", "auditor", "architect", "tester"];
        let word = self
            .word()
            .to_lowercase()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "");
        format!("{word}_{}_{index}", ROLES[self.below(ROLES.len())])
    }

    #[inline]
    fn domain(&mut self) -> &'static str {
        const DOMAINS: [&str; 6] = [
            "application security",
            "code quality",
            "performance",
            "reliability",
            "data privacy",
            "architecture",
        ];
        DOMAINS[self.below(DOMAINS.len())]
    }

    #[inline]
    fn evidence(&mut self) -> String {
        let mut out = String::with_capacity(96);
        self.push_evidence(&mut out);
        out
    }

    #[inline]
    fn push_evidence(&mut self, out: &mut impl Sink) {
        // The file is drawn first whatever the level (the draw order is the content).
        let file = self.draw_file_name();
        match self.below(4) {
            0 => {
                out.push_word("[VERIFIED: ");
                file.push(out);
                out.push_word(":line_");
                out.push(crate::text::decimal(
                    1 + self.below(900) as u64,
                    &mut [0; 20],
                ));
            }
            1 => {
                out.push_word("[CORROBORATED: ");
                file.push(out);
                out.push_word(" + ");
                self.push_file_name(out);
            }
            2 => {
                out.push_word("[INDICATED: ");
                self.push_dir_path(out);
            }
            _ => out.push_word("[POSSIBLE"),
        }
        out.push_word("] ");
        self.push_sentence(out);
    }

    #[inline]
    fn severity(&mut self) -> Severity {
        [Severity::Critical, Severity::Warning, Severity::Info][self.below(3)]
    }

    fn observation(&mut self) -> Observation {
        read_back(self, |c, out| c.observation_json(out))
    }

    #[inline]
    fn observation_json(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"finding":""#);
        self.push_catch_phrase(&mut Json::new(out));
        out.extend_from_slice(br#"","evidence":""#);
        self.push_evidence(&mut Json::new(out));
        out.extend_from_slice(br#"","severity":""#);
        out.extend_from_slice(match self.severity() {
            Severity::Critical => b"critical",
            Severity::Warning => b"warning",
            Severity::Info => b"info",
        });
        out.extend_from_slice(br#"","confidence":"#);
        json_out::hundredths(out, self.confidence_hundredths());
        out.push(b'}');
    }

    fn recommendation(&mut self) -> Recommendation {
        read_back(self, |c, out| c.recommendation_json(out))
    }

    #[inline]
    fn recommendation_json(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"action":""#);
        self.push_business_goal(&mut Json::new(out));
        let priority = ["critical", "high", "medium", "low"][self.below(4)];
        out.extend_from_slice(br#"","rationale":""#);
        self.push_sentence(&mut Json::new(out));
        out.extend_from_slice(br#"","priority":""#);
        out.extend_from_slice(priority.as_bytes());
        out.extend_from_slice(br#""}"#);
    }

    fn analysis(&mut self, agent_name: &str) -> AgentAnalysis {
        read_back(self, |c, out| c.analysis_json(agent_name, None, out))
    }

    /// Written in the order the parts are drawn (observations, recommendations, domain,
    /// confidence): a JSON object's members have no order.
    #[inline]
    fn analysis_json(&mut self, agent_name: &str, domain: Option<&str>, out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"agent_name":"#);
        json_out::string(out, agent_name);
        out.extend_from_slice(br#","observations":["#);
        for i in 0..1 + self.below(3) {
            if i > 0 {
                out.push(b',');
            }
            self.observation_json(out);
        }
        out.extend_from_slice(br#"],"recommendations":["#);
        for i in 0..1 + self.below(2) {
            if i > 0 {
                out.push(b',');
            }
            self.recommendation_json(out);
        }
        out.extend_from_slice(br#"],"domain":"#);
        let drawn = self.domain();
        json_out::string(out, domain.unwrap_or(drawn));
        out.extend_from_slice(br#","confidence":"#);
        json_out::hundredths(out, self.confidence_hundredths());
        out.push(b'}');
    }

    #[inline]
    fn analyses(&mut self, count: usize) -> Vec<AgentAnalysis> {
        (0..count)
            .map(|i| {
                let name = self.agent_name(i);
                self.analysis(&name)
            })
            .collect()
    }

    #[inline]
    fn synthesis(&mut self, trade_offs: usize, minority_views: usize) -> Synthesis {
        let direction = self.business_goal();
        let key_findings = (0..2)
            .map(|i| {
                let agent = self.agent_name(i);
                let obs = self.observation();
                KeyFinding {
                    agent_name: Some(agent),
                    finding: Some(obs.finding),
                    evidence: Some(obs.evidence),
                }
            })
            .collect();
        Synthesis {
            recommended_direction: direction,
            key_findings: Some(key_findings),
            trade_offs: Some((0..trade_offs).map(|_| self.sentence()).collect()),
            minority_views: Some(
                (0..minority_views)
                    .map(|_| serde_json::Value::String(self.sentence()))
                    .collect(),
            ),
        }
    }

    #[inline]
    fn challenge_response(
        &mut self,
        agent_name: &str,
        request: &ChallengeRequest,
    ) -> AgentChallenge {
        let mut challenges = Vec::new();
        let mut concessions = Vec::new();
        for other in &request.other_analyses {
            let mut findings = other.observations.iter().map(|o| o.finding.clone());
            if let Some(first) = findings.next() {
                challenges.push(Challenge {
                    target_agent: other.agent_name.clone(),
                    finding_challenged: first,
                    counter_evidence: Some(self.evidence()),
                });
            }
            if let Some(second) = findings.next() {
                concessions.push(Concession {
                    target_agent: other.agent_name.clone(),
                    finding_accepted: second,
                    reason: Some(self.sentence()),
                });
            }
        }
        AgentChallenge {
            agent_name: agent_name.to_string(),
            challenges: Some(challenges),
            concessions: Some(concessions),
        }
    }

    #[inline]
    fn vote_response(&mut self, agent_name: &str, request: &VoteRequest) -> AgentVote {
        let dissent = request
            .synthesis
            .minority_views
            .as_ref()
            .is_some_and(|m| !m.is_empty());
        if dissent {
            AgentVote {
                agent_name: agent_name.to_string(),
                approve: false,
                conditions: None,
                dissent_reason: Some(self.sentence()),
            }
        } else {
            let conditions = (0..1 + self.below(3)).map(|_| self.sentence()).collect();
            AgentVote {
                agent_name: agent_name.to_string(),
                approve: true,
                conditions: Some(conditions),
                dissent_reason: None,
            }
        }
    }
}

/// The struct form of something generated as JSON: the JSON read back, so that one piece of
/// code decides what is drawn in which order.
fn read_back<T: serde::de::DeserializeOwned>(
    content: &mut Content,
    write: impl FnOnce(&mut Content, &mut Vec<u8>),
) -> T {
    let mut out = Vec::with_capacity(512);
    write(content, &mut out);
    // Our own bytes: the tests read back every shape (a failure here is a bug in the writer).
    serde_json::from_slice(&out).expect("generated JSON reads back")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON written straight into an answer is valid JSON, meets the response schema, and
    /// is what the struct form holds, for names that need escapes too.
    #[test]
    fn analyses_written_as_json_meet_the_schema_and_read_back() {
        let schemas = crate::schema::schemas();
        for seed in 0..300 {
            let name = if seed % 3 == 0 {
                "a \"quoted\"\tname"
            } else {
                "agent-1"
            };
            let mut out = Vec::new();
            Content::new(seed, "s").analysis_json(name, Some("general review"), &mut out);
            let value: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
            let findings = schemas.validate("roundtable/analyze.response", &value);
            assert!(findings.is_empty(), "{findings:?}");
            assert_eq!(value["agent_name"], name);
            assert_eq!(value["domain"], "general review");
            let analysis = Content::new(seed, "s").analysis(name);
            let mut drawn = serde_json::to_value(&analysis).unwrap();
            drawn["domain"] = "general review".into();
            assert_eq!(value, drawn);
        }
    }

    #[test]
    fn same_seed_same_content_other_stream_other_content() {
        let a = Content::new(7, "x").analysis("n");
        assert_eq!(a, Content::new(7, "x").analysis("n"));
        assert_ne!(a, Content::new(7, "y").analysis("n"));
        assert_ne!(a, Content::new(8, "x").analysis("n"));
    }
}
