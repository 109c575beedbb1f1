//! The `auth.*` cases: no token, a wrong token, a token of another agent, refused.

use bytes::Bytes;

use super::client::{Client, Got, NoAnswer};
use super::verdict::{says_nothing, Verdict};

/// The answer to credentials that must be refused (`what`: which): 401/403 holds; a 429 says
/// nothing; anything else breaks the rule.
pub(super) fn credentials_refused(what: &str, of: &str, got: &Got) -> Verdict {
    match got.status {
        401 | 403 => Verdict::held(1, of, got.status.to_string()),
        429 => says_nothing(what, "still rate limited after 3 retries (429)", got),
        s if (200..300).contains(&s) => Verdict::fail(
            format!("{what}: {}; expected 401 or 403", got.decision()),
            got,
        ),
        s => Verdict::fail(format!("{what}: answered {s}; expected 401 or 403"), got),
    }
}

pub(super) async fn auth(c: &mut Client<'_>, kind: &str) -> Result<Verdict, NoAnswer> {
    // A refusal of bad credentials means something once good ones are taken. The foreign
    // agent's request is one its named agent B may make (a QUERY), so that only the token (A's)
    // is wrong, never a capability.
    let foreign = kind == "foreign-agent";
    let t = if foreign { "QUERY" } else { "APPROVAL" };
    let i = match c.asker(t).await {
        Ok(i) => i,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    let body = c.build(i, t);
    let (token, of) = match kind {
        "no-token" => (None, "requests without a token"),
        "wrong-token" => (
            Some(format!("tck-wrong-token-{}", c.s.common.seed)),
            "requests with a wrong token",
        ),
        _ => {
            let a = usize::from(i == 0);
            (
                c.agent(a).map(|(_, t)| t.clone()),
                "requests with one agent's token in another's name",
            )
        }
    };
    let bytes = Bytes::from(body.to_string());
    let got = c
        .send(
            kind,
            "POST",
            "/agent/request",
            token.as_deref(),
            Some(bytes),
            Some(&body),
        )
        .await?;
    Ok(credentials_refused(kind, of, &got))
}
