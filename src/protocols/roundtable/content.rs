//! Round-table content: analyses, challenges, votes and the syntheses a platform sends, built
//! from the seeded words and phrases of [`Content`]. The probe's templates (`analyses(N)`,
//! `synthesis(T, M)`) and the reference agent's answers both come from here, so that the same
//! seed always gives the same deliberation.

use crate::content::Content;

use super::model::{
    AgentAnalysis, AgentChallenge, AgentVote, Challenge, ChallengeRequest, Concession, KeyFinding,
    Observation, Recommendation, Severity, Synthesis, VoteRequest,
};

/// The round table's messages, generated.
pub trait RoundtableContent {
    /// A snake_case agent name, unique by `index` within one round table.
    fn agent_name(&mut self, index: usize) -> String;

    fn domain(&mut self) -> String;

    /// Evidence carrying a well-formed level tag and no speculation.
    fn evidence(&mut self) -> String;

    fn severity(&mut self) -> Severity;

    fn observation(&mut self) -> Observation;

    fn recommendation(&mut self) -> Recommendation;

    /// An analysis by `agent_name` with 1 to 3 observations.
    fn analysis(&mut self, agent_name: &str) -> AgentAnalysis;

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
    fn domain(&mut self) -> String {
        const DOMAINS: [&str; 6] = [
            "application security",
            "code quality",
            "performance",
            "reliability",
            "data privacy",
            "architecture",
        ];
        DOMAINS[self.below(DOMAINS.len())].to_string()
    }

    #[inline]
    fn evidence(&mut self) -> String {
        let file = self.file_name();
        let mut out = match self.below(4) {
            0 => format!("[VERIFIED: {file}:line_{}] ", 1 + self.below(900)),
            1 => format!("[CORROBORATED: {file} + {}] ", self.file_name()),
            2 => format!("[INDICATED: {}] ", self.dir_path()),
            _ => "[POSSIBLE] ".to_string(),
        };
        self.push_sentence(&mut out);
        out
    }

    #[inline]
    fn severity(&mut self) -> Severity {
        [Severity::Critical, Severity::Warning, Severity::Info][self.below(3)]
    }

    #[inline]
    fn observation(&mut self) -> Observation {
        Observation {
            finding: self.catch_phrase(),
            evidence: self.evidence(),
            severity: self.severity(),
            confidence: Some(self.confidence()),
        }
    }

    #[inline]
    fn recommendation(&mut self) -> Recommendation {
        let action = self.business_goal();
        let priority = ["critical", "high", "medium", "low"][self.below(4)].to_string();
        Recommendation {
            action,
            rationale: Some(self.sentence()),
            priority: Some(priority),
        }
    }

    #[inline]
    fn analysis(&mut self, agent_name: &str) -> AgentAnalysis {
        let observations = (0..1 + self.below(3)).map(|_| self.observation()).collect();
        let recommendations = (0..1 + self.below(2))
            .map(|_| self.recommendation())
            .collect();
        AgentAnalysis {
            agent_name: agent_name.to_string(),
            domain: self.domain(),
            observations,
            recommendations: Some(recommendations),
            confidence: Some(self.confidence()),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_content_other_stream_other_content() {
        let a = Content::new(7, "x").analysis("n");
        assert_eq!(a, Content::new(7, "x").analysis("n"));
        assert_ne!(a, Content::new(7, "y").analysis("n"));
        assert_ne!(a, Content::new(8, "x").analysis("n"));
    }
}
