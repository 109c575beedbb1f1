//! The mutations' tests: no input makes a mutation panic.

use super::*;

const KEYS: &[&str] = &[
    "agent_name",
    "domain",
    "observations",
    "finding",
    "evidence",
    "severity",
    "confidence",
    "recommendations",
    "action",
    "rationale",
    "challenges",
    "target_agent",
    "finding_challenged",
    "counter_evidence",
    "concessions",
    "finding_accepted",
    "reason",
    "approve",
    "conditions",
    "dissent_reason",
    "padding",
    "notes",
];

const EDGE_STRINGS: &[&str] = &[
    "",
    "[",
    "]",
    "[POSSIBLE",
    "[VERIFIED: a:b] x",
    "[VERIFIED: a] x",
    "é🔐\u{200d}",
    "\"finding\":\"",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        proptest::sample::select(EDGE_STRINGS).prop_map(Value::from),
    ];
    let key = prop_oneof![
        3 => proptest::sample::select(KEYS).prop_map(String::from),
        1 => any::<String>(),
    ];
    leaf.prop_recursive(4, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

type Mutation = Box<dyn Fn(&str, &mut Value) -> bool>;

fn mutations(chars: usize, count: usize) -> Vec<(String, Mutation)> {
    let mut out: Vec<(String, Mutation)> = WrongSchema::ALL
        .into_iter()
        .map(|v| {
            (
                v.name().to_string(),
                Box::new(move |e: &str, a: &mut Value| wrong_schema(v, e, a)) as Mutation,
            )
        })
        .collect();
    out.push((
        "oversized-field".into(),
        Box::new(move |e, a| oversized_field(e, a, chars)),
    ));
    out.push((
        "too-many-items".into(),
        Box::new(move |e, a| too_many_items(e, a, count, count)),
    ));
    out.push(("null-bytes".into(), Box::new(null_bytes)));
    out.push(("ansi-escapes".into(), Box::new(ansi_escapes)));
    out.push(("speculative".into(), Box::new(speculative)));
    out.push((
        "inject".into(),
        Box::new(|e, a| !inject(e, a, &payloads()).is_empty()),
    ));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any JSON value, any bytes: nothing panics, a mutation that says it changed nothing
    /// changed nothing, and the raw-body mutations keep their promises.
    #[test]
    fn no_mutation_panics(
        value in json_value(),
        raw in proptest::collection::vec(any::<u8>(), 0..256),
        chars in 0usize..64,
        count in 0usize..12,
        bytes in 2usize..4096,
    ) {
        for endpoint in ["analyze", "challenge", "vote", "health", ""] {
            for (name, mutation) in mutations(chars, count) {
                let mut answer = value.clone();
                if !mutation(endpoint, &mut answer) {
                    prop_assert_eq!(&answer, &value, "{} at {:?}", name, endpoint);
                }
            }
        }
        let body = serde_json::to_vec(&value).expect("a Value serializes");
        for input in [&body, &raw] {
            for variant in Malformed::ALL {
                let _ = malformed(variant, input, &ANSWER_FIELDS);
            }
            prop_assert!(std::str::from_utf8(&invalid_utf8(input, &ANSWER_FIELDS)).is_err());
            let padded = padded_body(input, bytes);
            prop_assert_eq!(padded.len(), bytes);
            prop_assert!(serde_json::from_slice::<Map<String, Value>>(&padded).is_ok());
        }
    }
}
