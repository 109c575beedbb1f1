//! A run's exchanges on tape: recorded as they happen, or replayed from a recording in place
//! of the peer.
//!
//! A transport sends through [`through`]: recording, the call goes to the peer and the exchange
//! is written to the file as it ends; replaying, nothing is sent and the answer is the recorded
//! one, with the recorded elapsed time standing in for the measured one (so the rules on latency
//! and deadlines judge what they judged live). The rules downstream cannot tell the two apart:
//! judging a recording gives the live run's verdicts.
//!
//! A replayed call is matched to the first unused recorded exchange of the same case, to the
//! same party, method and endpoint (in order: a case's calls are sequential). A call the
//! recording does not hold gets the transport's "no answer" value and is noted: the run then
//! ends with [`TapeError::Unmatched`], never with a verdict made up.
//!
//! Engine code: it names no protocol and no transport.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::record::{read, RecordError, Recorder};
use super::{Answer, Exchange, Message, Party};

/// What a run does with its exchanges: nothing, record them to a file, or replay them from one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TapeSpec {
    #[default]
    Off,
    Record(PathBuf),
    Replay(PathBuf),
}

/// Why a tape failed the run.
#[derive(Debug, thiserror::Error)]
pub enum TapeError {
    #[error("the recording of exchanges: {0}")]
    Record(#[from] RecordError),
    /// The run asked what the recording does not hold: it is not this run's recording (another
    /// suite, seed, `--only` or agent mode), or the run took another path than the recorded one.
    #[error("replaying {}: {} the recording does not hold ({}); it was recorded by another run (suite, --seed, --only or flags), so its verdicts cannot be given", path.display(), crate::text::count(*count, "calls"), first)]
    Unmatched {
        path: PathBuf,
        count: u64,
        first: String,
    },
}

impl crate::error::LayerError for TapeError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Run
    }
}

/// One call as the transport makes it.
#[derive(Debug, Clone)]
pub struct Call {
    pub to: Party,
    pub method: Option<String>,
    pub endpoint: String,
    pub request: Message,
}

impl Call {
    fn describe(&self) -> String {
        let what = match &self.method {
            Some(m) => format!("{m} {}", self.endpoint),
            None => self.endpoint.clone(),
        };
        match current_case() {
            Some(case) => format!("{what} of case {case}"),
            None => what,
        }
    }
}

/// How a transport's result goes on tape and comes back from it.
pub trait Taped: Sized {
    /// The answer as recorded; `context` holds what the answer alone does not say (a typed
    /// error, a flag); `elapsed` the transport's own measure, when it has one.
    fn to_tape(&self) -> (Answer, Value, Option<Duration>);
    /// The result a recorded exchange stands for (`elapsed`: as recorded); None when the
    /// exchange is not one of this kind.
    fn from_tape(exchange: &Exchange, elapsed: Duration) -> Option<Self>;
    /// The result of a call the recording does not hold (`why` says so).
    fn unmatched(why: String) -> Self;
}

enum Mode {
    Record {
        recorder: Recorder,
        seq: u64,
        /// The first write that failed (the run goes on; the end says so).
        failed: Option<RecordError>,
    },
    Replay {
        path: PathBuf,
        exchanges: Vec<Exchange>,
        used: Vec<bool>,
        misses: Vec<String>,
    },
}

/// A recorder or a replayer, shared by a run's transports.
pub struct Tape {
    started: Instant,
    mode: Mutex<Mode>,
    /// Patterns (regular expressions) of the parts of requests that differ from run to run by
    /// nature (the time a message was written, the address of the kit's own callback endpoint):
    /// recorded beside each exchange, and left out when a replayed request is compared with the
    /// recorded one.
    volatile: Mutex<Vec<String>>,
}

tokio::task_local! {
    static CASE: String;
}

/// Runs `fut` with its calls belonging to `case` (recorded with it, replayed from its own).
pub async fn in_case<F: Future>(case: impl Into<String>, fut: F) -> F::Output {
    CASE.scope(case.into(), fut).await
}

fn current_case() -> Option<String> {
    CASE.try_with(Clone::clone).ok()
}

