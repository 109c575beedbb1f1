//! The external agents' async connector (specs/external-agents-async-connector.md): an agent
//! server forwards each user message to an external agent's inputUrl (POST JSON, 5 s timeout, no
//! retry), and the agent answers later by POSTing raw text to the callbackUrl it was given,
//! `{callbackBase}/external/sessions/{sessionId}/messages`.

use std::time::Duration;

use serde_json::{json, Value};

pub const INPUT_SCHEMA: &str = "connector/input";

/// The server's timeout on the forward (no retry).
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether `id` is a session id the document recommends: non-empty, trimmed, at most 128
/// characters of `[A-Za-z0-9_-]`.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The path of a session's callback endpoint, its id percent-encoded.
pub fn callback_path(session: &str) -> String {
    let encoded: String = session
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("/external/sessions/{encoded}/messages")
}

/// The forwarded payload of a user message.
pub fn input(session: &str, agent: &str, callback_url: &str, text: &str) -> Value {
    json!({
        "sessionId": session,
        "agentId": agent,
        "callbackUrl": callback_url,
        "message": {
            "type": "user",
            "text": text,
            "createdAt": crate::report::now_rfc3339(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_and_callback_paths() {
        for ok in ["a", "EXTERNAL-123", "a_b-c", &"x".repeat(128)] {
            assert!(valid_session_id(ok), "{ok}");
        }
        for bad in ["", " a", "../x", "a b", "é", &"x".repeat(129)] {
            assert!(!valid_session_id(bad), "{bad}");
        }
        assert_eq!(
            callback_path("EXTERNAL-123"),
            "/external/sessions/EXTERNAL-123/messages"
        );
        assert_eq!(
            callback_path("a/b c"),
            "/external/sessions/a%2Fb%20c/messages"
        );
        let payload = input(
            "s1",
            "agent-a",
            "http://h/external/sessions/s1/messages",
            "hi",
        );
        assert_eq!(
            crate::schema::schemas().validate(INPUT_SCHEMA, &payload),
            vec![]
        );
        let mut bad = payload.clone();
        bad["message"]["type"] = json!("assistant");
        bad["sessionId"] = json!("../x");
        assert_eq!(
            crate::schema::schemas().validate(INPUT_SCHEMA, &bad).len(),
            2
        );
    }
}
