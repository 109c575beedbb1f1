//! The `limits.*` cases: content, references and deviations at and past the document's limits,
//! and deviations held to the server's compliance mode.

use serde_json::{json, Value};

use crate::protocols::librarian::model::names_field;

use super::client::{Client, Got, NoAnswer};
use super::verdict::{refusal, says_nothing, Refusal, Verdict};

/// An APPROVAL with `field` at `size`.
pub(super) fn sized(mut body: Value, field: &str, size: usize) -> Value {
    match field {
        "content" => {
            let line = "- a line of the proposed design document, in markdown\n";
            let mut text = String::from("# Design\n\n");
            while text.len() + line.len() <= size {
                text.push_str(line);
            }
            while text.len() < size {
                text.push('.');
            }
            body["content"] = json!(text);
        }
        "references" => {
            body["references"] = json!((0..size)
                .map(|i| format!("spec-{i:03}"))
                .collect::<Vec<_>>())
        }
        _ => {
            body["deviations"] = json!((0..size)
                .map(|i| json!({"rule": format!("rule-{i}"), "reason": "legacy code"}))
                .collect::<Vec<_>>())
        }
    }
    body
}

/// Whether an answer names `field` or its limit (or, 413, refuses for size outright).
pub(super) fn refusal_names(got: &Got, field: &str) -> bool {
    let limit = match field {
        "content" => "max_content",
        "references" => "max_references",
        _ => "max_deviations",
    };
    got.status == 413
        || got
            .json
            .as_ref()
            .is_some_and(|v| names_field(v, field) || names_field(v, limit))
}

pub(super) async fn limit(
    c: &mut Client<'_>,
    field: &str,
    size: usize,
    refused: bool,
) -> Result<Verdict, NoAnswer> {
    let i = match c.asker("APPROVAL").await {
        Ok(i) => i,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    let body = sized(c.build(i, "APPROVAL"), field, size);
    let unit = if field == "content" { "bytes" } else { "items" };
    let what = format!("{field} at {size} {unit}");
    let got = c.request(&what, i, &body).await?;
    if got.status >= 500 {
        return Ok(Verdict::fail(
            format!("{what}: answered {}", got.status),
            &got,
        ));
    }
    let of = format!("APPROVALs with {what}");
    let names = refusal_names(&got, field);
    Ok(match (refused, refusal(&got)) {
        (_, Refusal::Elsewhere(why)) => says_nothing(&format!("an APPROVAL with {what}"), &why, &got),
        (true, Refusal::Taken(how)) => {
            Verdict::fail(format!("{what}, over the limit, was {how}"), &got)
        }
        (true, Refusal::Refused) => {
            let naming = if names {
                format!("naming {field}")
            } else {
                format!("without naming {field} or its limit")
            };
            Verdict::held(1, of, format!("refused ({}), {naming}", got.decision()))
        }
        (false, Refusal::Refused) if names => Verdict::fail(
            format!(
                "{what}, within the limit, was refused for it ({})",
                got.decision()
            ),
            &got,
        ),
        (false, Refusal::Refused) if !got.decided() => Verdict::skip_on(
            format!(
                "not judged: an APPROVAL with {what} was refused with {} for something it does \
                 not name, so nothing says whether its size was accepted; a Librarian that \
                 decides it (a LibrarianResponse) exercises this case",
                got.status
            ),
            &got,
        ),
        (false, Refusal::Taken(how)) if !got.approved() => Verdict::skip_on(
            format!("not judged: an APPROVAL with {what} was {how}; a Librarian that decides it (a LibrarianResponse) exercises this case"),
            &got,
        ),
        (false, _) => Verdict::held(1, of, format!("{what}: {}", got.decision())),
    })
}

/// One deviation, held to the server's compliance mode (`--allow-deviations`): refused under
/// strict mode, not refused for it when deviations are allowed.
pub(super) async fn strict_deviations(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    match c.s.allow_deviations {
        None => {
            return Ok(Verdict::skip(
                "not judged: the Librarian's compliance mode is not known; give \
                 --allow-deviations false (strict mode, config/protocol.yaml in the Librarian \
                 protocol spec) or true, \
                 as the server is configured",
            ))
        }
        Some(true) => return limit(c, "deviations", 1, false).await,
        Some(false) => {}
    }
    let i = match c.asker("APPROVAL").await {
        Ok(i) => i,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    let body = sized(c.build(i, "APPROVAL"), "deviations", 1);
    let got = c.request("one deviation", i, &body).await?;
    Ok(match refusal(&got) {
        Refusal::Taken(how) => Verdict::fail(
            format!(
                "a request with a deviation was {how} under strict mode (allow_deviations: false)"
            ),
            &got,
        ),
        Refusal::Elsewhere(why) => says_nothing("an APPROVAL with one deviation", &why, &got),
        Refusal::Refused => Verdict::held(
            1,
            "APPROVALs with a deviation",
            format!("refused: {}", got.decision()),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_content_is_markdown_of_exactly_the_size_asked() {
        for size in [0, 10, 11, 100, 100 * 1024, 100 * 1024 + 1] {
            let body = sized(json!({"content": "x"}), "content", size);
            let text = body["content"].as_str().unwrap();
            assert_eq!(text.len(), size.max("# Design\n\n".len()), "size {size}");
            assert!(text.starts_with("# Design\n\n"), "size {size}");
        }
    }

    #[test]
    fn sized_references_and_deviations_have_that_many_distinct_entries() {
        let body = sized(json!({}), "references", 21);
        let refs = body["references"].as_array().unwrap();
        assert_eq!(refs.len(), 21);
        assert_eq!(refs[0], "spec-000");
        assert_eq!(refs[20], "spec-020");

        let body = sized(json!({"other": 1}), "deviations", 6);
        let devs = body["deviations"].as_array().unwrap();
        assert_eq!(devs.len(), 6);
        assert_eq!(devs[5], json!({"rule": "rule-5", "reason": "legacy code"}));
        assert_eq!(body["other"], 1, "the rest of the request is kept");
    }

    #[test]
    fn a_refusal_for_size_is_a_413_or_an_answer_naming_the_field_or_its_limit() {
        assert!(refusal_names(&Got::answered(413, None), "content"));
        assert!(!refusal_names(&Got::answered(400, None), "content"));
        assert!(!refusal_names(
            &Got::answered(400, Some(json!({"error": "too big"}))),
            "references"
        ));
    }
}