impl Tape {
    /// The tape `spec` asks for (None: off).
    pub fn open(spec: &TapeSpec) -> Result<Option<Arc<Tape>>, TapeError> {
        let mode = match spec {
            TapeSpec::Off => return Ok(None),
            TapeSpec::Record(path) => Mode::Record {
                recorder: Recorder::create(path)?,
                seq: 0,
                failed: None,
            },
            TapeSpec::Replay(path) => {
                let exchanges = read(path)?;
                Mode::Replay {
                    path: path.clone(),
                    used: vec![false; exchanges.len()],
                    exchanges,
                    misses: Vec::new(),
                }
            }
        };
        Ok(Some(Arc::new(Tape {
            started: Instant::now(),
            mode: Mutex::new(mode),
            volatile: Mutex::new(Vec::new()),
        })))
    }

    /// Names the parts of this run's requests that `pattern` (a regular expression) matches as
    /// differing from run to run.
    pub fn volatile(&self, part: impl Into<String>) {
        let mut v = self.volatile.lock().unwrap_or_else(|e| e.into_inner());
        v.push(part.into());
    }

    fn volatiles(&self) -> Vec<String> {
        self.volatile
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Mode> {
        self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether answers come from the recording (nothing is sent).
    pub fn replaying(&self) -> bool {
        matches!(*self.lock(), Mode::Replay { .. })
    }

    fn since_start(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64() * 1000.0
    }

    fn write(
        &self,
        call: Call,
        (answer, context): (Answer, Value),
        sent: Instant,
        (elapsed, took): (Duration, Duration),
    ) {
        let sent_ms = self.since_start(sent);
        let answered_ms = match answer {
            Answer::TimedOut | Answer::Cut => None,
            _ => Some(sent_ms + elapsed.as_secs_f64() * 1000.0),
        };
        let mut mode = self.lock();
        let Mode::Record {
            recorder,
            seq,
            failed,
        } = &mut *mode
        else {
            return;
        };
        *seq += 1;
        let exchange = Exchange {
            seq: *seq,
            from: Party::Platform,
            to: call.to,
            method: call.method,
            endpoint: call.endpoint,
            case: current_case(),
            request: call.request,
            answer,
            sent_ms,
            answered_ms,
            // Timeouts keep their elapsed time too (the deadline they ran to).
            context: with_volatile(with_times(context, elapsed, took), &self.volatiles()),
        };
        // Flushed at once: a run cut short leaves a whole file of what it did.
        let done = recorder.write(&exchange).and_then(|()| recorder.flush());
        if let Err(e) = done {
            failed.get_or_insert(e);
        }
    }

    fn take(&self, call: &Call) -> Option<Exchange> {
        let case = current_case();
        let asked = normalized(&call.request, &self.volatiles());
        let mut mode = self.lock();
        let Mode::Replay {
            exchanges,
            used,
            misses,
            ..
        } = &mut *mode
        else {
            return None;
        };
        let fits = |i: usize, e: &Exchange| {
            !used[i]
                && e.from == Party::Platform
                && e.case == case
                && e.to == call.to
                && e.method == call.method
                && e.endpoint == call.endpoint
        };
        // Calls made at once (ten requests in flight) ended in any order: each takes the
        // answer to its own request. A request unlike every recorded one of its case was not
        // asked in the recorded run (another --seed, other flags): no answer stands for it.
        let same = |e: &Exchange| normalized(&e.request, &recorded_volatiles(e)) == asked;
        let found = exchanges
            .iter()
            .enumerate()
            .position(|(i, e)| fits(i, e) && same(e));
        match found {
            Some(i) => {
                used[i] = true;
                Some(exchanges[i].clone())
            }
            None => {
                let unlike = exchanges.iter().enumerate().find(|(i, e)| fits(*i, e));
                misses.push(match unlike {
                    Some((_, e)) => format!(
                        "{}, whose request is not the one recorded (exchange {})",
                        call.describe(),
                        e.seq
                    ),
                    None => call.describe(),
                });
                None
            }
        }
    }

    /// At the run's end: the file closed (recording; a HAR gets its tail), or every call matched (replaying).
    pub fn finish(&self) -> Result<(), TapeError> {
        let mut mode = self.lock();
        match &mut *mode {
            Mode::Record {
                recorder, failed, ..
            } => {
                if let Some(e) = failed.take() {
                    return Err(e.into());
                }
                recorder.finish()?;
                Ok(())
            }
            Mode::Replay { path, misses, .. } => match misses.first() {
                None => Ok(()),
                Some(first) => Err(TapeError::Unmatched {
                    path: path.clone(),
                    count: misses.len() as u64,
                    first: first.clone(),
                }),
            },
        }
    }
}

/// `context` with the run's volatile parts, when it has some.
fn with_volatile(mut context: Value, volatile: &[String]) -> Value {
    if !volatile.is_empty() {
        context["volatile"] = Value::from(volatile.to_vec());
    }
    context
}

/// The volatile parts of the run that recorded `exchange`.
fn recorded_volatiles(exchange: &Exchange) -> Vec<String> {
    exchange.context["volatile"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A request with its volatile parts (matches of the patterns) left out, for comparing runs.
fn normalized(request: &Message, volatile: &[String]) -> Message {
    let mut request = request.clone();
    if let Some(text) = &mut request.text {
        // A pattern that does not compile (a recording edited by hand) leaves the text as it is.
        for pattern in volatile.iter().filter_map(|p| regex::Regex::new(p).ok()) {
            *text = pattern.replace_all(text, "{volatile}").into_owned();
        }
    }
    request
}

/// The times a recording keeps beside the answer: the transport's own measure of the exchange,
/// and how long the call took as a whole (a timeout has no answer time, and both).
fn with_times(context: Value, elapsed: Duration, took: Duration) -> Value {
    let mut context = match context {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        other => {
            let mut map = serde_json::Map::new();
            map.insert("value".into(), other);
            map
        }
    };
    // In nanoseconds, whole: a replay gives back the very duration measured.
    let nanos = |d: Duration| Value::from(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    context.insert("elapsed_ns".into(), nanos(elapsed));
    context.insert("took_ns".into(), nanos(took));
    Value::Object(context)
}

/// The times of a recorded exchange: the transport's measure, and the call's as a whole.
fn recorded_times(exchange: &Exchange) -> (Duration, Duration) {
    let nanos = |key: &str| exchange.context.get(key).and_then(Value::as_u64);
    if let Some(elapsed) = nanos("elapsed_ns") {
        let took = nanos("took_ns").unwrap_or(elapsed);
        return (Duration::from_nanos(elapsed), Duration::from_nanos(took));
    }
    // A recording made elsewhere: its times.
    let ms = exchange
        .answered_ms
        .map_or(0.0, |a| a - exchange.sent_ms)
        .max(0.0);
    let d = Duration::try_from_secs_f64(ms / 1000.0).unwrap_or_default();
    (d, d)
}

/// Makes `call` through `tape`: `live` when there is no tape or it records (the exchange then
/// written), else the recorded answer (`live` is not run).
pub async fn through<T: Taped, F: Future<Output = T>>(
    tape: Option<&Tape>,
    call: Call,
    live: F,
) -> T {
    through_timed(tape, call, live).await.0
}

/// As [`through`], with how long the call took as a whole: measured, or as recorded (a caller
/// that times a turn of several calls adds them up when replaying).
pub async fn through_timed<T: Taped, F: Future<Output = T>>(
    tape: Option<&Tape>,
    call: Call,
    live: F,
) -> (T, Duration) {
    let sent = Instant::now();
    let Some(tape) = tape else {
        let result = live.await;
        return (result, sent.elapsed());
    };
    if tape.replaying() {
        let why = format!("the recording holds no answer to {}", call.describe());
        let Some(exchange) = tape.take(&call) else {
            return (T::unmatched(why), Duration::ZERO);
        };
        let (elapsed, took) = recorded_times(&exchange);
        let result = T::from_tape(&exchange, elapsed).unwrap_or_else(|| {
            tape.note_miss(format!(
                "{} (recorded exchange {} is of another kind)",
                call.describe(),
                exchange.seq
            ));
            T::unmatched(why)
        });
        return (result, took);
    }
    let result = live.await;
    let took = sent.elapsed();
    let (answer, context, elapsed) = result.to_tape();
    let elapsed = elapsed.unwrap_or(took);
    tape.write(call, (answer, context), sent, (elapsed, took));
    (result, took)
}

impl Tape {
    /// Recording: an exchange the peer started (a callback it made to us), written as heard;
    /// its `seq` is given here.
    pub fn heard(&self, mut exchange: Exchange) {
        let mut mode = self.lock();
        if let Mode::Record {
            recorder,
            seq,
            failed,
        } = &mut *mode
        {
            *seq += 1;
            exchange.seq = *seq;
            let done = recorder.write(&exchange).and_then(|()| recorder.flush());
            if let Err(e) = done {
                failed.get_or_insert(e);
            }
        }
    }

    /// Replaying: the exchanges the peer started, as recorded (the replay plays them again).
    pub fn heard_recorded(&self) -> Vec<Exchange> {
        match &*self.lock() {
            Mode::Replay { exchanges, .. } => exchanges
                .iter()
                .filter(|e| e.from != Party::Platform)
                .cloned()
                .collect(),
            Mode::Record { .. } => Vec::new(),
        }
    }

    /// Milliseconds from the tape's start to `at`.
    pub fn offset_ms(&self, at: Instant) -> f64 {
        self.since_start(at)
    }

    fn note_miss(&self, what: String) {
        if let Mode::Replay { misses, .. } = &mut *self.lock() {
            misses.push(what);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Echo(String, Duration);

    impl Taped for Echo {
        fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
            (
                Answer::Delivered {
                    status: None,
                    message: Message::masked([], self.0.as_bytes()),
                },
                Value::Null,
                Some(self.1),
            )
        }
        fn from_tape(e: &Exchange, elapsed: Duration) -> Option<Self> {
            match &e.answer {
                Answer::Delivered { message, .. } => Some(Echo(message.text.clone()?, elapsed)),
                _ => None,
            }
        }
        fn unmatched(why: String) -> Self {
            Echo(why, Duration::ZERO)
        }
    }

    fn call(endpoint: &str) -> Call {
        Call {
            to: Party::Agent("a".into()),
            method: None,
            endpoint: endpoint.into(),
            request: Message::masked([("authorization", "Bearer k3y")], b"q"),
        }
    }

    #[deadline::test]
    async fn a_replay_gives_the_recorded_answers_per_case_and_names_what_it_lacks() {
        let dir = std::env::temp_dir().join(format!("tck-tape-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.jsonl");
        let rec = Tape::open(&TapeSpec::Record(path.clone()))
            .unwrap()
            .unwrap();
        for (case, answer, ms) in [("c1", "one", 7), ("c2", "two", 900)] {
            let got = in_case(
                case,
                through(Some(&rec), call("/x"), async move {
                    Echo(answer.into(), Duration::from_millis(ms))
                }),
            )
            .await;
            assert_eq!(got.0, answer);
        }
        rec.finish().unwrap();
        assert!(!std::fs::read_to_string(&path).unwrap().contains("k3y"));
        let play = Tape::open(&TapeSpec::Replay(path.clone()))
            .unwrap()
            .unwrap();
        // Asked in another order than recorded: each case gets its own answer and time.
        let two: Echo = in_case(
            "c2",
            through(Some(&play), call("/x"), async { unreachable!() }),
        )
        .await;
        assert_eq!(two, Echo("two".into(), Duration::from_millis(900)));
        let one: Echo = in_case(
            "c1",
            through(Some(&play), call("/x"), async { unreachable!() }),
        )
        .await;
        assert_eq!(one, Echo("one".into(), Duration::from_millis(7)));
        play.finish().unwrap();
        let extra: Echo = in_case(
            "c1",
            through(Some(&play), call("/x"), async { unreachable!() }),
        )
        .await;
        assert!(
            extra.0.contains("holds no answer to /x of case c1"),
            "{extra:?}"
        );
        let e = play.finish().unwrap_err().to_string();
        assert!(
            e.contains("1 call the recording does not hold (/x of case c1)"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[deadline::test]
    async fn a_request_unlike_the_recorded_one_is_not_answered_but_for_its_volatile_parts() {
        let dir = std::env::temp_dir().join(format!("tck-tape-v-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.jsonl");
        let asking = |body: &str| Call {
            request: Message::masked([], body.as_bytes()),
            ..call("/x")
        };
        let rec = Tape::open(&TapeSpec::Record(path.clone()))
            .unwrap()
            .unwrap();
        rec.volatile(r"at=\d+");
        let live = async { Echo("one".into(), Duration::ZERO) };
        through(Some(&rec), asking("q at=111"), live).await;
        rec.finish().unwrap();
        let play = Tape::open(&TapeSpec::Replay(path.clone()))
            .unwrap()
            .unwrap();
        play.volatile(r"at=\d+");
        // Written at another time: the same request.
        let same: Echo = through(Some(&play), asking("q at=222"), async { unreachable!() }).await;
        assert_eq!(same.0, "one");
        play.finish().unwrap();
        let play = Tape::open(&TapeSpec::Replay(path)).unwrap().unwrap();
        let other: Echo = through(Some(&play), asking("r at=111"), async { unreachable!() }).await;
        assert!(other.0.contains("holds no answer"), "{other:?}");
        let e = play.finish().unwrap_err().to_string();
        assert!(
            e.contains("whose request is not the one recorded (exchange 1)"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
