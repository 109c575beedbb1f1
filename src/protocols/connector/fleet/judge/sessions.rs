//! The session cases: sessions created through the create endpoint, the session ids it must
//! refuse, WebSocket clients attached, a deleted session created again.

use crate::mock::observe::Tally;
use crate::protocols::connector::fleet::{Drive, Fleet, Revive};
use crate::protocols::connector::ws::Dialect;
use crate::report::{CaseResult, Evidence, Level, Status};

use super::{status, SPEC};

pub(super) fn session_create(d: &Drive) -> CaseResult {
    let mut t = Tally::default();
    for call in &d.creates {
        let ok = call.status.is_some_and(|s| (200..300).contains(&s))
            && call.body["ok"] == true
            && call.body["result"]["sessionId"].as_str() == Some(call.session.as_str());
        t.check(ok, || {
            format!(
                "create {}: {}{}",
                call.session,
                status(call.status, &call.error),
                if call.body.is_null() {
                    String::new()
                } else {
                    format!(" {}", crate::text::shorten(&call.body.to_string(), 200))
                }
            )
        });
    }
    t.judged(
        "platform.session-create",
        "sessions",
        Level::Must,
        "POST /api/plugins/sessions/operations/create {agentId, sessionId} answers 201 {ok: true, result: {sessionId}}",
        SPEC,
        "session creations",
        "the fleet created no session (give an agent `sessions: N`)",
    )
}

pub(super) fn session_ids(d: &Drive) -> CaseResult {
    let mut t = Tally::default();
    for (what, call, refused) in &d.id_checks {
        let s = call.status.unwrap_or(0);
        let ok = if *refused {
            (400..500).contains(&s)
        } else {
            (200..300).contains(&s)
                && call.body["result"]["sessionId"].as_str() == Some(call.session.as_str())
        };
        t.check(ok, || {
            format!(
                "{what}: {} (expected {})",
                status(call.status, &call.error),
                if *refused {
                    "a 4xx refusal"
                } else {
                    "2xx with the session"
                }
            )
        });
    }
    let mut c = t.judged(
        "platform.session-ids",
        "sessions",
        Level::Must,
        "the create endpoint refuses empty, over-128-character, `../x`, spaced and non-ASCII ids, attaches the same id idempotently and refuses it for another agent",
        SPEC,
        "create calls",
        "the fleet has no agent to create sessions for",
    );
    if c.status == Status::Pass
        && !d
            .id_checks
            .iter()
            .any(|(w, _, _)| w.contains("another agent"))
    {
        c.message = "one agent id in the fleet: the other-agent rule was not tried (give a second agent another agent-id to try it)".into();
    }
    c
}

pub(super) fn ws_attach(fleet: &Fleet, d: &Drive) -> CaseResult {
    let mut t = Tally::default();
    for e in &d.connect_errors {
        t.check(false, || e.clone());
    }
    for _ in 0..d.clients.saturating_sub(d.not_ready.len()) {
        t.check(true, String::new);
    }
    let hello = match (&d.detection, d.dialect) {
        (Some(found), _) if found.answered().is_none() => found
            .tried
            .iter()
            .map(|(dialect, _)| format!("{} ({})", dialect.name(), dialect.hello_words()))
            .collect::<Vec<_>>()
            .join(" nor after "),
        (None, Some(dialect)) if !fleet.detect => format!(
            "{} ({}; the fleet file's `ws: auto` tries {} too)",
            dialect.name(),
            dialect.hello_words(),
            dialect.other().name()
        ),
        (_, dialect) => dialect.map_or("hello".into(), |d| {
            format!("{} ({})", d.name(), d.hello_words())
        }),
    };
    for s in &d.not_ready {
        t.check(false, || {
            format!("{s}: no session_ready within 5s after {hello}")
        });
    }
    // The title names the dialect judged: the one the run spoke, else (none answered) both.
    let neither = d.detection.as_ref().is_some_and(|f| f.answered().is_none());
    let title = match d.dialect.filter(|_| !neither) {
        Some(dialect) => format!(
            "a WebSocket client of /ws that says {} ({} dialect) is told session_ready",
            dialect.hello_words(),
            dialect.name()
        ),
        None => format!(
            "a WebSocket client of /ws that says hello ({}: {}; {}: {}) is told session_ready",
            Dialect::Document.name(),
            Dialect::Document.hello_words(),
            Dialect::AssistantV5.name(),
            Dialect::AssistantV5.hello_words()
        ),
    };
    let mut c = t.judged(
        "platform.ws-attach",
        "sessions",
        Level::Must,
        &title,
        SPEC,
        "WebSocket clients",
        "no WebSocket client was started (each session gets `clients: N`)",
    );
    if neither {
        c.message.push_str("\nneither WebSocket dialect was answered: set the fleet file's `ws:` (auto, document or assistant-v5) to the server's, if it speaks one of them");
    }
    c
}

