//! The execute_task protocol over a subprocess's standard I/O ("Local Subprocess Protocol").
//!
//! The agent runs in its own process group (`process_group(0)`: its pgid is its pid), so we can
//! signal it and everything it forked at once. Every way out ends the group:
//!
//! - `restart`, `shutdown` and the end of every per-turn exchange send SIGTERM to the group, wait
//!   up to `kill_grace` for the leader to exit and the group to empty, then send SIGKILL;
//! - dropping a process (the agent, or an exchange future cancelled mid-way) sends SIGKILL to the
//!   group synchronously, and tokio reaps the leader (`kill_on_drop`).
//!
//! A process that leaves the group (`setsid`, `setpgid`) escapes this; catching it would need a
//! cgroup or a PID namespace.
//!
//! Every exchange runs under one total deadline (`tokio::time::timeout_at` around spawning,
//! writing, reading and waiting for exit). The request is written concurrently with reading, so an
//! agent that never reads stdin (our write blocks once the pipe is full) or that answers before
//! reading everything cannot stall us past the deadline. Stdout is read by a capped line reader;
//! stderr is drained by its own task into a ring of the last `stderr_keep` bytes, so a chatty
//! agent neither blocks on a full stderr pipe nor grows our memory.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::lines::{AfterSilence, LineReader, ReadFail};
pub use super::lines::{LineAnswer, LineError};
use command::split_words;
pub use command::{program_path, split_command, CommandError, KIT_PROGRAM};
use group::{describe_status, group_alive, signal_group, GroupGuard};
use stderr::{drain_stderr, lock, StderrRing};

mod command;
mod group;
mod stderr;

/// Longest answer line (persistent) or whole stdout (per-turn) accepted by default.
pub const DEFAULT_MAX_LINE: usize = 5_000_000;
/// Bytes of stderr kept by default (the last ones).
pub const DEFAULT_STDERR_KEEP: usize = 64 * 1024;
/// Time between SIGTERM and SIGKILL by default.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_millis(500);
/// Per-turn: how long we keep reading stdout after the agent exited, when something it forked
/// still holds stdout open.
pub const STRAY_GRACE: Duration = Duration::from_millis(200);

/// How long we wait for the stderr drain to catch up before quoting stderr in an error.
const STDERR_SETTLE: Duration = Duration::from_millis(100);
/// Interval of the group-membership polls while a group is being ended.
const POLL: Duration = Duration::from_millis(10);
/// Most bytes of stderr quoted in an error.
const ERROR_TAIL_BYTES: usize = 2_000;

/// How the agent process lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdioMode {
    /// One process for many exchanges: a line in, a line out.
    Persistent,
    /// A new process per exchange: the request on stdin (no newline, then EOF), all of stdout
    /// back (what the known reference harness does).
    PerTurn,
}

/// How to run a stdio agent.
#[derive(Debug, Clone)]
pub struct StdioConfig {
    /// The command line, split like a POSIX shell would (quotes, backslashes) and run directly,
    /// never through a shell. See [`split_command`].
    pub command: String,
    pub mode: StdioMode,
    /// Longest stdout line (persistent) or whole stdout (per-turn) accepted.
    pub max_line: usize,
    /// Bytes of stderr kept (the last ones); the total is counted.
    pub stderr_keep: usize,
    /// Time between SIGTERM and SIGKILL when ending the process group.
    pub kill_grace: Duration,
    /// The directory the agent runs in (None: ours).
    pub cwd: Option<std::path::PathBuf>,
    /// Variables set in the agent's environment, beside the ones it inherits.
    pub env: Vec<(String, String)>,
}

impl StdioConfig {
    /// A configuration with the default caps and grace.
    pub fn new(command: impl Into<String>, mode: StdioMode) -> StdioConfig {
        StdioConfig {
            command: command.into(),
            mode,
            max_line: DEFAULT_MAX_LINE,
            stderr_keep: DEFAULT_STDERR_KEEP,
            kill_grace: DEFAULT_KILL_GRACE,
            cwd: None,
            env: Vec::new(),
        }
    }
}

/// The agent's stderr as kept: the last `stderr_keep` bytes, lossily decoded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StderrLog {
    pub tail: String,
    /// Bytes that came in on stderr in total (all processes of this agent).
    pub total_bytes: u64,
    /// Earlier bytes were dropped: `tail` holds only the last ones.
    pub truncated: bool,
}

