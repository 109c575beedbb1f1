//! Whether a peer is still there: one watch per peer, fed by every call made to it, whatever the
//! role or protocol.
//!
//! A call that breaks (refused, reset, closed before its answer) is the peer's act only while the
//! peer is alive. So when a peer that has answered breaks a call, the watch checks whether it is
//! still there (a fresh connection, the process still running): if not, the peer went down, and
//! every call that broke from then on is the death's doing, not evidence of how the peer behaves.
//! The first of those breaks dates the death; an answer to a call sent later dates a restart. The
//! run reports the outage once (the protocol's `*.alive` case, [`Watch::case`]), and a case whose
//! evidence is a call the outage cut is a skip pointing at it ([`Watch::cut`]).
//!
//! Timeouts are not breaks: a peer that hangs is there, and its silence is judged as such.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::judge::tape::{Tape, Taped};
use crate::judge::{Answer, Exchange, Message, Party};
use crate::report::{CaseResult, Evidence, Level};

/// The endpoint a presence check is recorded at: a fresh connection (or a process's status),
/// asking whether the peer is there.
pub const PRESENCE: &str = "(is it there?)";

/// How one call to the peer ended, as far as its presence goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Something came back (an answer, even a bad one): the peer was there.
    Answered,
    /// The connection could not be made (refused), or the process could not be reached.
    Refused,
    /// The connection broke before the answer (reset, closed, a process that exited).
    Broken,
    /// No answer within the deadline: says nothing of presence (a hung peer is there).
    Silent,
}

impl Reply {
    /// How an HTTP exchange ended.
    pub fn of_http<T>(result: &Result<T, super::http::Error>) -> Reply {
        use super::http::Error;
        match result {
            Ok(_) => Reply::Answered,
            Err(Error::Connect { .. }) => Reply::Refused,
            Err(Error::Reset { .. } | Error::Closed { .. }) => Reply::Broken,
            Err(Error::Timeout { .. }) => Reply::Silent,
            // A failed handshake, a head too large, bytes that are not HTTP: the peer answered.
            Err(_) => Reply::Answered,
        }
    }

    /// How a line exchange (a socket's) ended.
    pub fn of_line<T>(result: &Result<T, super::lines::LineError>) -> Reply {
        use super::lines::LineError;
        match result {
            Ok(_) => Reply::Answered,
            Err(LineError::Io(e)) if e.contains("connect") => Reply::Refused,
            Err(LineError::Io(_) | LineError::Closed { .. }) => Reply::Broken,
            Err(LineError::Timeout { .. }) => Reply::Silent,
            // Too long, a process that exited on the request, one that would not start: the
            // peer's own answer, or no peer to watch.
            Err(_) => Reply::Answered,
        }
    }

    /// Whether the call broke (refused, reset, closed): what a death would do.
    pub fn broke(self) -> bool {
        matches!(self, Reply::Refused | Reply::Broken)
    }
}

/// Whether the peer is there now, and how that was found out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    Here,
    /// Gone: how we know (`a new connection to 127.0.0.1:4000 was refused`).
    Gone(String),
}

/// The check of presence: a fresh connection, a process's status.
pub type Check = Box<dyn Fn() -> BoxFuture<'static, Presence> + Send + Sync>;

/// A time the peer was down: from its first broken call after its last answer, to its next
/// answer (if one came).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    /// Since the run started.
    pub from: Duration,
    /// The call whose break dates it.
    pub first: String,
    /// What the run had done just before: the last calls sent, with whether they were answered.
    pub after: String,
    /// How the watch knew the peer was gone.
    pub how: String,
    /// The first answer to a call sent after `from`, if one came (a restart).
    pub back: Option<Duration>,
    /// Calls that broke within it.
    pub broken: u64,
}

/// The last calls remembered for "right after what".
const RECENT: usize = 4;
/// Outages kept (a peer that flaps for an hour is reported by its first ones and a count).
const MAX_OUTAGES: usize = 16;

