//! The Librarian on the command line (`probe librarian`, `suites list`) and in the self-test:
//! the reference Librarian (`server`) on a loopback port, probed with the whole suite.

use std::path::{Path, PathBuf};

use clap::{Args, FromArgMatches};
use futures::future::BoxFuture;

use super::mock::Script;
use super::probe::{self, Settings};
use super::reference::{Flaws, Librarian, Registered};
use super::registry::{parse_registry, read_registry};
use super::NAME;
use crate::error::{Class, Error};
use crate::mock::behavior::Behavior;
use crate::probe::args::Common;
use crate::probe::args::{seed_or_clock, RunArgs};
use crate::protocols::plugin::{
    driver_probe, flaws_named, BehaviorError, Capabilities, ClientFleet, FleetFlags, MatrixRow,
    MockFlags, MockJob, OnCase, ProbeJob, Protocol, ProtocolCommand, ReferenceAt, ReferenceServer,
    Selftest, SelftestRun, Served, SettingsError, UserFile,
};
use crate::report::output::OutputArgs;
use crate::report::Report;
use crate::transport::http::BaseUrl;

/// The Librarian in the registry.
pub struct LibrarianProtocol;

/// `probe librarian`'s flags.
#[derive(Debug, Clone, Args)]
#[command(mut_arg("timeout", |a| a.help(
    "Deadline of each request to the Librarian (/agent/request, /agent/status/{id}, \
     /agent/capabilities, /agent/context), from connect to the last byte of its answer (e.g. \
     120s, 2m, 500ms, 30)"
)))]
pub struct LibrarianProbeArgs {
    /// The Librarian's base URL: requests go to {URL}/agent/request, /agent/status/{id}, …
    #[arg(long, value_name = "BASE")]
    pub url: String,
    /// An agent and its bearer token, AGENT=TOKEN; give two for the isolation cases (another
    /// agent's status, its name on a foreign token, per-agent rate limits). Printed as ***.
    #[arg(long = "token", value_name = "AGENT=TOKEN", required = true)]
    pub tokens: Vec<String>,
    /// Skip the rate group (61 requests from one agent inside a minute).
    #[arg(long)]
    pub quick: bool,
    /// The Librarian's agent registry (its config/agents.yaml in the Librarian protocol spec,
    /// specs/librarian-agent-communication-protocol.md): enables the registry cases
    /// (capabilities, allowed_targets, an unregistered agent, injection).
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// The Librarian's compliance.allow_deviations, as it is configured (config/protocol.yaml
    /// in the Librarian protocol spec: false, strict mode): whether a request with one deviation is refused
    /// (false) or not refused for it (true). Without it, limits.strict-deviations is skipped.
    #[arg(long, value_name = "true|false")]
    pub allow_deviations: Option<bool>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `AGENT=TOKEN` pairs, checked.
fn tokens(pairs: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in pairs {
        let (agent, token) = pair
            .split_once('=')
            .filter(|(a, t)| !a.trim().is_empty() && !t.trim().is_empty())
            .ok_or_else(|| {
                format!(
                    "--token {:?}: expected AGENT=TOKEN",
                    pair.split('=').next().unwrap_or("")
                )
            })?;
        if out.iter().any(|(a, _)| a == agent.trim()) {
            return Err(format!("--token: agent {:?} given twice", agent.trim()));
        }
        out.push((agent.trim().to_string(), token.trim().to_string()));
    }
    Ok(out)
}

pub fn settings(args: &LibrarianProbeArgs) -> Result<Settings, SettingsError> {
    Ok(Settings {
        base: BaseUrl::parse(&args.url).map_err(|e| format!("--url: {e}"))?,
        tokens: tokens(&args.tokens)?,
        timeout: args.run.timeout,
        max_body: args.run.max_body,
        common: Common::of(&args.run),
        quick: args.quick,
        registry: args
            .registry
            .as_deref()
            .map(|p| read_registry(p, false))
            .transpose()
            .map_err(SettingsError::named)?,
        allow_deviations: args.allow_deviations,
    })
}

const ABOUT: &str =
    "The Librarian agent communication protocol: we play agent clients against a Librarian server.";

/// The files a user writes for it, as the fuzz targets feed them.
const FILES: &[UserFile] = &[
    UserFile {
        suite: true,
        parse: |source, text| {
            UserFile::parsed(crate::probe::Suite::parse(
                source,
                text,
                &super::rules::RULE_NAMES,
            ))
        },
    },
    UserFile {
        suite: false,
        parse: |source, text| UserFile::parsed(super::fleet::Fleet::parse(source, text, None)),
    },
    UserFile {
        suite: false,
        parse: |source, text| UserFile::parsed(Script::parse(source, text)),
    },
];

impl Protocol for LibrarianProtocol {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        ABOUT
    }

