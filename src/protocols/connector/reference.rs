//! A conforming external agent on the kit's HTTP engine: what `probe connector` is tested
//! against (the self-test, the tests). Its inputUrl acknowledges a forwarded message at once
//! (`200 {"ok": true}`), then answers asynchronously: raw Markdown text POSTed to the
//! callbackUrl it was given, retried twice with backoff if the server fails it. [`Flaws`] switch
//! on one departure each, so that every probe case has an agent that breaks it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::task::TaskTracker;

use crate::error::Error;
use crate::mock::http1::{Delivered, Handler, Plan, Request, Response};
use crate::protocols::plugin::{flaws_named, ReferenceAt, ReferenceServer, Served};
use crate::transport::http::{self as client, BaseUrl, Limits};

/// One departure from the document each, switched on by name (the list is in `behaviors.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flaws {
    /// Acknowledges its first message after 6 s (past the server's 5 s).
    pub slow_ack: bool,
    /// Posts to `{origin}/external/sessions/{id}/messages`, not to the URL it was given.
    pub hard_coded_callback: bool,
    /// Wraps the text in a JSON envelope `{"text": …}`.
    pub json_envelope: bool,
    /// Posts an empty body.
    pub empty_callback: bool,
    /// Posts spaces and newlines only.
    pub whitespace_callback: bool,
    /// Also posts to a session it was never given.
    pub stray_callback: bool,
    /// Retries a failing callback endpoint 30 times without pause.
    pub floods: bool,
    /// Calls back with PUT, not POST.
    pub put_callback: bool,
    /// Calls back at the URL given without its query string.
    pub drops_query: bool,
    /// Not a departure: answers each message in 30 callbacks, sent together, each retried
    /// (at most three tries) on its own.
    pub many_callbacks: bool,
}

/// The path of the reference agent's inputUrl (it takes forwards on any path).
pub const INPUT_PATH: &str = "/v1/assistant/input";

/// Splits `http://host:port/path?query` into its origin and the rest.
pub fn split_url(url: &str) -> Option<(BaseUrl, String)> {
    let (origin, rest) = origin_and_rest(url)?;
    Some((BaseUrl::parse(origin).ok()?, rest.to_string()))
}

/// `http://host:port/path?query` as its origin (`http://host:port`) and the rest (`/` when
/// none).
pub fn origin_and_rest(url: &str) -> Option<(&str, &str)> {
    let scheme_end = url.find("://")? + 3;
    let rest_at = url[scheme_end..]
        .find(['/', '?'])
        .map_or(url.len(), |i| scheme_end + i);
    let rest = match &url[rest_at..] {
        "" => "/",
        rest => rest,
    };
    Some((&url[..rest_at], rest))
}

/// The external agent as the HTTP engine's handler.
pub struct ExternalAgent {
    flaws: Flaws,
    tracker: TaskTracker,
    acks: std::sync::atomic::AtomicU64,
}

