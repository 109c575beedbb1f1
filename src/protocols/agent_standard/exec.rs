//! `probe agent-standard --exec CMD`: the agent command run once per mode, as an orchestrator
//! would, and what it printed judged.
//!
//! How the mode and the task reach the agent (both, every time):
//! - placeholders in the command, filled in word by word after it is split (so a task with
//!   spaces or quotes stays one argument, and nothing goes through a shell): `{mode}` (`plan` or
//!   `execute`), `{task}`, `{agent}` (`--agent`);
//! - one JSON object on stdin, then end of input:
//!   `{"execution_mode": "plan", "task": "…", "agent": "…", "approved": false}` — `approved` is
//!   true in execute mode (the probe approves every plan).
//!
//! The run follows the stdio transport's per-turn rules: its own process group, ended (TERM,
//! then KILL) when the run is over, whatever it left behind; one deadline (`--timeout`) over
//! start, input, output and exit; stdout capped at `--max-body` bytes, stderr drained into a
//! bounded ring. With `--workdir` each run works in a scratch copy of the directory, read before
//! and after (see [`super::workdir`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::judge::tape::{through, Tape, Taped};
use crate::judge::{Answer, Exchange, Message, Party};
use crate::transport::taped::line_call;

use super::workdir::{Scratch, Tree, WorkdirError};
use crate::transport::stdio::{LineError, StdioAgent, StdioConfig, StdioMode};

/// Why `--exec` cannot run: a usage error (the command or a flag with it), or a scratch copy
/// that could not be made or read (its own class).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("--exec {command:?}: {cause}")]
    Split { command: String, cause: String },
    #[error("--exec {command:?}: the command has {{agent}}; say which agent with --agent NAME")]
    NoAgent { command: String },
    #[error("--workdir {}: not a directory", dir.display())]
    NotADirectory { dir: PathBuf },
    #[error(transparent)]
    Workdir(#[from] WorkdirError),
    /// A replayed run that had failed so when recorded (`--replay`).
    #[error("{0}")]
    Replayed(String),
}

impl crate::error::LayerError for ExecError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            ExecError::Split { .. }
            | ExecError::NoAgent { .. }
            | ExecError::NotADirectory { .. } => Class::Usage,
            ExecError::Workdir(w) => w.class(),
            ExecError::Replayed(_) => Class::Run,
        }
    }
}

/// How to run the agent.
#[derive(Debug, Clone)]
pub struct Exec {
    /// The command as given (quoted in messages and the repro line).
    pub command: String,
    /// Its words, placeholders unfilled; relative paths made absolute when the run moves to a
    /// scratch directory.
    pub argv: Vec<String>,
    pub task: String,
    pub agent: Option<String>,
    pub workdir: Option<PathBuf>,
    pub deadline: Duration,
    pub max_output: usize,
}

/// Set (to 1) in the environment of every run of the probe: the kit's own mock agents then
/// leave their journal alone, so that `probe orchestration` reads the orchestrator's runs only.
pub const PROBE_RUN_ENV: &str = "AGENT_TCK_PROBE_RUN";

/// The placeholders a command may hold.
pub const PLACEHOLDERS: [&str; 3] = ["{mode}", "{task}", "{agent}"];

impl Exec {
    /// Splits and checks `command`: `{agent}` needs `agent`.
    pub fn new(
        command: &str,
        task: String,
        agent: Option<String>,
        workdir: Option<PathBuf>,
        deadline: Duration,
        max_output: usize,
    ) -> Result<Exec, ExecError> {
        let mut argv =
            crate::transport::stdio::split_command(command).map_err(|e| ExecError::Split {
                command: command.to_string(),
                cause: e.to_string(),
            })?;
        if agent.is_none() && argv.iter().any(|w| w.contains("{agent}")) {
            return Err(ExecError::NoAgent {
                command: command.to_string(),
            });
        }
        if let Some(dir) = &workdir {
            if !dir.is_dir() {
                return Err(ExecError::NotADirectory { dir: dir.clone() });
            }
            argv = absolute_paths(argv);
        }
        Ok(Exec {
            command: command.to_string(),
            argv,
            task,
            agent,
            workdir,
            deadline,
            max_output,
        })
    }

