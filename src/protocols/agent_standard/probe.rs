//! `agent-tck probe agent-standard (--exec CMD | --output FILE…)`: an agent's responses judged
//! by the standard's result rules ([`super::result`]), a group of cases per response — per mode
//! run (`plan.…`, `execute.…`: [`super::exec`]), or per saved file (its name).

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::definition::DefinitionError;
use super::exec::{Exec, ExecError, Run};
use super::result::{self, Context, RULES};
use crate::probe::args::Common;
use crate::probe::plugin::{Judged, Verdict};
use crate::report::{CaseResult, Evidence, Level, Report};
use crate::text::Redactor;

/// Where the responses come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Saved responses (`--output`).
    Outputs(Vec<PathBuf>),
    /// The agent run once per mode (`--exec`).
    Exec(Exec),
}

/// What `probe agent-standard` runs on.
#[derive(Debug, Clone)]
pub struct Settings {
    pub source: Source,
    /// The modes: with --exec, the runs (plan before execute); with --output, the mode the
    /// responses were asked for (empty: each result's own).
    pub modes: Vec<String>,
    /// The definitions' names (`--agents DIR`).
    pub agents: Option<BTreeSet<String>>,
    /// The agent that was run (`--agent NAME`).
    pub agent: Option<String>,
    pub max_body: usize,
    pub common: Common,
}

impl Settings {
    pub fn wants(&self, id: &str) -> bool {
        self.common.wants(id)
    }
}

/// A response's label: its file's name without the extension.
fn label(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "response".into())
}

/// The cases of a run with --exec besides the result's: (id, level, title); `no-writes` is
/// judged of plan-mode runs only.
pub const RUN_RULES: &[(&str, Level, &str)] = &[
    (
        "ran",
        Level::Must,
        "the agent command ran to its end: exit status 0, within --timeout and --max-body",
    ),
    (
        "no-writes",
        Level::Must,
        "a plan-mode run changes no file (with --workdir: the tree is read before and after)",
    ),
];

/// The case ids of a run over `source` in `modes`.
pub fn case_ids(source: &Source, modes: &[String]) -> Vec<String> {
    match source {
        Source::Outputs(outputs) => outputs.iter().flat_map(|p| result_ids(label(p))).collect(),
        Source::Exec(_) => exec_ids(&modes.iter().map(String::as_str).collect::<Vec<_>>()),
    }
}

fn result_ids(label: String) -> impl Iterator<Item = String> {
    RULES.iter().map(move |(id, _, _)| format!("{label}.{id}"))
}

/// The case ids of --exec runs in `modes` (`plan`, `execute`).
pub fn exec_ids(modes: &[&str]) -> Vec<String> {
    modes
        .iter()
        .flat_map(|m| {
            let mut ids = vec![format!("{m}.ran")];
            ids.extend(result_ids(m.to_string()));
            if *m == "plan" {
                ids.push("plan.no-writes".into());
            }
            ids
        })
        .collect()
}

/// Why `probe agent-standard` cannot run: a flag's file or directory (usage), or `--exec`'s
/// own errors (their class).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("--output {}: {cause}", path.display())]
    Output {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("--agents {}: no agent definition with a name there", dir.display())]
    NoAgents { dir: PathBuf },
    #[error(transparent)]
    Definitions(#[from] DefinitionError),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error(transparent)]
    Tape(#[from] crate::judge::tape::TapeError),
}

impl crate::error::LayerError for ProbeError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            ProbeError::Output { .. } | ProbeError::NoAgents { .. } => Class::Usage,
            ProbeError::Definitions(d) => d.class(),
            ProbeError::Exec(x) => x.class(),
            ProbeError::Tape(t) => t.class(),
        }
    }
}

/// The definitions' names under `dir` (each file's frontmatter `name`).
pub fn agent_names(dir: &std::path::Path) -> Result<BTreeSet<String>, ProbeError> {
    let defs = super::definition::read_all(&super::lint::files(&[dir.to_path_buf()])?)?;
    let names: BTreeSet<String> = defs
        .iter()
        .filter_map(|d| d.name())
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(ProbeError::NoAgents {
            dir: dir.to_path_buf(),
        });
    }
    Ok(names)
}

