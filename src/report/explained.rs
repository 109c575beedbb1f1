//! The pointer a report gives for a failing case: `see: agent-tck explain ID`, and the spec
//! section the catalogue gives each case. Which ids have a text, and which section a case
//! rests on, are the top layer's to say (the texts and catalogues are the protocols'): it tells
//! this engine once, at start ([`set`], [`set_sections`]; `explain::install` does both); until
//! then no report points anywhere and each case keeps the section its code gave it.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::{CaseResult, Status};

static HAS_TEXT: OnceLock<fn(&str) -> bool> = OnceLock::new();

/// A protocol's case sections: case id → section.
type Sections = fn(&str) -> BTreeMap<String, String>;

static SECTIONS: OnceLock<Sections> = OnceLock::new();

/// Tells the reports the section of each case of a protocol (the first call counts).
pub fn set_sections(sections: Sections) {
    let _ = SECTIONS.set(sections);
}

/// The sections of `protocol`'s cases, as the catalogue gives them (none until told).
pub fn sections(protocol: &str) -> BTreeMap<String, String> {
    SECTIONS.get().map(|of| of(protocol)).unwrap_or_default()
}

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
