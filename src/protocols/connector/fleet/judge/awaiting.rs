//! A session awaiting a callback that never comes: the document makes the agent asynchronous
//! (the forward is acknowledged, the answer comes when it comes, if ever) and sets no deadline
//! for it, so the session must stay usable — a later user message on it is forwarded like the
//! first. What it does not require is judged by no one: that the server tells the user no reply
//! came (the "Sent to external agent" status line is one of the web UI's options), so the case
//! only notes what the clients were shown.

use std::time::Instant;

use crate::mock::observe::Tally;
use crate::protocols::connector::fleet::{Behavior, Books, Drive, Fleet};
use crate::report::{CaseResult, Level, Status};

use super::forwards::{wire, Wire};
use super::{created, ms, SPEC};

pub(super) fn awaiting_callback(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let created = created(d);
    let mut t = Tally::default();
    // Errors shown to never-callback sessions' clients after an acknowledged forward.
    let mut errors = 0;
    let silent = fleet
        .agents
        .iter()
        .filter(|a| a.behavior == Behavior::NeverCallback);
    for agent in silent {
        for session in agent
            .sessions
            .iter()
            .filter(|s| created.contains(s.as_str()))
        {
            // The first forward on the session acknowledged with a whole 2xx answer, and when.
            let Some((first, acked)) = b
                .forwards
                .iter()
                .filter(|f| f.session.as_deref() == Some(session.as_str()))
                .filter(|f| wire(f) == Wire::Acknowledged { cut: false })
                .filter_map(|f| f.ack.map(|a| (f, f.at + a.total)))
                .min_by_key(|(_, at)| *at)
            else {
                continue;
            };
            // The messages said after it (its own is recorded as said once sent, which may be
            // after its forward came back).
            let later = b.said.iter().filter(|s| {
                &s.session == session && s.at > acked && first.carries(session, &s.text).is_none()
            });
            for later in later {
                let n = b
                    .forwards
                    .iter()
                    .filter(|f| f.carries(session, &later.text).is_some())
                    .count();
                t.check(n > 0, || {
                    format!(
                        "{:?} to {session} (agent {}, never-callback): never forwarded, {} after the session's earlier message was acknowledged and not called back",
                        later.text,
                        agent.name,
                        ms(later.at.saturating_duration_since(acked)),
                    )
                });
            }
            errors += errors_after(d, session, acked);
        }
    }
    let mut c = t.judged(
        "platform.awaiting-callback",
        "forward",
        Level::Must,
        "a session whose agent acknowledged a message and never called back stays usable: each later user message on it is forwarded",
        SPEC,
        "later user messages on sessions awaiting a callback",
        "serve an agent with never-callback, and `messages: 2` or more, to exercise it (a message sent after the first was acknowledged)",
    );
    if c.status != Status::Skip {
        let note = format!(
            "the clients of the never-callback sessions were shown {} after an acknowledged forward; the document asks for an error only after a non-2xx or a timeout, and does not require the server to tell the user that no reply came (a \"Sent to external agent\" line is the web UI's option): not judged",
            crate::text::count(errors as u64, "errors")
        );
        c.message = if c.message.is_empty() {
            note
        } else {
            format!("{}\n{note}", c.message)
        };
    }
    c
}

/// Error messages `session`'s clients were shown after `since`.
fn errors_after(d: &Drive, session: &str, since: Instant) -> usize {
    d.seen.get(session).map_or(0, |clients| {
        clients
            .iter()
            .flatten()
            .filter(|m| m.at > since && m.is_error())
            .count()
    })
}