pub async fn run(
    settings: &Settings,
    on_case: &(dyn Fn(&CaseResult) + Send + Sync),
) -> Result<Report, ProbeError> {
    let target = match &settings.source {
        // Named whole up to a few; past that, the first and last (a report's every JUnit
        // testsuite carries the target).
        Source::Outputs(outputs) if outputs.len() > 3 => format!(
            "{} saved responses: {} … {}",
            outputs.len(),
            outputs[0].display(),
            outputs[outputs.len() - 1].display()
        ),
        Source::Outputs(outputs) => outputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        Source::Exec(exec) => exec.command.clone(),
    };
    let info = settings.common.run_info(super::NAME, target);
    let tape = crate::judge::tape::Tape::open(&settings.common.tape)?;
    let mut cases = Vec::new();
    let mut keep = |judged: Vec<CaseResult>| {
        for c in judged.into_iter().filter(|c| settings.wants(&c.id)) {
            on_case(&c);
            cases.push(c);
        }
    };
    match &settings.source {
        Source::Outputs(outputs) => {
            let cx = settings.context(settings.modes.first().cloned());
            for path in outputs {
                let bytes = std::fs::read(path).map_err(|cause| ProbeError::Output {
                    path: path.clone(),
                    cause,
                })?;
                let l = label(path);
                keep(if bytes.len() > settings.max_body {
                    let mut c = result::judge(&l, "", &cx);
                    c[0].fail(format!(
                        "the response is {} bytes, over --max-body ({})",
                        bytes.len(),
                        settings.max_body
                    ));
                    c
                } else {
                    result::judge(&l, &String::from_utf8_lossy(&bytes), &cx)
                });
            }
        }
        Source::Exec(exec) => {
            // The mode whose run showed the agent could not start: the later modes' runs would
            // end the same way, and are skipped naming it (one failure, not one per mode).
            let mut not_started: Option<String> = None;
            for mode in &settings.modes {
                let wanted = |id: &str| settings.wants(&format!("{mode}.{id}"));
                if !RULES.iter().chain(RUN_RULES).any(|(id, _, _)| wanted(id)) {
                    continue;
                }
                let cx = settings.context(Some(mode.clone()));
                if let Some(first) = &not_started {
                    keep(not_run(mode, first, &cx));
                    continue;
                }
                let run = exec.run(mode, tape.as_deref()).await?;
                if run.not_started {
                    not_started = Some(mode.clone());
                }
                keep(judge_run(mode, &run, &cx));
            }
        }
    }
    if let Some(tape) = &tape {
        tape.finish()?;
    }
    Ok(info.report(cases, &Redactor::new(Vec::new())))
}

impl Settings {
    fn context(&self, mode: Option<String>) -> Context {
        Context {
            mode,
            agents: self.agents.clone(),
            agent: self.agent.clone(),
        }
    }
}

/// The cases of a run in `mode` not made because the agent could not start in mode `first`:
/// each skipped, saying so.
fn not_run(mode: &str, first: &str, cx: &Context) -> Vec<CaseResult> {
    let why = format!(
        "skipped: the agent could not start (see {first}.ran): its {mode}-mode run would end the \
         same way (an agent that starts exercises this)"
    );
    let run = Run {
        output: Err(why.clone()),
        not_started: true,
        elapsed: std::time::Duration::ZERO,
        changes: None,
        left_behind: false,
        stderr_bytes: 0,
        input: String::new(),
        reproduce: String::new(),
    };
    let mut cases = judge_run(mode, &run, cx);
    for case in &mut cases {
        case.skip(why.clone());
        case.exchange = Default::default();
    }
    cases
}

/// The cases of one run in `mode`: `ran`, the result's, and (plan) `no-writes`.
pub fn judge_run(mode: &str, run: &Run, cx: &Context) -> Vec<CaseResult> {
    let case = |(id, level, title): &(&str, Level, &str)| {
        CaseResult::new(
            &format!("{mode}.{id}"),
            mode,
            *level,
            title,
            super::lint::SPEC,
        )
    };
    let mut ran = case(&RUN_RULES[0]);
    let mut cases = match &run.output {
        Ok(text) => {
            ran.pass_noting(
                Evidence::new(1, format!("{mode}-mode run")),
                format!(
                    "exit 0 in {}, {} bytes on stdout, {} on stderr{}",
                    crate::units::format_duration(run.elapsed),
                    text.len(),
                    run.stderr_bytes,
                    if run.left_behind {
                        "; processes it left in its group were ended"
                    } else {
                        ""
                    }
                ),
                String::new,
            );
            let mut judged = result::judge(mode, text, cx);
            if let Some(c) = judged.first_mut() {
                c.exchange.response = Some(crate::text::excerpt_str(text, 2_000));
            }
            judged
        }
        Err(why) => {
            ran.fail(why.clone());
            let mut skipped = result::judge(mode, "", cx);
            for c in &mut skipped {
                c.skip(format!(
                    "no response to judge: {mode}.ran failed (the run must exit 0 within \
                     --timeout and --max-body)"
                ));
            }
            skipped
        }
    };
    ran.set_duration(run.elapsed);
    ran.exchange.request = Some(run.input.clone());
    ran.exchange.reproduce = Some(run.reproduce.clone());
    cases.insert(0, ran);
    if mode == "plan" {
        let mut writes = case(&RUN_RULES[1]);
        let verdict = match &run.changes {
            None => Verdict::Held(Judged::nothing(
                "no --workdir: give one (a project directory; the run works in a scratch copy) \
                 to check that a plan run writes nothing",
            )),
            Some(changes) if changes.is_empty() => Verdict::Held(Judged::held(
                1,
                "plan run's --workdir copy, read before and after",
                "the working directory is as it was",
            )),
            Some(changes) => Verdict::Broken(format!(
                "the plan run changed the working directory: {}",
                changes.join(", ")
            )),
        };
        result::settle(&mut writes, verdict);
        cases.push(writes);
    }
    cases
}
