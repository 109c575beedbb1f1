//! The `mock` commands: `mock agent` (served, or a command run once per call), `mock agents`,
//! `mock fleet` (agents served, or a protocol's clients run). Here the flags are checked and
//! the protocol resolved in the registry; what runs is the mock engine's (`crate::mock`) or the
//! protocol's (its [`Capabilities`]), with the flags it added read back by it.

use std::sync::Arc;

use super::args::protocol;
use super::args::{MockAgentArgs, MockAgentsArgs, MockFleetArgs, MockRunArgs};
use super::exit::{conclude, console_end, Ended};
use super::signal::{caught_signal, say_interrupted, shutdown_signal};
use crate::error::Error;
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::behavior::{self, For};
use crate::mock::command::{override_platform, stdio_report_notice, FleetText};
use crate::mock::driver::Driver;
use crate::mock::fleet::{FleetFile, Layout};
use crate::mock::line_server::{self, LineService};
use crate::mock::protocol::AgentProtocol;
use crate::mock::session::{Banner, SessionSettings};
use crate::probe::args::{api_key, seed_or_clock};
use crate::protocols::plugin::{ClientFleet, CommandAgent, FleetFlags, ServedAgents};
use crate::protocols::{self, Protocol};
use crate::report::{console, Exit, Report, RunInfo};
use crate::text::Redactor;
use crate::transport::http::BaseUrl;

/// The agents of protocol `name` that the mock engine serves; else a usage error that says what
/// the kit offers for it instead.
fn served_agents(name: &str) -> Result<ServedAgents, Error> {
    protocol(name)?.capabilities().served(name)
}

/// The protocol whose agents a fleet file that names none speaks: the first registered one the
/// mock engine serves.
fn default_served() -> Result<ServedAgents, Error> {
    protocols::REGISTRY
        .iter()
        .find_map(|p| p.capabilities().agents)
        .ok_or_else(|| Error::usage("no protocol's agents are served by the mock engine"))
}

/// `mock agent` of a protocol whose reference peer is a server of its own (see
/// [`ReferenceServer`](crate::protocols::plugin::ReferenceServer)): the flags that do not apply
/// to it refused, then served until interrupted.
async fn serve_reference(
    server: &'static dyn crate::protocols::plugin::ReferenceServer,
    args: &MockAgentArgs,
    behavior: &str,
) -> Result<Ended, Error> {
    use crate::protocols::plugin::{ReferenceAt, Served};
    let mut unused = vec![
        (
            "--stdio, --tcp and --unix",
            args.stdio || args.tcp.is_some() || args.unix.is_some(),
        ),
        ("--scenario", !args.scenario.is_empty()),
        ("--seed", args.seed.is_some()),
        ("--journal", args.run.journal.is_some()),
    ];
    if !server.judges_caller() {
        let output = &args.run.output;
        unused.push((
            "--json, --junit and --html",
            output.json.is_some() || output.junit.is_some() || output.html.is_some(),
        ));
    }
    if let Some((flag, _)) = unused.into_iter().find(|(_, given)| *given) {
        return Err(Error::usage(format!(
            "{flag}: not for --protocol {}: its reference peer is served over HTTP, as it is",
            args.protocol
        )));
    }
    args.run.output.check()?;
    let at = ReferenceAt {
        addr: std::net::SocketAddr::new(args.host, args.port),
        behavior,
    };
    match server.serve(at, Box::pin(shutdown_signal())).await? {
        Served::Judged(report) => conclude(*report, &args.run.output),
        Served::Interrupted => Ok(Ended::Interrupted),
    }
}

pub(super) fn mock_agents(args: MockAgentsArgs) -> Result<Ended, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::run(format!("cannot find the agent-tck binary: {e}")))?;
    let seed = seed_or_clock(args.seed);
    let at = crate::protocols::plugin::AgentSet {
        dir: &args.dir,
        count: args.count,
        seed,
        exe: &exe,
    };
    let agents = protocol(&args.protocol)?
        .capabilities()
        .command_agent
        .ok_or_else(|| {
            Error::usage(format!(
                "--protocol {}: no sets of mock agents ({} has them)",
                args.protocol,
                protocols::agent_set_protocols().join(", ")
            ))
        })?;
    let text = agents.write_set(at)?;
    crate::outln!("{text}");
    Ok(Ended::Verdict(Exit::Passed))
}

