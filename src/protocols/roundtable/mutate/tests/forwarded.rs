//! The mutations' tests: forwarded strings.

use super::*;

#[test]
fn null_bytes_fail_only_sanitization() {
    for ex in all_exchanges() {
        let mut answer = ex.answer.clone();
        assert_eq!(null_bytes(ex.endpoint, &mut answer), ex.forwards_text());
        if !ex.forwards_text() {
            assert_eq!(answer, ex.answer);
            continue;
        }
        for (path, text) in forwarded_strings(ex.endpoint, &answer) {
            assert_eq!(text.matches('\u{0}').count(), 1, "{path}: {text:?}");
            assert!(
                !text.starts_with('\u{0}') || text.len() == 1,
                "{path}: {text:?}"
            );
        }
        keeps_leading_tags(ex.endpoint, &ex.answer, &answer);
        assert_eq!(failing(&ex, &answer), [ex.case("sanitization")]);
    }
}

#[test]
fn ansi_escapes_reach_every_forwarded_string_and_fail_only_sanitization() {
    for ex in all_exchanges() {
        let mut answer = ex.answer.clone();
        assert_eq!(ansi_escapes(ex.endpoint, &mut answer), ex.forwards_text());
        for (path, text) in forwarded_strings(ex.endpoint, &answer) {
            for sequence in [OSC_TITLE, CLEAR_SCREEN, RED, RESET] {
                assert!(text.contains(sequence), "{path}: {text:?}");
            }
        }
        keeps_leading_tags(ex.endpoint, &ex.answer, &answer);
        // The sanitization cases flag terminal escapes (ESC [ and ESC ]).
        let expected = if ex.forwards_text() {
            vec![ex.case("sanitization")]
        } else {
            Vec::new()
        };
        assert_eq!(failing(&ex, &answer), expected);
    }
}

#[test]
fn inject_places_payloads_round_robin_and_stays_schema_valid() {
    let payloads = payloads();
    for ex in all_exchanges() {
        let mut answer = ex.answer.clone();
        let placed = inject(ex.endpoint, &mut answer, &payloads);
        let expected: Vec<String> = forwarded_strings(ex.endpoint, &ex.answer)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let mut paths: Vec<String> = placed.iter().map(|(p, _)| p.clone()).collect();
        paths.sort();
        let mut sorted = expected.clone();
        sorted.sort();
        assert_eq!(paths, sorted, "every forwarded string, once");
        for (n, (path, index)) in placed.iter().enumerate() {
            assert_eq!(*index, n % payloads.len());
            assert!(at(&answer, path).ends_with(&payloads[*index]), "{path}");
        }
        if placed.is_empty() {
            assert_eq!(answer, ex.answer);
            continue;
        }
        assert!(schemas().validate(&ex.schema(), &answer).is_empty());
        keeps_leading_tags(ex.endpoint, &ex.answer, &answer);
        assert_eq!(failing(&ex, &answer), [ex.case("sanitization")]);
    }
    let ex = &exchanges(1)[0];
    let mut answer = ex.answer.clone();
    assert!(inject("analyze", &mut answer, &[]).is_empty());
    assert_eq!(answer, ex.answer);
}