#[derive(Default)]
struct State {
    calls: u64,
    answered: u64,
    last_answer: Option<Duration>,
    /// The first call that broke after the last answer: when and which.
    first_break: Option<(Duration, String)>,
    outages: Vec<Outage>,
    outages_dropped: u64,
    /// The last thing the peer itself sent us, when it calls us too (a platform calling the
    /// fleet's agents).
    heard: Option<String>,
    /// The last calls sent: (when, what, how it ended).
    recent: VecDeque<(Duration, String, Option<Reply>)>,
}

impl State {
    fn open(&self) -> Option<&Outage> {
        self.outages.last().filter(|o| o.back.is_none())
    }

    /// The calls sent up to `before` that did not break (those that did are the death's).
    fn describe_recent(&self, before: Duration) -> String {
        let shown: Vec<String> = self
            .recent
            .iter()
            .filter(|(at, _, reply)| *at <= before && !reply.is_some_and(Reply::broke))
            .map(|(at, what, reply)| {
                let how = match reply {
                    Some(Reply::Answered) => "answered",
                    Some(Reply::Silent) => "no answer in time",
                    // Filtered out above: a break is the death's.
                    Some(Reply::Refused | Reply::Broken) => "broken",
                    None => "in flight",
                };
                format!("{what} at {} ({how})", offset(*at))
            })
            .collect();
        if shown.is_empty() {
            "before any call".to_string()
        } else {
            format!("right after {}", shown.join(", "))
        }
    }
}

/// One peer's watch.
pub struct Watch {
    /// The peer as a reader knows it: `the agent at http://127.0.0.1:4000`.
    pub who: String,
    started: Instant,
    check: Check,
    state: Mutex<State>,
    /// Where its calls are recorded, or replayed from ([`crate::judge::tape`]); who it is there.
    tape: Option<(std::sync::Arc<Tape>, Party)>,
}

/// `+12.4 s`.
pub fn offset(at: Duration) -> String {
    format!("+{:.1} s", at.as_secs_f64())
}

impl Watch {
    pub fn new(who: impl Into<String>, started: Instant, check: Check) -> Watch {
        Watch {
            who: who.into(),
            started,
            check,
            state: Mutex::new(State::default()),
            tape: None,
        }
    }

    /// The same watch with its calls and presence checks going through `tape` (none: live),
    /// recorded as calls to `peer`.
    pub fn taped(mut self, tape: Option<std::sync::Arc<Tape>>, peer: Party) -> Watch {
        self.tape = tape.map(|t| (t, peer));
        self
    }

    /// The tape its calls go through, and the party they go to.
    pub fn tape(&self) -> Option<(&Tape, &Party)> {
        self.tape.as_ref().map(|(t, p)| (&**t, p))
    }

    /// Whether the peer is there: checked live, or as recorded.
    async fn presence(&self) -> Presence {
        let Some((tape, peer)) = self.tape() else {
            return (self.check)().await;
        };
        let call = crate::judge::tape::Call {
            to: peer.clone(),
            method: None,
            endpoint: PRESENCE.to_string(),
            request: crate::judge::Message::default(),
        };
        crate::judge::tape::through(Some(tape), call, (self.check)()).await
    }

    /// A watch over an HTTP peer at `host:port`: it is there while a new connection is accepted
    /// (within 2 s; a connection that neither opens nor is refused in that time counts as there).
    pub fn http(who: impl Into<String>, started: Instant, host: &str, port: u16) -> Watch {
        let host = host.to_string();
        let check: Check = Box::new(move || {
            let host = host.clone();
            Box::pin(async move { connects(&host, port).await })
        });
        Watch::new(who, started, check)
    }

    /// A watch over a line agent on a socket (`host:port`, or a Unix socket's path): it is
    /// there while a new connection is accepted.
    #[cfg(unix)]
    pub fn socket(
        who: impl Into<String>,
        started: Instant,
        addr: &super::socket::SocketAddrSpec,
    ) -> Watch {
        use super::socket::SocketAddrSpec;
        let addr = addr.clone();
        let check: Check = Box::new(move || {
            let addr = addr.clone();
            Box::pin(async move {
                let attempt = async {
                    match &addr {
                        SocketAddrSpec::Tcp(a) => tokio::net::TcpStream::connect(a).await.map(drop),
                        SocketAddrSpec::Unix(p) => {
                            tokio::net::UnixStream::connect(p).await.map(drop)
                        }
                    }
                };
                match tokio::time::timeout(Duration::from_secs(2), attempt).await {
                    Ok(Ok(())) | Err(_) => Presence::Here,
                    Ok(Err(e)) => Presence::Gone(format!("a new connection to {addr} failed: {e}")),
                }
            })
        });
        Watch::new(who, started, check)
    }

