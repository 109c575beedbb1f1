//! The forward cases: the fleet reached, each forward's payload, once per message, the forward
//! timeout, and the error a failed forward must show.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::mock::http1::{Fault, Outcome};
use crate::mock::observe::Tally;
use crate::protocols::connector::fleet::{Behavior, Books, Carried, Drive, Fleet, Forward, Said};
use crate::protocols::connector::model::FORWARD_TIMEOUT;
use crate::protocols::connector::ws::Inbound;
use crate::report::{CaseResult, Evidence, Level, Status};

use super::{created, ms, ERROR_MARGIN, GIVE_UP_MARGIN, SPEC};

pub(super) fn reached(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.reached-fleet",
        "forward",
        Level::Must,
        "user messages sent over the WebSocket are forwarded to the agents' inputUrls",
        SPEC,
    );
    let created = created(d);
    let on_created = b
        .said
        .iter()
        .filter(|s| created.contains(s.session.as_str()))
        .count();
    if on_created == 0 {
        // Nothing the server could have forwarded: the cause is judged where it is.
        c.skip(format!(
            "no user message was sent on a session the server created ({} of {} created, {} sent; see platform.session-create and platform.ws-attach): a server whose configuration names the fleet's agents and inputUrls (printed above) exercises this case",
            created.len(),
            crate::text::count(
                fleet.agents.iter().map(|a| a.sessions.len()).sum::<usize>() as u64,
                "sessions"
            ),
            crate::text::count(b.said.len() as u64, "messages"),
        ));
    } else if d.clients > 0 && d.not_ready.len() == d.clients {
        c.skip(format!(
            "no WebSocket client was told session_ready ({}; see platform.ws-attach): the messages went nowhere. A server that attaches the fleet's clients exercises this case",
            crate::text::count(d.clients as u64, "clients")
        ));
    } else if b.forwards.is_empty() {
        c.fail(format!(
            "no forward reached the fleet ({} sent by {} of {} created): does the server's configuration name the fleet's inputUrls (printed above), can it reach them, and is the WebSocket dialect right (ws: {})?",
            crate::text::count(b.said.len() as u64, "user messages"),
            crate::text::count(d.clients as u64, "WebSocket clients"),
            crate::text::count(created.len() as u64, "sessions"),
            d.dialect.unwrap_or(fleet.dialect).name()
        ));
    } else {
        c.pass_noting(
            Evidence::new(b.forwards.len() as u64, "forwards that reached the fleet"),
            crate::text::count(on_created as u64, "user messages on created sessions"),
            String::new,
        );
    }
    c
}

pub(super) fn forward_schema(b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for f in &b.forwards {
        t.check(f.problems.is_empty(), || {
            format!("to {}: {}", f.agent, f.problems.join("; "))
        });
    }
    t.judged(
        "platform.forward-schema",
        "forward",
        Level::Must,
        "each forward is POST application/json {sessionId, agentId, callbackUrl (back at the server, the id percent-encoded), message {type: user, text, createdAt ISO 8601}}",
        SPEC,
        "forwards",
        "a server that forwards its users' messages to the fleet's inputUrls exercises it",
    )
}

pub(super) fn behavior_of<'a>(fleet: &'a Fleet, session: &str) -> Option<&'a Behavior> {
    fleet
        .agents
        .iter()
        .find(|a| a.sessions.iter().any(|s| s == session))
        .map(|a| &a.behavior)
}

