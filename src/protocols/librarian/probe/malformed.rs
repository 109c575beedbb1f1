//! The `fields.*` and `input.*` cases: a request without a required field, and malformed input
//! (bad JSON, an empty body, wrong types, an unknown enum value, a bad timestamp), refused.

use bytes::Bytes;
use serde_json::json;

use super::client::{request_gate, Client, NoAnswer};
use super::verdict::{refusal, says_nothing, Refusal, Verdict};

pub(super) async fn missing_field(
    c: &mut Client<'_>,
    t: &str,
    field: &str,
) -> Result<Verdict, NoAnswer> {
    if let Err(why) = c.opened(request_gate(t)).await {
        return Ok(Verdict::unjudged(why));
    }
    let (i, mut body) = if t == "REPORT" && field != "request_id" {
        match c.approved_id().await {
            Ok((i, id)) => {
                let mut body = c.build(i, t);
                body["request_id"] = json!(id);
                (i, body)
            }
            Err(e) => return Ok(Verdict::unjudged(e)),
        }
    } else {
        match c.able(t) {
            Ok(i) => (i, c.build(i, t)),
            Err(why) => return Ok(Verdict::unjudged(why)),
        }
    };
    if let Some(o) = body.as_object_mut() {
        o.remove(field);
    }
    let what = format!("{t} without {field}");
    let got = c.request(&what, i, &body).await?;
    if got.status >= 500 {
        return Ok(Verdict::fail(
            format!("{what}: answered {} (a server error)", got.status),
            &got,
        ));
    }
    Ok(match refusal(&got) {
        Refusal::Taken(how) => Verdict::fail(format!("{what} (a required field) was {how}"), &got),
        Refusal::Elsewhere(why) => says_nothing(&what, &why, &got),
        Refusal::Refused => {
            if let Some(answer) = got.json.clone() {
                c.missing.push((field.to_string(), answer));
            }
            Verdict::held(
                1,
                format!("{t} requests without {field}"),
                format!("{what}: {}", got.decision()),
            )
        }
    })
}

pub(super) async fn bad_input(c: &mut Client<'_>, kind: &str) -> Result<Verdict, NoAnswer> {
    let i = match c.asker("APPROVAL").await {
        Ok(i) => i,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    let mut body = c.build(i, "APPROVAL");
    let raw = match kind {
        "malformed-json" => {
            // Half the bytes (an agent id may be any UTF-8: cut bytes, not a str).
            let text = body.to_string().into_bytes();
            Bytes::from(text[..text.len() / 2].to_vec())
        }
        "empty-body" => Bytes::new(),
        other => {
            match other {
                "wrong-type" => body["references"] = json!("arch-001"),
                "wrong-type-content" => {
                    body["content"] = json!(["# New Feature Design", "content as a list"])
                }
                "unknown-enum" => body["request_type"] = json!("DESTROY"),
                _ => body["timestamp"] = json!("yesterday at noon"),
            }
            Bytes::from(body.to_string())
        }
    };
    let token = c.agent(i).map(|(_, t)| t.clone());
    let got = c
        .send(
            kind,
            "POST",
            "/agent/request",
            token.as_deref(),
            Some(raw),
            None,
        )
        .await?;
    if got.status >= 500 {
        return Ok(Verdict::fail(
            format!(
                "{kind}: answered {} (a server error); expected a 4xx",
                got.status
            ),
            &got,
        ));
    }
    Ok(match refusal(&got) {
        Refusal::Elsewhere(why) => says_nothing(
            &format!("{} request", crate::text::with_article(kind)),
            &why,
            &got,
        ),
        Refusal::Refused if (400..500).contains(&got.status) => {
            Verdict::held(1, format!("{kind} requests"), got.status.to_string())
        }
        Refusal::Taken(how) => Verdict::fail(format!("{kind}: {how}; expected a 4xx"), &got),
        Refusal::Refused => Verdict::fail(
            format!("{kind}: answered {}; expected a 4xx", got.decision()),
            &got,
        ),
    })
}