    fn spec(&self) -> crate::specs::SpecDoc {
        crate::specs::SpecDoc {
            file: "librarian-agent-communication-protocol.md",
            title: "Agent Communication Protocol",
            // The document gives no version or date.
            version: None,
        }
    }

    fn schema_dir(&self) -> Option<&'static str> {
        Some("librarian")
    }

    fn list_cases(&self, file: Option<&Path>) -> Result<String, Error> {
        crate::protocols::plugin::builtin_cases_only(
            file,
            "the librarian's",
            "suites/librarian.yaml",
        )?;
        probe::list_cases().map_err(Error::from)
    }

    fn case_ids(&self) -> Result<Vec<String>, Error> {
        probe::case_ids().map_err(Error::from)
    }

    fn catalogue(&self) -> Result<Vec<crate::protocols::plugin::CaseInfo>, Error> {
        super::catalogue::catalogue()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            probes: &[&LibrarianProbe],
            client_fleet: Some(&LibrarianFleet),
            mock_fleet_flags: Some(MOCK_FLEET_FLAGS),
            mocks: &[&MockLibrarian],
            reference_server: Some(&ReferenceLibrarian),
            behaviors: super::behaviors::BEHAVIORS,
            files: FILES,
            fleet_presets: &[(
                "librarian-chaos",
                "mocks/librarian-chaos.yaml",
                include_str!("../../../mocks/librarian-chaos.yaml"),
            )],
            proxied_server: Some(&super::proxied::Proxied),
            ..Capabilities::none(&LibrarianSelftest)
        }
    }
}

/// `probe librarian`.
struct LibrarianProbe;

impl ProtocolCommand<ProbeJob> for LibrarianProbe {
    fn command(&self) -> clap::Command {
        LibrarianProbeArgs::augment_args(clap::Command::new(NAME)).about(ABOUT)
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let ids = probe::case_ids()?;
        let job = |s: Settings, on: OnCase| async move {
            probe::run(&s, &*on).await.map_err(Error::from)
        };
        driver_probe(
            matches,
            settings,
            |f: LibrarianProbeArgs| f.output,
            &ids,
            Settings::wants,
            job,
        )
    }
}

/// `mock fleet` of Librarian clients.
struct LibrarianFleet;

// The flags a Librarian fleet adds to `mock fleet` (a plain comment: a doc comment would become
// the description of the command they are added to).
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// A Librarian fleet: the server's agent registry (its config/agents.yaml in the Librarian
    /// protocol spec, specs/librarian-agent-communication-protocol.md), so that each
    /// client asks only what its agent may, and a refusal for authorization is judged.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
}

/// [`FleetArgs`] as `mock fleet` takes them.
const MOCK_FLEET_FLAGS: MockFlags = MockFlags {
    augment: <FleetArgs as Args>::augment_args,
    whom: "a fleet of protocol librarian",
};

/// `mock librarian`: the kit plays the Librarian and judges the agent client that calls it.
struct MockLibrarian;

impl ProtocolCommand<MockJob> for MockLibrarian {
    fn command(&self) -> clap::Command {
        MockLibrarianArgs::augment_args(clap::Command::new(NAME)).about(
            "Play the Librarian (decisions and faults from a script) and judge the agent client \
             that calls it: schema, token, rate, back-off after 429, polling, retries, reports",
        )
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<MockJob, Error> {
        let args = MockLibrarianArgs::from_arg_matches(matches)
            .map_err(|e| Error::usage(e.to_string()))?;
        Ok(MockJob {
            output: args.output.clone(),
            run: Box::new(move |stop| Box::pin(async move { mock_librarian(&args, stop).await })),
        })
    }
}

impl ClientFleet for LibrarianFleet {
    fn behaviors(&self) -> &'static [Behavior] {
        super::behaviors::CLIENT_BEHAVIORS
    }

