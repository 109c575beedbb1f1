//! A reference agent server for the async connector, as the document describes it: sessions
//! created with a user-given id (`POST /api/plugins/sessions/operations/create`, deleted with
//! `…/delete`), web clients over WebSocket `/ws` (`hello {sessionId}` → `session_ready`,
//! `user_message {text}`; the public implementation's protocol-5 `hello {subscriptions}` and
//! `text_input` are taken too), each user message forwarded once to the session's external agent
//! (5 s timeout, no retry; an error message to the session's clients when it fails), and callbacks
//! at `POST /external/sessions/{id}/messages` (raw text: 200 and a `text_done` broadcast; 400
//! empty; 404 unknown or deleted; 413 over 256 KB); creating a deleted session again revives it.
//! Each [`Flaw`] breaks one rule. As the public implementation (kcosr/assistant's agent-server)
//! it can be configured from a file ([`load_config`], validated as that server validates its
//! config), and it answers a create for an agent id it does not know 400 `{"error": "Unknown
//! agent: ID", "code": "invalid_arguments"}`, as that server does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_tck::transport::http::{send, BaseUrl, Limits, Request};
use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use axum::{Json, Router};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    None,
    /// Forwards a failed message a second time.
    RetriesForward,
    /// Waits for the external agent as long as it takes.
    NoForwardTimeout,
    /// Answers 500 to an empty callback.
    ServerErrorOnEmptyCallback,
    /// Takes callbacks for sessions it does not have.
    AcceptsUnknownSession,
    /// Broadcasts a callback to every client, whatever its session.
    BroadcastsToAll,
    /// Takes any session id, `../x` too.
    AcceptsAnyId,
    /// Tells no one when a forward fails.
    NoErrorMessage,
    /// Answers 201 to the creation of a deleted session but leaves it deleted (no revival:
    /// no client attaches, no callback is taken).
    StaleRevive,
    /// Answers 500 to a callback over its size limit (instead of 413).
    ServerErrorOnHugeCallback,
    /// Takes a callback of any size and broadcasts it whole (a SHOULD: no bound).
    NoBodyLimit,
    /// Forwards with other field names (`session_id`, `agent_id`, `callback_url`,
    /// `message.content`).
    WrongFieldNames,
    /// Not a flaw of the document's: has no delete endpoint (404), so nothing is revived.
    NoDelete,
    /// Has no callback route: every callback is answered 404 (before its body is read).
    NoCallbackRoute,
    /// Not a flaw: speaks only the public implementation's protocol 5 on `/ws`, as there: a
    /// document `hello {sessionId}` is taken for a protocol-5 hello (its version defaults to 5,
    /// the unknown `sessionId` is dropped) with no subscriptions, and answered with nothing; a
    /// second hello on the connection is a `duplicate_hello` error; a protocol-5 hello is
    /// answered `subscribed`.
    Protocol5Only,
    /// Speaks neither dialect on `/ws`: a hello of either is answered with nothing.
    DeafWs,
    /// Keeps a session busy from a forward until a callback to it is taken (or the forward
    /// fails), and queues the user messages that come meanwhile (forwarded after the callback):
    /// a session whose agent acknowledges and never calls back takes no message again.
    AwaitsCallback,
    /// Not a flaw: takes a forward's status line as its outcome and reads no further, as a
    /// `fetch` resolves on the head (a 200 head cut before its body is an acknowledgement).
    AckOnHead,
    /// Not a flaw: tells the session's clients of a failed forward 2 s after it failed (as a
    /// busy server may), within the document's margin but after the fleet's `settle`.
    SlowErrorMessage,
}

impl Flaw {
    pub const ALL: [Flaw; 12] = [
        Flaw::RetriesForward,
        Flaw::NoForwardTimeout,
        Flaw::ServerErrorOnEmptyCallback,
        Flaw::AcceptsUnknownSession,
        Flaw::BroadcastsToAll,
        Flaw::AcceptsAnyId,
        Flaw::NoErrorMessage,
        Flaw::StaleRevive,
        Flaw::ServerErrorOnHugeCallback,
        Flaw::NoBodyLimit,
        Flaw::WrongFieldNames,
        Flaw::AwaitsCallback,
    ];