pub(super) async fn mock_agent(args: MockAgentArgs) -> Result<Ended, Error> {
    if !crate::mock::fleet::valid_name(&args.name) {
        return Err(Error::usage(format!(
            "--name {:?}: must match ^[A-Za-z][A-Za-z0-9_-]*$",
            args.name
        )));
    }
    let key = api_key(args.api_key.clone())?;
    let protocol = protocol(&args.protocol)?;
    let offers = protocol.capabilities();
    let behaviors = args.behavior.join(",");
    args.protocol_flags.refuse_foreign(protocol)?;
    if let Some(agent) = offers.command_agent {
        let command = CommandAgent {
            name: &args.name,
            behavior: &behaviors,
            seed: seed_or_clock(args.seed),
            journal: args.run.journal.as_deref(),
            flags: &args.protocol_flags.matches,
        };
        return agent.run(command).map(Ended::AgentExit);
    }
    if let Some(server) = offers.reference_server {
        return serve_reference(server, &args, &behaviors).await;
    }
    let served = offers.served(protocol.name())?;
    let seed = seed_or_clock(args.seed);
    let agent = served_agent(&args, served, key, &behaviors, seed)?;
    if args.stdio || args.tcp.is_some() || args.unix.is_some() {
        return serve_line_agent(agent, &args, seed).await;
    }
    let settings = SessionSettings {
        protocol: served.agents,
        agents: vec![agent],
        layout: Layout::PerAgent,
        host: args.host,
        port: args.port,
        advertise: None,
        driver: None,
        expect: args.run.expect(None),
        journal: args.run.journal.clone(),
        journal_body_cap: args.run.journal_body_cap,
        seed,
        serve_after: true,
        strict: args.run.strict,
        banner: Banner::Agent,
        log_requests: args.run.log_requests(),
    };
    run_mock(settings, &args.run).await
}

/// The one agent `mock agent` serves of `served`: its behaviours parsed and checked against its
/// transport (HTTP, or a line one), its flags checked.
fn served_agent(
    args: &MockAgentArgs,
    served: ServedAgents,
    key: Option<String>,
    behaviors: &str,
    seed: u64,
) -> Result<MockAgent, Error> {
    let agents = served.agents;
    let others = protocols::agent_protocols();
    let at = For {
        protocol: agents,
        others: &others,
    };
    let items = behavior::parse_list(behaviors, at)
        .map_err(|e| Error::usage(format!("--behavior: {e}")))?;
    let line = args.stdio || args.tcp.is_some() || args.unix.is_some();
    if line && agents.line_endpoint().is_none() {
        let lines: Vec<String> = others
            .iter()
            .filter(|p| p.line_endpoint().is_some())
            .map(|p| format!("--protocol {}", p.name()))
            .collect();
        return Err(Error::usage(format!(
            "--stdio, --tcp and --unix: {} agents are served over HTTP only (add {})",
            agents.name(),
            lines.join(" or ")
        )));
    }
    behavior::check_fit(&items, agents, !line, args.stdio)
        .map_err(|e| Error::usage(format!("--behavior {e}")))?;
    args.run.output.check()?;
    let profile = Profile::served(&args.name, key);
    let reference = served.reference(&args.name, seed, &args.scenario)?;
    Ok(MockAgent::with_responder(
        agents, profile, items, seed, reference,
    ))
}

/// An agent served on a line transport, and what its report says of the run.
struct LineRun<'a> {
    service: Arc<LineService>,
    args: &'a MockAgentArgs,
    seed: u64,
    /// Whom the report judges; with --tcp 0 the port is known once bound, and `bound` names it.
    target: String,
    bound: std::sync::OnceLock<String>,
    started: std::time::Instant,
    started_at: String,
}

impl LineRun<'_> {
    fn report(&self) -> Report {
        let protocol = self.service.agent.protocol.name();
        let target = self.bound.get().unwrap_or(&self.target).clone();
        let mut run = RunInfo::start("mock", protocol, target, self.seed, self.args.run.strict)
            .made_by(format!("mock agent --protocol {protocol}"));
        run.started = self.started;
        run.started_at = self.started_at.clone();
        let mut report = run.report(self.service.cases(), &Redactor::new(None));
        crate::protocols::stamp(&mut report);
        report
    }
}

