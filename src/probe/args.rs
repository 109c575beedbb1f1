//! How to run a probe: the flags every probe and `selftest` share ([`RunArgs`]), those of a
//! suite-driven probe ([`SuiteArgs`]), and the one place they become validated settings.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{ProbeSettings, Suite};
use crate::judge::tape::TapeSpec;
use crate::report::output::OutputArgs;
use crate::transport::http::BaseUrl;
use crate::units::{parse_bytes, parse_duration};

/// How to run any probe (shared by every `probe` and `selftest`).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Total deadline of each exchange (a turn), from connect to the last byte (e.g. 120s, 2m, 500ms, 30).
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Largest answer accepted (a body, a line, or all of stdout per turn); reading stops just past it.
    #[arg(long, value_name = "BYTES", default_value = "5000000", value_parser = parse_bytes)]
    pub max_body: usize,
    /// Seed of every generated request and random choice (default: from the clock; the report
    /// prints it, so a run can be replayed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Run only the cases whose id matches (glob, comma-separated or repeated; needed cases are added).
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub only: Vec<String>,
    /// SHOULD failures fail the run (exit 1) instead of warning.
    #[arg(long)]
    pub strict: bool,
    /// Write every exchange with the agent to FILE (JSON lines, secrets masked), to judge it
    /// again with --replay.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Judge the exchanges recorded in FILE (by --record) instead of talking to the agent: the
    /// same flags give the same verdicts, with no agent running.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
}

/// The flags of a probe that runs a suite of exchanges against an HTTP agent (`probe
/// roundtable`, and any protocol whose probe is a suite: see `protocols::plugin::SuiteProbe`).
#[derive(Debug, Clone, Args)]
pub struct SuiteProbeArgs {
    /// The agent's base URL (http:// or https://), e.g. http://127.0.0.1:3001.
    #[arg(long, value_name = "BASE")]
    pub url: String,
    #[command(flatten)]
    pub key: KeyArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub suite: SuiteArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The agent's key, as every probe of an HTTP agent takes it.
#[derive(Debug, Clone, Args)]
pub struct KeyArgs {
    /// Sent to HTTP agents as `Authorization: Bearer KEY`; enables the auth cases. Printed as ***
    /// everywhere.
    #[arg(
        long,
        value_name = "KEY",
        env = "AGENT_TCK_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
}

/// How to run a suite of exchanges (the round table's probe, and `selftest`).
#[derive(Debug, Clone, Args)]
pub struct SuiteArgs {
    /// Longest string field accepted, in characters.
    #[arg(long, value_name = "CHARS", default_value_t = 50_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_field: u32,
    /// Exchanges in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// A suite file to run instead of the built-in one (see `agent-tck suites list`).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
}

impl RunArgs {
    /// `--only` patterns, trimmed, the empty ones dropped.
    pub fn only(&self) -> Vec<String> {
        only_patterns(&self.only)
    }

    /// What `--record` and `--replay` ask of the run's exchanges.
    pub fn tape(&self) -> TapeSpec {
        match (&self.record, &self.replay) {
            (_, Some(path)) => TapeSpec::Replay(path.clone()),
            (Some(path), None) => TapeSpec::Record(path.clone()),
            (None, None) => TapeSpec::Off,
        }
    }
}

/// What every driver probe's settings share: the run's seed, the cases `--only` keeps, and
/// `--strict`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Common {
    pub seed: u64,
    pub only: Vec<String>,
    pub strict: bool,
    /// `--record` / `--replay`.
    pub tape: TapeSpec,
}

impl Common {
    /// From the shared flags (a seed from the clock when none is given).
    pub fn of(run: &RunArgs) -> Common {
        Common {
            seed: seed_or_clock(run.seed),
            only: run.only(),
            strict: run.strict,
            tape: run.tape(),
        }
    }

    /// Whether `--only` keeps the case `id`.
    pub fn wants(&self, id: &str) -> bool {
        selected(&self.only, id)
    }

    /// The start of a probe run of `protocol` against `target`.
    pub fn run_info(
        &self,
        protocol: impl Into<String>,
        target: impl Into<String>,
    ) -> crate::report::RunInfo {
        let info = crate::report::RunInfo::start("probe", protocol, target, self.seed, self.strict);
        super::interrupt::started(&info);
        info
    }
}

/// Whether `--only` (its patterns, as [`only_patterns`] gives them) selects the case `id`: no
/// pattern selects every case.
pub fn selected(only: &[String], id: &str) -> bool {
    only.is_empty() || only.iter().any(|p| crate::text::glob_match(p, id))
}

/// `--only` patterns, trimmed, the empty ones dropped.
pub fn only_patterns(only: &[String]) -> Vec<String> {
    only.iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The seed to use: the flag, or one from the clock.
pub fn seed_or_clock(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // Keep it short enough to retype.
        (now.as_nanos() % 1_000_000_000) as u64
    })
}

/// Why a probe's flags do not make settings: a usage error (nothing was sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("--api-key: the key is empty")]
    EmptyApiKey,
    /// The suite refuses the flags (an `--only` that matches no case).
    #[error(transparent)]
    Suite(#[from] super::suite::SuiteError),
}

impl crate::error::LayerError for SettingsError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// An `--api-key` as given: refused when empty (a blank secret would turn auth cases on and
/// send `Bearer ` with nothing after it).
pub fn api_key(key: Option<String>) -> Result<Option<String>, SettingsError> {
    if key.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(SettingsError::EmptyApiKey);
    }
    Ok(key)
}

/// Raw flags → validated probe settings for `suite` (the built-in one or the `--suite` file,
/// loaded by the caller, which knows the protocol).
pub fn settings(
    base: BaseUrl,
    api_key_flag: Option<String>,
    suite: Suite,
    run: &RunArgs,
    suite_args: &SuiteArgs,
) -> Result<ProbeSettings, SettingsError> {
    let mut settings = ProbeSettings::new(base, suite);
    settings.api_key = api_key(api_key_flag)?;
    settings.timeout = run.timeout;
    settings.max_body = run.max_body;
    settings.max_field = suite_args.max_field as usize;
    settings.seed = seed_or_clock(run.seed);
    settings.only = run.only();
    settings.strict = run.strict;
    settings.concurrency = suite_args.concurrency as usize;
    settings.tape = run.tape();
    // Catch an --only that matches nothing before anything is sent.
    settings.suite.select(&settings.only)?;
    Ok(settings)
}