    /// The fleet checks that must catch it, and only they.
    pub fn checks(self) -> &'static [&'static str] {
        match self {
            Flaw::None
            | Flaw::Protocol5Only
            | Flaw::AckOnHead
            | Flaw::NoDelete
            | Flaw::SlowErrorMessage => &[],
            // No client is attached; what depends on one has nothing to judge.
            Flaw::DeafWs => &["platform.ws-attach"],
            // Every callback fails delivery (404); the huge one is refused, no crash.
            Flaw::NoCallbackRoute => &["platform.callback-delivered"],
            Flaw::RetriesForward => &["platform.forward-once"],
            Flaw::NoForwardTimeout => &["platform.forward-timeout"],
            // A 500 is both the wrong refusal and a server error.
            Flaw::ServerErrorOnEmptyCallback => {
                &["platform.callback-empty", "platform.callback-no-5xx"]
            }
            Flaw::AcceptsUnknownSession => &["platform.callback-unknown-session"],
            Flaw::BroadcastsToAll => &["platform.broadcast-isolated"],
            Flaw::AcceptsAnyId => &["platform.session-ids"],
            Flaw::NoErrorMessage => &["platform.error-message"],
            Flaw::StaleRevive => &["platform.session-revive"],
            Flaw::ServerErrorOnHugeCallback => &["platform.callback-no-5xx"],
            Flaw::NoBodyLimit => &["platform.callback-huge"],
            Flaw::WrongFieldNames => &["platform.forward-schema"],
            // The never-callback session's later message is never forwarded (and those of
            // sessions whose callbacks are refused: empty, whitespace, huge, to another session).
            Flaw::AwaitsCallback => &["platform.awaiting-callback", "platform.forward-once"],
        }
    }
}

/// Largest callback body taken.
const MAX_CALLBACK: usize = 256 * 1024;

struct Session {
    agent: String,
    deleted: bool,
}

struct Server {
    flaw: Flaw,
    /// agentId → inputUrl.
    agents: HashMap<String, String>,
    base: String,
    sessions: Mutex<HashMap<String, Session>>,
    /// Connected clients: (session, sender).
    clients: Mutex<Vec<(String, mpsc::UnboundedSender<String>)>>,
    /// `AwaitsCallback`: the sessions awaiting a callback, and the messages queued meanwhile.
    awaiting: Mutex<HashMap<String, Vec<String>>>,
}

impl Server {
    fn broadcast(&self, session: &str, message: Value) {
        let text = message.to_string();
        if let Ok(mut clients) = self.clients.lock() {
            clients.retain(|(_, tx)| !tx.is_closed());
            for (s, tx) in clients.iter() {
                if s == session || self.flaw == Flaw::BroadcastsToAll {
                    let _ = tx.send(text.clone());
                }
            }
        }
    }

