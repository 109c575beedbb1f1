//! The fleet's web clients: a WebSocket client of the agent server's `/ws`, as the web UI is.
//! It attaches to a session (`hello`), sends user messages, and records what the server
//! broadcasts to it — the callbacks' text (`text_done`) and errors — with the time each came.
//!
//! Two dialects: the document's (`hello {sessionId}`, `user_message {text}`) and the public
//! implementation's (protocol version 5: `hello {protocolVersion, subscriptions: [{sessionId}]}`,
//! `text_input {sessionId, text}`). The document is the contract; the other is there so that the
//! fleet can be pointed at that server too.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// Most messages kept per client (more are counted, not stored).
const KEPT: usize = 2_000;

/// Most characters of a broadcast text kept (its length and digest are kept whole).
const KEPT_CHARS: usize = 4_096;

/// Each client's read and write buffer.
const BUFFER: usize = 4096;

/// How long a frame may be (a huge callback's broadcast is measured, up to this: the largest
/// huge-callback, 64 MiB, and its JSON envelope).
const MAX_FRAME: usize = 72 << 20;

/// A `ws:` setting that names no dialect (a usage error in the fleet file that gives it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ws: {given:?} (expected document or assistant-v5)")]
pub struct DialectError {
    pub given: String,
}

impl crate::error::LayerError for DialectError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// A web client that could not attach or speak. The server's doing, so the fleet judges it (a
/// failed case's evidence): it never ends a command, and has no exit status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WsError {
    #[error("{url}: no WebSocket handshake within {deadline:?}")]
    NoHandshake { url: String, deadline: Duration },
    #[error("{url}: {cause}")]
    Handshake { url: String, cause: String },
    #[error("session {session}: cannot send: {cause}")]
    Send { session: String, cause: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Dialect {
    /// The document: `hello {sessionId}`, `user_message {text}`.
    Document,
    /// The public implementation, protocol version 5.
    AssistantV5,
}

impl Dialect {
    pub fn parse(text: &str) -> Result<Dialect, DialectError> {
        match text {
            "document" => Ok(Dialect::Document),
            "assistant-v5" => Ok(Dialect::AssistantV5),
            other => Err(DialectError {
                given: other.to_string(),
            }),
        }
    }

    /// Its name in a fleet file's `ws:`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Document => "document",
            Dialect::AssistantV5 => "assistant-v5",
        }
    }

    /// The hello it says, in words (for messages).
    pub fn hello_words(self) -> &'static str {
        match self {
            Dialect::Document => "hello {sessionId}",
            Dialect::AssistantV5 => "hello {protocolVersion: 5, subscriptions: [{sessionId}]}",
        }
    }

    /// The other dialect.
    pub fn other(self) -> Dialect {
        match self {
            Dialect::Document => Dialect::AssistantV5,
            Dialect::AssistantV5 => Dialect::Document,
        }
    }

    fn hello(self, session: &str) -> Value {
        match self {
            Dialect::Document => json!({"type": "hello", "sessionId": session}),
            Dialect::AssistantV5 => json!({
                "type": "hello",
                "protocolVersion": 5,
                "subscriptions": [{"sessionId": session}],
            }),
        }
    }

    fn user_message(self, session: &str, text: &str) -> Value {
        match self {
            Dialect::Document => json!({"type": "user_message", "text": text}),
            Dialect::AssistantV5 => {
                json!({"type": "text_input", "sessionId": session, "text": text})
            }
        }
    }
}

/// A message the server sent to a client.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Inbound {
    #[serde(with = "crate::judge::time::serde_instant")]
    pub at: Instant,
    /// Its `type` ("" when it has none or is not JSON).
    pub kind: String,
    /// Its `sessionId`, when it names one.
    pub session: Option<String>,
    /// `text` (text_done and the like), at most KEPT_CHARS characters of it.
    pub text: Option<String>,
    /// The whole text's length in bytes and digest (trailing whitespace trimmed).
    pub text_len: usize,
    pub digest: u64,
}

impl Inbound {
    /// An error the server reports: an `error` message, or a message whose type names one.
    pub fn is_error(&self) -> bool {
        self.kind.contains("error")
    }

    /// A text a session's clients are shown (`text_done`).
    pub fn is_text(&self) -> bool {
        self.kind == "text_done"
    }
}

/// A digest of a text with trailing whitespace trimmed (servers may trim it).
pub fn digest(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.trim_end().hash(&mut h);
    h.finish()
}

fn inbound(text: &str, at: Instant) -> Inbound {
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let body = value.get("text").and_then(Value::as_str);
    Inbound {
        at,
        kind: value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        session: value
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string),
        text: body.map(|t| t.chars().take(KEPT_CHARS).collect()),
        text_len: body.map_or(0, |t| t.trim_end().len()),
        digest: body.map_or(0, digest),
    }
}

#[derive(Debug, Default)]
pub struct Seen {
    pub messages: Vec<Inbound>,
    /// Messages past KEPT.
    pub dropped: u64,
    /// How the connection ended, when it did before we closed it.
    pub closed: Option<String>,
}