/// An agent on stdio (until end of input) or a socket (until interrupted), judging its peer (the
/// harness) as a mock session does.
async fn serve_line_agent(
    agent: MockAgent,
    args: &MockAgentArgs,
    seed: u64,
) -> Result<Ended, Error> {
    let mut service = LineService::judged(agent, &args.run.expect(None));
    for (flag, path) in [
        ("--json", &args.run.output.json),
        ("--junit", &args.run.output.junit),
    ] {
        if let Some(path) = path {
            // The child `forks-and-exits` leaves needs them whatever its working directory.
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            service.linger_args.push(flag.into());
            service.linger_args.push(path.into());
        }
    }
    if let (true, Some(json)) = (args.stdio, &args.run.output.json) {
        // The processes of one run (a per-turn harness starts one a turn) fold one report.
        service
            .keep_journal(json)
            .map_err(|e| Error::run(format!("--json {}: its journal: {e}", json.display())))?;
    }
    // `--tcp PORT` binds --host; `--tcp HOST:PORT` binds HOST.
    let tcp = args
        .tcp
        .as_ref()
        .map(|tcp| tcp.bind_addr(args.host))
        .transpose()
        .map_err(|e| Error::usage(format!("--tcp: {e}")))?;
    let target = match (&tcp, &args.unix) {
        (Some(addr), _) => format!("the harness that connected to tcp://{addr}"),
        (_, Some(path)) => format!("the harness that connected to unix://{}", path.display()),
        _ => "the harness that ran this agent (stdio)".to_string(),
    };
    let run = LineRun {
        service: Arc::new(service),
        args,
        seed,
        target,
        bound: std::sync::OnceLock::new(),
        started: std::time::Instant::now(),
        started_at: crate::report::now_rfc3339(),
    };
    if args.stdio {
        return serve_stdio_agent(&run).await;
    }
    serve_socket_agent(&run, tcp).await?;
    conclude(run.report(), &args.run.output)
}

/// Over stdio the reports are rewritten after every answer (a harness may kill the agent at any
/// moment), the readable report goes to stderr, and the exit status is 0 whatever the verdict:
/// the harness reads it as the agent's.
async fn serve_stdio_agent(run: &LineRun<'_>) -> Result<Ended, Error> {
    let output = &run.args.run.output;
    // Before the first request: a harness that shows or keeps stderr shows this first.
    for line in stdio_report_notice(output) {
        crate::errln!("{line}");
    }
    let rewrite = |_: &LineService| {
        let _ = output.write_quietly(&run.report());
    };
    let served = tokio::select! {
        r = line_server::serve_stdio(run.service.clone(), &rewrite) => r,
        // Signalled to end (TERM, INT): by the harness, it gave up on what it was waiting
        // for; by anyone else, the harness was ended from outside (see `signalled`).
        _ = shutdown_signal() => {
            run.service.signalled();
            Ok(())
        }
    };
    let report = run.report();
    output.write_quietly(&report)?;
    if !run.service.stderr_stuck() {
        let text = console::render(&report, false);
        let shown = if output.quiet {
            console_end(&text)
        } else {
            &text
        };
        crate::err!("{shown}");
    }
    served.map_err(|e| Error::run(format!("stdio: {e}")))?;
    Ok(Ended::Verdict(Exit::Passed))
}