    /// A Librarian's fleets are agent clients, each with a behaviour and a rate.
    fn run<'a>(
        &'a self,
        source: &'a str,
        text: &'a str,
        at: FleetFlags<'a>,
    ) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let flags =
                FleetArgs::from_arg_matches(at.flags).map_err(|e| Error::usage(e.to_string()))?;
            let registry = flags
                .registry
                .as_deref()
                .map(|p| read_registry(p, false))
                .transpose()?;
            let fleet = super::fleet::Fleet::parse(source, text, at.url)
                .and_then(|f| f.with_registry(registry))?;
            let seed = seed_or_clock(at.seed.or(fleet.seed()));
            crate::outln!(
                "agent-tck mock fleet · librarian clients against {}",
                fleet.target()
            );
            Ok(super::fleet::run(&fleet, at.strict, seed).await)
        })
    }
}

/// The Librarian's self-test and matrix.
struct LibrarianSelftest;

impl Selftest for LibrarianSelftest {
    /// The reference Librarian with two agents, probed with every case.
    fn run<'a>(&'a self, at: SelftestRun<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        let common = Common {
            seed: at.seed,
            only: at.run.only(),
            strict: at.run.strict,
            tape: at.run.tape(),
        };
        Box::pin(probe_reference(
            Flaws::default(),
            at.run.timeout,
            at.run.max_body,
            common,
        ))
    }

    fn matrix(&self) -> (&'static str, &'static str) {
        (
            "mocks/matrix-librarian.yaml",
            include_str!("../../../mocks/matrix-librarian.yaml"),
        )
    }

    /// A row's behaviour is a flaw of the reference Librarian, served over HTTP.
    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), BehaviorError> {
        if transport != "http" {
            return Err(BehaviorError::Transport(format!(
                "the Librarian is served over http only, not {transport}"
            )));
        }
        Flaws::named(behavior).map(drop).ok_or_else(|| {
            BehaviorError::Unknown(format!(
                "{behavior:?} is no Librarian flaw (known: conforming, {})",
                Flaws::NAMES.join(", ")
            ))
        })
    }

    /// The reference Librarian with the row's flaw, probed with every case.
    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let flaws = Flaws::named(row.behavior)
                .ok_or_else(|| Error::usage(format!("no Librarian flaw {:?}", row.behavior)))?;
            let common = Common {
                seed: row.seed,
                only: row.only.to_vec(),
                strict: false,
                ..Common::default()
            };
            probe_reference(flaws, row.timeout, 5_000_000, common).await
        })
    }
}

/// The reference Librarian with `flaws` and two agents, served on a port of its own and probed
/// in the document's strict mode with the registry it serves.
async fn probe_reference(
    flaws: Flaws,
    timeout: std::time::Duration,
    max_body: usize,
    common: Common,
) -> Result<Report, Error> {
    let served = reference(flaws).await?;
    let settings = Settings {
        base: BaseUrl::parse(&served.url).map_err(Error::as_run)?,
        tokens: reference_tokens(),
        timeout,
        max_body,
        common,
        quick: false,
        registry: Some(reference_registry()),
        // The reference is in the document's strict mode.
        allow_deviations: Some(false),
    };
    let report = probe::run(&settings, &|_| {}).await;
    served.stop().await;
    report.map_err(Error::from)
}

/// The agents of the reference Librarian: (agent, token).
pub fn reference_tokens() -> Vec<(String, String)> {
    reference_registry()
        .into_iter()
        .map(|r| (r.id, r.token))
        .collect()
}

/// The reference Librarian's registry ([`REFERENCE_REGISTRY`]), after the document's
/// config/agents.yaml: claude-3 may read, write and analyze architecture, design and code;
/// gemini-pro may read, analyze and validate anything (and change nothing).
pub fn reference_registry() -> Vec<Registered> {
    let (source, text) = REFERENCE_REGISTRY;
    // Built in, and read by a unit test: a mistake in it is the kit's, found before a release.
    parse_registry(source, text, true).unwrap_or_default()
}

