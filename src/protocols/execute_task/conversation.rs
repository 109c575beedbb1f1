//! Where a conversation is, when the harness does not say: the conforming agent's memory for
//! harnesses that send no `turn` (and often no history), such as one that sends only
//! `{"task_description": …}` and answers a tool call with `Executed NAME`.
//!
//! The agent reads, in order:
//! - the request's `turn`, else one past the agent turns of its `conversation_history`;
//! - the channel the request came on (one stdio process, one socket connection, one HTTP
//!   keep-alive connection: see [`Body::on_channel`](crate::mock::Body::on_channel)): what it
//!   answered last there;
//! - the task text: a tool result (`Executed NAME`, `Tool 'NAME' returned: …`, `Tools
//!   returned: …`, governance feedback in any form) continues a conversation, after the call
//!   of NAME in a script (governance feedback: a retry of the scripted call that holds the
//!   value it refuses); any other text starts one (a text that follows an open call on the
//!   same channel is that call's result, whatever its words).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

/// The turn a request says it is: its `turn`, else one past the agent turns of its history.
/// None when it says neither.
pub fn stated_turn(request: &Value) -> Option<u64> {
    if let Some(turn) = request.get("turn").and_then(Value::as_u64) {
        return Some(turn.max(1));
    }
    let history = request.get("conversation_history")?.as_array()?;
    let answered = history
        .iter()
        .filter(|t| {
            matches!(
                t.get("role").and_then(Value::as_str),
                Some("assistant" | "agent")
            )
        })
        .count();
    (answered > 0).then_some(answered as u64 + 1)
}

/// What a task text is, read alone.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// The result of a call of this tool (`Executed NAME`, `Tool 'NAME' …`).
    ToolResult(String),
    /// The results of several calls (`Tools returned: […]`).
    ToolResults,
    /// Governance feedback on the last call, in any form (`GOVERNANCE ERROR: …`, a
    /// `policy_violation` status).
    Governance,
    /// Anything else: a new task, or a result in words we don't know.
    Other,
}

impl Said {
    pub fn of(task: &str) -> Said {
        let text = task.trim_start();
        // A batch's results stay a batch's, whatever one of them says.
        if text.starts_with("Tools returned:") {
            return Said::ToolResults;
        }
        // Every form: the spec's text, a status in a dict's repr or in JSON (see
        // `governance_feedback`): never a new task.
        if super::model::governance_feedback(text) {
            return Said::Governance;
        }
        if let Some(rest) = text.strip_prefix("Executed ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .collect();
            let name = name.trim_end_matches('.');
            if !name.is_empty() {
                return Said::ToolResult(name.to_string());
            }
        }
        if let Some((name, _)) = text
            .strip_prefix("Tool '")
            .and_then(|rest| rest.split_once('\''))
        {
            return Said::ToolResult(name.to_string());
        }
        if text.starts_with("Tools returned:") {
            return Said::ToolResults;
        }
        Said::Other
    }

    /// Whether it continues a conversation by its words alone.
    pub fn continues(&self) -> bool {
        !matches!(self, Said::Other)
    }
}

/// Where one conversation is.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The task that opened it (it picks the script).
    pub opening: String,
    /// Steps of the script answered so far.
    pub answered: usize,
    /// The last call_tool answer (a governance retry repeats it).
    pub last_call: Option<Value>,
    /// The last answer waits for something (a tool result, a human): the next text is that.
    pub open: bool,
}

/// What one channel last saw.
#[derive(Debug, Clone)]
struct Seen {
    /// The last request's bytes, hashed.
    request: u64,
    /// Where the conversation was before it, and after.
    before: Option<Progress>,
    after: Progress,
}

/// Each channel's conversation. Bounded: past [`Conversations::MAX`] channels the oldest
/// memory is dropped whole (a harness that opens that many at once gets text-only answers).
#[derive(Debug, Default)]
pub struct Conversations {
    channels: Mutex<HashMap<u64, Seen>>,
}

impl Conversations {
    pub const MAX: usize = 4096;

    /// Where the conversation on `channel` is before `request` (its bytes): where it was before
    /// the last request when this is that request again (a retry, or the engine asking twice),
    /// so that a repeated request gets the same answer.
    pub fn before(&self, channel: u64, request: &[u8]) -> Option<Progress> {
        let channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        let seen = channels.get(&channel)?;
        if seen.request == fingerprint(request) {
            seen.before.clone()
        } else {
            Some(seen.after.clone())
        }
    }

    /// Records where `request` left the conversation on `channel`.
    pub fn record(&self, channel: u64, request: &[u8], before: Option<Progress>, after: Progress) {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if channels.len() >= Self::MAX && !channels.contains_key(&channel) {
            channels.clear();
        }
        channels.insert(
            channel,
            Seen {
                request: fingerprint(request),
                before,
                after,
            },
        );
    }
}

fn fingerprint(bytes: &[u8]) -> u64 {
    crate::text::fnv1a(&String::from_utf8_lossy(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_results_are_read_from_the_words_harnesses_use() {
        assert_eq!(
            Said::of("Executed lookup_order"),
            Said::ToolResult("lookup_order".into())
        );
        assert_eq!(
            Said::of("Tool 'apply_refund' returned: {}. Continue."),
            Said::ToolResult("apply_refund".into())
        );
        assert_eq!(Said::of("Tools returned: [{}]"), Said::ToolResults);
        assert_eq!(
            Said::of("{'error': 'GOVERNANCE ERROR: Amount 100 exceeds …'}"),
            Said::Governance
        );
        // The reference harness's dict, the repr of its sandbox's answer: not a new task.
        assert_eq!(
            Said::of(
                "{'status': 'policy_violation', 'violation': 'Amount 100 exceeds limit of 50'}"
            ),
            Said::Governance
        );
        assert_eq!(
            Said::of(r#"Tools returned: [{"status": "policy_violation"}]"#),
            Said::ToolResults
        );
        assert_eq!(Said::of("Identify the customer"), Said::Other);
        assert_eq!(Said::of("Executed"), Said::Other);
    }

    #[test]
    fn the_turn_comes_from_turn_else_from_the_history() {
        assert_eq!(stated_turn(&json!({"turn": 3})), Some(3));
        assert_eq!(stated_turn(&json!({"turn": 0})), Some(1));
        let history = json!([
            {"role": "user", "content": "a"},
            {"role": "agent", "content": "{}"},
            {"role": "environment", "content": "Executed x"},
        ]);
        assert_eq!(
            stated_turn(&json!({"conversation_history": history})),
            Some(2)
        );
        assert_eq!(stated_turn(&json!({"conversation_history": []})), None);
        assert_eq!(stated_turn(&json!({"task_description": "t"})), None);
    }

    #[test]
    fn a_repeated_request_finds_the_conversation_where_the_first_did() {
        let memory = Conversations::default();
        let at = |answered| Progress {
            opening: "t".into(),
            answered,
            last_call: None,
            open: true,
        };
        assert_eq!(memory.before(1, b"a"), None);
        memory.record(1, b"a", None, at(1));
        assert_eq!(memory.before(1, b"a"), None, "the same request again");
        assert_eq!(memory.before(1, b"b"), Some(at(1)));
        assert_eq!(memory.before(2, b"b"), None, "another channel");
    }
}
