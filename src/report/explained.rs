//! The pointer a report gives for a failing case: `see: agent-tck explain ID`. Which ids have
//! a text is the top layer's to say (the texts are the protocols'): it tells this engine once,
//! at start ([`set`]); until then no report points anywhere.

use std::sync::OnceLock;

use super::{CaseResult, Status};

static HAS_TEXT: OnceLock<fn(&str) -> bool> = OnceLock::new();

/// Tells the reporters which case ids `agent-tck explain` has a text for (the first call
/// counts).
pub fn set(has_text: fn(&str) -> bool) {
    let _ = HAS_TEXT.set(has_text);
}

/// `agent-tck explain ID` for a failed case whose id has a text.
pub fn pointer(case: &CaseResult) -> Option<String> {
    if case.status != Status::Fail {
        return None;
    }
    id_pointer(&case.id)
}

/// `agent-tck explain ID` for an id that has a text (a case of the run itself, as JUnit writes
/// `run.judged`).
pub fn id_pointer(id: &str) -> Option<String> {
    HAS_TEXT
        .get()
        .filter(|has| has(id))
        .map(|_| format!("agent-tck explain {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Evidence, Level};

    #[test]
    fn only_a_failed_case_with_a_text_points_to_it() {
        // Only this id has a text here: the other tests of this binary see no pointer.
        set(|id| id == "zz.explained-for-test");
        let case = |id: &str, fail: bool| {
            let mut c = CaseResult::new(id, "zz", Level::Must, "t", "s");
            if fail {
                c.fail("broken");
            } else {
                c.pass(Evidence::new(1, "x"), String::new);
            }
            c
        };
        assert_eq!(
            pointer(&case("zz.explained-for-test", true)).as_deref(),
            Some("agent-tck explain zz.explained-for-test")
        );
        assert_eq!(pointer(&case("zz.explained-for-test", false)), None);
        assert_eq!(pointer(&case("zz.other", true)), None);
    }
}
