//! The agent protocol standard on the command line (`lint agents`, `suites list`) and in the
//! self-test (the built-in example definitions lint clean).

use std::path::{Path, PathBuf};

use clap::{Args, FromArgMatches, ValueEnum};
use futures::future::BoxFuture;

use super::exec::Exec;
use super::lint::{self, Extra, RULES};
use super::orchestration;
use super::probe::{agent_names, Settings, Source};
use super::workdir::Scratch;
use super::{EXAMPLES, NAME};
use crate::error::{Class, Error};
use crate::probe::args::Common;
use crate::probe::args::RunArgs;
use crate::protocols::plugin::{
    driver_probe, AgentSet, BehaviorError, Capabilities, CommandAgent, CommandAgents, MatrixRow,
    OnCase, ProbeJob, Protocol, ProtocolCommand, Selftest, SelftestRun, SettingsError,
};
use crate::report::lint::Lint;
use crate::report::output::OutputArgs;
use crate::report::{Report, RunInfo};

/// The agent protocol standard in the registry.
pub struct AgentStandard;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `path:line:col: error[rule]: message` lines and the counts.
    Console,
    /// The kit's JSON report: a case per rule.
    Json,
    /// JUnit XML: a testcase per rule.
    Junit,
    /// SARIF 2.1.0 (GitHub code scanning).
    Sarif,
}

/// `lint agents`'s flags.
#[derive(Debug, Clone, Args)]
pub struct LintAgentsArgs {
    /// Definition files, or directories (walked for `*.md` files that begin with a frontmatter).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// What to print.
    #[arg(long, value_enum, default_value = "console")]
    pub format: Format,
    /// Also write SARIF 2.1.0 to this file.
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// SHOULD findings (warnings) fail the run too.
    #[arg(long)]
    pub strict: bool,
    /// Whose rules: the standard's letter, or what Claude Code loads (tools and model optional,
    /// a comma-separated tools string, its other frontmatter keys).
    #[arg(long, value_enum, default_value = "standard")]
    pub dialect: lint::Dialect,
    /// A word a description may begin with although the kit takes it for a role or an article
    /// (`Master`, when meant as a verb) (repeatable).
    #[arg(long = "verb", value_name = "WORD")]
    pub verbs: Vec<String>,
    /// A tool name to accept, beside the known ones (repeatable).
    #[arg(long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Rewrite what has one safe answer (a comma-separated tools string into a YAML list, a name
    /// into kebab-case, a supports_plan_mode string into a boolean), then lint what is left.
    #[arg(long)]
    pub fix: bool,
    /// With --fix: also rename each file to its name (`NAME.md`), unless that file exists.
    #[arg(long, requires = "fix")]
    pub fix_names: bool,
    /// With --fix: print the changes as a unified diff and write nothing.
    #[arg(long, requires = "fix")]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Plan,
    Execute,
    /// Plan, then execute (--exec only).
    Both,
}

/// What --task is by default: a task any reviewing agent can take on.
pub const DEFAULT_TASK: &str =
    "Review the project in the working directory and report what you find.";

/// `probe agent-standard`'s flags.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("responses").required(true).args(["exec", "outputs"])))]
#[command(mut_arg("timeout", |a| a.help(
    "With --exec: deadline of each run of the agent command (plan or execute), over its start, \
     input, output and exit (e.g. 120s, 2m, 500ms, 30)"
)))]
pub struct AgentStandardProbeArgs {
    /// Run the agent: a command run once per mode, directly (no shell). `{mode}`, `{task}` and
    /// `{agent}` in it are filled in; stdin also gets
    /// {"execution_mode", "task", "agent", "approved"} as JSON.
    #[arg(long, value_name = "CMD", conflicts_with = "outputs")]
    pub exec: Option<String>,
    /// Saved responses (an agent run's whole output each), judged by the standard's result rules.
    #[arg(long = "output", value_name = "FILE", num_args = 1..)]
    pub outputs: Vec<PathBuf>,
    /// With --exec: the modes run (default both: plan, then execute). With --output: the mode
    /// the responses were run in (default: each result's own execution_mode).
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// With --exec: the task given to the agent.
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_TASK, requires = "exec")]
    pub task: String,
    /// With --exec: each run works in a scratch copy of DIR, read before and after (a plan run
    /// must change nothing). Words of the command naming a path here are made absolute.
    #[arg(long, value_name = "DIR", requires = "exec")]
    pub workdir: Option<PathBuf>,
    /// The agent definitions: `agent` and `next_agents` must name them.
    #[arg(long, value_name = "DIR")]
    pub agents: Option<PathBuf>,
    /// The agent that was run: the result's `agent` must be it (and `{agent}` in --exec).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl AgentStandardProbeArgs {
    /// The modes of the run (see --mode).
    fn modes(&self) -> Result<Vec<String>, SettingsError> {
        Ok(match (self.mode, self.exec.is_some()) {
            (Some(Mode::Plan), _) => vec!["plan".into()],
            (Some(Mode::Execute), _) => vec!["execute".into()],
            (Some(Mode::Both) | None, true) => vec!["plan".into(), "execute".into()],
            (None, false) => Vec::new(),
            (Some(Mode::Both), false) => {
                return Err(
                    "--mode both runs the agent twice (--exec); with --output say plan \
                            or execute, or leave --mode out"
                        .into(),
                )
            }
        })
    }

    fn source(&self) -> Result<Source, SettingsError> {
        Ok(match &self.exec {
            Some(command) => Source::Exec(
                Exec::new(
                    command,
                    self.task.clone(),
                    self.agent.clone(),
                    self.workdir.clone(),
                    self.run.timeout,
                    self.run.max_body,
                )
                .map_err(SettingsError::named)?,
            ),
            None => Source::Outputs(self.outputs.clone()),
        })
    }
}

