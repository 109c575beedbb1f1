//! The journal a stdio mock agent keeps beside its `--json` report (`FILE.journal`), so that the
//! processes of one run leave one report: a per-turn harness starts a process per turn, and each
//! would otherwise overwrite the report with the one request it saw.
//!
//! - **What goes in**: every event the line server judges the harness by (a request with the
//!   answer planned for it, how the answer went, a half-written request, a stderr flood, the
//!   child `forks-and-exits` left and, written by that child, how it was ended), one JSON line
//!   each, tagged with the writing process.
//! - **How it is read**: a process replays the journal into its observer when it starts, then
//!   appends its own events; its report is what it holds, unless another process appended
//!   meanwhile (processes running side by side): then the report is folded from the whole
//!   journal. Either way a report counts every request of the run so far.
//! - **Safe to share**: each append is one `write` under an exclusive `flock`, as is the read at
//!   start; a line that does not parse (a process killed in the middle, never expected) is
//!   skipped.
//! - **Bounded**: at most [`MAX_RECORDS`] records; past that, events are judged by the process
//!   that saw them only.
//! - **One run**: a journal last written more than `--expect-timeout` + [`STALE_AFTER`] ago by
//!   a process of another parent is an earlier run's, and is started afresh. Two runs in a row
//!   with the same `--json` path and less time between them are folded together: use a new
//!   path per run, or delete `FILE.journal`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::peer_end::PeerEnd;

use crate::mock::decision::Decision;
use crate::report::{CaseResult, Evidence};

/// What the journal's name adds to the report's.
pub const SUFFIX: &str = ".journal";

/// Records kept at most.
pub const MAX_RECORDS: u64 = 10_000;

/// Bytes of journal kept at most (past them, as past [`MAX_RECORDS`], nothing is appended).
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The largest planned answer kept whole; a larger one is kept by its size. An observer that
/// reads more of an answer than this would judge a replay differently from the live request, so
/// no observer reads back more (the line protocols' observers read 64 KiB at most).
pub const ANSWER_KEPT: usize = 64 * 1024;

/// The answer a [`Event::Request`] replays: the one kept, or, for one kept by its size, blanks
/// just past [`ANSWER_KEPT`] (too large to read back, as the original was).
pub fn replayed_answer(answer: &str, len: u64) -> std::borrow::Cow<'_, [u8]> {
    if len as usize > ANSWER_KEPT && answer.is_empty() {
        std::borrow::Cow::Owned(vec![b' '; ANSWER_KEPT + 1])
    } else {
        std::borrow::Cow::Borrowed(answer.as_bytes())
    }
}

/// The answer as a [`Event::Request`] keeps it (see [`replayed_answer`]).
pub fn kept_answer(answer: &[u8]) -> String {
    if answer.len() > ANSWER_KEPT {
        String::new()
    } else {
        String::from_utf8_lossy(answer).into_owned()
    }
}

/// How long after `--expect-timeout` a journal's last write still belongs to the same run.
pub const STALE_AFTER: Duration = Duration::from_secs(60);

/// The journal beside the report `json`.
pub fn path_for(json: &Path) -> PathBuf {
    let mut name = json.as_os_str().to_owned();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// One line of the journal: who wrote it, and what happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The writing process.
    pub pid: u32,
    /// Its parent (the harness, for an agent).
    pub parent: u32,
    #[serde(flatten)]
    pub event: Event,
}

/// What the line server judges a harness by.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A request (its line as received) and the answer planned for it: an answer over
    /// [`ANSWER_KEPT`] bytes by its size only (`answer` empty).
    Request {
        seq: u64,
        agent: String,
        line: String,
        planned: Planned,
        answer: String,
        #[serde(default)]
        answer_len: u64,
    },
    /// An answer is over: how (an [`Outcome`](crate::mock::http1::Outcome), kebab-case), how
    /// many bytes, how long after the request.
    Answered {
        seq: u64,
        agent: String,
        outcome: String,
        bytes: u64,
        total_us: u64,
        /// Who ended the wait, when the peer's side did (see [`PeerEnd`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ended: Option<PeerEnd>,
    },
    /// A request that never arrived whole.
    Incomplete {
        agent: String,
        endpoint: String,
        what: String,
    },
    /// A stderr flood: written whole in time, or not.
    Flood { whole: bool, message: String },
    /// The agent left a child holding stdout (the case it settles, not settled yet).
    Forked { case: CaseResult },
    /// The child left behind settled its case: PASS or FAIL, and why.
    Settled { pass: bool, message: String },
}

