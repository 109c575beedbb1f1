//! An agent server that went down mid-run ([`crate::transport::liveness`]): what its death cut
//! is no evidence of how it behaves. Before the rules judge, the books lose the callbacks that
//! broke in an outage or were sent too shortly before it, the outcome of the forwards whose
//! acknowledgement failed as it came (a dying server "gives up" on every acknowledgement, and
//! tells no client of a failure), and the user messages said after it or too shortly before it
//! to have been forwarded (the server may have died holding them); the run gets one case naming
//! the death, `platform.alive`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::super::{Books, Drive, Fleet, Forward, Said};
use crate::mock::http1::Outcome;
use crate::report::CaseResult;

/// The case naming the server's death.
pub(super) const ALIVE: &str = "platform.alive";

/// The books without what the server's death cut, and how much that was; `None` when the server
/// did not go down.
pub(super) fn without_the_death(fleet: &Fleet, b: &Books) -> Option<(Books, String)> {
    let watch = &fleet.watch;
    let first = watch.outages().first()?.from;
    let since = |at: Instant| watch.since_start(at);
    // A message the server may have died holding: never forwarded, and said too shortly before
    // the death for its forward to have come (twice the slowest forward of the run, at least 1 s).
    let mut by_session: HashMap<&str, Vec<&Forward>> = HashMap::new();
    for f in &b.forwards {
        if let Some(session) = f.session.as_deref() {
            by_session.entry(session).or_default().push(f);
        }
    }
    let forward_of = |s: &Said| {
        by_session
            .get(s.session.as_str())
            .and_then(|fs| fs.iter().find(|f| f.carries(&s.session, &s.text).is_some()))
            .map(|f| f.at)
    };
    let slowest = b
        .said
        .iter()
        .filter_map(|s| forward_of(s).map(|at| at.saturating_duration_since(s.at)))
        .max()
        .unwrap_or_default();
    let window = (slowest * 2).max(Duration::from_secs(1));
    // A callback sent that shortly before the death, or that broke in it, is not judged: its
    // answer or its broadcast may have died with the server.
    let callbacks: Vec<_> = b
        .callbacks
        .iter()
        .filter(|c| {
            since(c.sent) + window < first
                && c.broke_at.is_none_or(|at| watch.cut(at, ALIVE).is_none())
        })
        .cloned()
        .collect();
    // A forward's acknowledgement that failed as the server died (its connection ended with it,
    // or its error message was due after it) says nothing of how the server handles a failure:
    // the forward came, its outcome is unknown.
    let mut forwards_cut = 0;
    let forwards: Vec<Forward> = b
        .forwards
        .iter()
        .cloned()
        .map(|mut f| {
            if let Some(a) = f.ack {
                let acknowledged = a.outcome == Outcome::Complete && (200..300).contains(&f.status);
                if !acknowledged && since(f.at + a.total) + super::ERROR_MARGIN >= first {
                    f.ack = None;
                    forwards_cut += 1;
                }
            }
            f
        })
        .collect();
    let said: Vec<_> = b
        .said
        .iter()
        .filter(|s| {
            since(s.at) < first && (forward_of(s).is_some() || since(s.at) + window <= first)
        })
        .cloned()
        .collect();
    let note = format!(
        "not judged, as the agent server's death cut them (see {ALIVE}): {}, {}, {}",
        crate::text::count((b.callbacks.len() - callbacks.len()) as u64, "callbacks"),
        crate::text::count(forwards_cut as u64, "forward acknowledgements"),
        crate::text::count((b.said.len() - said.len()) as u64, "user messages")
    );
    let books = Books {
        forwards,
        callbacks,
        said,
        dropped: b.dropped,
    };
    Some((books, note))
}

/// The session calls of the drive that broke in an outage are no answer of the server's: the
/// drive without them.
pub(super) fn calls_cut(fleet: &Fleet, d: &Drive) -> usize {
    d.creates
        .iter()
        .chain(d.id_checks.iter().map(|(_, c, _)| c))
        .filter(|c| {
            c.broke_at
                .is_some_and(|at| fleet.watch.cut(at, ALIVE).is_some())
        })
        .count()
}

/// `platform.alive`, when the server went down.
pub(super) fn alive_case(fleet: &Fleet) -> Option<CaseResult> {
    fleet.watch.case(ALIVE, "sessions", super::SPEC)
}
