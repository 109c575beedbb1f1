//! The mutations' tests: wrong-schema.

use super::*;

/// The field a variant's schema finding names, at an endpoint.
fn broken_field(variant: WrongSchema, endpoint: &str) -> &'static str {
    match (variant, endpoint) {
        (WrongSchema::MissingField, "analyze") => "observations",
        (WrongSchema::MissingField, "challenge") => "agent_name",
        (WrongSchema::MissingField, _) => "approve",
        (WrongSchema::WrongType, "analyze") => "observations",
        (WrongSchema::WrongType, "challenge") => "challenges",
        (WrongSchema::WrongType, _) => "conditions",
        (WrongSchema::SeverityEnum, _) => "observations[0].severity",
        (WrongSchema::ConfidenceRange, _) => "observations[0].confidence",
        (WrongSchema::ApproveString | WrongSchema::DissentWithoutReason, _) => "approve",
    }
}

#[test]
fn wrong_schema_breaks_its_rule_at_its_endpoints_only() {
    for ex in all_exchanges() {
        for variant in WrongSchema::ALL {
            let mut answer = ex.answer.clone();
            let changed = wrong_schema(variant, ex.endpoint, &mut answer);
            let what = format!("{} at /{}: {answer}", variant.name(), ex.endpoint);
            if !variant.endpoints().contains(&ex.endpoint) {
                assert!(!changed, "{what}");
                assert_eq!(answer, ex.answer, "{what}");
                continue;
            }
            assert!(changed, "{what}");
            let findings = schemas().validate(&ex.schema(), &answer);
            if variant == WrongSchema::DissentWithoutReason {
                assert!(findings.is_empty(), "{what}: {findings:?}");
                assert_eq!(model::dissent_has_reason(&answer).len(), 1, "{what}");
                assert_eq!(failing(&ex, &answer), [ex.case("dissent-reason")], "{what}");
                continue;
            }
            let field = broken_field(variant, ex.endpoint);
            assert!(
                findings.iter().any(|f| f.to_string().contains(field)),
                "{what}: no finding names {field}: {findings:?}"
            );
            assert_eq!(failing(&ex, &answer), [ex.case("response")], "{what}");
            if variant == WrongSchema::ApproveString {
                assert_eq!(answer["approve"], json!("false"));
                assert!(is_text(answer.get("dissent_reason")), "{what}");
            }
        }
    }
}

#[test]
fn wrong_schema_makes_an_observation_when_there_is_none() {
    let mut answer = json!({"agent_name": "a", "domain": "d", "observations": []});
    assert!(wrong_schema(
        WrongSchema::SeverityEnum,
        "analyze",
        &mut answer
    ));
    assert_eq!(answer["observations"][0]["severity"], "high");
    // Nothing to break: a second application changes nothing.
    assert!(!wrong_schema(
        WrongSchema::SeverityEnum,
        "analyze",
        &mut answer
    ));
    for mut odd in [json!([1, 2]), json!("text"), json!({"agent_name": "a"})] {
        let before = odd.clone();
        assert!(!wrong_schema(
            WrongSchema::ConfidenceRange,
            "analyze",
            &mut odd
        ));
        assert!(!wrong_schema(
            WrongSchema::MissingField,
            "analyze",
            &mut odd
        ));
        assert_eq!(odd, before);
    }
}
