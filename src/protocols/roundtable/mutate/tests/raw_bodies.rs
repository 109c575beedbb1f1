//! The mutations' tests: raw bodies.

use super::*;

#[test]
fn invalid_utf8_lands_inside_a_string_value() {
    for ex in all_exchanges() {
        let body = invalid_utf8(&ex.body, &ANSWER_FIELDS);
        assert!(std::str::from_utf8(&body).is_err());
        let at = body
            .windows(3)
            .position(|w| w == NOT_UTF8)
            .expect("the bytes are there");
        let before = String::from_utf8_lossy(&body[..at]);
        let key = match ex.endpoint {
            "analyze" => "\"finding\":\"",
            "challenge" if ex.forwards_text() => "\"counter_evidence\":\"",
            _ => "\"agent_name\":\"",
        };
        assert!(before.ends_with(key), "{before}");
        let rest = [&body[..at], &body[at + 3..]].concat();
        assert_eq!(rest, ex.body, "only the three bytes are added");
        let lossy: Value =
            serde_json::from_str(&String::from_utf8_lossy(&body)).expect("JSON-shaped");
        assert!(lossy.is_object());
        let why = parse_body(&response(body), usize::MAX).unwrap_err();
        assert!(matches!(why, AnswerError::NotUtf8 { .. }), "{why}");
        assert!(why.to_string().contains("not valid UTF-8"), "{why}");
    }
    assert_eq!(invalid_utf8(b"{}", &ANSWER_FIELDS), b"{}\xC3\x28\xFF");
    assert_eq!(
        invalid_utf8(br#"{"a" : "b"}"#, &ANSWER_FIELDS),
        b"{\"\xC3\x28\xFFa\" : \"b\"}"
    );
}

#[test]
fn padded_bodies_have_the_exact_size_and_stay_one_object() {
    let ex = &exchanges(7)[0];
    let mut with_empty = ex.answer.as_object().unwrap().clone();
    with_empty.insert(PADDING_FIELD.into(), json!([]));
    let base = serialized_len(&with_empty);
    let sizes = (base..base + 8).chain([64, 1_000, 50_000, 50_004, 100_013, 5_000_001]);
    for bytes in sizes {
        let body = padded_body(&ex.body, bytes);
        assert_eq!(body.len(), bytes);
        let object: Map<String, Value> = serde_json::from_slice(&body).expect("one JSON object");
        assert!(
            strings(&Value::Object(object.clone()))
                .iter()
                .all(|(_, s)| s.chars().count() <= SPEC_MAX_FIELD),
            "no string past the field limit at {bytes} bytes"
        );
        if bytes >= base {
            let mut rest = object.clone();
            rest.remove(PADDING_FIELD);
            assert_eq!(
                Value::Object(rest),
                ex.answer,
                "the answer is kept at {bytes} bytes"
            );
        } else {
            assert_eq!(object.keys().collect::<Vec<_>>(), [PADDING_FIELD]);
        }
    }
    assert_eq!(padded_body(b"{}", 5), b"{}   ");
}