pub(super) fn forward_once(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let created = created(d);
    let mut t = Tally::default();
    // Forwards known by their values only (wrong field names): forwards all the same.
    let mut malformed = 0;
    let mut first_of: BTreeMap<&str, Instant> = BTreeMap::new();
    for said in &b.said {
        first_of.entry(&said.session).or_insert(said.at);
    }
    for said in &b.said {
        if !created.contains(said.session.as_str()) {
            continue;
        }
        // The fleet deletes a session of this agent after its first message.
        if behavior_of(fleet, &said.session) == Some(&Behavior::DeletedSession)
            && first_of.get(said.session.as_str()) != Some(&said.at)
        {
            continue;
        }
        let carried: Vec<Carried> = b
            .forwards
            .iter()
            .filter_map(|f| f.carries(&said.session, &said.text))
            .collect();
        let n = carried.len();
        malformed += carried.iter().filter(|c| **c == Carried::Malformed).count();
        t.check(n == 1, || {
            if n == 0 {
                never_forwarded(fleet, b, said)
            } else {
                format!(
                    "{:?} to {}: forwarded {n} times (the document: no retries)",
                    said.text, said.session
                )
            }
        });
    }
    let mut c = t.judged(
        "platform.forward-once",
        "forward",
        Level::Must,
        "each user message is forwarded exactly once (no retry, even after a failure)",
        SPEC,
        "user messages on created sessions",
        "see platform.session-create and platform.ws-attach: a message is sent on a session the server created, by a client it attached",
    );
    if malformed > 0 && c.status != Status::Skip {
        let one = malformed == 1;
        let note = format!(
            "{} arrived malformed, {} session id and text under other field names (see platform.forward-schema), and {} counted by those values",
            crate::text::count(malformed as u64, "forwards"),
            if one { "its" } else { "their" },
            if one { "was" } else { "were" }
        );
        c.message = if c.message.is_empty() {
            note
        } else {
            format!("{}; {note}", c.message)
        };
    }
    c
}

/// `platform.forward-once` judged from the forwards alone, when the users' messages are not
/// seen (a proxy between the server and its agents): a forward whose payload is another's, the
/// same message at the same moment, is a retry.
pub(super) fn forward_not_repeated(b: &Books) -> CaseResult {
    let mut t = Tally::default();
    let mut seen: Vec<&Forward> = Vec::new();
    for f in &b.forwards {
        let again = seen
            .iter()
            .find(|g| g.agent == f.agent && g.strings == f.strings && !f.strings.is_empty());
        t.check(again.is_none(), || {
            format!(
                "{:?} to {} (agent {}): forwarded again, {} after the first (the document: no retries)",
                f.text.as_deref().unwrap_or(""),
                f.session.as_deref().unwrap_or(""),
                f.agent,
                ms(f.at.saturating_duration_since(again.map_or(f.at, |g| g.at)))
            )
        });
        seen.push(f);
    }
    t.judged(
        "platform.forward-once",
        "forward",
        Level::Must,
        "each user message is forwarded exactly once (no retry, even after a failure): judged from the forwards, a payload sent again (the same session, text and createdAt) being a retry",
        SPEC,
        "forwards",
        "no forward came through: a server that forwards its users' messages exercises it",
    )
}

/// Why no forward was found for `said`: none reached its agent, or some did without its
/// session id and text anywhere in them.
pub(super) fn never_forwarded(fleet: &Fleet, b: &Books, said: &Said) -> String {
    let agent = fleet
        .agents
        .iter()
        .find(|a| a.sessions.contains(&said.session))
        .map_or("", |a| a.name.as_str());
    let to_agent = b.forwards.iter().filter(|f| f.agent == agent).count();
    if to_agent == 0 {
        format!(
            "{:?} to {}: never forwarded (no forward reached agent {agent})",
            said.text, said.session
        )
    } else {
        format!(
            "{:?} to {}: no forward carried it ({} reached agent {agent}, none with this session id and text anywhere in it: see platform.forward-schema)",
            said.text,
            said.session,
            crate::text::count(to_agent as u64, "forwards")
        )
    }
}

pub(super) fn forward_timeout(fleet: &Fleet, b: &Books) -> CaseResult {
    let slow = |f: &Forward| {
        fleet
            .agents
            .iter()
            .find(|a| a.name == f.agent)
            .is_some_and(|a| {
                matches!(
                    a.behavior,
                    Behavior::SlowAck(_) | Behavior::Fault(Fault::Hang)
                )
            })
    };
    forward_timeout_of(
        b,
        &slow,
        "serve an agent with slow-ack or fault:hang to exercise it",
    )
}

