//! The mutations' tests: limits.

use super::*;

#[test]
fn oversized_field_fails_only_the_field_length_case() {
    for ex in all_exchanges() {
        let mut answer = ex.answer.clone();
        assert!(oversized_field(ex.endpoint, &mut answer, SPEC_MAX_FIELD));
        let long: Vec<String> = strings(&answer)
            .into_iter()
            .filter(|(_, s)| s.chars().count() > SPEC_MAX_FIELD)
            .map(|(at, _)| at)
            .collect();
        assert_eq!(long.len(), 1, "{long:?}");
        let expected = match (ex.endpoint, ex.answer["approve"].as_bool()) {
            ("analyze", _) => "observations[0].evidence",
            ("challenge", _) if ex.forwards_text() => "challenges[0].counter_evidence",
            ("challenge", _) => EXTRA_FIELD,
            (_, Some(true)) => "conditions[0]",
            _ => "dissent_reason",
        };
        assert_eq!(long, [expected]);
        assert_eq!(at(&answer, expected).chars().count(), SPEC_MAX_FIELD + 1);
        assert_eq!(
            failing(&ex, &answer),
            [ex.case("field-length")],
            "{expected}"
        );
    }
}

#[test]
fn oversized_field_pads_a_concession_when_there_is_no_challenge() {
    let mut answer = json!({"agent_name": "a", "challenges": [],
        "concessions": [{"target_agent": "b", "finding_accepted": "f"}]});
    assert!(oversized_field("challenge", &mut answer, 10));
    assert_eq!(at(&answer, "concessions[0].reason"), "x".repeat(11));
    // Already past the limit: one more character.
    assert!(oversized_field("challenge", &mut answer, 10));
    assert_eq!(at(&answer, "concessions[0].reason").len(), 12);
    let mut odd = json!(["not", "an", "object"]);
    assert!(!oversized_field("analyze", &mut odd, 10));
    assert!(!oversized_field("health", &mut answer.clone(), 10));
}

fn list_len(answer: &Value, list: &str) -> usize {
    answer[list].as_array().map_or(0, Vec::len)
}

#[test]
fn too_many_items_exceeds_the_caps() {
    for ex in all_exchanges() {
        let mut answer = ex.answer.clone();
        let changed = too_many_items(ex.endpoint, &mut answer, 101, 21);
        if ex.endpoint == "challenge" && !ex.forwards_text() {
            assert!(!changed, "no agent to challenge");
            assert_eq!(answer, ex.answer);
            continue;
        }
        assert!(changed, "{}", ex.endpoint);
        let (lists, text): (&[(&str, usize)], &str) = match ex.endpoint {
            "analyze" => (
                &[("observations", 101), ("recommendations", 101)],
                "observations[*].finding",
            ),
            "challenge" => (&[("challenges", 101)], "challenges[*].finding_challenged"),
            _ => (&[("conditions", 21)], "conditions[*]"),
        };
        for (list, len) in lists {
            assert_eq!(list_len(&answer, list), *len, "{list}");
        }
        let texts: HashSet<&str> = JsonPath::parse(text)
            .unwrap()
            .select(&answer)
            .into_iter()
            .filter_map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(texts.len(), lists[0].1, "every copy is distinct at {text}");
        assert_eq!(failing(&ex, &answer), [ex.case("list-caps")]);
    }
}

#[test]
fn too_many_challenges_can_start_from_a_concession() {
    let mut answer = json!({"agent_name": "a", "challenges": [],
        "concessions": [{"target_agent": "b", "finding_accepted": "f"}]});
    assert!(too_many_items("challenge", &mut answer, 3, 21));
    assert_eq!(list_len(&answer, "challenges"), 3);
    assert_eq!(answer["challenges"][2]["target_agent"], "b");
    assert_eq!(answer["challenges"][2]["finding_challenged"], "f (#3)");
    assert!(model::challenges_have_counter_evidence(&answer).is_empty());
    // Long enough already: nothing to do.
    assert!(!too_many_items("challenge", &mut answer, 2, 21));
}
