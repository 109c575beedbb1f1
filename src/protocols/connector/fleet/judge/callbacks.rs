//! The callback cases: the answers a server gives callbacks it must refuse (empty, unknown
//! session), never a 5xx, and a huge callback.

use crate::mock::observe::Tally;
use crate::protocols::connector::fleet::{Books, CallbackKind, Drive, SentCallback};
use crate::report::{CaseResult, Evidence, Level};

use super::{copies, status, SPEC};

/// A callback the server must refuse: which, with what status, and what would send one.
pub(super) struct Refusal<'a> {
    pub(super) id: &'a str,
    pub(super) title: &'a str,
    pub(super) kinds: &'a [CallbackKind],
    pub(super) expected: u16,
    /// The callbacks, as a plural noun phrase.
    pub(super) of: &'a str,
    /// The behaviours that send them.
    pub(super) behaviors: &'a str,
}

pub(super) fn callback_refusals(b: &Books, r: Refusal<'_>) -> CaseResult {
    let Refusal {
        id,
        title,
        kinds,
        expected,
        of,
        behaviors,
    } = r;
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| kinds.contains(&c.kind)) {
        t.check(cb.status == Some(expected), || {
            format!(
                "{:?} callback for {} (agent {}): {} (expected {expected})",
                cb.kind,
                cb.session,
                cb.agent,
                status(cb.status, &cb.error)
            )
        });
    }
    t.judged(
        id,
        "callbacks",
        Level::Must,
        title,
        SPEC,
        of,
        &format!("serve an agent with {behaviors} to exercise it"),
    )
}

/// `platform.callback-delivered` as far as the callbacks' answers show it, when the clients are
/// not seen (a proxy between the server and its agents): each text callback is answered 2xx.
pub(super) fn callback_answered(b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| c.kind == CallbackKind::Text) {
        t.check(cb.status.is_some_and(|s| (200..300).contains(&s)), || {
            format!(
                "a callback of {} to {} (agent {}): {} (expected 200)",
                size(cb.len),
                cb.session,
                cb.agent,
                status(cb.status, &cb.error)
            )
        });
    }
    let mut c = t.judged(
        "platform.callback-delivered",
        "callbacks",
        Level::Must,
        "a callback's raw text to a session the server forwarded is answered 2xx (its broadcast to the session's clients is not seen between the server and its agents: `mock fleet` judges it)",
        SPEC,
        "callbacks with text to sessions the server forwarded",
        "an agent that calls back with text exercises it",
    );
    if c.status == crate::report::Status::Pass && c.message.is_empty() {
        c.message =
            "the answers judged; the broadcasts to the session's clients are not seen here".into();
    }
    c
}

/// A body's size for a reader: `33554432 bytes (32 MiB)`.
pub(super) fn size(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{n} bytes ({:.0} MiB)", n as f64 / f64::from(1 << 20)),
        n if n >= 1 << 10 => format!("{n} bytes ({:.0} KiB)", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

pub(super) fn kind_name(kind: CallbackKind) -> &'static str {
    match kind {
        CallbackKind::Text => "a text",
        CallbackKind::Huge => "a huge",
        CallbackKind::Empty => "an empty",
        CallbackKind::Whitespace => "a whitespace-only",
        CallbackKind::UnknownSession => "an unknown session's",
        CallbackKind::DeletedSession => "a deleted session's",
    }
}

/// A server error to a callback, of any size or body, is a crash; so is no answer at all,
/// unless the connection broke while the body was still going out (a refusal without a
/// status: the answer, had there been one, was read alongside the upload).
pub(super) fn callback_no_5xx(b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| !c.cut_mid_body) {
        t.check(cb.status.is_some_and(|s| s < 500), || {
            format!(
                "{} callback of {} to {} (agent {}): {}",
                kind_name(cb.kind),
                size(cb.len),
                cb.session,
                cb.agent,
                status(cb.status, &cb.error)
            )
        });
    }
    t.judged(
        "platform.callback-no-5xx",
        "callbacks",
        Level::Must,
        "every callback, whatever its size or body, gets an answer below 500 (a connection closed while the body still went out is a refusal, judged by platform.callback-huge)",
        SPEC,
        "callbacks",
        "no callback was sent: an agent that is forwarded a message and calls back exercises it",
    )
}

/// What a server did with one huge callback it answered below 500, and a note that says how.
enum HugeOutcome {
    /// Refused, bounded when broadcast, or not broadcast at all: the rule held.
    Bounded(String),
    /// Taken and broadcast whole.
    Whole(String),
}

fn huge_outcome(d: &Drive, cb: &SentCallback) -> HugeOutcome {
    let bytes = size(cb.len);
    match cb.status {
        Some(s) if (200..300).contains(&s) => {
            let longest = d
                .seen
                .get(&cb.session)
                .into_iter()
                .flatten()
                .flat_map(|m| copies(m, cb))
                .map(|m| m.text_len)
                .max();
            match longest {
                Some(n) if n < cb.len => HugeOutcome::Bounded(format!(
                    "{bytes} accepted (HTTP {s}), bounded to {n} bytes when broadcast"
                )),
                Some(n) => HugeOutcome::Whole(format!(
                    "{bytes} accepted (HTTP {s}) and broadcast whole ({n} bytes): no bound"
                )),
                None => HugeOutcome::Bounded(format!("{bytes} accepted (HTTP {s}), not broadcast")),
            }
        }
        Some(s) => HugeOutcome::Bounded(format!("{bytes} refused with HTTP {s}")),
        None => HugeOutcome::Bounded(format!(
            "{bytes} refused without a status: {}",
            cb.error.as_deref().unwrap_or("no answer")
        )),
    }
}

pub(super) fn callback_huge(d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.callback-huge",
        "callbacks",
        Level::Should,
        "a huge callback body is refused or bounded before it is broadcast, not taken whole (a 5xx to it is judged by platform.callback-no-5xx)",
        SPEC,
    );
    let huge: Vec<&SentCallback> = b
        .callbacks
        .iter()
        .filter(|c| c.kind == CallbackKind::Huge)
        .collect();
    // A 5xx or a silence after the whole body is platform.callback-no-5xx's.
    let crashed = |cb: &&SentCallback| cb.status.map_or(!cb.cut_mid_body, |s| s >= 500);
    let judged: Vec<&SentCallback> = huge.iter().copied().filter(|cb| !crashed(cb)).collect();
    if judged.is_empty() {
        c.skip(if huge.is_empty() {
            "no huge callback to judge: serve an agent with huge-callback to exercise it".to_string()
        } else {
            let one = huge.len() == 1;
            format!(
                "{} {} got a server error or no answer (see platform.callback-no-5xx): nothing to judge a bound by; a server that answers {} below 500 exercises it",
                if one { "the" } else { "each of the" },
                crate::text::count(huge.len() as u64, "huge callbacks"),
                if one { "it" } else { "them" }
            )
        });
        return c;
    }
    let evidence = Evidence::new(judged.len() as u64, "huge callbacks answered below 500");
    let (mut held, mut unbounded) = (Vec::new(), Vec::new());
    for cb in judged {
        match huge_outcome(d, cb) {
            HugeOutcome::Bounded(note) => held.push(note),
            HugeOutcome::Whole(note) => unbounded.push(note),
        }
    }
    if unbounded.is_empty() {
        c.pass_noting(evidence, held.join("; "), String::new);
    } else {
        c.fail_on(evidence, unbounded.join("; "));
    }
    c
}