    fn live(&self, session: &str) -> Option<String> {
        let sessions = self.sessions.lock().ok()?;
        sessions
            .get(session)
            .filter(|s| !s.deleted)
            .map(|s| s.agent.clone())
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn refusal(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// The agents a server is configured with, loaded as the public implementation loads its config
/// file (kcosr/assistant, agent-server's `config.ts`, whose zod schema requires `agentId`,
/// `displayName` and `description`, each a string non-empty once trimmed, and `external:
/// {inputUrl, callbackBaseUrl}` exactly when `type` is `"external"`): a whole config file
/// (`{"agents": [...]}`) or the document's list of definitions (a JSON array). The external
/// agents' ids → inputUrls; a refusal is worded as the public server's (a `ZodError` with the
/// issues, or its `agents[ID]…` errors).
pub fn load_config(text: &str) -> Result<Configured, String> {
    let config: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let (agents, at): (&[Value], Vec<Value>) = match &config {
        Value::Array(list) => (list, Vec::new()),
        Value::Object(o) => match o.get("agents") {
            None => (&[], Vec::new()),
            Some(Value::Array(list)) => (list, vec![json!("agents")]),
            Some(other) => {
                return Err(zod_error(&[type_issue(
                    vec![json!("agents")],
                    "array",
                    other,
                )]))
            }
        },
        other => return Err(zod_error(&[type_issue(Vec::new(), "object", other)])),
    };
    let mut issues = Vec::new();
    for (i, agent) in agents.iter().enumerate() {
        let mut here = at.clone();
        here.push(json!(i));
        let path = |key: &str| {
            let mut p = here.clone();
            p.extend(key.split('.').map(|k| json!(k)));
            p
        };
        let Some(fields) = agent.as_object() else {
            issues.push(type_issue(here.clone(), "object", agent));
            continue;
        };
        let mut required = vec!["agentId", "displayName", "description"];
        let external = fields.get("external").filter(|e| !e.is_null());
        if let Some(e) = external {
            if e.is_object() {
                required.extend(["external.inputUrl", "external.callbackBaseUrl"]);
            } else {
                issues.push(type_issue(path("external"), "object", e));
            }
        }
        for key in required {
            let value = key
                .split('.')
                .try_fold(agent, |v, k| v.get(k))
                .unwrap_or(&Value::Null);
            let missing = agent
                .pointer(&format!("/{}", key.replace('.', "/")))
                .is_none();
            match value.as_str() {
                Some(s) if s.trim().is_empty() => issues.push(json!({
                    "code": "too_small", "minimum": 1, "type": "string", "inclusive": true,
                    "exact": false, "message": "String must contain at least 1 character(s)",
                    "path": path(key),
                })),
                Some(_) => {}
                None if missing => issues.push(json!({
                    "code": "invalid_type", "expected": "string", "received": "undefined",
                    "path": path(key), "message": "Required",
                })),
                None => issues.push(type_issue(path(key), "string", value)),
            }
        }
        if let Some(kind) = fields.get("type").filter(|t| !t.is_null()) {
            if kind != "chat" && kind != "external" {
                issues.push(json!({
                    "received": kind, "code": "invalid_enum_value", "options": ["chat", "external"],
                    "path": path("type"),
                    "message": format!("Invalid enum value. Expected 'chat' | 'external', received {kind}"),
                }));
            }
        }
    }
    if !issues.is_empty() {
        return Err(zod_error(&issues));
    }
    // The public server's session operations are its sessions plugin's, served only when the
    // config enables it; the document's server has them.
    let session_routes = config.is_array() || config["plugins"]["sessions"]["enabled"] == true;
    let mut known = HashMap::new();
    for agent in agents {
        let id = agent["agentId"].as_str().unwrap_or("").trim().to_string();
        let external = agent.get("external").filter(|e| !e.is_null());
        match (agent["type"].as_str() == Some("external"), external) {
            (true, None) => {
                return Err(format!(
                    "agents[{id}].external is required when type is \"external\""
                ))
            }
            (false, Some(_)) => {
                return Err(format!(
                    "agents[{id}].external is only valid when type is \"external\""
                ))
            }
            (true, Some(e)) => {
                let input = e["inputUrl"].as_str().unwrap_or("").trim().to_string();
                if known.insert(id.clone(), input).is_some() {
                    return Err(format!("Duplicate agentId in AgentRegistry: {id}"));
                }
            }
            // A chat agent: nothing the connector's server here runs.
            (false, None) => {}
        }
    }
    Ok(Configured {
        agents: known,
        session_routes,
    })
}

/// A server's configuration, as [`load_config`] read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configured {
    /// The external agents: agentId → inputUrl.
    pub agents: HashMap<String, String>,
    /// Whether `/api/plugins/sessions/operations/*` is served (404 otherwise).
    pub session_routes: bool,
}

/// zod's `invalid_type` issue for `value` where `expected` was wanted.
fn type_issue(path: Vec<Value>, expected: &str, value: &Value) -> Value {
    let received = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    json!({
        "code": "invalid_type", "expected": expected, "received": received, "path": path,
        "message": format!("Expected {expected}, received {received}"),
    })
}

/// A `ZodError`'s message, as the public server exits with it.
fn zod_error(issues: &[Value]) -> String {
    format!(
        "ZodError: {}",
        serde_json::to_string_pretty(issues).unwrap_or_default()
    )
}

async fn create(State(s): State<Arc<Server>>, Json(body): Json<Value>) -> Response {
    let agent = body["agentId"].as_str().unwrap_or("").to_string();
    let id = body["sessionId"].as_str().unwrap_or("").trim().to_string();
    if !s.agents.contains_key(&agent) {
        // As the public server answers (its sessions plugin's `invalid_arguments`).
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": format!("Unknown agent: {agent}"), "code": "invalid_arguments"})),
        )
            .into_response();
    }
    if s.flaw != Flaw::AcceptsAnyId && !valid_id(&id) {
        return refusal(
            StatusCode::BAD_REQUEST,
            "sessionId must be 1 to 128 characters of [A-Za-z0-9_-]",
        );
    }
    let Ok(mut sessions) = s.sessions.lock() else {
        return refusal(StatusCode::INTERNAL_SERVER_ERROR, "poisoned");
    };
    match sessions.get_mut(&id) {
        Some(existing) if !existing.deleted && existing.agent != agent => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "the session belongs to another agent",
            )
        }
        Some(existing) => {
            // Revived (or attached again); the flaw answers as if, and leaves it deleted.
            if s.flaw != Flaw::StaleRevive {
                existing.deleted = false;
            }
            existing.agent = agent.clone();
        }
        None => {
            sessions.insert(
                id.clone(),
                Session {
                    agent: agent.clone(),
                    deleted: false,
                },
            );
        }
    }
    (
        StatusCode::CREATED,
        Json(json!({"ok": true, "result": {"sessionId": id, "agentId": agent}})),
    )
        .into_response()
}