    /// The JSON object the agent gets on stdin in `mode`.
    pub fn input(&self, mode: &str) -> serde_json::Value {
        json!({
            "execution_mode": mode,
            "task": self.task,
            "agent": self.agent,
            "approved": mode == "execute",
        })
    }

    /// The command's words with the placeholders filled in for `mode`.
    pub fn argv_for(&self, mode: &str) -> Vec<String> {
        let agent = self.agent.as_deref().unwrap_or("");
        self.argv
            .iter()
            .map(|w| {
                w.replace("{mode}", mode)
                    .replace("{task}", &self.task)
                    .replace("{agent}", agent)
            })
            .collect()
    }

    /// Runs the agent in `mode`: in a scratch copy of --workdir (read before and after), or in
    /// our own directory without one. Errs only when the scratch copy cannot be made or read.
    pub async fn run(&self, mode: &str, tape: Option<&Tape>) -> Result<Run, ExecError> {
        let call = line_call(
            Party::Agent(super::NAME.to_string()),
            "stdin",
            self.input(mode).to_string().as_bytes(),
        );
        through(tape, call, self.run_live(mode)).await
    }

    async fn run_live(&self, mode: &str) -> Result<Run, ExecError> {
        let scratch = self.workdir.as_deref().map(Scratch::copy_of).transpose()?;
        let before = scratch.as_ref().map(|s| Tree::read(s.path())).transpose()?;
        let mut config = StdioConfig::new(self.command.clone(), StdioMode::PerTurn);
        config.max_line = self.max_output;
        config.cwd = scratch.as_ref().map(|s| s.path().to_path_buf());
        config.env = vec![(PROBE_RUN_ENV.to_string(), "1".to_string())];
        let argv = self.argv_for(mode);
        let mut agent = StdioAgent::with_argv(config, argv.clone());
        let input = self.input(mode).to_string();
        let started = std::time::Instant::now();
        let answer = agent.exchange(input.as_bytes(), self.deadline).await;
        let elapsed = started.elapsed();
        let changes = match (&scratch, &before) {
            (Some(s), Some(before)) => Some(before.changes(&Tree::read(s.path())?)),
            _ => None,
        };
        let reproduce = format!(
            "{}printf '%s' {} | {PROBE_RUN_ENV}=1 {}",
            match &self.workdir {
                Some(dir) => format!(
                    "cp -r {} /tmp/scratch && cd /tmp/scratch && ",
                    crate::text::shell_quote(&format!("{}/.", dir.display()))
                ),
                None => String::new(),
            },
            crate::text::shell_quote(&input),
            argv.iter()
                .map(|w| crate::text::shell_quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let left_behind = agent
            .last_cleanup()
            .is_some_and(|c| !c.signalled.is_empty());
        let stderr = agent.stderr();
        // Exited non-zero before a byte on stdout: it could not start (a mistyped script path,
        // a missing module), as its stderr says; no other mode's run would get further.
        let not_started = matches!(&answer, Err(LineError::Exited { status, .. })
            if status.ends_with(", with 0 bytes on stdout"));
        Ok(Run {
            not_started,
            output: match answer {
                Err(e) if not_started => Err(format!("the agent could not start: {e}")),
                Ok(a) => Ok(String::from_utf8_lossy(&a.text).into_owned()),
                // Exit 0 with nothing on stdout: a response with no result in it.
                Err(LineError::Closed { .. }) => Ok(String::new()),
                Err(e) => Err(e.to_string()),
            },
            elapsed,
            changes,
            left_behind,
            stderr_bytes: stderr.total_bytes,
            input,
            reproduce,
        })
    }
}

/// One run of the agent, as it goes on tape: what it printed (or why not) as the answer, the
/// rest of the run in the context.
impl Taped for Result<Run, ExecError> {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        match self {
            Ok(run) => {
                let answer = match &run.output {
                    Ok(out) => Answer::Delivered {
                        status: None,
                        message: Message::masked([], out.as_bytes()),
                    },
                    Err(why) => Answer::Failed { what: why.clone() },
                };
                let recorded = serde_json::to_value(run).unwrap_or(Value::Null);
                (answer, json!({ "run": recorded }), Some(run.elapsed))
            }
            Err(e) => (
                Answer::Failed {
                    what: e.to_string(),
                },
                json!({ "exec_error": e.to_string() }),
                None,
            ),
        }
    }

    fn from_tape(exchange: &Exchange, elapsed: Duration) -> Option<Self> {
        if let Some(e) = exchange.context.get("exec_error").and_then(Value::as_str) {
            return Some(Err(ExecError::Replayed(e.to_string())));
        }
        let mut run: Run = serde_json::from_value(exchange.context.get("run")?.clone()).ok()?;
        run.elapsed = elapsed;
        Some(Ok(run))
    }

    fn unmatched(why: String) -> Self {
        Err(ExecError::Replayed(why))
    }
}

/// One run of the agent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Run {
    /// What it printed, or why the run did not complete (deadline, cap, exit status, start).
    pub output: Result<String, String>,
    /// It exited with a failure status before a byte on stdout: it could not start.
    pub not_started: bool,
    pub elapsed: Duration,
    /// With --workdir: what it changed there (`added PATH`, `deleted PATH`, `changed PATH (…)`).
    pub changes: Option<Vec<String>>,
    /// Processes were still in its group when it ended, and had to be signalled.
    pub left_behind: bool,
    pub stderr_bytes: u64,
    /// What it got on stdin.
    pub input: String,
    /// A shell line that runs it the same way.
    pub reproduce: String,
}