/// The reference Librarian, with `flaws`, on a loopback port.
pub async fn reference(flaws: Flaws) -> Result<super::reference::Served, Error> {
    super::reference::serve(Librarian::new(reference_registry(), flaws))
        .await
        .map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_registry_file_reads_as_the_reference_serves_it() {
        let registry = reference_registry();
        let ids: Vec<&str> = registry.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["claude-3", "gemini-pro"]);
        assert_eq!(registry[0].capabilities, ["read", "write", "analyze"]);
        assert_eq!(
            registry[0].allowed_targets,
            ["architecture", "design", "code"]
        );
        assert_eq!(registry[1].capabilities, ["read", "analyze", "validate"]);
        assert_eq!(registry[1].allowed_targets, ["all"]);
        assert_eq!(
            reference_tokens(),
            [
                ("claude-3".to_string(), "tck-token-claude-3".to_string()),
                ("gemini-pro".to_string(), "tck-token-gemini-pro".to_string())
            ]
        );
    }

    #[test]
    fn tokens_are_agent_equals_token() {
        assert_eq!(
            tokens(&["a=1".into(), " b = 2 ".into()]).unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), "2".into())]
        );
        assert!(tokens(&["a".into()])
            .unwrap_err()
            .contains("expected AGENT=TOKEN"));
        assert!(tokens(&["=x".into()]).is_err());
        assert!(tokens(&["a=1".into(), "a=2".into()])
            .unwrap_err()
            .contains("given twice"));
    }

    #[test]
    fn until_and_registry_files_read_as_documented() {
        assert_eq!(parse_until(None).ok(), Some(Until::Interrupted));
        assert_eq!(
            parse_until(Some("20-requests")).ok(),
            Some(Until::Requests(20))
        );
        assert_eq!(parse_until(Some("7")).ok(), Some(Until::Requests(7)));
        assert_eq!(
            parse_until(Some("30s")).ok(),
            Some(Until::After(std::time::Duration::from_secs(30)))
        );
        assert_eq!(
            parse_until(Some("0")).unwrap_err().to_string(),
            "--until: at least 1 request"
        );
        assert!(parse_until(Some("soon"))
            .unwrap_err()
            .to_string()
            .contains("N-requests"));
    }
}

/// `mock librarian`'s flags: the kit plays the Librarian and judges the agent client.
#[derive(Debug, Clone, Args)]
pub struct MockLibrarianArgs {
    /// Address to bind, an IP address or a host name (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1", value_parser = crate::units::parse_host)]
    pub host: std::net::IpAddr,
    /// Port to bind (0: the OS picks one, and it is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The agent registry (config/agents.yaml in the Librarian protocol spec,
    /// specs/librarian-agent-communication-protocol.md, each agent with its `token:`);
    /// without it any bearer token is taken, for the agent it first speaks for.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Decisions and faults for successive requests (see mocks/librarian-decisions.yaml);
    /// default: the rules of the Librarian protocol spec decide.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Stop after N requests (`20-requests`) or a duration (`30s`); default: until Ctrl-C.
    #[arg(long, value_name = "N-requests|DURATION")]
    pub until: Option<String>,
    /// SHOULD failures (of the client) fail the run.
    #[arg(long)]
    pub strict: bool,
    /// Journal every request the client sends here, a JSON line each (tokens not written).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// When a mock Librarian stops by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    Requests(u64),
    After(std::time::Duration),
    Interrupted,
}

pub fn parse_until(text: Option<&str>) -> Result<Until, SettingsError> {
    let Some(t) = text.map(str::trim) else {
        return Ok(Until::Interrupted);
    };
    let count = t.strip_suffix("-requests").unwrap_or(t);
    if let Ok(n) = count.parse::<u64>() {
        return if n == 0 {
            Err(SettingsError::from("--until: at least 1 request"))
        } else {
            Ok(Until::Requests(n))
        };
    }
    crate::units::parse_duration(t)
        .map(Until::After)
        .map_err(|e| {
            SettingsError::Flag(format!(
                "--until {t:?}: expected N-requests (20-requests) or a duration (30s): {e}"
            ))
        })
}