async fn delete(State(s): State<Arc<Server>>, Json(body): Json<Value>) -> Response {
    let id = body["sessionId"].as_str().unwrap_or("");
    let Ok(mut sessions) = s.sessions.lock() else {
        return refusal(StatusCode::INTERNAL_SERVER_ERROR, "poisoned");
    };
    match sessions.get_mut(id) {
        Some(session) if !session.deleted => {
            session.deleted = true;
            Json(json!({"ok": true, "result": {"sessionId": id, "deleted": true}})).into_response()
        }
        _ => refusal(StatusCode::NOT_FOUND, "Session not found"),
    }
}

async fn callback(
    State(s): State<Arc<Server>>,
    Path(id): Path<String>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(_) if s.flaw == Flaw::ServerErrorOnHugeCallback => {
            return (StatusCode::INTERNAL_SERVER_ERROR, "body too large").into_response()
        }
        Err(refused) => return refused.into_response(),
    };
    if s.live(&id).is_none() && s.flaw != Flaw::AcceptsUnknownSession {
        return (StatusCode::NOT_FOUND, "Not found").into_response();
    }
    let text = String::from_utf8_lossy(&body).trim_end().to_string();
    if text.trim().is_empty() {
        return if s.flaw == Flaw::ServerErrorOnEmptyCallback {
            (StatusCode::INTERNAL_SERVER_ERROR, "empty").into_response()
        } else {
            (StatusCode::BAD_REQUEST, "Empty message").into_response()
        };
    }
    s.broadcast(
        &id,
        json!({"type": "text_done", "sessionId": id, "text": text}),
    );
    // The session is free again: what was queued meanwhile goes out.
    let queued = s.awaiting.lock().ok().and_then(|mut a| a.remove(&id));
    for text in queued.into_iter().flatten() {
        spawn_forward(s.clone(), id.clone(), text);
    }
    StatusCode::OK.into_response()
}

/// `AwaitsCallback`: queues `text` when `session` awaits a callback (true), else lets it go.
fn queued(s: &Server, session: &str, text: &str) -> bool {
    if s.flaw != Flaw::AwaitsCallback {
        return false;
    }
    let Ok(mut awaiting) = s.awaiting.lock() else {
        return false;
    };
    match awaiting.get_mut(session) {
        Some(queue) => {
            queue.push(text.to_string());
            true
        }
        None => false,
    }
}

/// Spawns [`forward`] (boxed: a failed forward spawns the messages queued behind it).
fn spawn_forward(s: Arc<Server>, session: String, text: String) {
    let forwarding: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
        Box::pin(forward(s, session, text));
    tokio::spawn(forwarding);
}

