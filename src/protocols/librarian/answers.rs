//! The rules every answer of a Librarian is held to, whoever asked and whatever the asker did
//! wrong, tallied per client: no 5xx (nor no answer), a 2xx is a LibrarianResponse of the
//! schema, answers meet the document's expectations (`model::judge_answer`), a 429 says when
//! to come back (`model::says_when_to_return`). The client fleet and the proxy before a real
//! Librarian both judge the server by them: the same cases, the same ids.

use std::collections::BTreeMap;

use serde_json::Value;

use super::model::Judged;
use crate::report::{CaseResult, Evidence, Level};
use crate::schema::findings_message;

/// One client's share of a rule.
#[derive(Default)]
pub(crate) struct Count {
    checked: u64,
    broken: u64,
    examples: Vec<String>,
    /// Answers that said nothing of the rule, by why.
    unjudged: BTreeMap<&'static str, u64>,
}

/// A rule's answers per client, so that one client's noise does not hide another's fault.
#[derive(Default)]
pub(crate) struct ByClient(BTreeMap<String, Count>);

/// Examples kept per client.
pub(crate) const PER_CLIENT: usize = 2;

impl ByClient {
    pub(crate) fn check(&mut self, label: &str, ok: bool, example: impl FnOnce() -> String) {
        let count = self.0.entry(label.to_string()).or_default();
        count.checked += 1;
        if !ok {
            count.broken += 1;
            if count.examples.len() < PER_CLIENT {
                count.examples.push(example());
            }
        }
    }

    pub(crate) fn unjudged(&mut self, label: &str, why: &'static str) {
        *self
            .0
            .entry(label.to_string())
            .or_default()
            .unjudged
            .entry(why)
            .or_default() += 1;
    }

    /// "client: N answers … " lines for the answers that said nothing.
    pub(crate) fn unjudged_lines(&self) -> Vec<String> {
        self.0
            .iter()
            .flat_map(|(client, count)| {
                count
                    .unjudged
                    .iter()
                    .map(move |(why, n)| format!("{client}: {n} not judged: {why}"))
            })
            .collect()
    }

    /// The rule's case: failed naming each client that broke it (its count and examples),
    /// passed on what was checked, or skipped saying `unexercised`; either way it says which
    /// answers went unjudged and why.
    pub(crate) fn case(
        &self,
        id: &str,
        level: Level,
        title: &str,
        spec: &str,
        of: &str,
        unexercised: &str,
    ) -> CaseResult {
        let mut case = CaseResult::new(id, "fleet", level, title, spec);
        let checked: u64 = self.0.values().map(|c| c.checked).sum();
        let broken: u64 = self.0.values().map(|c| c.broken).sum();
        let evidence = Evidence::new(checked, of);
        let unjudged = self.unjudged_lines();
        let also = if unjudged.is_empty() {
            String::new()
        } else {
            format!("\n  {}", unjudged.join("\n  "))
        };
        if broken > 0 {
            let faults: Vec<String> = self
                .0
                .iter()
                .filter(|(_, c)| c.broken > 0)
                .map(|(client, c)| {
                    format!(
                        "{client}: {} ({} of its {})",
                        c.examples.join(" | "),
                        c.broken,
                        c.checked
                    )
                })
                .collect();
            case.fail_on(
                evidence,
                format!(
                    "{broken} of {checked} {of} break the rule, by client:\n  {}{also}",
                    faults.join("\n  ")
                ),
            );
        } else {
            case.pass_noting(evidence, format!("{checked} {of} held{also}"), || {
                format!("not judged: {unexercised}{also}")
            });
        }
        case
    }
}

/// The server's answers, by the rules every answer is held to.
#[derive(Default)]
pub(crate) struct ServerAnswers {
    /// Every request, by whether it got an answer under 500.
    pub(crate) no5xx: ByClient,
    /// Every answer, by the probe's rules: the schema (MUST) and the document's expectations
    /// (SHOULD).
    answers: ByClient,
    expected: ByClient,
    /// Every 429, by whether it says when to come back.
    come_back: ByClient,
}

impl ServerAnswers {
    /// The answer itself, whichever client (`label`) got it and whatever its fault: a 2xx is a
    /// LibrarianResponse of the schema, meeting the document's expectations; a rejection
    /// names its violations; a 429 says when to come back (`come_back`: for a 429, the header
    /// that says it, if one did).
    pub(crate) fn judge(
        &mut self,
        label: &str,
        status: u16,
        judged: Option<&(String, Judged)>,
        come_back: Option<&Option<String>>,
    ) {
        if let Some((asked, j)) = judged {
            let answered = || format!("{asked} answered {status}");
            if (200..300).contains(&status) {
                self.answers.check(label, j.must.is_empty(), || {
                    format!("{}: {}", answered(), findings_message(&j.must))
                });
            }
            self.expected.check(label, j.should.is_empty(), || {
                format!("{}: {}", answered(), findings_message(&j.should))
            });
        }
        if let Some(header) = come_back {
            self.come_back.check(label, header.is_some(), || {
                "a 429 with neither Retry-After nor rate-limit headers".into()
            });
        }
    }

    /// The cases, each skipped with its hint when nothing exercised it: `fleet.no-5xx`,
    /// `fleet.answers-valid`, `fleet.answers-expected`, `fleet.retry-after`.
    pub(crate) fn cases(&self, hints: [&str; 4]) -> [CaseResult; 4] {
        [
            self.no5xx.case("fleet.no-5xx", Level::Must, "no client, however it misbehaves, gets a 5xx (or no answer)", "Validation Rules (a request is refused, never crashes the server)", "requests", hints[0]),
            self.answers.case("fleet.answers-valid", Level::Must, "every 2xx answer any client gets is a LibrarianResponse of the schema (status one the document names, confidence within 0.0 to 1.0, an ISO 8601 timestamp, …), judged by the probe's rules", "Response Message Format", "2xx answers", hints[1]),
            self.expected.case("fleet.answers-expected", Level::Should, "every answer meets the document's expectations, as the probe's request.expectations and request.response-fields judge them (a rejection names its violations, an escalation its reason, …)", "Response Message Format; Common Operations", "LibrarianResponses and rejections", hints[2]),
            self.come_back.case("fleet.retry-after", Level::Should, "every 429 says when to come back: Retry-After (or rate-limit headers)", "Troubleshooting: Rate limit exceeded (check rate limit headers)", "429 answers", hints[3]),
        ]
    }
}

/// What a request asked, as an example names it: `a QUERY`, `an APPROVAL`.
pub(crate) fn asked_as(request: Option<&Value>) -> String {
    match request.map(|r| r.get("request_type").and_then(Value::as_str)) {
        Some(Some(t)) if t.starts_with(['A', 'E', 'I', 'O', 'U']) => format!("an {t}"),
        Some(Some(t)) => format!("a {t}"),
        Some(None) => "a request without request_type".into(),
        None => "a body that is not JSON".into(),
    }
}
