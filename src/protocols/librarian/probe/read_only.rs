//! The `context.query` and `capabilities.get` cases: the two read-only endpoints' answers.

use bytes::Bytes;
use serde_json::json;

use crate::protocols::librarian::model::{self};
use crate::schema::{findings_message, schemas};

use super::client::{Client, Gate, Got, NoAnswer};
use super::verdict::Verdict;

pub(super) async fn context(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    let agent = c.agent(0).cloned().unwrap_or_default();
    let body =
        json!({"agent_id": agent.0, "query": "What are the current authentication requirements?"});
    let got = c
        .send(
            "a context query",
            "POST",
            "/agent/context",
            Some(&agent.1),
            Some(Bytes::from(body.to_string())),
            None,
        )
        .await?;
    Ok(shaped(
        &got,
        model::CONTEXT_RESPONSE_SCHEMA,
        "ContextResponse",
    ))
}

pub(super) async fn capabilities(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    let got = c.capabilities(0).await?;
    c.note(Gate::Capabilities, &got);
    Ok(shaped(
        &got,
        model::CAPABILITIES_SCHEMA,
        "AgentCapabilities",
    ))
}

pub(super) fn shaped(got: &Got, schema: &str, what: &str) -> Verdict {
    if got.status != 200 {
        return Verdict::fail(
            format!(
                "answered {}; expected 200 with {}",
                got.status,
                crate::text::with_article(what)
            ),
            got,
        );
    }
    let Some(v) = &got.json else {
        return Verdict::fail("the answer is not JSON", got);
    };
    let findings = schemas().validate(schema, v);
    if findings.is_empty() {
        Verdict::held(
            1,
            format!("{what} answers"),
            format!("{} (its shape is assumed)", crate::text::with_article(what)),
        )
    } else {
        Verdict::fail(
            format!(
                "{} ({what}'s shape is assumed: schemas/{schema}.json)",
                findings_message(&findings)
            ),
            got,
        )
    }
}
