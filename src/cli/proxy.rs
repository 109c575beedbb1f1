//! `agent-tck proxy` (a real platform and real agents, judged from the traffic between them)
//! and `agent-tck judge` (a recording of such traffic, judged again offline): the flags checked
//! and the protocol resolved here; the run is the proxy engine's ([`crate::proxy`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::args::{protocol, protocol_names};
use super::exit::{conclude, Ended};
use super::signal::caught_signal;
use crate::error::Error;
use crate::mock::behavior::{self, For, Item};
use crate::mock::protocol::{AgentProtocol, PlatformExpect};
use crate::probe::args::seed_or_clock;
use crate::probe::traffic::TrafficLimits;
use crate::probe::Suite;
use crate::protocols;
use crate::proxy::run::{AgentAt, ProxySettings};
use crate::report::output::OutputArgs;
use crate::transport::http::BaseUrl;
use crate::units::{parse_bytes, parse_duration};

/// `agent-tck proxy`.
#[derive(Debug, Clone, Args)]
pub struct ProxyArgs {
    /// The protocol the platform and its agents speak.
    #[arg(long, default_value = protocols::names()[0], value_parser = protocol_names())]
    pub protocol: String,
    /// Where the proxy listens (HOST:PORT; port 0: the OS picks). The platform is given
    /// `http://HOST:PORT/agents/NAME` for each agent.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8700")]
    pub listen: SocketAddr,
    /// A real agent: its name (the proxy's path for it) and its own base URL. Repeatable.
    #[arg(long = "agent", value_name = "NAME=URL", required = true)]
    pub agents: Vec<String>,
    /// An agent's API key: the platform's `Authorization: Bearer` to it is judged against it
    /// (without it, the bearer rules are not judged for that agent). Repeatable; never shown.
    #[arg(long = "agent-key", value_name = "NAME=KEY", hide_env_values = true)]
    pub agent_keys: Vec<String>,
    /// A fault on an agent's real answers: one of the mock's behaviours (`agent-tck mock
    /// behaviors`), at an endpoint or all, on a share of the answers (`beta=null-bytes@analyze`,
    /// `alpha=slow:3s:50%`). Repeatable.
    #[arg(long = "fault", value_name = "NAME=BEHAVIOUR[@ENDPOINT][:P%]")]
    pub faults: Vec<String>,
    /// Each agent answer must come within this (the agent rules' timeout, as `probe --timeout`).
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The platform's own per-request timeout: a platform that waits longer for a slow or
    /// hanging agent is told so (default 120s).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub platform_timeout: Option<Duration>,
    /// The largest answer body the agent rules accept (as `probe --max-body`).
    #[arg(long, value_name = "BYTES", default_value = "5MB", value_parser = parse_bytes)]
    pub max_body: usize,
    /// End the run after this long (default: at Ctrl-C).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// End the run once this many deliberations reached the protocol's last phase and every
    /// exchange is answered.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub deliberations: Option<u64>,
    /// Record every exchange to FILE as it ends, secrets masked: HAR 1.2 for a name ending in
    /// `.har` (browsers, Redocly and mitmproxy read it), JSON lines otherwise. `agent-tck judge
    /// FILE` judges it again.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Seed of the faults' random choices (default: from the clock; printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    pub strict: bool,
    /// A line per exchange on stdout.
    #[arg(long)]
    pub log: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The protocol's agents and the suite that judges their answers; else a usage error that says
/// which protocols the proxy stands between.
fn proxied(name: &str) -> Result<(&'static dyn AgentProtocol, Suite), Error> {
    let p = protocol(name)?;
    let offers = p.capabilities();
    match (offers.agents, offers.traffic_suite) {
        (Some(served), Some(suite)) => Ok((served.agents, suite()?)),
        _ => {
            let able: Vec<&str> = protocols::REGISTRY
                .iter()
                .filter(|p| {
                    let c = p.capabilities();
                    c.agents.is_some() && c.traffic_suite.is_some()
                })
                .map(|p| p.name())
                .collect();
            Err(Error::usage(format!(
                "--protocol {name}: the proxy does not stand between its parties yet (it does for: {})",
                able.join(", ")
            )))
        }
    }
}

/// `NAME=VALUE` of flag `flag`, NAME an agent name.
fn named<'a>(flag: &str, text: &'a str, what: &str) -> Result<(&'a str, &'a str), Error> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| Error::usage(format!("{flag} {text:?}: expected NAME={what}")))?;
    if !crate::mock::fleet::valid_name(name) {
        return Err(Error::usage(format!(
            "{flag} {text:?}: the name {name:?} must match ^[A-Za-z][A-Za-z0-9_-]*$"
        )));
    }
    if value.is_empty() {
        return Err(Error::usage(format!("{flag} {name}=: no {what}")));
    }
    Ok((name, value))
}