impl std::fmt::Display for StderrLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.truncated {
            writeln!(
                f,
                "[{} bytes on stderr in total; the earlier ones were dropped]",
                self.total_bytes
            )?;
        }
        f.write_str(&self.tail)
    }
}

/// How a process group was ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cleanup {
    /// The signals sent to the group, in order: `[]` (it had already ended), `["TERM"]`,
    /// `["TERM", "KILL"]`.
    pub signalled: Vec<&'static str>,
    /// How the leader ended (`status 0`, `signal 15 (TERM)`), when known; `None` if there was no
    /// process.
    pub exit: Option<String>,
}

/// A subprocess agent speaking JSON lines on stdin/stdout.
pub struct StdioAgent {
    config: StdioConfig,
    argv: Vec<String>,
    /// The persistent process, while it runs.
    proc: Option<Proc>,
    stderr: Arc<Mutex<StderrRing>>,
    last_pid: Option<u32>,
    last_cleanup: Option<Cleanup>,
}

impl std::fmt::Debug for StdioAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioAgent")
            .field("argv", &self.argv)
            .field("mode", &self.config.mode)
            .field("pid", &self.pid())
            .finish()
    }
}

impl StdioAgent {
    /// Validates the configuration and splits the command; spawns nothing yet.
    pub fn new(config: StdioConfig) -> Result<StdioAgent, CommandError> {
        let argv = split_words(&config.command).map_err(|what| CommandError::Named {
            command: config.command.clone(),
            what,
        })?;
        Ok(StdioAgent::with_argv(config, argv))
    }

    /// An agent run as `argv` (already split: the caller filled in its own placeholders word by
    /// word); `config.command` is only what error messages quote.
    pub fn with_argv(config: StdioConfig, argv: Vec<String>) -> StdioAgent {
        let stderr = Arc::new(Mutex::new(StderrRing::new(config.stderr_keep)));
        StdioAgent {
            config,
            argv,
            proc: None,
            stderr,
            last_pid: None,
            last_cleanup: None,
        }
    }

