//! When the agents' answers are judged (`--judging every|spare`): as each is passed on (every
//! answer judged, once the platform has it and before its connection's next request is read:
//! under a flood, the platform waits for the judge), or beside the traffic on spare CPU, where
//! an answer the judge cannot keep up with is passed on unjudged and counted in each case it
//! would have been judged by.
//!
//! Judging an answer (its schema, its phrases, its semantics) costs several times what passing
//! it on does; a proxy left in staging under a load it was not sized for should not become the
//! platform's bottleneck, and its report should say how much it judged.

use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::probe::outcome::Sent;
use crate::probe::traffic::{LiveAnswer, TrafficJudge};
use crate::transport::http::{Error, Response};

/// `--judging`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Judging {
    /// Each answer judged as it is passed on (once the platform has it; its connection's next
    /// request waits for the judge).
    #[default]
    Every,
    /// Answers passed on at once and judged beside the traffic, on spare CPU; those past what
    /// the judge keeps up with passed on unjudged, counted.
    Spare,
}

/// Answers waiting for a judge, per worker, past which an answer is passed over: about a
/// second of a busy agent's traffic, and a bound on what the queue holds in memory.
const WAITING: usize = 1024;

/// One answer, owned, on its way to a judge.
pub struct Answer {
    pub agent: String,
    pub method: String,
    pub path: String,
    pub task: Option<String>,
    /// The platform's request body as it came: parsed by the judge, off the traffic's path.
    pub request: bytes::Bytes,
    pub result: Result<Response, Error>,
    /// The answer's body, parsed already (for the faults), when it was JSON.
    pub answer_json: Option<crate::probe::outcome::Parsed>,
    pub at: Duration,
    pub elapsed: Duration,
}

/// Judges as `--judging` says.
pub struct Judge {
    traffic: Arc<TrafficJudge>,
    /// `--judging spare`: answers go to the workers' queues; else each is judged in place,
    /// with no lock taken.
    spare: bool,
    /// Spare: a queue per worker, a worker per share of the agents (an agent's answers always
    /// go to the same one, so they are judged in the order they came). Emptied at the run's
    /// end, when an answer still coming is passed over. Read per answer; written once.
    queues: RwLock<Vec<SyncSender<Answer>>>,
    /// The workers, joined at the run's end.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Judge {
    pub fn new(traffic: Arc<TrafficJudge>, judging: Judging, agents: usize) -> Judge {
        let spare = judging == Judging::Spare;
        let (mut queues, mut threads) = (Vec::new(), Vec::new());
        if spare {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            // A worker that could not start takes no share: its agents go to the others.
            for (queue, thread) in
                (0..cores.min(agents).max(1)).filter_map(|i| start_worker(i, Arc::clone(&traffic)))
            {
                queues.push(queue);
                threads.push(thread);
            }
        }
        Judge {
            traffic,
            spare,
            queues: RwLock::new(queues),
            threads: Mutex::new(threads),
        }
    }

    pub fn traffic(&self) -> &TrafficJudge {
        &self.traffic
    }

    /// Judges `answer` of agent number `index`: in place, or handed to its worker; passed over
    /// (counted, unjudged) when that worker is behind, or the run is ending.
    pub fn judge(&self, index: usize, answer: Answer) {
        if !self.spare {
            judge_now(&self.traffic, answer);
            return;
        }
        let answer = match self.queues.read() {
            Ok(queues) if !queues.is_empty() => {
                match queues[index % queues.len()].try_send(answer) {
                    Ok(()) => return,
                    Err(TrySendError::Full(a) | TrySendError::Disconnected(a)) => a,
                }
            }
            // No queue: the run is ending (or no worker could start).
            _ => answer,
        };
        answer.told(|live| self.traffic.pass_over(live, PASSED_OVER));
    }

    /// Waits for the answers still queued to be judged (at the run's end, before its verdicts).
    pub async fn finish(&self) {
        if let Ok(mut queues) = self.queues.write() {
            // The workers end once their queue is empty and closed.
            queues.clear();
        }
        let threads: Vec<JoinHandle<()>> = match self.threads.lock() {
            Ok(mut threads) => threads.drain(..).collect(),
            Err(_) => return,
        };
        if threads.is_empty() {
            return;
        }
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
    }
}

/// Why an answer was passed on unjudged.
const PASSED_OVER: &str = "passed on unjudged: the judge fell behind the traffic (--judging spare)";

fn judge_now(traffic: &TrafficJudge, answer: Answer) {
    answer.told(|live| traffic.judge(live));
}

impl Answer {
    /// `tell` given the answer as the judge reads it.
    fn told(self, tell: impl FnOnce(LiveAnswer<'_>)) {
        let Answer {
            agent,
            method,
            path,
            task,
            request,
            result,
            answer_json,
            at,
            elapsed,
        } = self;
        tell(LiveAnswer {
            agent: &agent,
            method: &method,
            path: &path,
            task: task.as_deref(),
            request: Sent::Bytes(request),
            result,
            answer_json,
            at,
            elapsed,
        });
    }
}

/// Starts judge thread `n`: its queue and its handle (None: the thread could not start).
fn start_worker(
    n: usize,
    traffic: Arc<TrafficJudge>,
) -> Option<(SyncSender<Answer>, JoinHandle<()>)> {
    let (queue, answers) = mpsc::sync_channel::<Answer>(WAITING);
    let thread = std::thread::Builder::new()
        .name(format!("judge-{n}"))
        .spawn(move || {
            lower_priority();
            for answer in answers {
                judge_now(&traffic, answer);
            }
        })
        .ok()?;
    Some((queue, thread))
}

/// The judge's thread yields the CPU to the traffic: it runs on what passing answers on
/// leaves (nice 10: about a tenth of a core's share beside a busy one).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on this thread's own id; a failure leaves the priority as it was.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}
