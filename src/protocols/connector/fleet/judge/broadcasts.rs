//! The broadcast cases: callbacks delivered to the session's clients and to no other, injected
//! text passed on as text, and the latency from callback to broadcast.

use std::time::Duration;

use crate::mock::observe::Tally;
use crate::protocols::connector::fleet::{Books, CallbackKind, Drive, Fleet, SentCallback};
use crate::protocols::connector::ws::Inbound;
use crate::report::{CaseResult, Evidence, Level};
use crate::units::percentile;

use super::{copies, ms, status, SPEC};

pub(super) fn delivered(d: &Drive, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| c.kind == CallbackKind::Text) {
        let Some(clients) = d.seen.get(&cb.session) else {
            continue;
        };
        let accepted = cb.status.is_some_and(|s| (200..300).contains(&s));
        let counts: Vec<usize> = clients.iter().map(|m| copies(m, cb).len()).collect();
        t.check(accepted && counts.iter().all(|&n| n == 1), || {
            if accepted {
                format!(
                    // `counts` lists one count a client (never all 1 here): "times" reads right.
                    "{} to {}: broadcast {counts:?} times to its {} (expected once each)",
                    cb.marker,
                    cb.session,
                    crate::text::count(clients.len() as u64, "clients")
                )
            } else {
                format!(
                    "{} to {} (agent {}): {} (expected 200)",
                    cb.marker,
                    cb.session,
                    cb.agent,
                    status(cb.status, &cb.error)
                )
            }
        });
    }
    t.judged(
        "platform.callback-delivered",
        "callbacks",
        Level::Must,
        "a callback's raw text is answered 200 and reaches each WebSocket client of its session exactly once",
        SPEC,
        "text callbacks to sessions with clients",
        "an agent that is forwarded a message and calls back (conforming, markdown, injection, many-callbacks) exercises it, on a session with WebSocket clients",
    )
}

pub(super) fn isolated(d: &Drive, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for (session, clients) in &d.seen {
        for (i, messages) in clients.iter().enumerate() {
            for cb in &b.callbacks {
                if cb.kind != CallbackKind::Text && cb.kind != CallbackKind::Huge {
                    continue;
                }
                // Only a callback the server took can be broadcast, to the wrong session or not.
                if !cb.status.is_some_and(|s| (200..300).contains(&s)) {
                    continue;
                }
                let n = copies(messages, cb).len();
                if &cb.session == session {
                    continue;
                }
                t.check(n == 0, || {
                    format!(
                        "{} of session {} reached client {i} of session {session}",
                        cb.marker, cb.session
                    )
                });
            }
        }
    }
    t.judged(
        "platform.broadcast-isolated",
        "callbacks",
        Level::Must,
        "a callback's text reaches its own session's clients only",
        SPEC,
        "(callback, other session's client) pairs",
        "two sessions with WebSocket clients and a text callback to one of them exercise it",
    )
}

pub(super) fn injection(d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.injection-as-text",
        "callbacks",
        Level::May,
        "prompt-injection text in a callback is delivered as text, verbatim (INFO: where its canaries were seen)",
        SPEC,
    );
    let sent: Vec<&SentCallback> = b.callbacks.iter().filter(|c| c.canary.is_some()).collect();
    if sent.is_empty() {
        c.skip("no injection callback to judge: serve an agent with injection to exercise it");
        return c;
    }
    let mut seen = 0;
    let mut notes = Vec::new();
    let mut altered = Vec::new();
    for cb in sent {
        let canary = cb.canary.as_deref().unwrap_or("");
        let copies: Vec<&Inbound> = d
            .seen
            .get(&cb.session)
            .into_iter()
            .flatten()
            .flat_map(|m| copies(m, cb))
            .collect();
        let verbatim = copies.iter().filter(|m| m.digest == cb.digest).count();
        seen += copies.len();
        if copies.len() > verbatim {
            altered.push(format!(
                "{canary}: {} of {} altered (escaped or stripped)",
                copies.len() - verbatim,
                crate::text::count(copies.len() as u64, "broadcasts")
            ));
        }
        let forwarded = b
            .forwards
            .iter()
            .filter(|f| f.text.as_deref().is_some_and(|t| t.contains(canary)))
            .count();
        notes.push(format!(
            "{canary}: seen in {}, {verbatim} verbatim; in {}",
            crate::text::count(copies.len() as u64, "broadcasts"),
            crate::text::count(forwarded as u64, "later forwards")
        ));
    }
    let evidence = Evidence::new(seen as u64, "broadcasts of injection callbacks");
    if altered.is_empty() {
        c.pass_noting(evidence, notes.join("; "), || {
            format!(
                "no injection callback was broadcast to a client (see platform.callback-delivered): {}",
                notes.join("; ")
            )
        });
    } else {
        c.fail_on(
            evidence,
            format!("{}; {}", altered.join("; "), notes.join("; ")),
        );
    }
    c
}

pub(super) fn latency(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.broadcast-latency",
        "callbacks",
        Level::May,
        "the time from a callback to its broadcast, and from a user message to the broadcast of its answer (p50, p99)",
        SPEC,
    );
    let mut hop: Vec<Duration> = Vec::new();
    let mut round: Vec<Duration> = Vec::new();
    for cb in b.callbacks.iter().filter(|c| c.kind == CallbackKind::Text) {
        let said = b
            .said
            .iter()
            .find(|s| s.session == cb.session && s.text.trim() == cb.answers);
        for messages in d.seen.get(&cb.session).into_iter().flatten() {
            if let Some(m) = copies(messages, cb).first() {
                hop.push(m.at.saturating_duration_since(cb.sent));
                if let Some(said) = said {
                    round.push(m.at.saturating_duration_since(said.at));
                }
            }
        }
    }
    if hop.is_empty() {
        c.skip("no callback was broadcast to a client: an agent that calls back (conforming, markdown, many-callbacks) on a session with WebSocket clients exercises it");
        return c;
    }
    let evidence = Evidence::new(hop.len() as u64, "broadcasts timed");
    let figures = |times: &mut Vec<Duration>| {
        times.sort();
        format!(
            "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(times, 0.5).as_secs_f64() * 1000.0,
            percentile(times, 0.99).as_secs_f64() * 1000.0,
            times.last().copied().unwrap_or_default().as_secs_f64() * 1000.0
        )
    };
    let note = format!(
        "callback → broadcast: {}; user message → forward → callback → broadcast: {} (the agents wait {} before calling back)",
        figures(&mut hop),
        figures(&mut round),
        ms(fleet.reply_after)
    );
    c.pass_noting(evidence, note, String::new);
    c
}