    /// The program and its arguments, as split from the command.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// One exchange, under a total `deadline`.
    ///
    /// Persistent: spawns the process on first use (and after `restart`, or after a failed
    /// exchange: a timeout or an over-long line leaves the stream out of step, so the next
    /// exchange first ends the old process, outside its own deadline), writes `request` and a
    /// newline to stdin, reads one line from stdout.
    ///
    /// Per-turn: spawns a new process, writes `request` without a newline, closes stdin, reads
    /// all of stdout until EOF and waits for the exit; a non-zero exit is an error. When the
    /// agent has exited but something it forked still holds stdout open, reading stops after
    /// [`STRAY_GRACE`]. The process group is ended before this returns, in every case.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        deadline: Duration,
    ) -> Result<LineAnswer, LineError> {
        match self.config.mode {
            StdioMode::Persistent => self.exchange_persistent(request, deadline).await,
            StdioMode::PerTurn => self.exchange_per_turn(request, deadline).await,
        }
    }

    /// Ends the whole process group (SIGTERM, then SIGKILL after `kill_grace`) and reaps the
    /// leader; the next exchange respawns. Use after a framing failure (a pretty-printed answer
    /// leaves lines in the pipe).
    pub async fn restart(&mut self) -> Cleanup {
        let cleanup = match self.proc.take() {
            Some(mut proc) => terminate(&mut proc, self.config.kill_grace).await,
            None => Cleanup::default(),
        };
        self.last_cleanup = Some(cleanup.clone());
        cleanup
    }

    /// As [`restart`](Self::restart), at the end of a run. Dropping the agent does the same
    /// synchronously (SIGKILL to the group, no grace).
    pub async fn shutdown(&mut self) -> Cleanup {
        self.restart().await
    }

    /// After an exchange that timed out (persistent): waits `open` more with the agent's stdin
    /// still open (a slow agent answers then: `Late`), then closes it and reads what it writes
    /// until it closes stdout or `grace` passes (`AtEof`, the bytes of output buffered; 0
    /// without a process). An agent that holds its answers in an unflushed buffer writes them
    /// only when it exits at the end of its input; one that hangs writes nothing. The process is
    /// left out of step: the next exchange restarts it.
    pub async fn output_at_eof(&mut self, open: Duration, grace: Duration) -> AfterSilence {
        let Some(proc) = self.proc.as_mut() else {
            return AfterSilence::AtEof(0);
        };
        proc.out_of_step = true;
        let until = tokio::time::Instant::now() + open;
        if let Ok(Ok(n)) =
            tokio::time::timeout_at(until, proc.reader.read_some(&mut proc.stdout)).await
        {
            if n > 0 {
                return AfterSilence::Late(proc.reader.pending());
            }
        }
        // Dropping our end of the pipe is the agent's end of input.
        proc.stdin = None;
        let until = tokio::time::Instant::now() + grace;
        while let Ok(Ok(n)) =
            tokio::time::timeout_at(until, proc.reader.read_some(&mut proc.stdout)).await
        {
            if n == 0 {
                break;
            }
        }
        AfterSilence::AtEof(proc.reader.pending())
    }

    /// The stderr kept so far (all processes of this agent).
    pub fn stderr(&self) -> StderrLog {
        lock(&self.stderr).log()
    }

    /// The running persistent process's pid; in per-turn mode, the pid of the last exchange's
    /// process (which has ended).
    pub fn pid(&self) -> Option<u32> {
        match &self.proc {
            Some(proc) => Some(proc.pid),
            None if self.config.mode == StdioMode::PerTurn => self.last_pid,
            None => None,
        }
    }

    /// How the last process group was ended: by `restart`/`shutdown`, before a respawn after a
    /// failed exchange, or at the end of a per-turn exchange (`signalled` is not empty when
    /// something the agent left behind had to be signalled).
    pub fn last_cleanup(&self) -> Option<&Cleanup> {
        self.last_cleanup.as_ref()
    }

    async fn exchange_persistent(
        &mut self,
        request: &[u8],
        deadline: Duration,
    ) -> Result<LineAnswer, LineError> {
        if self.proc.as_ref().is_some_and(|p| p.out_of_step) {
            self.restart().await;
        }
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        if self.proc.is_none() {
            let proc = self.spawn()?;
            self.last_pid = Some(proc.pid);
            self.proc = Some(proc);
        }
        let stderr = self.stderr.clone();
        let Some(proc) = self.proc.as_mut() else {
            return Err(LineError::Io("no process".into()));
        };
        // Until this exchange completes, the stream is out of step: if the future is dropped
        // half-way, the next exchange restarts the process.
        proc.out_of_step = true;
        let mut message = Vec::with_capacity(request.len() + 1);
        message.extend_from_slice(request);
        message.push(b'\n');
        match tokio::time::timeout_at(until, persistent_turn(proc, &message, &stderr)).await {
            Ok(Ok((text, complete_write))) => {
                proc.out_of_step = !complete_write;
                Ok(LineAnswer {
                    text,
                    line_no: proc.reader.lines(),
                    elapsed: started.elapsed(),
                })
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(LineError::Timeout {
                deadline,
                got: proc.reader.pending(),
            }),
        }
    }

    async fn exchange_per_turn(
        &mut self,
        request: &[u8],
        deadline: Duration,
    ) -> Result<LineAnswer, LineError> {
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        let mut proc = self.spawn()?;
        self.last_pid = Some(proc.pid);
        let result = match tokio::time::timeout_at(
            until,
            per_turn(&mut proc, request, &self.stderr),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(LineError::Timeout {
                deadline,
                got: proc.reader.pending(),
            }),
        };
        let cleanup = terminate(&mut proc, self.config.kill_grace).await;
        self.last_cleanup = Some(cleanup);
        result.map(|text| LineAnswer {
            text,
            line_no: 1,
            elapsed: started.elapsed(),
        })
    }

    fn spawn(&self) -> Result<Proc, LineError> {
        let (mut child, guard, pid, shown) =
            start_group(&self.argv, &self.config, Stdio::piped(), DiesWithUs::No)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(LineError::Spawn(format!(
                "cannot start `{shown}`: its standard I/O was not piped"
            )));
        };
        let stderr_from = lock(&self.stderr).total;
        let drain = AbortOnDrop(tokio::spawn(drain_stderr(stderr, self.stderr.clone())));
        Ok(Proc {
            guard,
            child,
            pid,
            stdin: Some(stdin),
            stdout,
            reader: LineReader::new(self.config.max_line),
            drain,
            stderr_from,
            out_of_step: false,
        })
    }
}