/// Serves the mock Librarian until `--until` or `stop`, then judges the client.
pub async fn mock_librarian(
    args: &MockLibrarianArgs,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Report, Error> {
    let until = parse_until(args.until.as_deref())?;
    let agents = match &args.registry {
        Some(path) => read_registry(path, true)?,
        None => Vec::new(),
    };
    let script = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::io(
                    Class::Usage,
                    format!("--script {}: cannot read:", path.display()),
                    e,
                )
            })?;
            Script::parse(&path.display().to_string(), &text)?
        }
        None => Script::default(),
    };
    args.output.check()?;
    let mut librarian = Librarian::new(agents, Flaws::default()).mocking(script);
    if let Some(path) = &args.journal {
        librarian = librarian.journaling(path)?;
    }
    let addr = std::net::SocketAddr::new(args.host, args.port);
    judge_client(librarian, addr, until, args.strict, stop, |url| {
        crate::outln!("agent-tck mock librarian · listening on {url}");
    })
    .await
}

/// Serves `librarian` (a mock: it has a judge) on `addr` until `until` or `stop`, having told
/// `announce` its URL, then judges the client that called it.
async fn judge_client(
    librarian: Librarian,
    addr: std::net::SocketAddr,
    until: Until,
    strict: bool,
    stop: impl std::future::Future<Output = ()>,
    announce: impl FnOnce(&str),
) -> Result<Report, Error> {
    let served = super::reference::serve_on(librarian, addr).await?;
    let run = crate::report::RunInfo::start(
        "mock",
        NAME,
        format!("the agent client that called {}", served.url),
        None,
        strict,
    );
    announce(&served.url);
    let served_librarian = served.librarian.clone();
    let judge = served_librarian.judge.as_ref();
    let reached = async {
        match until {
            Until::Requests(n) => {
                while judge.is_none_or(|j| j.requests() < n) {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            }
            Until::After(d) => tokio::time::sleep(d).await,
            Until::Interrupted => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = reached => {}
        _ = stop => crate::errln!("interrupted: judging the client"),
    }
    let cases = judge.map(|j| j.cases()).unwrap_or_default();
    served.stop().await;
    served_librarian.flush_journal();
    // Every token the client sent, and the registry's, masked wherever the report shows one.
    let mut secrets = served_librarian.tokens_seen();
    secrets.extend(served_librarian.registered_tokens());
    Ok(run.report(cases, &crate::text::Redactor::new(secrets)))
}

/// The reference Librarian's registry as a file: what `probe librarian --registry` is given to
/// probe it (and what [`reference_registry`] reads).
pub const REFERENCE_REGISTRY: (&str, &str) = (
    "mocks/librarian-agents.yaml",
    include_str!("../../../mocks/librarian-agents.yaml"),
);

/// `mock agent --protocol librarian`: the reference Librarian the self-test certifies (its
/// registry, strict mode, the flaws `--behavior` names), and the judge of `mock librarian`
/// watching its caller, served until interrupted.
pub struct ReferenceLibrarian;

impl ReferenceServer for ReferenceLibrarian {
    fn judges_caller(&self) -> bool {
        true
    }

    fn serve<'a>(
        &'a self,
        at: ReferenceAt<'a>,
        stop: BoxFuture<'static, ()>,
    ) -> BoxFuture<'a, Result<Served, Error>> {
        Box::pin(async move {
            let flaws = flaws_named(
                at.behavior,
                "the reference Librarian",
                Flaws::NAMES,
                Flaws::named_all,
            )?;
            let librarian = Librarian::new(reference_registry(), flaws).mocking(Script::default());
            let announce = |url: &str| {
                let tokens: Vec<String> = reference_tokens()
                    .iter()
                    .map(|(agent, token)| format!("--token {agent}={token}"))
                    .collect();
                crate::outln!(
                    "agent-tck mock agent · librarian · the reference Librarian (behavior {}) · listening on {url}",
                    at.behavior
                );
                crate::outln!(
                    "  probe it: agent-tck probe librarian --url {url} {} --registry {} --allow-deviations false",
                    tokens.join(" "),
                    REFERENCE_REGISTRY.0
                );
            };
            let report = judge_client(
                librarian,
                at.addr,
                Until::Interrupted,
                false,
                stop,
                announce,
            )
            .await?;
            Ok(Served::Judged(Box::new(report)))
        })
    }
}
