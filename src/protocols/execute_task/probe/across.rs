//! The cases judged across a run: every exchange's log, every answer, the transport's note.

use super::*;

/// What every exchange of a run left, for the cases judged across it.
pub(super) struct Across<'a> {
    pub(super) settings: &'a TaskSettings,
    pub(super) log: &'a ExchangeLog,
    pub(super) answers: &'a [Value],
    pub(super) governance_sent: bool,
    pub(super) transport_note: Option<String>,
    pub(super) stall: Option<&'a Stall>,
}

impl Across<'_> {
    /// Judges `case` by `rule`; None when there is nothing to report (no engine log: the
    /// agent is not a process of ours).
    pub(super) fn judge(
        &self,
        rule: RunRule,
        mut case: CaseResult,
    ) -> Result<Option<CaseResult>, String> {
        let (log, answers) = (self.log, self.answers);
        let judged_answers = Evidence::new(answers.len() as u64, "answers");
        match rule {
            RunRule::WithinTimeout => self.within_timeout(&mut case),
            RunRule::Identity => match answers.iter().find_map(discover_name) {
                Some((name, source)) => case.pass_noting(
                    judged_answers,
                    format!("discovered {name:?} from `{source}`"),
                    String::new,
                ),
                None if answers.is_empty() => case.skip(self.no_answer("no name to look for")),
                None => case.fail_on(
                    judged_answers,
                    crate::protocols::execute_task::rules::NO_NAME,
                ),
            },
            RunRule::HttpContentType => self.http_content_type(&mut case),
            RunRule::Sanitization => self.sanitization(&mut case)?,
            RunRule::ReferenceHarness => self.reference_harness(&mut case),
            RunRule::EngineLog => {
                let Some(note) = &self.transport_note else {
                    return Ok(None);
                };
                case.group = self.settings.target.group().to_string();
                let exchanges = Evidence::new(log.count, "exchanges with the stdio agent");
                case.pass_noting(exchanges, note.clone(), || {
                    format!(
                        "no exchange with the agent: nothing it wrote to stderr to report ({note})"
                    )
                });
            }
        }
        Ok(Some(case))
    }

    /// `within-timeout`: every exchange answered within --timeout.
    fn within_timeout(&self, case: &mut CaseResult) {
        let log = self.log;
        let timed = Evidence::new(log.answered, "exchanges answered");
        if let Some(stall) = self.stall.filter(|s| s.not_started) {
            case.skip(format!(
                "skipped: no exchange was answered, nor timed out: {} failed as {}, and \
                 no other was tried ({})",
                stall.case,
                stall.cause(),
                stall.remedy()
            ));
        } else if let Some(stall) = self.stall {
            // Its one timeout is the stalled case's failure: failing it here too would
            // count one cause twice.
            case.skip(format!(
                "skipped: the one exchange that timed out is {}'s failure ({}), and no \
                 other was tried (an agent that flushes each answer's line gives this \
                 answers to time)",
                stall.case,
                stall.output.question()
            ));
        } else if log.timeouts.is_empty() {
            let note = format!(
                "{}; the slowest took {} ms (--timeout {})",
                crate::text::count(log.count, "exchanges"),
                log.slowest.as_millis(),
                humantime::format_duration(self.settings.timeout)
            );
            case.pass_noting(timed, note, || self.no_answer("there is no answer to time"));
        } else {
            case.fail_on(
                Evidence::new(log.count, "exchanges"),
                format!(
                    "{} of {} timed out, e.g. {}",
                    log.timeouts.len(),
                    crate::text::count(log.count, "exchanges"),
                    log.timeouts[0]
                ),
            );
        }
    }

    /// `http-content-type`: the 2xx answers labelled application/json.
    fn http_content_type(&self, case: &mut CaseResult) {
        let log = self.log;
        let labelled = Evidence::new(log.http_answers, "HTTP answers with a 2xx status");
        if !matches!(self.settings.target, Target::Http { .. }) {
            case.skip("not an HTTP agent: Content-Type is an HTTP answer's label (probe the agent over HTTP to judge it)");
        } else if log.wrong_types.is_empty() {
            case.pass(labelled, || {
                self.no_answer("no 2xx answer whose Content-Type to judge (an error page's label is not the protocol's)")
            });
        } else {
            case.fail_on(
                labelled,
                format!(
                    "{} labelled otherwise, e.g. {}",
                    crate::text::count(log.wrong_types.len() as u64, "answers"),
                    log.wrong_types[0]
                ),
            );
        }
    }

    /// `sanitization`: no NUL characters, terminal escapes or injection patterns in answers.
    fn sanitization(&self, case: &mut CaseResult) -> Result<(), String> {
        let answers = self.answers;
        let judged_answers = Evidence::new(answers.len() as u64, "answers");
        let findings = sanitization_findings(answers)?;
        if answers.is_empty() {
            case.skip(self.no_answer("no answer to look in"));
        } else if findings.is_empty() {
            case.pass(judged_answers, String::new);
        } else {
            let shown: Vec<&str> = findings.iter().take(8).map(String::as_str).collect();
            case.fail_on(
                judged_answers,
                format!(
                    "{}: {}",
                    crate::text::count(findings.len() as u64, "findings"),
                    shown.join("; ")
                ),
            );
        }
        Ok(())
    }

    /// `reference-harness`: what the reference harness would do differently (INFO).
    fn reference_harness(&self, case: &mut CaseResult) {
        let answers = self.answers;
        let judged_answers = Evidence::new(answers.len() as u64, "answers");
        let mut notes: Vec<String> = answers.iter().flat_map(reference_harness_notes).collect();
        notes.sort();
        notes.dedup();
        if self.governance_sent {
            notes.push(REFERENCE_HARNESS_NOTE.to_string());
        }
        // INFO: a report, not a verdict (the console shows a MAY case's message even
        // when it passes).
        let note = if notes.is_empty() {
            "nothing to note: every answer used the spec's forms".to_string()
        } else {
            notes.join("\n")
        };
        case.pass_noting(judged_answers, note, || {
            self.no_answer("no answer to compare with the reference harness's forms")
        });
    }

    /// The reason of a case left with no answer to judge: `what`, how many exchanges got none
    /// and why the first did not, and what would give it one.
    pub(super) fn no_answer(&self, what: &str) -> String {
        if let Some(stall) = self.stall {
            return format!(
                "{what}: {} got no answer ({}), and no other exchange was tried ({})",
                stall.case,
                stall.cause(),
                stall.remedy()
            );
        }
        let log = self.log;
        let why = match &log.first_failure {
            Some(e) => format!(", e.g. {}", excerpt_str(e, 200)),
            None => String::new(),
        };
        format!(
            "{what}: none of the {} got a valid answer{why} (an agent that answers \
             POST /execute_task, or its line, with one action exercises this)",
            crate::text::count(log.count, "exchanges")
        )
    }
}

/// Where the answers carry NUL characters, terminal escapes or injection patterns.
pub(super) fn sanitization_findings(answers: &[Value]) -> Result<Vec<String>, String> {
    let patterns = crate::sanitization::patterns()?;
    Ok(answers
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            crate::jsonpath::strings(a)
                .into_iter()
                .flat_map(|(path, text)| patterns.scan(&path, text))
                .map(move |f| format!("answer {}: {f}", i + 1))
                .collect::<Vec<_>>()
        })
        .collect())
}