/// One running agent process and its pipes.
struct Proc {
    /// Declared first, so that it is dropped (and the group killed) before the pipes close.
    guard: GroupGuard,
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    reader: LineReader,
    drain: AbortOnDrop,
    /// The stderr total when this process started: what it wrote is what came after.
    stderr_from: u64,
    /// The stream is not in step with our requests (a failed or cancelled exchange, or an answer
    /// that came before the whole request was written): restart before the next exchange.
    out_of_step: bool,
}

impl Proc {
    /// Lets the stderr drain catch up (it ends at EOF, unless something forked holds stderr),
    /// then quotes what this process wrote.
    async fn stderr_tail(&self, ring: &Mutex<StderrRing>) -> String {
        let settle = tokio::time::Instant::now() + STDERR_SETTLE;
        while !self.drain.0.is_finished() && tokio::time::Instant::now() < settle {
            tokio::time::sleep(POLL).await;
        }
        lock(ring).quote_since(self.stderr_from)
    }
}

/// Persistent: writes the request while reading one line. Returns the line and whether the whole
/// request had been written when it came.
async fn persistent_turn(
    proc: &mut Proc,
    message: &[u8],
    ring: &Mutex<StderrRing>,
) -> Result<(Bytes, bool), LineError> {
    let (read, complete_write, write_failed) = {
        let Proc {
            stdin,
            stdout,
            reader,
            child,
            ..
        } = &mut *proc;
        let write = async {
            match stdin.as_mut() {
                Some(pipe) => {
                    pipe.write_all(message).await?;
                    pipe.flush().await
                }
                None => Err(std::io::ErrorKind::BrokenPipe.into()),
            }
        };
        tokio::pin!(write);
        // When the agent exits without a line, something it forked may still hold stdout open:
        // stop STRAY_GRACE after the exit rather than wait for an EOF that never comes.
        let stray = tokio::time::sleep(Duration::from_secs(86_400));
        tokio::pin!(stray);
        let mut exited = None;
        let mut writing = true;
        let mut write_failed = false;
        let read = loop {
            tokio::select! {
                written = &mut write, if writing => {
                    writing = false;
                    // A failed write (the agent closed stdin or died) is not the verdict yet:
                    // what stdout does next says what happened.
                    write_failed = written.is_err();
                }
                read = reader.read_line(stdout) => break Ok(read),
                status = child.wait(), if exited.is_none() => {
                    exited = Some(status);
                    stray.as_mut().reset(tokio::time::Instant::now() + STRAY_GRACE);
                }
                _ = &mut stray, if exited.is_some() => break Err(exited.take()),
            }
        };
        (read, !writing && !write_failed, write_failed)
    };
    if write_failed {
        proc.stdin = None;
    }
    let read = match read {
        Ok(read) => read,
        Err(status) => {
            let stderr_tail = proc.stderr_tail(ring).await;
            let status = match status {
                Some(Ok(status)) => describe_status(status),
                _ => "unknown status".to_string(),
            };
            return Err(LineError::Exited {
                status: format!(
                    "{status}, before answering; something it started still holds stdout"
                ),
                stderr_tail,
            });
        }
    };
    match read {
        Ok(Some(line)) => Ok((line, complete_write)),
        Ok(None) => {
            // Stdout closed. If the agent exits soon, say how; else it closed stdout and lives on.
            let status = tokio::time::timeout(STRAY_GRACE, proc.child.wait()).await;
            let stderr_tail = proc.stderr_tail(ring).await;
            match status {
                Ok(Ok(status)) => Err(LineError::Exited {
                    status: format!("{}, before answering", describe_status(status)),
                    stderr_tail,
                }),
                _ => Err(LineError::Closed { stderr_tail }),
            }
        }
        Err(ReadFail::TooLong(e)) => Err(e),
        Err(ReadFail::Io(e)) => Err(LineError::Io(format!("reading the agent's stdout: {e}"))),
    }
}

