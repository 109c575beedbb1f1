//! The kit's callback endpoint, as the agent server's: it hands each session a callback URL of
//! its own — a path prefix per session (`/cb/N`, so a hard-coded URL shows) and a query string
//! that must be kept — records every callback that comes, answers 200 with no body, 404 for a
//! session it never gave (as the real server does), 405 for a method other than POST to a
//! session it gave (recorded with its method, so that the case can name it), and 500 for a
//! session told to fail.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::mock::http1::{Delivered, Handler, Plan, Request, Response};

/// One callback as it came.
#[derive(Debug, Clone)]
pub struct Callback {
    pub at: Instant,
    /// The method it came with (the document: POST).
    pub method: String,
    /// The path and query it came to.
    pub path: String,
    /// The path and query given to its session.
    pub given: String,
    /// At exactly the URL given to the session (path and query).
    pub exact: bool,
    pub body: Vec<u8>,
    pub content_type: Option<String>,
}

#[derive(Debug, Default)]
struct Session {
    /// The path and query of its callback URL.
    target: String,
    failing: bool,
    callbacks: Vec<Callback>,
    /// Callbacks the engine refused before they were read whole (over --max-body: 413).
    refused: Vec<String>,
}

#[derive(Default)]
struct Books {
    sessions: HashMap<String, Session>,
    /// Callbacks to no session given (`METHOD target`, time).
    stray: Vec<(String, Instant)>,
    next: u64,
}

/// The endpoint.
#[derive(Default)]
pub struct Listener {
    books: Mutex<Books>,
}

/// Most callbacks kept per session (a flood is counted, not stored).
const KEPT: usize = 100;

impl Listener {
    /// A callback path and query for `session` (registered), to be joined to the public base;
    /// a session given before keeps its URL and its callbacks.
    pub fn give(&self, session: &str, failing: bool) -> String {
        self.give_as(session, failing, |n| {
            format!("/cb/{n}{}?k=tck-{n}", super::model::callback_path(session))
        })
    }

    /// Registers `session` with the callback path and query `target` (made of the session's
    /// number): a session given before keeps its own.
    pub fn give_as(
        &self,
        session: &str,
        failing: bool,
        target: impl FnOnce(u64) -> String,
    ) -> String {
        let Ok(mut b) = self.books.lock() else {
            return String::new();
        };
        if let Some(s) = b.sessions.get(session) {
            return s.target.clone();
        }
        b.next += 1;
        let target = target(b.next);
        b.sessions.insert(
            session.to_string(),
            Session {
                target: target.clone(),
                failing,
                callbacks: Vec::new(),
                refused: Vec::new(),
            },
        );
        target
    }

    /// The callbacks of `session` so far.
    pub fn callbacks(&self, session: &str) -> Vec<Callback> {
        self.books
            .lock()
            .ok()
            .and_then(|b| b.sessions.get(session).map(|s| s.callbacks.clone()))
            .unwrap_or_default()
    }

    /// Why callbacks to `session` were refused unread (a body over the limit), if any were.
    pub fn refused(&self, session: &str) -> Vec<String> {
        self.books
            .lock()
            .ok()
            .and_then(|b| b.sessions.get(session).map(|s| s.refused.clone()))
            .unwrap_or_default()
    }

    /// Callbacks to sessions never given.
    pub fn stray(&self) -> Vec<String> {
        self.books
            .lock()
            .map(|b| b.stray.iter().map(|(p, _)| p.clone()).collect())
            .unwrap_or_default()
    }

    /// The session a path names: `/cb/N/external/sessions/ID/messages` or the bare form.
    pub fn session_of(path: &str) -> Option<String> {
        let rest = path.split("/external/sessions/").nth(1)?;
        let id = rest.strip_suffix("/messages")?;
        Some(percent_decode(id))
    }
}

/// Whom a callback was for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A session given: its id, and whether its endpoint is told to fail.
    Given { session: String, failing: bool },
    /// No session given (recorded as a stray).
    Stray,
}

impl Listener {
    /// Records `request`, a callback that came `at`, under the session its path names (or as a
    /// stray), and says whom it was for: the endpoint answers it, or a proxy passes it on.
    pub fn heard(&self, request: &Request, at: Instant) -> Heard {
        let path = request.path().to_string();
        let Ok(mut b) = self.books.lock() else {
            return Heard::Stray;
        };
        let known = Listener::session_of(&path).filter(|s| b.sessions.contains_key(s));
        let Some(session) = known else {
            if b.stray.len() < KEPT {
                b.stray
                    .push((format!("{} {}", request.method, request.target), at));
            }
            return Heard::Stray;
        };
        let Some(s) = b.sessions.get_mut(&session) else {
            return Heard::Stray;
        };
        if s.callbacks.len() < KEPT {
            s.callbacks.push(Callback {
                at,
                method: request.method.clone(),
                path: request.target.clone(),
                given: s.target.clone(),
                exact: request.target == s.target,
                body: request.body.to_vec(),
                content_type: request.header("content-type").map(str::to_string),
            });
        }
        Heard::Given {
            failing: s.failing,
            session,
        }
    }
}

/// `text` with its `%XX` escapes decoded (lossily, as UTF-8).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            // Bytes, not a str slice: what follows a % may be any UTF-8.
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Handler for Listener {
    type Note = ();

    async fn handle(&self, request: Request) -> (Plan, ()) {
        let response = match self.heard(&request, Instant::now()) {
            Heard::Stray => Response::json_error(404, "unknown session"),
            Heard::Given { failing: _, .. } if request.method != "POST" => {
                Response::json_error(405, "callbacks are POSTed (agent-tck)")
            }
            Heard::Given { failing: true, .. } => {
                Response::json_error(500, "the callback endpoint is failing (agent-tck)")
            }
            Heard::Given { .. } => Response::new(200, "text/plain", Vec::new()),
        };
        (Plan::immediate(response), ())
    }

    async fn finish(&self, _: (), _: Delivered) {}

    fn refused(&self, _: std::net::SocketAddr, target: Option<&str>, status: u16, message: &str) {
        let Some(session) =
            target.and_then(|t| Listener::session_of(t.split('?').next().unwrap_or("")))
        else {
            return;
        };
        if let Ok(mut b) = self.books.lock() {
            if let Some(s) = b.sessions.get_mut(&session) {
                if s.refused.len() < KEPT {
                    // The engine speaks as a mock; here it is the kit's callback endpoint.
                    let message =
                        message.replace("the mock's limit", "the callback endpoint's limit");
                    s.refused.push(format!("HTTP {status}: {message}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_session() {
        assert_eq!(
            Listener::session_of("/cb/3/external/sessions/a%2Fb/messages").as_deref(),
            Some("a/b")
        );
        assert_eq!(
            Listener::session_of("/external/sessions/s-1/messages").as_deref(),
            Some("s-1")
        );
        assert_eq!(Listener::session_of("/elsewhere"), None);
        assert_eq!(percent_decode("a%20b%"), "a b%");
        assert_eq!(percent_decode("%aé%é"), "%aé%é");
    }
}