    /// Time since the run started.
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// When the first outage began, if there was one.
    pub fn went_down_at(&self) -> Option<Instant> {
        let s = self.lock();
        s.outages.first().map(|o| self.started + o.from)
    }

    /// `at`, as time since the run started (zero before it).
    pub fn since_start(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.started)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call is being sent: `what` names it for a reader (`POST /analyze`). Returns its start,
    /// to give back to [`ended`](Self::ended).
    pub fn sent(&self, what: &str) -> Duration {
        let at = self.now();
        let mut s = self.lock();
        s.calls += 1;
        if s.recent.len() == RECENT {
            s.recent.pop_front();
        }
        s.recent.push_back((at, what.to_string(), None));
        at
    }

    /// The call sent at `start` ended with `reply`. A break of a peer that had answered checks
    /// whether the peer is still there. Returns when it ended (since the run started), the time
    /// to give [`cut`](Self::cut).
    pub async fn ended(&self, what: &str, start: Duration, reply: Reply) -> Duration {
        let end = self.now();
        let check = {
            let mut s = self.lock();
            if let Some(slot) = s
                .recent
                .iter_mut()
                .rev()
                .find(|(at, w, r)| *at == start && w == what && r.is_none())
            {
                slot.2 = Some(reply);
            }
            match reply {
                Reply::Answered => {
                    s.answered += 1;
                    s.last_answer = Some(s.last_answer.map_or(end, |l| l.max(end)));
                    s.first_break = None;
                    if let Some(o) = s.outages.last_mut() {
                        if o.back.is_none() && start >= o.from {
                            o.back = Some(end);
                        }
                    }
                    false
                }
                Reply::Silent => false,
                Reply::Refused | Reply::Broken => {
                    if s.first_break.is_none() {
                        s.first_break = Some((end, what.to_string()));
                    }
                    match s.outages.last_mut() {
                        Some(o) if o.back.is_none() => {
                            o.broken += 1;
                            false
                        }
                        // Only a peer that was there can go down; one never reached is unreachable
                        // (its reachability case says so).
                        _ => s.answered > 0,
                    }
                }
            }
        };
        if check {
            self.confirm().await;
        }
        end
    }

    /// Checks presence after a break, and opens an outage when the peer is gone.
    async fn confirm(&self) {
        // A peer found there after the break keeps the break dated all the same: a dying
        // process's port may still take a connection for a moment. Only an answer (in `ended`)
        // clears it, as proof the peer lived on.
        if let Presence::Gone(how) = self.presence().await {
            self.open(how);
        }
    }

    fn open(&self, how: String) {
        let mut s = self.lock();
        if s.open().is_some() {
            return;
        }
        let Some((from, first)) = s.first_break.clone() else {
            return;
        };
        let broken = 1;
        let after = s.describe_recent(from);
        if s.outages.len() == MAX_OUTAGES {
            s.outages_dropped += 1;
            return;
        }
        s.outages.push(Outage {
            from,
            first,
            after,
            how,
            back: None,
            broken,
        });
    }

    /// At the run's end: a peer that answered and is gone now went down after its last answer
    /// (nothing broke, so no call dates it more closely).
    pub async fn at_end(&self) {
        let ask = {
            let s = self.lock();
            s.answered > 0 && s.open().is_none()
        };
        if !ask {
            return;
        }
        if let Presence::Gone(how) = self.presence().await {
            let mut s = self.lock();
            if s.open().is_some() || s.outages.len() == MAX_OUTAGES {
                return;
            }
            let from = s.last_answer.unwrap_or_default();
            if s.first_break.is_none() {
                s.first_break = Some((from, "its last answer".into()));
            }
            let (from, first) = s.first_break.clone().unwrap_or((from, String::new()));
            let after = s.describe_recent(from);
            s.outages.push(Outage {
                from,
                first,
                after,
                how: format!("{how}, when the run ended at {}", offset(self.now())),
                back: None,
                broken: 0,
            });
        }
    }