/// A deleted session created again: revived, attached, and called back (see `fleet::revive`).
pub(super) fn session_revive(d: &Drive) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.session-revive",
        "sessions",
        Level::Must,
        "a deleted session created again (same agent) is revived: created, attached, and a callback to it answered 200 and broadcast",
        SPEC,
    );
    let Some(r) = &d.revive else {
        c.skip("the fleet has no agent to create a session for: give the fleet an agent");
        return c;
    };
    let ok = |call: &crate::protocols::connector::fleet::Call| {
        call.status.is_some_and(|s| (200..300).contains(&s))
    };
    let answer = |call: &crate::protocols::connector::fleet::Call| {
        let body = if call.body.is_null() {
            String::new()
        } else {
            format!(" {}", crate::text::shorten(&call.body.to_string(), 160))
        };
        format!("{}{body}", status(call.status, &call.error))
    };
    let session = &r.session;
    match r.calls.as_slice() {
        [first, ..] if !ok(first) => c.skip(format!(
            "creating {session} answered {} (see platform.session-create): nothing to delete and revive; a create endpoint that creates the fleet's sessions exercises this case",
            answer(first)
        )),
        [_, delete, ..] if !ok(delete) => c.skip(format!(
            "deleting {session} (POST /api/plugins/sessions/operations/delete {{sessionId}}) answered {}: nothing to revive; a server that deletes sessions there exercises this case",
            answer(delete)
        )),
        // A server that attached no client of the run attaches none here: one failure, there.
        [_, _, again] if r.not_attached.is_some() && d.clients > 0 && d.not_ready.len() == d.clients => c.skip(format!(
            "{session} was created again ({}), but no WebSocket client of the run was told session_ready (see platform.ws-attach): a server that attaches the fleet's clients exercises this case",
            answer(again)
        )),
        [_, _, again] => revived(&mut c, r, again, ok(again), &answer(again)),
        _ => c.skip(format!("the revival of {session} was not tried to its end")),
    }
    c
}

/// Judges a revival whose create, delete and second create were made.
pub(super) fn revived(
    c: &mut CaseResult,
    r: &Revive,
    again: &crate::protocols::connector::fleet::Call,
    created: bool,
    answer: &str,
) {
    let session = &r.session;
    let evidence = Evidence::new(1, "deleted sessions created again");
    let named = again.body["result"]["sessionId"].as_str() == Some(session.as_str());
    let fault = if !created || !named {
        Some(format!(
            "creating the deleted session {session} again answered {answer}: not revived (the document: \"If session is deleted: revive (idempotent attach)\"; expected 2xx {{ok: true, result: {{sessionId}}}})"
        ))
    } else if let Some(why) = &r.not_attached {
        Some(format!("{session} was created again ({answer}), but a WebSocket client could not attach to it: {why}"))
    } else {
        match &r.callback {
            None => Some(format!("{session}: no callback was sent")),
            Some(Err(e)) => Some(format!("a callback to the revived session {session}: no answer ({})", e.message)),
            Some(Ok(s)) if !(200..300).contains(s) => Some(format!(
                "a callback to the revived session {session} was answered {s} (expected 200: a revived session takes callbacks again)"
            )),
            Some(Ok(_)) if r.broadcasts != 1 => Some(format!(
                "the callback to the revived session {session} was answered 2xx and shown to its client {} (expected once)",
                crate::text::count(r.broadcasts as u64, "times")
            )),
            Some(Ok(_)) => None,
        }
    };
    match fault {
        Some(message) => c.fail_on(evidence, message),
        None => c.pass_noting(
            evidence,
            format!("{session}: created, deleted, created again ({answer}), attached; its callback answered 2xx and shown once"),
            String::new,
        ),
    }
}