pub fn settings(args: &AgentStandardProbeArgs) -> Result<Settings, SettingsError> {
    Ok(Settings {
        source: args.source()?,
        modes: args.modes()?,
        agents: args
            .agents
            .as_deref()
            .map(agent_names)
            .transpose()
            .map_err(SettingsError::named)?,
        agent: args.agent.clone(),
        max_body: args.run.max_body,
        common: Common::of(&args.run),
    })
}

/// `probe orchestration`'s flags.
#[derive(Debug, Clone, Args)]
pub struct OrchestrationArgs {
    /// The journal(s) the mock agents wrote (`mock agent --protocol agent-standard --journal`;
    /// the commands of `mock agents` write OUT/journal.jsonl).
    #[arg(long = "journal", value_name = "FILE", required = true, num_args = 1..)]
    pub journals: Vec<PathBuf>,
    /// The agent definitions: which agents support plan mode (default: every agent of the
    /// journal does, as the mock agents do).
    #[arg(long, value_name = "DIR")]
    pub agents: Option<PathBuf>,
    /// Most execute runs of one agent before a cycle of next_agents counts as not cut.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_runs: usize,
    /// Only cases whose id matches (globs, comma-separated).
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub only: Vec<String>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn orchestration_settings(
    args: &OrchestrationArgs,
) -> Result<orchestration::Settings, SettingsError> {
    let plan_mode = args
        .agents
        .as_deref()
        .map(|dir| -> Result<_, super::definition::DefinitionError> {
            let defs = super::definition::read_all(&lint::files(&[dir.to_path_buf()])?)?;
            Ok(defs
                .iter()
                .filter_map(|d| {
                    let plans = d.front.as_ref().ok()?.value["supports_plan_mode"] == true;
                    Some((d.name()?.to_string(), plans))
                })
                .collect())
        })
        .transpose()
        .map_err(SettingsError::named)?;
    Ok(orchestration::Settings {
        journals: args.journals.clone(),
        plan_mode,
        max_runs: args.max_runs,
        common: Common {
            seed: 0,
            only: crate::probe::args::only_patterns(&args.only),
            strict: args.strict,
            ..Common::default()
        },
    })
}

/// Writes `lint` as `format` to stdout (and SARIF to `sarif`); the exit status.
pub fn write(
    lint: &Lint,
    format: Format,
    sarif: Option<&Path>,
    target: &str,
) -> Result<crate::report::Exit, Error> {
    let sarif_text = || serde_json::to_string_pretty(&lint.sarif()).unwrap_or_default();
    if let Some(path) = sarif {
        std::fs::write(path, sarif_text() + "\n")
            .map_err(|e| Error::io(Class::Run, format!("--sarif {}:", path.display()), e))?;
    }
    let report = || {
        let mut report = lint.report(
            target,
            RunInfo::start("lint", NAME, target, None, lint.strict).made_by("lint agents"),
        );
        crate::protocols::stamp(&mut report);
        report
    };
    match format {
        Format::Console => crate::out!("{}", lint.console()),
        Format::Sarif => crate::outln!("{}", sarif_text()),
        Format::Json => crate::outln!(
            "{}",
            serde_json::to_string_pretty(&report()).unwrap_or_default()
        ),
        Format::Junit => crate::out!("{}", crate::report::junit::to_string(&report())),
    }
    Ok(lint.exit_code())
}

/// The names of the built-in example definitions.
fn example_names() -> std::collections::BTreeSet<String> {
    EXAMPLES
        .iter()
        .filter_map(|(path, text)| {
            super::definition::read(path, text)
                .name()
                .map(str::to_string)
        })
        .collect()
}

impl Protocol for AgentStandard {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "The agent protocol standard: Markdown agent definitions with a YAML frontmatter, and their JSON results."
    }