/// Words that name an existing path relative to our directory, made absolute: the run moves to
/// a scratch directory, and `python3 agent.py` must still find agent.py. A word that names
/// nothing here (a flag, a task, a placeholder) is left as it is.
fn absolute_paths(argv: Vec<String>) -> Vec<String> {
    argv.into_iter()
        .enumerate()
        .map(|(i, w)| {
            let path = Path::new(&w);
            let names_here = path.is_relative()
                && !w.starts_with('-')
                && (i > 0 || w.contains('/'))
                && path.exists();
            match std::path::absolute(path) {
                Ok(abs) if names_here => abs.display().to_string(),
                _ => w,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(command: &str, agent: Option<&str>) -> Result<Exec, ExecError> {
        Exec::new(
            command,
            "Review it, then say \"done\"".into(),
            agent.map(str::to_string),
            None,
            Duration::from_secs(5),
            1000,
        )
    }

    #[test]
    fn placeholders_fill_whole_words_and_agent_needs_a_name() {
        let e = exec("run --mode {mode} --task {task} --as={agent}", Some("a-b")).unwrap();
        assert_eq!(
            e.argv_for("plan"),
            [
                "run",
                "--mode",
                "plan",
                "--task",
                "Review it, then say \"done\"",
                "--as=a-b"
            ]
        );
        assert_eq!(e.input("execute")["approved"], true);
        assert_eq!(e.input("plan")["execution_mode"], "plan");
        let err = exec("run {agent}", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--exec \"run {agent}\": the command has {agent}; say which agent with --agent NAME"
        );
        assert_eq!(
            crate::error::Error::from(err).class(),
            crate::error::Class::Usage
        );
        let err = exec("run | tee", None).unwrap_err();
        assert!(matches!(err, ExecError::Split { .. }), "{err}");
        assert!(err.to_string().contains("shell operator"), "{err}");
    }

    #[test]
    fn paths_here_become_absolute_for_a_scratch_run() {
        let here = std::env::current_dir().unwrap();
        let out = absolute_paths(vec![
            "python3".into(),
            "Cargo.toml".into(),
            "--flag".into(),
            "no-such-file".into(),
        ]);
        assert_eq!(out[0], "python3");
        assert_eq!(out[1], here.join("Cargo.toml").display().to_string());
        assert_eq!(out[2..], ["--flag", "no-such-file"]);
    }
}