type Sink = futures::stream::SplitSink<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    Message,
>;

/// One connected client.
pub struct Client {
    pub session: String,
    dialect: Dialect,
    sink: tokio::sync::Mutex<Sink>,
    pub seen: Arc<Mutex<Seen>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Client {
    /// Connects to `url` (ws://…/ws) and says hello for `session`, within `deadline`.
    pub async fn connect(
        url: &str,
        session: &str,
        dialect: Dialect,
        deadline: Duration,
    ) -> Result<Client, WsError> {
        // Small buffers: the defaults (128 KiB each way) made a client ~140 KB, 1.3 GB for a
        // fleet of 10,000; a client reads a few small messages a second.
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .read_buffer_size(BUFFER)
            .write_buffer_size(BUFFER)
            .max_message_size(Some(MAX_FRAME))
            .max_frame_size(Some(MAX_FRAME));
        let connect = tokio_tungstenite::connect_async_with_config(url, Some(config), true);
        let (stream, _) = tokio::time::timeout(deadline, connect)
            .await
            .map_err(|_| WsError::NoHandshake {
                url: url.to_string(),
                deadline,
            })?
            .map_err(|e| WsError::Handshake {
                url: url.to_string(),
                cause: e.to_string(),
            })?;
        let (sink, mut stream) = stream.split();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let record = seen.clone();
        let reader = tokio::spawn(async move {
            while let Some(frame) = stream.next().await {
                let text = match frame {
                    Ok(Message::Text(t)) => t.to_string(),
                    Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
                    Ok(Message::Close(c)) => {
                        if let Ok(mut s) = record.lock() {
                            s.closed = Some(c.map_or("closed".into(), |c| {
                                format!("closed: {} {}", c.code, c.reason)
                            }));
                        }
                        return;
                    }
                    Ok(_) => continue,
                    Err(e) => {
                        if let Ok(mut s) = record.lock() {
                            s.closed = Some(e.to_string());
                        }
                        return;
                    }
                };
                let message = inbound(&text, Instant::now());
                if let Ok(mut s) = record.lock() {
                    if s.messages.len() < KEPT {
                        s.messages.push(message);
                    } else {
                        s.dropped += 1;
                    }
                }
            }
        });
        let client = Client {
            session: session.to_string(),
            dialect,
            sink: tokio::sync::Mutex::new(sink),
            seen,
            reader,
        };
        client.send(dialect.hello(session)).await?;
        Ok(client)
    }

    async fn send(&self, message: Value) -> Result<(), WsError> {
        self.sink
            .lock()
            .await
            .send(Message::text(message.to_string()))
            .await
            .map_err(|e| WsError::Send {
                session: self.session.clone(),
                cause: e.to_string(),
            })
    }

    /// Sends a user message to the client's session.
    pub async fn say(&self, text: &str) -> Result<(), WsError> {
        self.send(self.dialect.user_message(&self.session, text))
            .await
    }

    /// Waits until a message satisfying `pred` has come, at most `deadline`.
    pub async fn wait_for(&self, deadline: Duration, pred: impl Fn(&Inbound) -> bool) -> bool {
        let until = Instant::now() + deadline;
        loop {
            if self
                .seen
                .lock()
                .map(|s| s.messages.iter().any(&pred))
                .unwrap_or(false)
            {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What came so far.
    pub fn messages(&self) -> Vec<Inbound> {
        self.seen
            .lock()
            .map(|s| s.messages.clone())
            .unwrap_or_default()
    }

    /// Closes the connection (politely, within a second) and stops reading.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            let _ = self.sink.lock().await.close().await;
        })
        .await;
        self.reader.abort();
    }
}

/// The WebSocket URL of a server's base URL: `http://h:p/x` → `ws://h:p/ws`.
pub fn ws_url(base: &crate::transport::http::BaseUrl) -> String {
    let scheme = if base.tls { "wss" } else { "ws" };
    format!("{scheme}://{}:{}/ws", base.host, base.port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbound_messages_are_read_whatever_comes() {
        let now = Instant::now();
        let m = inbound(
            r#"{"type":"text_done","sessionId":"s1","text":"hi  \n"}"#,
            now,
        );
        assert!(m.is_text() && !m.is_error());
        assert_eq!(m.session.as_deref(), Some("s1"));
        assert_eq!((m.text_len, m.digest), (2, digest("hi")));
        let e = inbound(r#"{"type":"error","code":"external_agent_error"}"#, now);
        assert!(e.is_error());
        let junk = inbound("not json", now);
        assert_eq!(junk.kind, "");
        assert_eq!(junk.text, None);
        let wrong = Dialect::parse("nope").unwrap_err();
        assert_eq!(
            wrong,
            DialectError {
                given: "nope".into()
            }
        );
        assert_eq!(
            wrong.to_string(),
            "ws: \"nope\" (expected document or assistant-v5)"
        );
        assert_eq!(
            Dialect::AssistantV5.hello("s")["subscriptions"][0]["sessionId"],
            "s"
        );
        assert_eq!(
            Dialect::Document.user_message("s", "t"),
            json!({"type": "user_message", "text": "t"})
        );
    }
}