impl ExternalAgent {
    pub fn new(flaws: Flaws) -> ExternalAgent {
        ExternalAgent {
            flaws,
            tracker: TaskTracker::new(),
            acks: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

async fn post(base: &BaseUrl, path: &str, body: Vec<u8>, content_type: &str) -> Option<u16> {
    send(base, "POST", path, body, content_type).await
}

async fn send(
    base: &BaseUrl,
    method: &str,
    path: &str,
    body: Vec<u8>,
    content_type: &str,
) -> Option<u16> {
    let request = client::Request {
        method: method.into(),
        path: path.into(),
        headers: vec![("content-type".into(), content_type.into())],
        body: body.into(),
    };
    let limits = Limits {
        deadline: Duration::from_secs(5),
        ..Limits::default()
    };
    client::send(base, &request, limits)
        .await
        .ok()
        .map(|r| r.status)
}

/// The answer to one message, posted after a moment, retried as the flaws say.
async fn answer(flaws: Flaws, payload: Value) {
    let session = payload["sessionId"].as_str().unwrap_or("").to_string();
    let text = payload["message"]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let Some((base, mut path)) = payload["callbackUrl"].as_str().and_then(split_url) else {
        return;
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    if flaws.hard_coded_callback {
        path = super::model::callback_path(&session);
    }
    if flaws.drops_query {
        path.truncate(path.find('?').unwrap_or(path.len()));
    }
    let reply = format!(
        "**Received** {} characters:\n\n> {}",
        text.chars().count(),
        crate::text::excerpt_str(&text, 200)
    );
    let (body, content_type) = if flaws.empty_callback {
        (Vec::new(), "text/plain; charset=utf-8")
    } else if flaws.whitespace_callback {
        (b" \n\t \r\n".to_vec(), "text/plain; charset=utf-8")
    } else if flaws.json_envelope {
        (
            serde_json::to_vec(&serde_json::json!({"text": reply})).unwrap_or_default(),
            "application/json",
        )
    } else {
        (reply.into_bytes(), "text/markdown; charset=utf-8")
    };
    let method = if flaws.put_callback { "PUT" } else { "POST" };
    if flaws.many_callbacks {
        // Thirty callbacks at once, each its own text and its own retries.
        let parts = (1..=30).map(|n| {
            let mut part = body.clone();
            part.extend_from_slice(format!("\n\n(part {n} of 30)").as_bytes());
            deliver(flaws, &base, method, &path, part, content_type)
        });
        futures::future::join_all(parts).await;
    } else {
        deliver(flaws, &base, method, &path, body, content_type).await;
    }
    if flaws.stray_callback {
        let stray = super::model::callback_path(&format!("{session}-stray"));
        post(&base, &stray, b"stray".to_vec(), "text/plain").await;
    }
}

/// One callback, retried while the endpoint fails (a 5xx or no answer) as the flaws say.
async fn deliver(
    flaws: Flaws,
    base: &BaseUrl,
    method: &str,
    path: &str,
    body: Vec<u8>,
    content_type: &str,
) {
    let (tries, pause) = if flaws.floods {
        (30, Duration::ZERO)
    } else {
        (3, Duration::from_millis(200))
    };
    for attempt in 0..tries {
        match send(base, method, path, body.clone(), content_type).await {
            Some(s) if s < 500 => break,
            _ => tokio::time::sleep(pause * (1 << attempt.min(4))).await,
        }
    }
}

impl Handler for ExternalAgent {
    type Note = ();

    async fn handle(&self, request: Request) -> (Plan, ()) {
        let Ok(payload) = serde_json::from_slice::<Value>(&request.body) else {
            return (
                Plan::immediate(Response::json_error(400, "the body is not JSON")),
                (),
            );
        };
        if request.method != "POST" || payload["callbackUrl"].as_str().is_none() {
            return (
                Plan::immediate(Response::json_error(400, "expected the forwarded message")),
                (),
            );
        }
        let flaws = self.flaws;
        self.tracker.spawn(answer(flaws, payload));
        let mut plan = Plan::immediate(Response::new(
            200,
            "application/json",
            &br#"{"ok":true}"#[..],
        ));
        let first = self.acks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0;
        if flaws.slow_ack && first {
            plan.ttfb = Duration::from_secs(6);
        }
        (plan, ())
    }

    async fn finish(&self, _: (), _: Delivered) {}
}

/// `mock agent --protocol connector`: the reference external agent, with the flaws `--behavior`
/// names, served until interrupted; it judges nothing (the probe judges it).
pub struct ReferenceAgent;

impl ReferenceServer for ReferenceAgent {
    fn judges_caller(&self) -> bool {
        false
    }

    fn serve<'a>(
        &'a self,
        at: ReferenceAt<'a>,
        stop: BoxFuture<'static, ()>,
    ) -> BoxFuture<'a, Result<Served, Error>> {
        Box::pin(async move {
            let flaws = flaws_named(
                at.behavior,
                "the reference external agent",
                Flaws::NAMES,
                Flaws::named_all,
            )?;
            let running =
                crate::mock::http1::spawn(Arc::new(ExternalAgent::new(flaws)), at.addr).await?;
            let input = format!("{}{INPUT_PATH}", running.url());
            crate::outln!(
                "agent-tck mock agent · connector · the reference external agent (behavior {}) · inputUrl {input}",
                at.behavior
            );
            crate::outln!("  probe it: agent-tck probe connector --input-url {input}");
            stop.await;
            running.stop().await;
            crate::errln!("interrupted: the reference external agent stopped");
            Ok(Served::Interrupted)
        })
    }
}