/// Per-turn: writes the request and closes stdin, while reading all of stdout and waiting for the
/// exit. Returns all of stdout.
async fn per_turn(
    proc: &mut Proc,
    request: &[u8],
    ring: &Mutex<StderrRing>,
) -> Result<Bytes, LineError> {
    let Proc {
        stdin,
        stdout,
        reader,
        child,
        ..
    } = &mut *proc;
    let pipe = stdin.take();
    let write = async move {
        if let Some(mut pipe) = pipe {
            // An agent may exit without reading its input (EPIPE); its exit status and stdout
            // say whether that was fine.
            let _ = pipe.write_all(request).await;
            let _ = pipe.shutdown().await;
        }
    };
    tokio::pin!(write);
    let stray = tokio::time::sleep(Duration::from_secs(86_400));
    tokio::pin!(stray);
    let mut writing = true;
    let mut eof = false;
    let mut status: Option<ExitStatus> = None;
    while !(eof && status.is_some()) {
        tokio::select! {
            () = &mut write, if writing => writing = false,
            read = reader.read_some(stdout), if !eof => match read {
                Ok(0) => eof = true,
                Ok(_) => {}
                Err(ReadFail::TooLong(e)) => return Err(e),
                Err(ReadFail::Io(e)) => {
                    return Err(LineError::Io(format!("reading the agent's stdout: {e}")))
                }
            },
            exited = child.wait(), if status.is_none() => {
                let exited = exited
                    .map_err(|e| LineError::Io(format!("waiting for the agent to exit: {e}")))?;
                status = Some(exited);
                stray.as_mut().reset(tokio::time::Instant::now() + STRAY_GRACE);
            }
            // The agent exited but something it forked holds stdout open: stop waiting for EOF.
            () = &mut stray, if status.is_some() && !eof => break,
        }
    }
    let Some(status) = status else {
        return Err(LineError::Io("the agent's exit status is unknown".into()));
    };
    if !status.success() {
        let got = proc.reader.pending();
        return Err(LineError::Exited {
            status: format!("{}, with {got} bytes on stdout", describe_status(status)),
            stderr_tail: proc.stderr_tail(ring).await,
        });
    }
    if proc.reader.pending() == 0 {
        return Err(LineError::Closed {
            stderr_tail: proc.stderr_tail(ring).await,
        });
    }
    Ok(proc.reader.take_all())
}

/// Ends a process group: SIGTERM if the leader or anything in its group is still alive, SIGKILL
/// after `grace` if anything still is; reaps the leader; lets the stderr drain finish.
async fn terminate(proc: &mut Proc, grace: Duration) -> Cleanup {
    let cleanup = end_group(&mut proc.guard, &mut proc.child, grace).await;
    let settle = tokio::time::Instant::now() + STDERR_SETTLE;
    while !proc.drain.0.is_finished() && tokio::time::Instant::now() < settle {
        tokio::time::sleep(POLL).await;
    }
    proc.drain.0.abort();
    cleanup
}

/// Ends the group `guard` names, whose leader is `child` (see [`terminate`]).
async fn end_group(guard: &mut GroupGuard, child: &mut Child, grace: Duration) -> Cleanup {
    let pgid = guard.pgid;
    let mut signalled = Vec::new();
    let mut status = child.try_wait().ok().flatten();
    if status.is_none() || group_alive(pgid) {
        if signal_group(pgid, libc::SIGTERM) {
            signalled.push("TERM");
        }
        let until = tokio::time::Instant::now() + grace;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            if (status.is_some() && !group_alive(pgid)) || tokio::time::Instant::now() >= until {
                break;
            }
            tokio::select! {
                exited = child.wait(), if status.is_none() => status = exited.ok(),
                () = tokio::time::sleep(POLL) => {}
            }
        }
        if status.is_none() || group_alive(pgid) {
            if signal_group(pgid, libc::SIGKILL) {
                signalled.push("KILL");
            }
            if status.is_none() {
                status = tokio::time::timeout(Duration::from_secs(2), child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok);
            }
            // SIGKILL is delivered at once, but a process in uninterruptible sleep dies when it
            // wakes: give the group a moment, so that callers see it gone.
            let until = tokio::time::Instant::now() + Duration::from_secs(1);
            while group_alive(pgid) && tokio::time::Instant::now() < until {
                tokio::time::sleep(POLL).await;
            }
        }
    }
    if status.is_some() && !group_alive(pgid) {
        // Nothing left to kill; never signal this pgid again (it may be reused).
        guard.armed = false;
    }
    Cleanup {
        signalled,
        exit: Some(status.map_or_else(|| "unknown (not reaped)".to_string(), describe_status)),
    }
}