    fn spec(&self) -> crate::specs::SpecDoc {
        crate::specs::SpecDoc {
            file: "agent-protocol-standard.md",
            title: "Agent Protocol Standard",
            // The document gives no version or date.
            version: None,
        }
    }

    fn schema_dir(&self) -> Option<&'static str> {
        Some("agent_standard")
    }

    fn list_cases(&self, file: Option<&Path>) -> Result<String, Error> {
        crate::protocols::plugin::builtin_cases_only(
            file,
            "the agent standard's",
            "its lint rules",
        )?;
        let mut out = format!(
            "Agent protocol standard: lint rules ({} rules; spec {})\n",
            RULES.len(),
            lint::SPEC
        );
        for r in RULES {
            out.push_str(&format!(
                "  {:<26} {:<6}  {}\n",
                r.id,
                r.level.as_str(),
                r.title
            ));
        }
        out.push_str("With --dialect claude-code, beside these (required-field and field-type as Claude Code reads them; tools-non-empty a SHOULD):\n");
        for r in lint::Dialect::ClaudeCode
            .rules()
            .iter()
            .filter(|r| RULES.iter().all(|s| s.id != r.id))
        {
            out.push_str(&format!(
                "  {:<26} {:<6}  {}\n",
                r.id,
                r.level.as_str(),
                r.title
            ));
        }
        out.push_str(&format!(
            "\nResult cases of `probe agent-standard` (each as RESPONSE.ID: the mode run with --exec, \
             the file's name with --output; {} per response)\n",
            super::result::RULES.len()
        ));
        for (id, level, title) in super::result::RULES {
            out.push_str(&format!("  {id:<26} {:<6}  {title}\n", level.as_str()));
        }
        out.push_str("\nRun cases of `probe agent-standard --exec` (each as MODE.ID)\n");
        for (id, level, title) in super::probe::RUN_RULES {
            out.push_str(&format!("  {id:<26} {:<6}  {title}\n", level.as_str()));
        }
        Ok(out)
    }

    /// The lint rules, and the cases of an --exec run in both modes (what the matrix names).
    fn case_ids(&self) -> Result<Vec<String>, Error> {
        let mut ids: Vec<String> = RULES.iter().map(|r| r.id.to_string()).collect();
        ids.extend(super::probe::exec_ids(&["plan", "execute"]));
        Ok(ids)
    }

    fn catalogue(&self) -> Result<Vec<crate::protocols::plugin::CaseInfo>, Error> {
        super::catalogue::catalogue()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            probes: &[&ResultsProbe, &OrchestrationProbe],
            lint: Some(&LintAgents),
            command_agent: Some(&MockAgents),
            mock_agent_flags: Some(super::mock::MOCK_AGENT_FLAGS),
            behaviors: super::behaviors::BEHAVIORS,
            ..Capabilities::none(&StandardSelftest)
        }
    }
}

/// `probe agent-standard`: an agent's results.
struct ResultsProbe;

impl ProtocolCommand<ProbeJob> for ResultsProbe {
    fn command(&self) -> clap::Command {
        AgentStandardProbeArgs::augment_args(clap::Command::new(NAME)).about(
            "The agent protocol standard: run an agent in plan and execute mode (or read saved responses) and judge its JSON results by the standard's rules",
        )
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let flags = AgentStandardProbeArgs::from_arg_matches(matches)?;
        let ids = super::probe::case_ids(&flags.source()?, &flags.modes()?);
        let job = |s: Settings, on: OnCase| async move { Ok(super::probe::run(&s, &*on).await?) };
        driver_probe(
            matches,
            settings,
            |f: AgentStandardProbeArgs| f.output,
            &ids,
            Settings::wants,
            job,
        )
    }
}

/// `probe orchestration`: an orchestrator, from its mock agents' journal.
struct OrchestrationProbe;

impl ProtocolCommand<ProbeJob> for OrchestrationProbe {
    fn command(&self) -> clap::Command {
        OrchestrationArgs::augment_args(clap::Command::new("orchestration")).about(
            "The agent protocol standard: judge an orchestrator from its mock agents' journal (plan before execute, approvals, sequential hand-offs, cycles)",
        )
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let job = |s: orchestration::Settings, on: OnCase| async move {
            Ok(orchestration::run(&s, &*on).await?)
        };
        driver_probe(
            matches,
            orchestration_settings,
            |f: OrchestrationArgs| f.output,
            &orchestration::case_ids(),
            orchestration::Settings::wants,
            job,
        )
    }
}