/// `platform.forward-timeout` over the forwards `slow` says were acknowledged late (or never);
/// `unexercised` says what would give it one.
pub(super) fn forward_timeout_of(
    b: &Books,
    slow: &dyn Fn(&Forward) -> bool,
    unexercised: &str,
) -> CaseResult {
    let mut t = Tally::default();
    let mut cut = Tally::default();
    // How long the server took to give up on each slow acknowledgement.
    let mut gave_up_after = Vec::new();
    for f in &b.forwards {
        let Some(ack) = f.ack.filter(|_| slow(f)) else {
            continue;
        };
        let limit = FORWARD_TIMEOUT + GIVE_UP_MARGIN;
        // An acknowledgement the fleet cut short at its own end, within the server's time,
        // judges nothing: it is named. One the server still held past its time failed.
        if ack.outcome == Outcome::Shutdown {
            if ack.total <= limit {
                cut.check(false, || {
                    format!(
                        "to {}: still held when the fleet stopped, {} after the forward; the server's 5 s had not all run out",
                        f.agent,
                        ms(ack.total)
                    )
                });
            } else {
                t.check(false, || {
                    format!(
                        "to {}: still waiting after {} for the acknowledgement, when the fleet stopped (no 5 s timeout)",
                        f.agent,
                        ms(ack.total)
                    )
                });
            }
            continue;
        }
        let gave_up = matches!(ack.outcome, Outcome::PeerGone | Outcome::Hung);
        if gave_up {
            gave_up_after.push(ack.total);
        }
        t.check(
            gave_up && ack.total <= FORWARD_TIMEOUT + GIVE_UP_MARGIN,
            || {
                if gave_up {
                    format!("to {}: gave up after {}", f.agent, ms(ack.total))
                } else {
                    format!(
                        "to {}: waited {} for the acknowledgement (no 5 s timeout)",
                        f.agent,
                        ms(ack.total)
                    )
                }
            },
        );
    }
    let mut c = t.judged(
        "platform.forward-timeout",
        "forward",
        Level::Must,
        "a forward whose acknowledgement is slow is given up at 5 s",
        SPEC,
        "slow acknowledgements",
        unexercised,
    );
    if c.status != Status::Skip {
        let figures = give_up_figures(&mut gave_up_after, t.checked);
        c.message = if c.message.is_empty() {
            figures
        } else {
            format!("{figures}\n{}", c.message)
        };
    }
    crate::mock::observe::note_cut(&mut c, &cut, "slow acknowledgements");
    c
}

/// The give-up times measured, in words: how many of `of` slow forwards were given up, p50 and
/// max (from the forward's last byte to the server's end of it).
fn give_up_figures(times: &mut [std::time::Duration], of: u64) -> String {
    times.sort();
    if times.is_empty() {
        return format!(
            "the server gave up on none of {}",
            crate::text::count(of, "slow forwards")
        );
    }
    format!(
        "the server gave up on {} of {} after p50 {}, max {} (the document: 5s; {} allowed)",
        times.len(),
        crate::text::count(of, "slow forwards"),
        ms(crate::units::percentile(times, 0.5)),
        ms(times[times.len() - 1]),
        ms(FORWARD_TIMEOUT + GIVE_UP_MARGIN)
    )
}

/// What the wire showed the server of a forward's acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::protocols::connector::fleet) enum Wire {
    /// A whole 2xx head: an acknowledgement, whether the body followed or a FIN cut it
    /// (`fault:close`; the document counts only a non-2xx or a timeout as a failure).
    Acknowledged { cut: bool },
    /// No acknowledgement: a non-2xx status, no HTTP head at all (reset, garbage), or no answer
    /// before the server gave up.
    Failed,
    /// Not known: the fleet cut the answer short at its own end, or an RST followed the head
    /// (it may discard the head before the server reads it).
    Unknown,
}

pub(in crate::protocols::connector::fleet) fn wire(
    f: &crate::protocols::connector::fleet::Forward,
) -> Wire {
    let Some(ack) = f.ack else {
        return Wire::Unknown;
    };
    let two = (200..300).contains(&f.status);
    match ack.outcome {
        Outcome::Shutdown => Wire::Unknown,
        Outcome::Complete if two => Wire::Acknowledged { cut: false },
        Outcome::Closed if two => Wire::Acknowledged { cut: true },
        Outcome::Reset if f.status != 0 => Wire::Unknown,
        _ => Wire::Failed,
    }
}

/// Whether `m` tells a client of an error: an error message, or a text that is no callback's.
pub(in crate::protocols::connector::fleet) fn shows_error(m: &Inbound, b: &Books) -> bool {
    m.is_error() || (m.is_text() && !b.callbacks.iter().any(|c| c.digest == m.digest))
}

