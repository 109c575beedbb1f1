//! The agent server's session operations (`/api/plugins/sessions/operations/{what}`), as the
//! fleet's users and its inputs call them.

use std::time::Duration;

use serde_json::Value;

use crate::transport::http::{self as client, BaseUrl, Limits};
use crate::transport::liveness::{self, Watch};

use super::books::Call;

/// POSTs `/api/plugins/sessions/operations/{what}` with `body`, under the server's `watch`.
pub async fn session_call(
    watch: &Watch,
    server: &BaseUrl,
    what: &str,
    session: &str,
    body: Value,
) -> Call {
    let request = client::Request {
        method: "POST".into(),
        path: format!("/api/plugins/sessions/operations/{what}"),
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(&body).unwrap_or_default().into(),
    };
    let limits = Limits {
        deadline: Duration::from_secs(10),
        ..Limits::default()
    };
    let (result, broke_at) = liveness::send(watch, server, &request, limits).await;
    match result {
        Ok(r) => Call {
            what: what.into(),
            session: session.into(),
            status: Some(r.status),
            body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            error: None,
            broke_at,
        },
        Err(e) => Call {
            what: what.into(),
            session: session.into(),
            status: None,
            body: Value::Null,
            // The transport speaks of agents; here the peer is the agent server.
            error: Some(
                e.to_string()
                    .replace("agent unreachable", "the agent server is unreachable"),
            ),
            broke_at,
        },
    }
}