/// On `--tcp` (bound here: `tcp`) or `--unix`, until interrupted.
async fn serve_socket_agent(
    run: &LineRun<'_>,
    tcp: Option<std::net::SocketAddr>,
) -> Result<(), Error> {
    let (service, args) = (&run.service, run.args);
    let protocol = service.agent.protocol.name();
    let stop = tokio_util::sync::CancellationToken::new();
    let served = {
        let stop = stop.clone();
        let signal = shutdown_signal();
        async move {
            signal.await;
            stop.cancel();
        }
    };
    if let Some(addr) = tcp {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::run(format!("cannot listen on {addr}: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::run(e.to_string()))?;
        let _ = run
            .bound
            .set(format!("the harness that connected to tcp://{bound}"));
        crate::outln!(
            "agent-tck mock agent · {protocol} {:?} · newline-delimited JSON · listening on tcp://{bound}",
            service.agent.name()
        );
        tokio::join!(
            line_server::serve_tcp(service.clone(), listener, stop),
            served
        );
    } else if let Some(path) = &args.unix {
        let listener = tokio::net::UnixListener::bind(path)
            .map_err(|e| Error::run(format!("--unix {}: cannot listen: {e}", path.display())))?;
        crate::outln!(
            "agent-tck mock agent · {protocol} {:?} · newline-delimited JSON · listening on unix://{}",
            service.agent.name(),
            path.display()
        );
        tokio::join!(
            line_server::serve_unix(service.clone(), listener, stop),
            served
        );
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// The fleet file `--config` or `--preset` names.
fn fleet_text(args: &MockFleetArgs) -> Result<FleetText, Error> {
    match (&args.config, &args.preset) {
        (Some(path), _) => FleetText::read(path),
        (None, Some(name)) => {
            let (source, text) = protocols::fleet_preset(name)?;
            FleetText::preset(name, source, text, args.print_file)
        }
        (None, None) => Err(Error::usage("give --config FILE or --preset NAME")),
    }
}

/// A flag only a fleet configuring its server takes, given for a fleet of `protocol` that does
/// not: a usage error.
fn refuse_server_setup(args: &MockFleetArgs, protocol: &str) -> Result<(), Error> {
    args.server_setup_flag().map_or(Ok(()), |flag| {
        Err(Error::usage(format!(
            "{flag}: a fleet of protocol {protocol} has no agent definitions for its server to be \
             configured with (the flag is for fleets of clients whose server must know their \
             agents)"
        )))
    })
}

pub(super) async fn mock_fleet(args: MockFleetArgs) -> Result<Ended, Error> {
    let fleet = fleet_text(&args)?;
    if args.print_file {
        // As written, variables and all: a copy to edit, not the fleet as it would run.
        crate::out!("{}", fleet.text);
        return Ok(Ended::Verdict(Exit::Passed));
    }
    // A protocol whose fleets are clients of a server runs the file itself.
    let named = fleet.protocol().and_then(|p| protocols::find(&p));
    if let Some((protocol, clients)) =
        named.and_then(|p| p.capabilities().client_fleet.map(|fleet| (p, fleet)))
    {
        return run_client_fleet(protocol, clients, &fleet, &args).await;
    }
    serve_fleet(&fleet, &args).await
}

/// `mock fleet` of a protocol whose fleets are clients of a server ([`Capabilities::client_fleet`]).
async fn run_client_fleet(
    protocol: &'static dyn Protocol,
    fleet: &'static dyn ClientFleet,
    file: &FleetText,
    args: &MockFleetArgs,
) -> Result<Ended, Error> {
    if !fleet.configures_server() {
        refuse_server_setup(args, protocol.name())?;
    }
    // A fleet of clients records no journal (the journal is what a platform sent the fleet's
    // agents): a flag taken and nothing written would leave an empty promise.
    if args.run.journal.is_some() {
        return Err(Error::usage(format!(
            "--journal: a fleet of protocol {} writes no journal (only fleets whose agents a \
             platform calls record one): leave it out; the report (--json FILE) keeps its \
             verdicts",
            protocol.name()
        )));
    }
    let at = FleetFlags {
        url: args.platform_url.as_deref(),
        seed: args.seed,
        strict: args.run.strict,
        write_config: args.write_config.as_deref(),
        wait_ready: args.wait_ready,
        flags: &args.protocol_flags.matches,
    };
    if args.print_config {
        crate::out!("{}", fleet.server_config(&file.source, &file.text, &at)?);
        return Ok(Ended::Verdict(Exit::Passed));
    }
    args.run.output.check()?;
    // Installed before the fleet prints anything: Ctrl-C (while it waits for its server, or
    // drives it) ends the run saying so, instead of killing it unannounced. The clients'
    // verdicts need the whole run: none is written.
    let signal = caught_signal();
    tokio::select! {
        report = fleet.run(&file.source, &file.text, at) => conclude(report?, &args.run.output),
        by = signal => {
            crate::errln!(
                "interrupted ({by}) before the fleet's verdict: its clients' answers are \
                 judged over the whole run, so no report is written; exit 130, not a verdict"
            );
            Ok(Ended::Interrupted)
        }
    }
}

/// The protocol whose agents a fleet file's agents are: the one it names, else the default.
fn fleet_agents(file: &FleetFile, source: &str) -> Result<&'static dyn AgentProtocol, Error> {
    match &file.protocol {
        None => default_served().map(|served| served.agents),
        Some(name) => served_agents(&name.value)
            .map(|served| served.agents)
            .map_err(|e| {
                Error::usage(format!(
                    "{source}:{}: protocol: {e}",
                    name.referenced.line()
                ))
            }),
    }
}

/// `--shard K/N`: the agents of the fleet that fall in the share K of N; none is a usage error.
fn shard(
    agents: Vec<MockAgent>,
    args: &MockFleetArgs,
    source: &str,
) -> Result<Vec<MockAgent>, Error> {
    let Some(shard) = &args.shard else {
        return Ok(agents);
    };
    let shard = crate::targets::parse_shard(shard)?;
    let mine: Vec<_> = agents
        .into_iter()
        .filter(|a| crate::targets::in_shard(a.name(), shard))
        .collect();
    if mine.is_empty() {
        return Err(Error::usage(format!(
            "--shard {}/{}: no agent of {source} falls in this shard",
            shard.0, shard.1
        )));
    }
    Ok(mine)
}

/// `mock fleet` of agents the mock engine serves: the file's agents served, its platform driven.
async fn serve_fleet(fleet: &FleetText, args: &MockFleetArgs) -> Result<Ended, Error> {
    let source = fleet.source.as_str();
    let file = FleetFile::parse(source, &fleet.text)?;
    let agents_protocol = fleet_agents(&file, source)?;
    refuse_server_setup(args, agents_protocol.name())?;
    let seed = seed_or_clock(args.seed.or(file.seed));
    let others = protocols::agent_protocols();
    let at = For {
        protocol: agents_protocol,
        others: &others,
    };
    let agents = shard(file.agents(source, seed, at)?, args, source)?;
    args.run.output.check()?;
    let mut platform = file.platform.clone();
    override_platform(
        &mut platform,
        args.platform_url.as_deref(),
        args.deliberation_deadline.as_deref(),
        source,
    )?;
    let driver = platform
        .as_ref()
        .map(|p| Driver::new(p, args.platform_token.clone(), agents_protocol))
        .transpose()
        .map_err(|e| Error::usage(format!("{source}: {e}")))?;
    let advertise = args.advertise.clone().or(file.advertise.clone());
    if let Some(a) = &advertise {
        BaseUrl::parse(a).map_err(|e| Error::usage(format!("--advertise: {e}")))?;
    }
    let expect = args.run.expect(driver.as_ref().map(|d| d.timeout));
    let settings = SessionSettings {
        protocol: agents_protocol,
        agents,
        layout: file.layout,
        host: args.host.unwrap_or(file.host),
        port: args.port.unwrap_or(file.port),
        advertise,
        driver,
        expect,
        journal: args.run.journal.clone(),
        journal_body_cap: args.run.journal_body_cap,
        seed,
        serve_after: args.serve,
        strict: args.run.strict,
        banner: Banner::Fleet,
        log_requests: false,
    };
    run_mock(settings, &args.run).await
}

use crate::mock::session::NOT_REACHED;

/// Runs a mock session until it ends or is interrupted, then reports on the platform. A run
/// whose driving (registration, triggers) was cut by Ctrl-C writes its report all the same and
/// exits 130; Ctrl-C that ends serving (nothing left to drive) is the run's normal end.
async fn run_mock(settings: SessionSettings, run: &MockRunArgs) -> Result<Ended, Error> {
    let ran = crate::mock::session::run_to_end(settings, caught_signal()).await?;
    let done = ran
        .report
        .cases
        .iter()
        .filter(|c| !c.message.starts_with(NOT_REACHED))
        .count();
    let by = ran.report.interrupted.as_ref().map(|cut| cut.by);
    let ended = conclude(ran.report, &run.output)?;
    Ok(match by {
        Some(by) => {
            say_interrupted(by, done);
            Ended::Interrupted
        }
        None => ended,
    })
}