/// What of a [`Decision`] the observers read.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Planned {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<String>,
    pub status: u16,
    pub ttfb_ms: u64,
    pub body_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
}

impl Planned {
    pub fn of(d: &Decision) -> Planned {
        Planned {
            applied: d.applied.clone(),
            status: d.status,
            ttfb_ms: d.ttfb_ms,
            body_ms: d.body_ms,
            unusable: d.unusable.clone(),
        }
    }

    pub fn decision(&self) -> Decision {
        Decision {
            applied: self.applied.clone(),
            status: self.status,
            ttfb_ms: self.ttfb_ms,
            body_ms: self.body_ms,
            unusable: self.unusable.clone(),
            injected: Vec::new(),
        }
    }
}

/// An open journal, appended to by this process.
pub struct Journal {
    file: File,
    /// (bytes this process appended, records in the file as far as this process knows).
    written: Mutex<(u64, u64)>,
    /// The file's length when this process had read it.
    base: u64,
}

/// Holds an exclusive `flock` on a file until dropped.
struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    fn new(file: &'a File) -> std::io::Result<Locked<'a>> {
        // SAFETY: a valid open descriptor; flock blocks until the lock is ours.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Locked(file))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: the descriptor we locked.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn parent() -> u32 {
    std::os::unix::process::parent_id()
}

impl Journal {
    /// Opens (or creates) the journal at `path`, starting it afresh when it is an earlier run's
    /// (last written more than `window` ago by a process of another parent; None: never);
    /// returns it with the records earlier processes of this run left.
    pub fn open(path: &Path, window: Option<Duration>) -> std::io::Result<(Journal, Vec<Record>)> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        let mut reader = file.try_clone()?;
        let records = {
            let _lock = Locked::new(&file)?;
            let mut records = read(&mut reader)?;
            let age = file
                .metadata()?
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok());
            let old = matches!((age, window), (Some(age), Some(window)) if age > window);
            let same_harness = records.last().is_some_and(|r| r.parent == parent());
            if old && !same_harness {
                file.set_len(0)?;
                records.clear();
            }
            records
        };
        Ok(Journal::at(file, records))
    }

    fn at(file: File, records: Vec<Record>) -> (Journal, Vec<Record>) {
        let base = file.metadata().map(|m| m.len()).unwrap_or(0);
        let journal = Journal {
            file,
            written: Mutex::new((0, records.len() as u64)),
            base,
        };
        (journal, records)
    }

    /// Appends `event` (one write under the lock); nothing once the journal is full.
    pub fn append(&self, event: Event) {
        let Ok(mut written) = self.written.lock() else {
            return;
        };
        if written.1 >= MAX_RECORDS || self.base + written.0 >= MAX_BYTES {
            return;
        }
        let record = Record {
            pid: std::process::id(),
            parent: parent(),
            event,
        };
        let Ok(mut line) = serde_json::to_vec(&record) else {
            return;
        };
        line.push(b'\n');
        let Ok(_lock) = Locked::new(&self.file) else {
            return;
        };
        if (&self.file).write_all(&line).is_ok() {
            written.0 += line.len() as u64;
            written.1 += 1;
        }
    }

    /// Every record, when another process appended since this one read the journal (None: what
    /// this process holds is the whole journal).
    pub fn if_others_appended(&self) -> Option<Vec<Record>> {
        let ours = self.written.lock().map(|w| w.0).unwrap_or(0);
        let _lock = Locked::new(&self.file).ok()?;
        let len = self.file.metadata().ok()?.len();
        if len == self.base + ours {
            return None;
        }
        let mut file = self.file.try_clone().ok()?;
        read(&mut file).ok()
    }
}