/// When a failed forward's error message is due by: [`ERROR_MARGIN`] after its end (its
/// acknowledgement's, or the server's timeout when it got none).
pub(in crate::protocols::connector::fleet) fn error_due(f: &Forward) -> Instant {
    f.at + f.ack.map_or(FORWARD_TIMEOUT, |a| a.total) + ERROR_MARGIN
}

/// Whether an error reached the sender (client 0) of `said`, and to how many other clients of
/// its session, between the message and `ERROR_MARGIN` after its last forward ended.
pub(super) fn error_seen(
    d: &Drive,
    b: &Books,
    said: &Said,
    forwards: &[&Forward],
) -> Option<(bool, usize)> {
    let clients = d.seen.get(&said.session)?;
    // The last attempt: after a retry, the error follows it.
    let due = forwards
        .iter()
        .map(|f| error_due(f))
        .max()
        .unwrap_or(said.at + ERROR_MARGIN);
    let window = |m: &&Inbound| m.at >= said.at && m.at <= due;
    let shows = |c: &Vec<Inbound>| c.iter().filter(window).any(|m| shows_error(m, b));
    let at_sender = clients.first().is_some_and(shows);
    let others = clients.iter().skip(1).filter(|c| shows(c)).count();
    Some((at_sender, others))
}

pub(super) fn error_message(d: &Drive, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    let (mut elsewhere, mut sender_only) = (0, 0);
    // Acknowledged with a 2xx head cut before its body: no error is due; whether one was shown.
    let (mut cut, mut cut_shown) = (0, 0);
    for said in &b.said {
        let forwards: Vec<&Forward> = b
            .forwards
            .iter()
            .filter(|f| f.carries(&said.session, &said.text).is_some())
            .collect();
        let wires: Vec<Wire> = forwards.iter().map(|f| wire(f)).collect();
        let Some((at_sender, others)) = error_seen(d, b, said, &forwards) else {
            continue;
        };
        if wires.contains(&Wire::Acknowledged { cut: true }) && !wires.contains(&Wire::Failed) {
            cut += 1;
            cut_shown += usize::from(at_sender);
        }
        if wires.is_empty() || wires.iter().any(|w| *w != Wire::Failed) {
            continue;
        }
        if at_sender {
            if others > 0 {
                elsewhere += 1;
            } else {
                sender_only += 1;
            }
        }
        t.check(at_sender, || {
            format!(
                "{:?} to {} (agent {}): no error message reached the client within {} of the failed forward",
                said.text,
                said.session,
                forwards[0].agent,
                ms(ERROR_MARGIN)
            )
        });
    }
    let mut c = t.judged(
        "platform.error-message",
        "forward",
        Level::Must,
        "after a non-2xx, failed or slow acknowledgement, an error message reaches the session's client",
        SPEC,
        "messages whose forward failed on the wire",
        "serve an agent with error-ack, fault:reset, fault:garbage, fault:hang or slow-ack to exercise it (fault:close sends a whole 200 head, which is an acknowledgement)",
    );
    if c.status == Status::Pass {
        c.message = format!(
            "the error reached the session's other clients too for {elsewhere}, the sending client only for {sender_only}"
        );
    }
    if cut > 0 {
        if !c.message.is_empty() {
            c.message.push_str("; ");
        }
        c.message.push_str(&format!(
            "{} acknowledged with a 200 head and a FIN before the body (fault:close): an acknowledgement, so no error is due (the server showed one for {cut_shown}: a client that reads the body may call it cut short, which the document does not rule on)",
            crate::text::count(cut as u64, "messages")
        ));
    }
    c
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::give_up_figures;

    /// "of 1 slow forward", "of 2 slow forwards" (issue 39, point 13).
    #[test]
    fn the_give_up_figures_count_the_slow_forwards_in_their_number() {
        assert_eq!(
            give_up_figures(&mut [], 1),
            "the server gave up on none of 1 slow forward"
        );
        assert_eq!(
            give_up_figures(&mut [], 2),
            "the server gave up on none of 2 slow forwards"
        );
        let one = give_up_figures(&mut [Duration::from_millis(5_100)], 1);
        assert!(
            one.starts_with("the server gave up on 1 of 1 slow forward after p50 "),
            "{one}"
        );
        let two = give_up_figures(&mut [Duration::from_millis(5_100)], 2);
        assert!(
            two.starts_with("the server gave up on 1 of 2 slow forwards after p50 "),
            "{two}"
        );
    }
}