/// Forwards a user message to the session's agent; tells the session's clients when it fails.
async fn forward(s: Arc<Server>, session: String, text: String) {
    let Some(agent) = s.live(&session) else {
        return;
    };
    let Some(input) = s.agents.get(&agent).cloned() else {
        return;
    };
    let (base, path) = split(&input);
    let callback_url = format!("{}/external/sessions/{session}/messages", s.base);
    let created = agent_tck::report::now_rfc3339();
    let payload = if s.flaw == Flaw::WrongFieldNames {
        json!({
            "session_id": session,
            "agent_id": agent,
            "callback_url": callback_url,
            "message": {"type": "user", "content": text, "created_at": created},
        })
    } else {
        json!({
            "sessionId": session,
            "agentId": agent,
            "callbackUrl": callback_url,
            "message": {"type": "user", "text": text, "createdAt": created},
        })
    };
    let request = Request {
        method: "POST".into(),
        path,
        headers: vec![(
            "content-type".into(),
            "application/json; charset=utf-8".into(),
        )],
        body: payload.to_string().into_bytes().into(),
    };
    let deadline = if s.flaw == Flaw::NoForwardTimeout {
        Duration::from_secs(60)
    } else {
        Duration::from_secs(5)
    };
    let limits = Limits {
        deadline,
        ..Limits::default()
    };
    if s.flaw == Flaw::AwaitsCallback {
        // Busy from the forward on (before its answer is read, so that a message that comes
        // meanwhile is held whatever the timing), until a callback to the session is taken.
        if let Ok(mut awaiting) = s.awaiting.lock() {
            awaiting.entry(session.clone()).or_default();
        }
    }
    let tries = if s.flaw == Flaw::RetriesForward { 2 } else { 1 };
    let mut failure = None;
    for _ in 0..tries {
        let status = if s.flaw == Flaw::AckOnHead {
            status_line(&base, &request, deadline).await
        } else {
            send(&base, &request, limits)
                .await
                .map(|r| r.status)
                .map_err(|e| e.to_string())
        };
        failure = match status {
            Ok(status) if (200..300).contains(&status) => None,
            Ok(status) => Some(format!("inputUrl returned {status}")),
            Err(e) => Some(e),
        };
        if failure.is_none() {
            break;
        }
    }
    if failure.is_some() && s.flaw == Flaw::AwaitsCallback {
        // No callback will come for a failed forward: the session is free again.
        let queued = s.awaiting.lock().ok().and_then(|mut a| a.remove(&session));
        for text in queued.into_iter().flatten() {
            spawn_forward(s.clone(), session.clone(), text);
        }
    }
    if let Some(why) = failure {
        if s.flaw == Flaw::SlowErrorMessage {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        if s.flaw != Flaw::NoErrorMessage {
            s.broadcast(
                &session,
                json!({"type": "error", "sessionId": session, "code": "external_agent_error", "message": format!("Failed to forward message to external agent: {why}")}),
            );
        }
    }
}

/// POSTs `request` and reads the answer up to its status line only (what `fetch` resolves on).
async fn status_line(base: &BaseUrl, request: &Request, deadline: Duration) -> Result<u16, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect((base.host.as_str(), base.port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let mut head = format!(
            "{} {} HTTP/1.1\r\nhost: {}:{}\r\ncontent-length: {}\r\n",
            request.method,
            request.path,
            base.host,
            base.port,
            request.body.len()
        );
        for (name, value) in &request.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        stream
            .write_all(&request.body)
            .await
            .map_err(|e| e.to_string())?;
        let mut seen = Vec::new();
        let mut chunk = [0u8; 512];
        while !seen.windows(2).any(|w| w == b"\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return Err("no status line".to_string()),
                Ok(n) => seen.extend_from_slice(&chunk[..n]),
            }
        }
        let line = String::from_utf8_lossy(&seen);
        line.split(' ')
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .filter(|_| line.starts_with("HTTP/1."))
            .ok_or_else(|| {
                format!(
                    "not an HTTP answer: {:?}",
                    line.chars().take(40).collect::<String>()
                )
            })
    };
    tokio::time::timeout(deadline, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no status line within {deadline:?}")))
}

fn split(url: &str) -> (BaseUrl, String) {
    let rest = url.splitn(4, '/').nth(3).unwrap_or("");
    let base_len = url.len() - rest.len() - usize::from(!rest.is_empty());
    (
        BaseUrl::parse(&url[..base_len]).expect("an inputUrl"),
        format!("/{rest}"),
    )
}

async fn ws(State(s): State<Arc<Server>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| client(s, socket))
}