    /// Notes the last thing the peer sent us (`/challenge to keyed, received at +2.1 s`), told
    /// with an outage.
    pub fn heard(&self, what: String) {
        self.lock().heard = Some(what);
    }

    /// The outages seen, in order.
    pub fn outages(&self) -> Vec<Outage> {
        self.lock().outages.clone()
    }

    /// Whether a call that broke at `at` (since the run started) is the outage's doing: the
    /// skip message of a case that rests on it, naming the case that reports the outage.
    pub fn cut(&self, at: Duration, alive_case: &str) -> Option<String> {
        let s = self.lock();
        let o = s
            .outages
            .iter()
            .find(|o| at >= o.from && o.back.is_none_or(|back| at <= back))?;
        Some(format!(
            "not judged: {} went down at {}, before this case's calls were answered (see {alive_case})",
            self.who,
            offset(o.from)
        ))
    }

    /// The skip message of a case whose calls broke at `times`, when one of them is the
    /// outage's doing ([`cut`](Self::cut)).
    pub fn first_cut(
        &self,
        times: impl IntoIterator<Item = Duration>,
        alive_case: &str,
    ) -> Option<String> {
        times.into_iter().find_map(|at| self.cut(at, alive_case))
    }

    /// Skips each of `cases` whose calls (`broke`: by case id, when they broke) the outage cut,
    /// saying so; returns their ids.
    pub fn skip_what_it_cut(
        &self,
        cases: &mut [CaseResult],
        broke: &std::collections::HashMap<String, Vec<Duration>>,
        alive_case: &str,
    ) -> Vec<String> {
        let mut cut = Vec::new();
        for case in cases {
            let times = broke.get(&case.id).into_iter().flatten().copied();
            if let Some(why) = self.first_cut(times, alive_case) {
                cut.push(case.id.clone());
                case.skip(why);
            }
        }
        cut
    }

    /// Whether any outage was seen.
    pub fn went_down(&self) -> bool {
        !self.lock().outages.is_empty()
    }

    /// The case that reports the peer's death: a MUST failure naming each outage (when, after
    /// what, how it was known, whether it came back); `None` when the peer did not go down (the
    /// case is the run's own finding, as `run.judged` is: it exists only when it fails).
    pub fn case(&self, id: &str, group: &str, spec: &str) -> Option<CaseResult> {
        let s = self.lock();
        if s.outages.is_empty() {
            return None;
        }
        let title = format!("{} stays up for the whole run", capitalized(&self.who));
        let mut case = CaseResult::new(id, group, Level::Must, &title, spec);
        let told: Vec<String> = s.outages.iter().map(|o| self.tell(o)).collect();
        let mut why = told.join("; then ");
        if let Some(heard) = &s.heard {
            why.push_str(&format!("; the last request it sent us: {heard}"));
        }
        if s.outages_dropped > 0 {
            why.push_str(&format!(" (and {} more outages)", s.outages_dropped));
        }
        case.fail_on(
            Evidence::new(s.calls, "calls watched"),
            format!("{why}. The cases that needed it after that are skipped, not failed"),
        );
        Some(case)
    }

    fn tell(&self, o: &Outage) -> String {
        let back = match o.back {
            Some(back) => format!("; it answered again from {} (restarted)", offset(back)),
            None if o.broken > 0 => format!(
                "; every call since was refused or broken ({} in all)",
                o.broken
            ),
            None => String::new(),
        };
        format!(
            "{} stopped answering at {}, {} ({} broke first; {}){back}",
            self.who,
            offset(o.from),
            o.after,
            o.first,
            o.how
        )
    }
}

