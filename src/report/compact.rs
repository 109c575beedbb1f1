//! A compact report: what a run over thousands of targets keeps of each target's report. A case
//! that fails or warns keeps everything (its exchange is what a reader needs to see why); a case
//! that passed or was skipped keeps its verdict, what it judged and a bounded message, not the
//! requests and answers it exchanged — most of a conforming target's report (the exchanges of
//! the 100,000-character content cases alone are tens of kilobytes).

use super::{CaseResult, Exchange, Report, Status};

/// The longest message a compacted case keeps, in characters: a skip's reason is whole up to
/// this; past it the message is cut and says how long it was.
pub const MESSAGE_BOUND: usize = 240;

impl Report {
    /// Drops the exchange of every passing and skipped case and bounds its message
    /// ([`MESSAGE_BOUND`]); cases that fail or warn (`fail`, `xfail`, `stale`) keep everything.
    /// The report says so in a note naming `keep_all`, the flag that keeps everything. Verdicts,
    /// evidence, durations and the summary do not change.
    pub fn compact(&mut self, keep_all: &str) {
        let mut dropped = 0;
        for case in self.cases.iter_mut().filter(|c| compactable(c)) {
            if case.exchange != Exchange::default() {
                dropped += 1;
                case.exchange = Exchange::default();
            }
            bound_message(&mut case.message);
        }
        self.notes.push(format!(
            "compacted: the {} that had an exchange left it \
             out, and their messages are cut at {MESSAGE_BOUND} characters; failing cases \
             (fail, xfail, stale) are whole; {keep_all} keeps everything",
            crate::text::count(dropped as u64, "passing or skipped cases")
        ));
    }
}

/// Whether a case is kept compact: it passed or was skipped (nothing to show a reader why).
fn compactable(case: &CaseResult) -> bool {
    matches!(case.status, Status::Pass | Status::Skip)
}

fn bound_message(message: &mut String) {
    let total = message.chars().count();
    if total <= MESSAGE_BOUND {
        return;
    }
    let cut = message
        .char_indices()
        .nth(MESSAGE_BOUND)
        .map_or(message.len(), |(i, _)| i);
    message.truncate(cut);
    message.push_str(&format!(" … [cut: {total} characters in all]"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Evidence, Level, RunInfo};

    fn with_exchange(id: &str) -> CaseResult {
        let mut c = CaseResult::new(id, "g", Level::Must, "t", "s");
        c.exchange = Exchange {
            request: Some("POST /analyze".into()),
            response: Some("HTTP/1.1 200".into()),
            reproduce: Some("curl …".into()),
        };
        c
    }

    #[test]
    fn passing_and_skipped_cases_lose_their_exchange_failing_ones_keep_it() {
        let mut pass = with_exchange("a.pass");
        pass.pass_noting(Evidence::new(3, "answers"), "é".repeat(300), String::new);
        let mut skip = with_exchange("a.skip");
        skip.skip("no key given: give --api-key");
        let mut fail = with_exchange("a.fail");
        fail.fail_on(Evidence::new(1, "answer"), "x".repeat(500));
        let mut xfail = with_exchange("a.xfail");
        xfail.fail("expected");
        xfail.status = Status::Xfail;
        let mut report = RunInfo::start("probe", "p", "t", 1, false).report(
            vec![pass, skip, fail.clone(), xfail.clone()],
            &crate::text::Redactor::new(None),
        );
        let summary = report.summary;
        report.compact("--full-reports");
        let [pass, skip, failed, xfailed] = &report.cases[..] else {
            panic!("{:?}", report.cases)
        };
        assert_eq!(pass.exchange, Exchange::default());
        assert_eq!(pass.status, Status::Pass);
        assert_eq!(pass.evidence, Some(Evidence::new(3, "answers")));
        assert_eq!(
            pass.message,
            format!(
                "{} … [cut: 300 characters in all]",
                "é".repeat(MESSAGE_BOUND)
            )
        );
        assert_eq!(skip.exchange, Exchange::default());
        assert_eq!(skip.message, "no key given: give --api-key");
        assert_eq!(failed, &fail);
        assert_eq!(xfailed, &xfail);
        assert_eq!(report.summary, summary);
        assert_eq!(
            report.notes,
            [
                "compacted: the 2 passing or skipped cases that had an exchange left it out, and \
              their messages are cut at 240 characters; failing cases (fail, xfail, stale) are \
              whole; --full-reports keeps everything"
            ]
        );
    }
}
