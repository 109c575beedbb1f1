//! The mutations' tests: speculation.

use super::*;

#[test]
fn the_speculation_phrases_come_from_the_suite() {
    let patterns = suite_speculation_patterns();
    assert!(
        patterns.iter().any(|p| p.contains("probably")),
        "{patterns:?}"
    );
    assert!(
        patterns.iter().any(|p| p.contains("could be")),
        "{patterns:?}"
    );
    assert!(
        !patterns.iter().any(|p| p.contains("INST")),
        "not the sanitization list"
    );
    let sentence = speculation_sentence();
    for pattern in &patterns {
        let set = PhraseSet::new(&[pattern]).unwrap();
        assert!(
            !set.scan("", sentence).is_empty(),
            "{pattern} in {sentence}"
        );
    }
    for phrase in SPECULATION_EXAMPLES {
        assert!(sentence.contains(phrase), "{phrase} in {sentence}");
    }
}

#[test]
fn speculative_evidence_keeps_its_tag_and_fails_only_the_speculation_cases() {
    for ex in all_exchanges() {
        let mut answer = ex.answer.clone();
        let changed = speculative(ex.endpoint, &mut answer);
        if ex.endpoint == "vote" || !ex.forwards_text() {
            assert!(!changed, "no evidence at /{}", ex.endpoint);
            assert_eq!(answer, ex.answer);
            continue;
        }
        assert!(changed);
        keeps_leading_tags(ex.endpoint, &ex.answer, &answer);
        let evidence = match ex.endpoint {
            "analyze" => "observations[*].evidence",
            _ => "challenges[*].counter_evidence",
        };
        let texts = JsonPath::parse(evidence).unwrap().select(&answer);
        assert!(!texts.is_empty());
        for (path, text) in texts {
            let text = text.as_str().unwrap_or_default();
            assert!(evidence_level(text).is_ok(), "{path}: {text}");
            assert!(text.contains(speculation_sentence()), "{path}: {text}");
        }
        assert_eq!(
            failing(&ex, &answer),
            [ex.case("speculation"), ex.case("speculation-soft")]
        );
    }
}

#[test]
fn speculation_goes_after_the_tag_or_brings_one() {
    let s = "probably.";
    assert_eq!(
        with_speculation("[VERIFIED: a.py:1] Raw SQL", s),
        "[VERIFIED: a.py:1] probably. Raw SQL"
    );
    assert_eq!(
        with_speculation("see [INDICATED: x]", s),
        "see [INDICATED: x] probably."
    );
    assert_eq!(with_speculation("no tag", s), "[POSSIBLE] probably. no tag");
    assert_eq!(
        with_speculation("[VERIFIED: a] bad tag", s),
        "[POSSIBLE] probably. [VERIFIED: a] bad tag"
    );
}
