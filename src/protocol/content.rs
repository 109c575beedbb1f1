//! Generated content, deterministic under `--seed`: the probe's request templates and the
//! reference agent's answers are both made here. Each use draws from its own stream (a name mixed
//! into the seed), so adding a case does not change what other cases send.

use fake::faker::company::en::{Bs, BuzzwordMiddle, CatchPhrase};
use fake::faker::filesystem::en::{DirPath, FileName};
use fake::faker::lorem::en::{Sentence, Word};
use fake::Fake;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::roundtable::{
    AgentAnalysis, AgentChallenge, AgentVote, Challenge, ChallengeRequest, Concession, KeyFinding,
    Observation, Recommendation, Severity, Synthesis, VoteRequest,
};

/// A seeded source of content.
pub struct Content {
    rng: ChaCha8Rng,
}

/// FNV-1a: a stable hash, so the same seed gives the same content on every build and platform.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Samples of scripts and symbols a platform will forward: accents, CJK, emoji (with a ZWJ
/// sequence), right-to-left Arabic and Hebrew.
const UNICODE_SAMPLES: &[&str] = &[
    "Évaluer la sécurité du module d'authentification — façade, naïve, Ångström",
    "認証モジュールのセキュリティ脆弱性を確認してください",
    "审查身份验证模块的安全漏洞",
    "인증 모듈의 보안 취약점 검토",
    "🔐 auth review 🚀 👩‍💻 ✅",
    "راجع وحدة المصادقة بحثًا عن الثغرات الأمنية",
    "סקור את מודול האימות לאיתור פגיעויות",
    "Überprüfe das Anmeldemodul: Größe, Maß, straße",
];

impl Content {
    pub fn new(seed: u64, stream: &str) -> Content {
        Content {
            rng: ChaCha8Rng::seed_from_u64(seed ^ fnv1a(stream)),
        }
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.random_range(0..n)
        }
    }

    pub fn chance(&mut self, probability: f64) -> bool {
        self.rng.random_bool(probability.clamp(0.0, 1.0))
    }

    pub fn task_id(&mut self) -> String {
        format!("{:012x}", self.rng.random::<u64>() & 0xffff_ffff_ffff)
    }

    pub fn word(&mut self) -> String {
        Word().fake_with_rng(&mut self.rng)
    }

    pub fn sentence(&mut self) -> String {
        Sentence(4..9).fake_with_rng(&mut self.rng)
    }

    /// A task as a platform would phrase it.
    pub fn task_content(&mut self) -> String {
        let thing: String = BuzzwordMiddle().fake_with_rng(&mut self.rng);
        let goal: String = Bs().fake_with_rng(&mut self.rng);
        format!(
            "Review the {} module and plan how to {goal}. {}",
            thing.to_lowercase(),
            self.sentence()
        )
    }

    /// Text of exactly `chars` characters (sentences repeated and cut).
    pub fn text(&mut self, chars: usize) -> String {
        let mut out = String::with_capacity(chars + 64);
        while out.chars().count() < chars {
            out.push_str(&self.sentence());
            out.push(' ');
        }
        out.chars().take(chars).collect()
    }

    /// A task in several scripts at once.
    pub fn unicode_text(&mut self) -> String {
        let mut picks: Vec<&str> = UNICODE_SAMPLES.to_vec();
        let first = self.below(picks.len());
        picks.rotate_left(first);
        picks.join(" · ")
    }

    /// A snake_case agent name, unique by `index` within one round table.
    pub fn agent_name(&mut self, index: usize) -> String {
        const ROLES: [&str; 5] = ["analyst", "reviewer", "auditor", "architect", "tester"];
        let word = self
            .word()
            .to_lowercase()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "");
        format!("{word}_{}_{index}", ROLES[self.below(ROLES.len())])
    }

    pub fn domain(&mut self) -> String {
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

    /// Evidence carrying a well-formed level tag and no speculation.
    pub fn evidence(&mut self) -> String {
        let file: String = FileName().fake_with_rng(&mut self.rng);
        let tag = match self.below(4) {
            0 => format!("[VERIFIED: {file}:line_{}]", 1 + self.below(900)),
            1 => {
                let other: String = FileName().fake_with_rng(&mut self.rng);
                format!("[CORROBORATED: {file} + {other}]")
            }
            2 => {
                let dir: String = DirPath().fake_with_rng(&mut self.rng);
                format!("[INDICATED: {dir}]")
            }
            _ => "[POSSIBLE]".to_string(),
        };
        format!("{tag} {}", self.sentence())
    }

    fn severity(&mut self) -> Severity {
        [Severity::Critical, Severity::Warning, Severity::Info][self.below(3)]
    }

    fn confidence(&mut self) -> f64 {
        f64::from(self.rng.random_range(5..=100u32)) / 100.0
    }

    pub fn observation(&mut self) -> Observation {
        let finding: String = CatchPhrase().fake_with_rng(&mut self.rng);
        Observation {
            finding,
            evidence: self.evidence(),
            severity: self.severity(),
            confidence: Some(self.confidence()),
        }
    }

    pub fn recommendation(&mut self) -> Recommendation {
        let action: String = Bs().fake_with_rng(&mut self.rng);
        let priority = ["critical", "high", "medium", "low"][self.below(4)].to_string();
        Recommendation {
            action: capitalize(&action),
            rationale: Some(self.sentence()),
            priority: Some(priority),
        }
    }

    /// An analysis by `agent_name` with 1 to 3 observations.
    pub fn analysis(&mut self, agent_name: &str) -> AgentAnalysis {
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

    /// Analyses by `count` distinct agents.
    pub fn analyses(&mut self, count: usize) -> Vec<AgentAnalysis> {
        (0..count)
            .map(|i| {
                let name = self.agent_name(i);
                self.analysis(&name)
            })
            .collect()
    }

    pub fn synthesis(&mut self, trade_offs: usize, minority_views: usize) -> Synthesis {
        let direction: String = Bs().fake_with_rng(&mut self.rng);
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
            recommended_direction: capitalize(&direction),
            key_findings: Some(key_findings),
            trade_offs: Some((0..trade_offs).map(|_| self.sentence()).collect()),
            minority_views: Some(
                (0..minority_views)
                    .map(|_| serde_json::Value::String(self.sentence()))
                    .collect(),
            ),
        }
    }

    /// The reference agent's answer to /challenge: it challenges one finding of every other
    /// agent and concedes another where there is one; nothing when there is no one to challenge.
    pub fn challenge_response(
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

    /// The reference agent's vote: it dissents (with a reason) when the synthesis carries
    /// minority views, and otherwise approves with conditions.
    pub fn vote_response(&mut self, agent_name: &str, request: &VoteRequest) -> AgentVote {
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

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
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

    #[test]
    fn text_has_the_asked_length() {
        assert_eq!(Content::new(1, "t").text(1234).chars().count(), 1234);
    }
}