/// The records of `file`, from its start (lines that do not parse are skipped).
fn read(file: &mut File) -> std::io::Result<Vec<Record>> {
    file.rewind()?;
    let mut records = Vec::new();
    for line in BufReader::new(&*file).split(b'\n') {
        if let Ok(record) = serde_json::from_slice::<Record>(&line?) {
            records.push(record);
        }
        if records.len() as u64 >= MAX_RECORDS {
            break;
        }
    }
    Ok(records)
}

/// Appends what the child `forks-and-exits` left settled, when the report `json` has a journal
/// (the child runs `mock linger`); returns the journal's records then, for the case's fold.
pub fn settle(json: &Path, pass: bool, message: &str) -> Option<Vec<Record>> {
    let path = path_for(json);
    if !path.exists() {
        return None;
    }
    let (journal, _) = Journal::open(&path, None).ok()?;
    journal.append(Event::Settled {
        pass,
        message: message.to_string(),
    });
    let mut file = journal.file.try_clone().ok()?;
    let _lock = Locked::new(&journal.file).ok()?;
    read(&mut file).ok()
}

/// The case the children `forks-and-exits` left settle, from how they settled it (`settled`:
/// PASS or FAIL and why, one per child that did): failed when any failed, passed when some
/// passed, else `unsettled` as it is (a skip saying why).
pub fn forked_case(mut unsettled: CaseResult, settled: &[(bool, String)]) -> CaseResult {
    let evidence = || {
        Evidence::new(
            settled.len() as u64,
            "children left in the agent's process group",
        )
    };
    let failed: Vec<&String> = settled.iter().filter(|s| !s.0).map(|s| &s.1).collect();
    if let Some(first) = failed.first() {
        let many = if settled.len() > 1 {
            format!(" ({} of {} children)", failed.len(), settled.len())
        } else {
            String::new()
        };
        unsettled.fail_on(evidence(), format!("{first}{many}"));
    } else if let Some((_, first)) = settled.first() {
        unsettled.pass_noting(evidence(), first.clone(), String::new);
    }
    unsettled
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Level, Status};

    fn unsettled() -> CaseResult {
        let mut case = CaseResult::new("stdio.kills-process-group", "stdio", Level::Must, "t", "s");
        case.skip("not settled");
        case
    }

    #[test]
    fn the_forked_case_folds_every_childs_verdict() {
        assert_eq!(forked_case(unsettled(), &[]).status, Status::Skip);
        let passed = forked_case(
            unsettled(),
            &[(true, "ended".into()), (true, "ended".into())],
        );
        assert_eq!(passed.status, Status::Pass);
        assert_eq!(passed.evidence.unwrap().judged, 2);
        let failed = forked_case(
            unsettled(),
            &[(true, "ended".into()), (false, "left".into())],
        );
        assert_eq!(failed.status, Status::Fail);
        assert_eq!(failed.message, "left (1 of 2 children)");
    }

    #[test]
    fn an_answer_too_large_to_keep_replays_as_too_large_to_read() {
        let big = vec![b'x'; ANSWER_KEPT + 10];
        let kept = kept_answer(&big);
        assert!(kept.is_empty());
        assert_eq!(
            replayed_answer(&kept, big.len() as u64).len(),
            ANSWER_KEPT + 1
        );
        assert_eq!(&*replayed_answer("{}", 2), b"{}");
    }

    #[test]
    fn a_journal_is_shared_and_an_earlier_runs_is_started_afresh() {
        let dir =
            std::env::temp_dir().join(format!("agent-tck-line-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json.journal");
        let _ = std::fs::remove_file(&path);
        let flood = || Event::Flood {
            whole: true,
            message: String::new(),
        };
        let (first, records) = Journal::open(&path, Some(Duration::from_secs(60))).unwrap();
        assert!(records.is_empty());
        first.append(flood());
        assert!(first.if_others_appended().is_none(), "only its own");
        let (second, records) = Journal::open(&path, Some(Duration::from_secs(60))).unwrap();
        assert_eq!(records.len(), 1);
        second.append(flood());
        assert_eq!(first.if_others_appended().map(|r| r.len()), Some(2));
        // Written by this parent: the same run, however old.
        let (_, records) = Journal::open(&path, Some(Duration::ZERO)).unwrap();
        assert_eq!(records.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