/// Whether the peer was there, as a presence check goes on tape.
impl Taped for Presence {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        match self {
            Presence::Here => (
                Answer::Delivered {
                    status: None,
                    message: Message::masked([], b"here"),
                },
                Value::Null,
                None,
            ),
            Presence::Gone(how) => (Answer::Failed { what: how.clone() }, Value::Null, None),
        }
    }

    fn from_tape(exchange: &Exchange, _: Duration) -> Option<Self> {
        match &exchange.answer {
            Answer::Delivered { .. } => Some(Presence::Here),
            Answer::Failed { what } => Some(Presence::Gone(what.clone())),
            _ => None,
        }
    }

    fn unmatched(_: String) -> Self {
        Presence::Here
    }
}

/// Sends one HTTP request under `watch`: the result, and when it broke if it did (the time to
/// give [`Watch::cut`]).
pub async fn send(
    watch: &Watch,
    base: &super::http::BaseUrl,
    request: &super::http::Request,
    limits: super::http::Limits,
) -> (
    Result<super::http::Response, super::http::Error>,
    Option<Duration>,
) {
    let (result, broke, _) = send_timed(watch, base, request, limits).await;
    (result, broke)
}

/// As [`send`], with how long the call took: measured, or as recorded when the watch's tape
/// replays ([`crate::judge::tape::through_timed`]).
pub async fn send_timed(
    watch: &Watch,
    base: &super::http::BaseUrl,
    request: &super::http::Request,
    limits: super::http::Limits,
) -> (
    Result<super::http::Response, super::http::Error>,
    Option<Duration>,
    Duration,
) {
    let what = format!("{} {}", request.method, request.path);
    let sent = watch.sent(&what);
    let live = super::http::send(base, request, limits);
    let (result, took) = match watch.tape() {
        Some((tape, peer)) => {
            let call = super::taped::http_call(peer.clone(), request);
            crate::judge::tape::through_timed(Some(tape), call, live).await
        }
        None => {
            let started = Instant::now();
            let result = live.await;
            (result, started.elapsed())
        }
    };
    let reply = Reply::of_http(&result);
    let ended = watch.ended(&what, sent, reply).await;
    (result, reply.broke().then_some(ended), took)
}