/// Whether a started agent is killed when this process dies without ending it (SIGKILL, a
/// crash): only when the thread that starts it lives as long as the process (the kernel's
/// parent-death signal follows the thread, not the process).
#[derive(Clone, Copy, PartialEq, Eq)]
enum DiesWithUs {
    No,
    /// The caller starts it on the main thread, which lives as long as the process.
    FromMainThread,
}

/// Starts `argv` in a process group of its own (`config`: its directory and environment), its
/// stdin and stdout piped, its stderr as `stderr` says; dropping the guard kills the group.
/// Also the command as messages show it.
fn start_group(
    argv: &[String],
    config: &StdioConfig,
    stderr: Stdio,
    dies: DiesWithUs,
) -> Result<(Child, GroupGuard, u32, String), LineError> {
    let Some(program) = argv.first() else {
        return Err(LineError::Spawn("the command is empty".into()));
    };
    let mut command = Command::new(program_path(program));
    command
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = &config.cwd {
        command.current_dir(dir);
    }
    command.envs(config.env.iter().map(|(k, v)| (k, v)));
    #[cfg(target_os = "linux")]
    if dies == DiesWithUs::FromMainThread {
        let us = std::process::id();
        // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, _exit).
        unsafe {
            command.pre_exec(move || {
                // The leader is killed when we die; the rest of its group is not (nothing
                // signals a group for a dead process), so an agent that forks is left to its
                // own leader's death.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // We died between the fork and the prctl: no signal will come.
                if libc::getppid() as u32 != us {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    let shown = crate::text::excerpt(program.as_bytes(), 200);
    let child = command
        .spawn()
        .map_err(|e| LineError::Spawn(format!("cannot start `{shown}`: {e}")))?;
    let Some(pid) = child.id() else {
        return Err(LineError::Spawn(format!(
            "`{shown}` exited before we saw its pid"
        )));
    };
    // From here on, dropping the guard kills the group.
    let guard = GroupGuard {
        pgid: pid as i32,
        armed: true,
    };
    Ok((child, guard, pid, shown))
}

/// An agent whose standard I/O the caller relays (`agent-tck proxy --stdio`): started as
/// [`StdioAgent`] starts one (the command split, run directly, never through a shell; in a
/// process group of its own, killed with it when dropped), its stdin and stdout handed to the
/// caller, its stderr left as the caller's own (the agent's messages pass through unchanged).
pub struct Relayed {
    /// Declared first: dropped (the group killed) before the child is.
    guard: GroupGuard,
    pub child: Child,
    pub pid: u32,
}

impl Relayed {
    /// Starts `argv` (`config` gives the directory and the environment); its pipes. Called on
    /// the process's main thread: the agent is killed if the process dies without ending it
    /// (a harness's `kill -9`), and is no orphan.
    pub fn spawn(
        argv: &[String],
        config: &StdioConfig,
    ) -> Result<(Relayed, ChildStdin, ChildStdout), LineError> {
        let (mut child, guard, pid, shown) = start_group(
            argv,
            config,
            Stdio::inherit(),
            if std::thread::current().name() == Some("main") {
                DiesWithUs::FromMainThread
            } else {
                DiesWithUs::No
            },
        )?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LineError::Spawn(format!(
                "cannot start `{shown}`: its standard I/O was not piped"
            )));
        };
        Ok((Relayed { guard, child, pid }, stdin, stdout))
    }

    /// Ends the whole group (SIGTERM, SIGKILL after `grace`) and reaps the leader.
    pub async fn end(&mut self, grace: Duration) -> Cleanup {
        end_group(&mut self.guard, &mut self.child, grace).await
    }

    /// Whether anything of the agent's group still runs (its leader reaped or not).
    pub fn group_alive(&self) -> bool {
        group_alive(self.guard.pgid)
    }
}

/// How an exit status reads in a message: `status 3`, `signal 9 (KILL)`.
pub fn status_text(status: ExitStatus) -> String {
    describe_status(status)
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests;