/// `lint agents`.
struct LintAgents;

impl ProtocolCommand<crate::report::Exit> for LintAgents {
    fn command(&self) -> clap::Command {
        LintAgentsArgs::augment_args(clap::Command::new("agents"))
            .about("Lint agent definition files (the agent protocol standard's frontmatter rules)")
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<crate::report::Exit, Error> {
        let flags = LintAgentsArgs::from_arg_matches(matches)?;
        let files = lint::files(&flags.paths)?;
        if files.is_empty() {
            return Err(Error::usage(format!(
                "no agent definition under {} (a `*.md` file that begins with `---`)",
                flags
                    .paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let extra = Extra {
            dialect: flags.dialect,
            verbs: flags.verbs.clone(),
            tools: flags.tools.clone(),
        };
        let result = if flags.fix {
            // The fixes are said where the findings go, or on stderr when stdout is a document.
            let console = flags.format == Format::Console;
            let mut say = |line: String| {
                if console {
                    crate::outln!("{line}");
                } else {
                    crate::errln!("{line}");
                }
            };
            let options = super::fix::Options {
                names: flags.fix_names,
                dry_run: flags.dry_run,
            };
            let defs = super::fix::apply(&files, options, &mut say)?;
            lint::lint(&defs, &extra, flags.strict)
        } else {
            lint::lint_files(&files, &extra, flags.strict)?
        };
        let target = flags
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" ");
        write(&result, flags.format, flags.sarif.as_deref(), &target)
    }
}

/// The mock agent, a command run once per call, and its sets (`mock agents`).
struct MockAgents;

impl CommandAgents for MockAgents {
    fn run(&self, at: CommandAgent<'_>) -> Result<u8, Error> {
        super::mock::run(at)
    }

    fn write_set(&self, at: AgentSet<'_>) -> Result<String, Error> {
        super::agent_set::write(at)
    }

    fn usage(&self) -> &'static str {
        "--mode plan|execute"
    }
}

/// The agent standard's self-test and matrix.
struct StandardSelftest;

impl Selftest for StandardSelftest {
    /// The built-in example definitions lint clean, every rule with them.
    fn run<'a>(&'a self, _at: SelftestRun<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let defs: Vec<_> = EXAMPLES
                .iter()
                .map(|(path, text)| super::definition::read(path, text))
                .collect();
            let result = lint::lint(&defs, &Extra::default(), true);
            let info = RunInfo::start("lint", NAME, "the built-in example definitions", None, true);
            Ok(result.report("suites/agent-standard/agents", info))
        })
    }

    fn matrix(&self) -> (&'static str, &'static str) {
        (
            "mocks/matrix-agent-standard.yaml",
            include_str!("../../../mocks/matrix-agent-standard.yaml"),
        )
    }

    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), BehaviorError> {
        if !matches!(transport, "exec" | "exec-stdin") {
            return Err(BehaviorError::Transport(format!(
                "agent-standard agents are commands: transport exec or exec-stdin, not {transport}"
            )));
        }
        super::mock::Behaviors::parse(behavior)
            .map(drop)
            .map_err(|e| BehaviorError::Unknown(e.to_string()))
    }

    /// `probe agent-standard --exec` in both modes against the mock with the row's behaviour,
    /// in a scratch tree, with the example definitions as --agents.
    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let tree = Scratch::new()?;
            std::fs::write(tree.path().join("README.md"), "# a project\n")
                .map_err(|e| Error::io(Class::Run, format!("{}:", tree.path().display()), e))?;
            let mut command = format!(
                "{} mock agent --protocol agent-standard --name security-scanner --next reviewer \
                 --seed {} --behavior {}",
                crate::text::shell_quote(&row.exe.display().to_string()),
                row.seed,
                crate::text::shell_quote(row.behavior),
            );
            if row.transport == "exec" {
                command.push_str(" --mode {mode} --task {task}");
            }
            let exec = Exec::new(
                &command,
                DEFAULT_TASK.into(),
                None,
                Some(tree.path().to_path_buf()),
                row.timeout,
                crate::transport::stdio::DEFAULT_MAX_LINE,
            )?;
            let settings = Settings {
                source: Source::Exec(exec),
                modes: vec!["plan".into(), "execute".into()],
                agents: Some(example_names()),
                agent: Some("security-scanner".into()),
                max_body: crate::transport::stdio::DEFAULT_MAX_LINE,
                common: Common {
                    seed: row.seed,
                    only: row.only.to_vec(),
                    strict: false,
                    ..Common::default()
                },
            };
            Ok(super::probe::run(&settings, &|_| {}).await?)
        })
    }
}
