//! The harness's verdicts drawn from what was followed: the deadline's message and the
//! turn-limit's, with what exercised them.

use super::*;

impl State {
    /// `harness.deadline`'s message when nothing broke it: what the harness gave up on, and
    /// the waits it did not end itself (ended from outside: not judged; ended by a close no
    /// process could be found for: counted, saying so).
    pub(super) fn explain_deadline(&self, deadline: &mut CaseResult) {
        if !deadline.passed() && deadline.status != crate::report::Status::Skip {
            return;
        }
        let outside = self.first_outside.as_ref().map(|first| {
            if self.ended_outside == 1 {
                first.clone()
            } else {
                format!(
                    "{first} (and {} more so ended)",
                    crate::text::count(self.ended_outside - 1, "waits")
                )
            }
        });
        let given_up = self.deadline.checked - self.unattributed;
        if self.deadline.checked == 0 {
            if let Some(outside) = outside {
                deadline.skip(format!(
                    "not judged: {outside}; that is no giving-up of its own (a harness gives up by closing the connection or stdin and living on, or by signalling the agent itself). Run it without an outside limit shorter than --expect-timeout + 1 s to judge it"
                ));
            }
            return;
        }
        let mut parts = Vec::new();
        if given_up > 0 {
            parts.push(format!(
                "the harness gave up on {given_up} (the longest wait {:.1} s)",
                self.longest_wait.as_secs_f64()
            ));
        }
        if let Some(why) = &self.first_unattributed {
            parts.push(format!(
                "{} ended within the bound by a close the mock cannot credit to the harness or to anyone else ({why}): counted, as no wait passed the bound",
                crate::text::count(self.unattributed, "waits")
            ));
        }
        if let Some(outside) = outside {
            parts.push(format!("not counted: {outside}"));
        }
        deadline.message = parts.join("; ");
    }

    /// Why a rule on followed conversations judged nothing: `need` (what would exercise it),
    /// and what the requests in hand lacked (no `turn`, joined in the middle).
    pub(super) fn unfollowed(&self, need: &str) -> String {
        let mut lacked = Vec::new();
        if self.no_turn > 0 {
            let one = self.no_turn == 1;
            lacked.push(format!(
                "{} of the {} {} no `turn` (a field of the spec's Request Body; platform.request-schema names it), so {} followed only by the tool results {}: send `turn` (1, then one more per request) to follow conversations by it",
                self.no_turn,
                crate::text::count(self.requests, "requests"),
                if one { "carries" } else { "carry" },
                if one { "it is" } else { "they are" },
                if one { "it carries" } else { "they carry" }
            ));
        }
        if self.joined > 0 {
            lacked.push(format!(
                "{} joined a conversation in its middle (a turn past 1 with no earlier turn seen: a per-turn stdio process sees one request; run the mock with --json so that its processes fold one report, or use a persistent process)",
                crate::text::count(self.joined, "requests")
            ));
        }
        if lacked.is_empty() {
            format!("{need} exercises this")
        } else {
            format!("{need} exercises this; {}", lacked.join("; "))
        }
    }

    /// `harness.reference-forms`: every request's task_description looked at.
    pub(super) fn forms_case(&self) -> CaseResult {
        let mut forms = CaseResult::new(
            "harness.reference-forms",
            GROUP,
            Level::May,
            "where the harness used the reference harness's forms rather than the spec's (INFO)",
            "Policy Violations (Governance feedback)",
        );
        let note = if self.dict_repr.is_empty() {
            "nothing to note: no task_description in the reference harness's forms".to_string()
        } else {
            format!(
                "{} in the reference harness's forms, e.g.\n{}",
                crate::text::count(self.dict_forms, "task_descriptions"),
                self.dict_repr.join("\n")
            )
        };
        forms.pass_noting(
            Evidence::new(self.requests, "task_descriptions"),
            note,
            || "no request with a JSON body: no task_description to look at".to_string(),
        );
        forms
    }
}

/// A turn-limit case that passed without a conversation left to the harness tested nothing.
pub(super) fn exercised(case: &mut CaseResult, left: u64, longest: u32, never_ends: &str) {
    if !case.passed() {
        return;
    }
    if left == 0 {
        case.skip(never_ends);
    } else {
        case.message = format!(
            "{} the agent never ended, the longest stopped at turn {longest}",
            crate::text::count(left, "conversations")
        );
    }
}