async fn client(s: Arc<Server>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(text) = rx.recv().await {
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
    });
    let mut session: Option<String> = None;
    // Protocol 5: a hello was taken (whether or not it subscribed to anything).
    let mut greeted = false;
    let v5 = s.flaw == Flaw::Protocol5Only;
    while let Some(Ok(frame)) = stream.next().await {
        let Message::Text(text) = frame else {
            continue;
        };
        let message: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match (message["type"].as_str(), &session) {
            (Some("hello"), _) if s.flaw == Flaw::DeafWs => {}
            (Some("hello"), _) if v5 && greeted => {
                let _ = tx.send(json!({"type": "error", "code": "duplicate_hello", "message": "hello has already been received"}).to_string());
            }
            (Some("hello"), None) if v5 && message["subscriptions"].is_null() => {
                greeted = true;
            }
            (Some("hello"), None) => {
                greeted = true;
                // The document's `hello {sessionId}`, or protocol 5's `subscriptions`.
                let document = message["sessionId"]
                    .as_str()
                    .filter(|_| s.flaw != Flaw::Protocol5Only);
                let id = document
                    .or_else(|| message["subscriptions"][0]["sessionId"].as_str())
                    .unwrap_or("")
                    .to_string();
                if s.live(&id).is_none() {
                    let _ = tx.send(json!({"type": "error", "code": "unknown_session", "message": "no such session"}).to_string());
                    break;
                }
                if let Ok(mut clients) = s.clients.lock() {
                    clients.push((id.clone(), tx.clone()));
                }
                let ready = if v5 { "subscribed" } else { "session_ready" };
                let _ = tx.send(json!({"type": ready, "sessionId": id}).to_string());
                session = Some(id);
            }
            // The document's `user_message {text}`, or protocol 5's `text_input {sessionId, text}`.
            (Some("user_message" | "text_input"), Some(id)) => {
                let text = message["text"].as_str().unwrap_or("").trim().to_string();
                if !text.is_empty() && !queued(&s, id, &text) {
                    tokio::spawn(forward(s.clone(), id.clone(), text));
                }
            }
            _ => {
                let _ = tx.send(json!({"type": "error", "code": "invalid_client_message", "message": "expected hello, then user_message"}).to_string());
            }
        }
    }
    drop(tx);
    writer.abort();
}

/// A running server.
pub struct Running {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A loopback port for a server to come, and its URL (the fleet's callback base must be known
/// before the server, which needs the fleet's inputUrls).
pub async fn bind() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// Serves the reference server with `flaw` on `listener` (from [`bind`]); `agents` maps
/// agentIds to inputUrls.
pub fn start(
    bound: (tokio::net::TcpListener, String),
    flaw: Flaw,
    agents: HashMap<String, String>,
) -> Running {
    start_configured(
        bound,
        flaw,
        Configured {
            agents,
            session_routes: true,
        },
    )
}

/// Serves the reference server with `flaw` on `listener`, configured as `config` says.
pub fn start_configured(
    (listener, url): (tokio::net::TcpListener, String),
    flaw: Flaw,
    Configured {
        agents,
        session_routes,
    }: Configured,
) -> Running {
    let server = Arc::new(Server {
        flaw,
        agents,
        base: url,
        sessions: Mutex::new(HashMap::new()),
        clients: Mutex::new(Vec::new()),
        awaiting: Mutex::new(HashMap::new()),
    });
    let mut app = Router::new().route("/ws", any(ws));
    if session_routes {
        app = app.route("/api/plugins/sessions/operations/create", post(create));
    }
    if session_routes && flaw != Flaw::NoDelete {
        app = app.route("/api/plugins/sessions/operations/delete", post(delete));
    }
    if flaw != Flaw::NoCallbackRoute {
        app = app.route("/external/sessions/{id}/messages", post(callback));
    }
    let limit = if flaw == Flaw::NoBodyLimit {
        DefaultBodyLimit::disable()
    } else {
        DefaultBodyLimit::max(MAX_CALLBACK)
    };
    let app = app.layer(limit).with_state(server);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Running { task }
}
