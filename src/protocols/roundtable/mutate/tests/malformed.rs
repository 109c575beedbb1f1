//! The mutations' tests: malformed bodies.

use super::*;

#[test]
fn malformed_bodies_are_refused_by_a_strict_parser() {
    for ex in all_exchanges() {
        for variant in Malformed::ALL {
            let (body, content_type) = malformed(variant, &ex.body, &ANSWER_FIELDS);
            let what = format!(
                "{} of {}",
                variant.name(),
                String::from_utf8_lossy(&ex.body)
            );
            let strict = serde_json::from_slice::<Map<String, Value>>(&body);
            let probe = parse_body(&response(body.clone()), usize::MAX);
            let text = String::from_utf8_lossy(&body).into_owned();
            assert_eq!(
                content_type == "text/html",
                variant == Malformed::Html,
                "{what}"
            );
            if variant == Malformed::DuplicateKeys {
                assert_eq!(text.matches("\"agent_name\":").count(), 2, "{what}: {text}");
                let lenient = strict.expect("last one wins");
                assert_eq!(lenient["agent_name"], format!("{NAME}-impostor"));
                assert!(probe.is_ok(), "{what}");
                continue;
            }
            assert!(strict.is_err(), "{what}: {text}");
            assert!(probe.is_err(), "{what}: {text}");
            match variant {
                Malformed::Truncated => {
                    assert!(body.len() <= ex.body.len() / 2 && body.len() + 4 > ex.body.len() / 2);
                    assert!(ex.body.starts_with(&body));
                }
                Malformed::TrailingGarbage => {
                    assert_eq!(body.strip_suffix(b"}garbage"), Some(ex.body.as_slice()))
                }
                Malformed::SingleQuotes => {
                    assert!(
                        text.starts_with('{') && text.contains(&format!("'agent_name': '{NAME}'")),
                        "{text}"
                    );
                    assert!(!text.contains("\"agent_name\""), "{text}");
                }
                Malformed::NaN => {
                    assert_eq!(text.matches("NaN").count(), 1, "{text}");
                    let repaired: Value = serde_json::from_str(&text.replace("NaN", "0.5"))
                        .expect("NaN is the only fault");
                    assert!(repaired.get("agent_name").is_some(), "{repaired}");
                }
                Malformed::Empty => assert!(body.is_empty()),
                Malformed::Html => assert!(text.contains("<h1>502 Bad Gateway</h1>"), "{text}"),
                Malformed::Array => {
                    let array: Value = serde_json::from_slice(&body).expect("a JSON array");
                    assert_eq!(array, json!([ex.answer]));
                }
                Malformed::DuplicateKeys => unreachable!("handled above"),
            }
        }
    }
}

#[test]
fn single_quotes_write_python_literals() {
    let (body, _) = malformed(
        Malformed::SingleQuotes,
        br#"{"agent_name":"it's","approve":false,"dissent_reason":null,"n":[1,true]}"#,
        &ANSWER_FIELDS,
    );
    assert_eq!(
        String::from_utf8(body).unwrap(),
        r"{'agent_name': 'it\'s', 'approve': False, 'dissent_reason': None, 'n': [1, True]}"
    );
    let (body, _) = malformed(Malformed::SingleQuotes, br#"not "json""#, &ANSWER_FIELDS);
    assert_eq!(body, b"not 'json'");
}

#[test]
fn nan_is_added_when_there_is_no_confidence() {
    let (body, _) = malformed(
        Malformed::NaN,
        br#"{"agent_name":"a","approve":true}"#,
        &ANSWER_FIELDS,
    );
    assert_eq!(
        String::from_utf8(body).unwrap(),
        r#"{"agent_name":"a","approve":true,"confidence":NaN}"#
    );
}