/// `BEHAVIOUR[@ENDPOINT][:P%]` as the mock's behaviour list: the share becomes `flaky`.
fn fault_items(
    text: &str,
    protocol: &'static dyn AgentProtocol,
) -> Result<Vec<Item>, behavior::BehaviorError> {
    let (items, share) = match text.rsplit_once(':') {
        Some((items, pct)) if pct.ends_with('%') => (items, Some(pct)),
        _ => (text, None),
    };
    let mut list = items.to_string();
    if let Some(pct) = share {
        let p: f64 = pct.trim_end_matches('%').trim().parse().map_err(|_| {
            behavior::BehaviorError::item(text, format!("{pct:?} is not a percentage"))
        })?;
        if !(0.0..=100.0).contains(&p) {
            return Err(behavior::BehaviorError::item(
                text,
                format!("{pct} is not between 0% and 100%"),
            ));
        }
        list.push_str(&format!(",flaky:{}", p / 100.0));
    }
    let others = protocols::agent_protocols();
    behavior::parse_list(
        &list,
        For {
            protocol,
            others: &others,
        },
    )
}

/// The agents as the flags give them, each with its key and faults.
fn agents_of(
    args: &ProxyArgs,
    protocol: &'static dyn AgentProtocol,
) -> Result<Vec<AgentAt>, Error> {
    let mut agents: Vec<AgentAt> = Vec::new();
    for text in &args.agents {
        let (name, url) = named("--agent", text, "URL")?;
        if agents.iter().any(|a| a.name == name) {
            return Err(Error::usage(format!("--agent {name}: given twice")));
        }
        let base = BaseUrl::parse(url).map_err(|e| Error::usage(format!("--agent {name}: {e}")))?;
        agents.push(AgentAt {
            name: name.to_string(),
            base,
            key: None,
            faults: Vec::new(),
        });
    }
    let find = |flag: &str, name: &str| -> Result<usize, Error> {
        agents.iter().position(|a| a.name == name).ok_or_else(|| {
            Error::usage(format!(
                "{flag} {name}=…: no --agent {name}=URL (the agents: {})",
                args.agents
                    .iter()
                    .filter_map(|a| a.split_once('=').map(|(n, _)| n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    };
    let mut keys = Vec::new();
    for text in &args.agent_keys {
        // The key is never repeated in a message.
        let (name, key) = text
            .split_once('=')
            .filter(|(_, k)| !k.trim().is_empty())
            .ok_or_else(|| Error::usage("--agent-key: expected NAME=KEY"))?;
        keys.push((find("--agent-key", name)?, key.to_string()));
    }
    let mut faults = Vec::new();
    for text in &args.faults {
        let (name, fault) = named("--fault", text, "BEHAVIOUR")?;
        let items = fault_items(fault, protocol)
            .map_err(|e| Error::usage(format!("--fault {name}={fault}: {e}")))?;
        behavior::check_fit(&items, protocol, true, false)
            .map_err(|e| Error::usage(format!("--fault {name}={fault}: {e}")))?;
        faults.push((find("--fault", name)?, items));
    }
    for (i, key) in keys {
        agents[i].key = Some(key);
    }
    for (i, items) in faults {
        agents[i].faults.extend(items);
    }
    Ok(agents)
}

/// `agent-tck proxy`: serves until Ctrl-C, `--duration` or `--deliberations`, then reports.
pub(super) async fn proxy(args: ProxyArgs) -> Result<Ended, Error> {
    args.output.check()?;
    let (agents_protocol, suite) = proxied(&args.protocol)?;
    let agents = agents_of(&args, agents_protocol)?;
    let seed = seed_or_clock(args.seed);
    let settings = ProxySettings {
        protocol: agents_protocol,
        suite,
        agents,
        listen: args.listen,
        expect: PlatformExpect::timeout(args.platform_timeout.unwrap_or(Duration::from_secs(120))),
        limits: TrafficLimits {
            max_body: args.max_body,
            max_field: 50_000,
            timeout: args.timeout,
        },
        duration: args.duration,
        deliberations: args.deliberations,
        record: args.record.clone(),
        seed,
        strict: args.strict,
        log: args.log && !args.output.quiet,
    };
    let running = crate::proxy::run::start(settings).await?;
    crate::outln!(
        "agent-tck proxy ({}) on http://{} (seed {seed}): register each agent with the platform at its proxy URL",
        args.protocol,
        running.addr
    );
    for (proxied, real) in running.routes() {
        crate::outln!("  {proxied}  ->  {real}");
    }
    crate::outln!("Ctrl-C ends the run and writes the reports");
    let stop = async { format!("{}", caught_signal().await) };
    let report = running.until(stop).await?;
    conclude(report, &args.output)
}

/// `agent-tck judge`.
#[derive(Debug, Clone, Args)]
pub struct JudgeArgs {
    /// The recording (`proxy --record FILE`: HAR 1.2 or JSON lines).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The protocol (default: the one the recording names).
    #[arg(long, value_parser = protocol_names())]
    pub protocol: Option<String>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `agent-tck judge FILE`: a proxy run's recording judged again, with the run's settings.
pub(super) fn judge(args: JudgeArgs) -> Result<Ended, Error> {
    use crate::proxy::judge::RunSettings;
    args.output.check()?;
    let shown = args.file.display().to_string();
    let entries =
        crate::judge::record::read_entries(&args.file).map_err(|e| Error::usage(e.to_string()))?;
    let settings = RunSettings::of(&entries).ok_or_else(|| {
        Error::usage(format!(
            "{shown}: no proxy settings in it (a recording of `agent-tck proxy --record`, which writes them as it starts, is what judge reads)"
        ))
    })?;
    let name = args.protocol.as_deref().unwrap_or(&settings.protocol);
    let (protocol, suite) = proxied(name)?;
    let cases = crate::proxy::judge::judge(&entries, protocol, suite, &settings)
        .map_err(|e| Error::usage(format!("{shown}: {e}")))?;
    let report = crate::proxy::run::report_of(
        name,
        format!("the platform and agents recorded in {shown}"),
        (settings.seed, args.strict),
        cases,
        &crate::text::Redactor::new(Vec::new()),
    );
    conclude(report, &args.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtable() -> &'static dyn AgentProtocol {
        proxied("roundtable").unwrap().0
    }

    #[test]
    fn a_share_becomes_flaky_and_a_bad_one_is_named() {
        let items = fault_items("null-bytes@analyze:25%", roundtable()).unwrap();
        let sources: Vec<&str> = items.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(sources, ["null-bytes@analyze", "flaky:0.25"]);
        let e = fault_items("slow:3s:250%", roundtable())
            .unwrap_err()
            .to_string();
        assert!(e.contains("250% is not between 0% and 100%"), "{e}");
        let e = fault_items("no-such-thing", roundtable())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no-such-thing"), "{e}");
    }
}