/// Opens a connection to `base` (and closes it), as a reachability case does: how long it took,
/// or why it failed; through the watch's tape, when it has one (the watch itself is not fed:
/// a connection carries no call).
pub async fn connect(
    watch: &Watch,
    base: &super::http::BaseUrl,
    deadline: Duration,
) -> Result<Duration, super::http::Error> {
    let live = super::http::connect(base, deadline);
    match watch.tape() {
        Some((tape, peer)) => {
            let call = crate::judge::tape::Call {
                to: peer.clone(),
                method: None,
                endpoint: super::taped::CONNECT.to_string(),
                request: crate::judge::Message::default(),
            };
            crate::judge::tape::through(Some(tape), call, live).await
        }
        None => live.await,
    }
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Whether a new TCP connection to `host:port` is accepted (refused within 2 s: gone).
async fn connects(host: &str, port: u16) -> Presence {
    let attempt = tokio::net::TcpStream::connect((host, port));
    match tokio::time::timeout(Duration::from_secs(2), attempt).await {
        Ok(Ok(_)) | Err(_) => Presence::Here,
        Ok(Err(e)) => Presence::Gone(format!("a new connection to {host}:{port} failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn watch(gone: Arc<AtomicBool>) -> Watch {
        let check: Check = Box::new(move || {
            let gone = gone.load(Ordering::SeqCst);
            Box::pin(async move {
                if gone {
                    Presence::Gone("refused".into())
                } else {
                    Presence::Here
                }
            })
        });
        Watch::new("the agent at http://x", Instant::now(), check)
    }

    async fn call(w: &Watch, what: &str, reply: Reply) -> Duration {
        let start = w.sent(what);
        w.ended(what, start, reply).await
    }

    #[deadline::test]
    async fn a_break_of_a_peer_still_there_is_its_own_act() {
        let gone = Arc::new(AtomicBool::new(false));
        let w = watch(gone);
        call(&w, "POST /analyze", Reply::Answered).await;
        let at = call(&w, "POST /vote", Reply::Broken).await;
        assert!(!w.went_down());
        assert_eq!(w.cut(at, "agent.alive"), None);
        // No outage, no case: the peer's breaks are judged where they happened.
        assert!(w.case("agent.alive", "agent", "s").is_none());
    }

    #[deadline::test]
    async fn a_peer_gone_after_a_break_is_named_once_and_cuts_what_came_after() {
        let gone = Arc::new(AtomicBool::new(false));
        let w = watch(gone.clone());
        let before = call(&w, "POST /analyze", Reply::Answered).await;
        gone.store(true, Ordering::SeqCst);
        let at = call(&w, "DELETE /sessions/s-3", Reply::Broken).await;
        call(&w, "POST /vote", Reply::Refused).await;
        assert_eq!(w.outages().len(), 1);
        assert!(w.cut(at, "agent.alive").is_some());
        assert_eq!(w.cut(before - Duration::from_nanos(1), "agent.alive"), None);
        let case = w.case("agent.alive", "agent", "s").unwrap();
        assert_eq!(case.status, crate::report::Status::Fail);
        assert!(
            case.message.contains("right after POST /analyze at +"),
            "{}",
            case.message
        );
        assert!(
            case.message.contains("DELETE /sessions/s-3 broke first"),
            "{}",
            case.message
        );
        assert!(case.message.contains("(2 in all)"), "{}", case.message);
        assert!(!case.message.contains("(broken)"), "{}", case.message);
        assert!(
            !case.message.contains("DELETE /sessions/s-3 at"),
            "{}",
            case.message
        );
    }

    #[deadline::test]
    async fn a_peer_that_answers_again_is_named_as_restarted() {
        let gone = Arc::new(AtomicBool::new(true));
        let w = watch(gone.clone());
        call(&w, "a", Reply::Answered).await;
        call(&w, "b", Reply::Refused).await;
        gone.store(false, Ordering::SeqCst);
        let back = call(&w, "c", Reply::Answered).await;
        let o = &w.outages()[0];
        assert!(o.back.is_some());
        assert_eq!(w.cut(back + Duration::from_secs(1), "x"), None);
        let case = w.case("agent.alive", "agent", "s").unwrap();
        assert!(case.message.contains("(restarted)"), "{}", case.message);
    }

    #[deadline::test]
    async fn a_peer_never_reached_has_no_outage_and_no_case() {
        let w = watch(Arc::new(AtomicBool::new(true)));
        call(&w, "a", Reply::Refused).await;
        assert!(!w.went_down());
        // Its reachability case says it was never there; nothing went down.
        assert!(w.case("agent.alive", "agent", "s").is_none());
        assert!(watch(Arc::new(AtomicBool::new(false)))
            .case("agent.alive", "agent", "s")
            .is_none());
    }

    #[deadline::test]
    async fn a_peer_gone_at_the_end_is_named_without_cutting_anything() {
        let gone = Arc::new(AtomicBool::new(false));
        let w = watch(gone.clone());
        let at = call(&w, "a", Reply::Answered).await;
        gone.store(true, Ordering::SeqCst);
        w.at_end().await;
        assert!(w.went_down());
        assert_eq!(w.cut(at - Duration::from_nanos(1), "x"), None);
        let case = w.case("agent.alive", "agent", "s").unwrap();
        assert!(
            case.message.contains("when the run ended"),
            "{}",
            case.message
        );
    }

    #[deadline::test]
    async fn a_timeout_says_nothing_of_presence() {
        let gone = Arc::new(AtomicBool::new(true));
        let w = watch(gone);
        call(&w, "a", Reply::Answered).await;
        call(&w, "b", Reply::Silent).await;
        assert!(!w.went_down());
    }

    #[deadline::test]
    async fn a_closed_port_is_gone_and_an_open_one_here() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(connects("127.0.0.1", port).await, Presence::Here);
        drop(listener);
        assert!(matches!(
            connects("127.0.0.1", port).await,
            Presence::Gone(_)
        ));
    }
}
