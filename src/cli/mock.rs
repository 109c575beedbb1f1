//! The `mock` commands: `mock agent` (served, or a command run once per call), `mock agents`,
//! `mock fleet` (agents served, or a protocol's clients run), and `mock behaviors`.

use std::sync::Arc;

use super::args::protocol;
use super::args::{MockAgentArgs, MockAgentsArgs, MockFleetArgs, MockRunArgs};
use super::exit::{conclude, console_end, Ended};
use super::signal::{caught_signal, say_interrupted, shutdown_signal};
use crate::error::Error;
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::behavior::{self, For};
use crate::mock::driver::Driver;
use crate::mock::fleet::{FleetFile, Layout};
use crate::mock::protocol::AgentProtocol;
use crate::mock::session::{Banner, SessionSettings};
use crate::probe::args::{api_key, seed_or_clock};
use crate::protocols;
use crate::protocols::plugin::ServedAgents;
use crate::report::{console, Exit, RunInfo};
use crate::text::Redactor;
use crate::transport::http::BaseUrl;

/// The agents of protocol `name`, as the mock engine plays them.
fn agents_of(name: &str) -> Result<&'static dyn AgentProtocol, Error> {
    served_agents(name).map(|served| served.agents)
}

/// The agents of protocol `name` that the mock engine serves; else a usage error that says what
/// the kit offers for it instead.
fn served_agents(name: &str) -> Result<ServedAgents, Error> {
    let offers = protocol(name)?.capabilities();
    offers.agents.ok_or_else(|| nothing_to_serve(name, &offers))
}

/// `--protocol NAME` of a protocol whose agents the kit does not serve: what it offers instead.
fn nothing_to_serve(name: &str, offers: &crate::protocols::plugin::Capabilities) -> Error {
    let mut instead: Vec<String> = offers
        .probes
        .iter()
        .map(|p| format!("probe {}", p.command().get_name()))
        .collect();
    if let Some(lint) = offers.lint {
        instead.push(format!("lint {}", lint.command().get_name()));
    }
    if offers.command_agent.is_some() {
        instead.push(format!("mock agent --protocol {name} --mode plan|execute"));
        instead.push(format!("mock agents --protocol {name}"));
    }
    if offers.client_fleet.is_some() {
        instead.push(format!("mock fleet (a file with `protocol: {name}`)"));
    }
    instead.push(format!("selftest --protocol {name}"));
    Error::usage(format!(
        "--protocol {name}: the kit serves no {name} agent; for {name} it offers {}",
        instead.join(", ")
    ))
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
    let behaviors = args.behavior.join(",");
    let command = crate::protocols::plugin::CommandAgent {
        name: &args.name,
        behavior: &behaviors,
        seed: seed_or_clock(args.seed),
        mode: args.mode.as_deref(),
        task: args.task.as_deref(),
        next: &args.next,
        approved: args.approved,
        journal: args.run.journal.as_deref(),
    };
    if let Some(agent) = protocol.capabilities().command_agent {
        return agent.run(command).map(Ended::AgentExit);
    }
    for (flag, given) in [
        ("--mode", args.mode.is_some()),
        ("--task", args.task.is_some()),
        ("--next", !args.next.is_empty()),
        ("--approved", args.approved),
    ] {
        if given {
            return Err(Error::usage(format!(
                "{flag}: for agents run as a command (--protocol agent-standard), not {}",
                args.protocol
            )));
        }
    }
    if let Some(server) = protocol.capabilities().reference_server {
        return serve_reference(server, &args, &behaviors).await;
    }
    let served = served_agents(&args.protocol)?;
    let agents = served.agents;
    let others = protocols::agent_protocols();
    let at = For {
        protocol: agents,
        others: &others,
    };
    let items = behavior::parse_list(&behaviors, at)
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
    let seed = seed_or_clock(args.seed);
    let profile = Profile {
        name: args.name.clone(),
        domain: "general review".into(),
        capabilities: Vec::new(),
        api_key: key,
    };
    let reference = served.reference(&args.name, seed, &args.scenario)?;
    let agent = MockAgent::with_responder(agents, profile, items, seed, reference);
    if line {
        return serve_line_agent(agent, &args, seed).await;
    }
    let settings = SessionSettings {
        protocol: agents,
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

/// An agent on stdio (until end of input) or a socket (until interrupted), judging its peer (the
/// harness) as a mock session does. Over stdio the reports are rewritten after every answer (a
/// harness may kill the agent at any moment), the readable report goes to stderr, and the exit
/// status is 0 whatever the verdict: the harness reads it as the agent's.
/// What a stdio mock says first on stderr: where its report goes. Harnesses often discard an
/// agent's stderr, where the readable report goes when stdin ends; a report file survives that.
fn stdio_report_notice(output: &crate::report::output::OutputArgs) -> Vec<String> {
    let files: Vec<String> = [
        ("--json", &output.json),
        ("--junit", &output.junit),
        ("--html", &output.html),
    ]
    .into_iter()
    .filter_map(|(flag, path)| {
        let path = path.as_ref()?;
        let shown = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        Some(format!("{flag} {}", shown.display()))
    })
    .collect();
    let first = "agent-tck mock agent (stdio): the readable report goes to stderr when stdin ends";
    if files.is_empty() {
        vec![
            first.to_string(),
            "warning: no report file asked for: the harness may discard stderr; add --json FILE"
                .to_string(),
        ]
    } else {
        vec![format!(
            "{first}; the report files, rewritten after each answer: {}",
            files.join(", ")
        )]
    }
}

async fn serve_line_agent(
    agent: MockAgent,
    args: &MockAgentArgs,
    seed: u64,
) -> Result<Ended, Error> {
    use crate::mock::line_server::{self, LineService};
    let protocol = agent.protocol.name();
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
    let service = Arc::new(service);
    let started = std::time::Instant::now();
    let started_at = crate::report::now_rfc3339();
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
    // With --tcp 0 the port is known once bound: the report names the bound one.
    let bound_target = std::sync::OnceLock::new();
    let report_of = |service: &LineService| {
        let target = bound_target.get().unwrap_or(&target).clone();
        let mut run = RunInfo::start("mock", protocol, target, seed, args.run.strict)
            .made_by(format!("mock agent --protocol {protocol}"));
        run.started = started;
        run.started_at = started_at.clone();
        let mut report = run.report(service.cases(), &Redactor::new(None));
        crate::protocols::stamp(&mut report);
        report
    };
    if args.stdio {
        // Before the first request: a harness that shows or keeps stderr shows this first.
        for line in stdio_report_notice(&args.run.output) {
            crate::errln!("{line}");
        }
        let rewrite = |s: &LineService| {
            let _ = args.run.output.write_quietly(&report_of(s));
        };
        let served = tokio::select! {
            r = line_server::serve_stdio(service.clone(), &rewrite) => r,
            // Signalled to end (TERM, INT): by the harness, it gave up on what it was waiting
            // for; by anyone else, the harness was ended from outside (see `signalled`).
            _ = shutdown_signal() => {
                service.signalled();
                Ok(())
            }
        };
        let report = report_of(&service);
        args.run.output.write_quietly(&report)?;
        if !service.stderr_stuck() {
            let text = console::render(&report, false);
            let shown = if args.run.output.quiet {
                console_end(&text)
            } else {
                &text
            };
            crate::err!("{shown}");
        }
        served.map_err(|e| Error::run(format!("stdio: {e}")))?;
        return Ok(Ended::Verdict(Exit::Passed));
    }
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
        let _ = bound_target.set(format!("the harness that connected to tcp://{bound}"));
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
    conclude(report_of(&service), &args.run.output)
}

/// A variable a built-in preset reads and the environment lacks: the file's usual tip (give
/// a default) cannot be followed in a file built into the binary, so this one says to set it
/// or to write the preset out (--print-file) and edit it. (The fleet substitutes again when it
/// parses: same result.)
fn unset_in_preset(preset: &str, source: &str, text: &str) -> Result<(), Error> {
    match crate::text::substitute_env(source, text) {
        Err(crate::text::DataFileError::UnsetVariable { file, line, name }) => {
            Err(Error::usage(format!(
                "{file}:{line}: ${{{name}}}: the environment variable {name} is not set (the \
                 built-in preset {preset} reads it: set it, as in `{name}=… agent-tck mock fleet \
                 --preset {preset} …`, or write the preset out, `agent-tck mock fleet --preset \
                 {preset} --print-file > fleet.yaml`, edit it and give it with --config fleet.yaml)"
            )))
        }
        // Any other fault of a built-in file is the fleet's parse to report.
        _ => Ok(()),
    }
}

/// The `protocol:` a fleet file names, if it parses that far.
fn fleet_protocol(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Peek {
        protocol: Option<String>,
    }
    serde_saphyr::from_str::<Peek>(text).ok()?.protocol
}

pub(super) async fn mock_fleet(args: MockFleetArgs) -> Result<Ended, Error> {
    // A protocol whose fleets are clients of a server runs the file itself.
    let (source, text) = match (&args.config, &args.preset) {
        (Some(path), _) => (
            path.display().to_string(),
            std::fs::read_to_string(path)
                .map_err(|e| Error::usage(format!("{}: cannot read: {e}", path.display())))?,
        ),
        (None, Some(name)) => {
            let (source, text) = protocols::fleet_preset(name)?;
            if !args.print_file {
                unset_in_preset(name, source, text)?;
            }
            (source.to_string(), text.to_string())
        }
        (None, None) => return Err(Error::usage("give --config FILE or --preset NAME")),
    };
    if args.print_file {
        // As written, variables and all: a copy to edit, not the fleet as it would run.
        crate::out!("{text}");
        return Ok(Ended::Verdict(crate::report::Exit::Passed));
    }
    let setup_flag = args.server_setup_flag();
    let protocol = fleet_protocol(&text).and_then(|p| protocols::find(&p));
    let refused = |name: &str| {
        setup_flag.map_or(Ok(()), |flag| {
            Err(Error::usage(format!(
                "{flag}: a fleet of protocol {name} has no agent definitions for its server to be \
                 configured with (the flag is for fleets of clients whose server must know their \
                 agents)"
            )))
        })
    };
    if let Some(protocol) = protocol {
        let at = crate::protocols::plugin::FleetFlags {
            url: args.platform_url.as_deref(),
            seed: args.seed,
            strict: args.run.strict,
            registry: args.registry.as_deref(),
            write_config: args.write_config.as_deref(),
            wait_ready: args.wait_ready,
        };
        if let Some(fleet) = protocol.capabilities().client_fleet {
            if !fleet.configures_server() {
                refused(protocol.name())?;
            }
            // A fleet of clients records no journal (the journal is what a platform sent the
            // fleet's agents): a flag taken and nothing written would leave an empty promise.
            if args.run.journal.is_some() {
                return Err(Error::usage(format!(
                    "--journal: a fleet of protocol {} writes no journal (only fleets whose agents \
                     a platform calls record one): leave it out; the report (--json FILE) keeps \
                     its verdicts",
                    protocol.name()
                )));
            }
            if args.print_config {
                crate::out!("{}", fleet.server_config(&source, &text, &at)?);
                return Ok(Ended::Verdict(crate::report::Exit::Passed));
            }
            args.run.output.check()?;
            // Installed before the fleet prints anything: Ctrl-C (while it waits for its server,
            // or drives it) ends the run saying so, instead of killing it unannounced. The
            // clients' verdicts need the whole run: none is written.
            let signal = caught_signal();
            return tokio::select! {
                report = fleet.run(&source, &text, at) => conclude(report?, &args.run.output),
                by = signal => {
                    crate::errln!(
                        "interrupted ({by}) before the fleet's verdict: its clients' answers are \
                         judged over the whole run, so no report is written; exit 130, not a verdict"
                    );
                    Ok(Ended::Interrupted)
                }
            };
        }
    }
    let (source, file) = match (&args.config, &args.preset) {
        (Some(path), _) => (path.display().to_string(), FleetFile::from_file(path)?),
        (None, Some(name)) => {
            let (source, text) = protocols::fleet_preset(name)?;
            (source.to_string(), FleetFile::parse(source, text)?)
        }
        (None, None) => return Err(Error::usage("give --config FILE or --preset NAME")),
    };
    let agents_protocol = match &file.protocol {
        None => agents_of(crate::protocols::roundtable::NAME)?,
        Some(name) => agents_of(&name.value).map_err(|e| {
            Error::usage(format!(
                "{source}:{}: protocol: {e}",
                name.referenced.line()
            ))
        })?,
    };
    refused(
        file.protocol
            .as_ref()
            .map_or(crate::protocols::roundtable::NAME, |p| p.value.as_str()),
    )?;
    let seed = seed_or_clock(args.seed.or(file.seed));
    let others = protocols::agent_protocols();
    let agents = file.agents(
        &source,
        seed,
        For {
            protocol: agents_protocol,
            others: &others,
        },
    )?;
    let agents = match &args.shard {
        Some(shard) => {
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
            mine
        }
        None => agents,
    };
    args.run.output.check()?;
    let mut platform = file.platform.clone();
    if let Some(url) = &args.platform_url {
        let spec = platform.as_mut().ok_or_else(|| {
            Error::usage(format!(
                "--platform-url: {source} has no platform: section to point at it (add one \
                 with register: and trigger:)"
            ))
        })?;
        BaseUrl::parse(url).map_err(|e| Error::usage(format!("--platform-url: {e}")))?;
        spec.url = url.clone();
    }
    if let Some(deadline) = &args.deliberation_deadline {
        crate::units::parse_duration(deadline)
            .map_err(|e| Error::usage(format!("--deliberation-deadline: {e}")))?;
        let trigger = platform
            .as_mut()
            .and_then(|p| p.trigger.as_mut())
            .ok_or_else(|| {
                Error::usage(format!(
                    "--deliberation-deadline: {source} has no platform.trigger section, so no \
                     deliberation to wait for"
                ))
            })?;
        trigger.deadline = Some(deadline.clone());
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::behaviors::{catalogue, list_behaviors};

    #[test]
    fn a_protocol_with_nothing_to_serve_is_told_what_the_kit_offers_instead() {
        let mut offers = protocols::find("connector").unwrap().capabilities();
        offers.agents = None;
        assert_eq!(
            nothing_to_serve("connector", &offers).to_string(),
            "--protocol connector: the kit serves no connector agent; for connector it offers \
             probe connector, mock fleet (a file with `protocol: connector`), selftest \
             --protocol connector"
        );
        let offers = protocols::find("agent-standard").unwrap().capabilities();
        let Err(e) = served_agents("agent-standard") else {
            panic!("agent-standard's agents are commands, not served")
        };
        assert!(matches!(e, Error::Usage(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            nothing_to_serve("agent-standard", &offers).to_string()
        );
        assert!(
            e.to_string().contains(
                "probe agent-standard, probe orchestration, lint agents, \
             mock agent --protocol agent-standard --mode plan|execute"
            ),
            "{e}"
        );
    }

    #[test]
    fn every_preset_parses_and_builds_its_agents() {
        for p in protocols::REGISTRY {
            let offers = p.capabilities();
            for (name, source, text) in offers.fleet_presets {
                // A protocol whose fleets are clients parses its own (tested with it).
                let Some(served) = offers.agents else {
                    assert_eq!(fleet_protocol(text).as_deref(), Some(p.name()), "{name}");
                    continue;
                };
                let file = FleetFile::parse(source, text).unwrap();
                let others = protocols::agent_protocols();
                let at = For {
                    protocol: served.agents,
                    others: &others,
                };
                let agents = file.agents(source, 1, at).unwrap_or_else(|e| panic!("{e}"));
                assert!(agents.len() >= 10, "{name}: {} agents", agents.len());
            }
        }
        assert!(protocols::fleet_preset("calm")
            .unwrap_err()
            .to_string()
            .contains("chaos, slow"));
    }

    #[test]
    fn every_client_fleets_behaviours_are_listed_under_their_protocol() {
        let listing = list_behaviors();
        let mut fleets = 0;
        for p in protocols::REGISTRY {
            let Some(fleet) = p.capabilities().client_fleet else {
                continue;
            };
            fleets += 1;
            let heading = format!("Behaviours of {} fleet clients", p.name());
            let at = listing
                .find(&heading)
                .unwrap_or_else(|| panic!("{heading}"));
            let section = &listing[at..];
            assert!(!fleet.behaviors().is_empty(), "{}", p.name());
            for b in fleet.behaviors() {
                assert!(
                    section.contains(&format!("  {}\n      {}\n", b.name, b.what)),
                    "{}: {}",
                    p.name(),
                    b.name
                );
                if !b.expects.is_empty() {
                    assert!(
                        section.contains(&format!("      expected: {}\n", b.expects)),
                        "{}: {}",
                        p.name(),
                        b.name
                    );
                }
            }
        }
        assert_eq!(
            fleets, 2,
            "the Librarian's and the connector's client fleets"
        );
    }

    #[test]
    fn the_readme_documents_every_behaviour() {
        let readme = include_str!("../../README.md");
        for (name, what, _, _) in catalogue() {
            assert!(
                readme.contains(&format!("| `{name}` | {}", what.replace('|', "\\|"))),
                "{name}"
            );
        }
    }

    /// The Librarian's and the connector's flaws and the agent standard's behaviours are in the
    /// one listing, each under its protocol, and each is a name its matrix check takes over
    /// its transports, and a row of its matrix plays it.
    #[test]
    fn every_protocols_own_behaviours_are_listed_checked_and_played() {
        let listing = list_behaviors();
        let matrices = crate::selftest::matrix::Matrix::builtin().unwrap();
        let mut protocols_with_own = Vec::new();
        for p in protocols::REGISTRY {
            let offers = p.capabilities();
            if offers.behaviors.is_empty() {
                continue;
            }
            protocols_with_own.push(p.name());
            let heading = format!("Behaviours of the {} ", p.name());
            let section = &listing[listing.find(&heading).expect(&heading)..];
            let matrix = matrices
                .iter()
                .find(|m| m.protocol.name() == p.name())
                .expect("a matrix");
            for b in offers.behaviors {
                assert!(section.contains(&format!("\n  {}\n      {}\n", b.name, b.what)));
                for transport in b.transports {
                    offers
                        .selftest
                        .check_behavior(b.bare_name(), transport)
                        .unwrap_or_else(|e| panic!("{} over {transport}: {e}", b.name));
                }
                assert!(
                    matrix.file.rows.iter().any(|row| {
                        let played = &row.behavior.value;
                        played.split([',', ':']).next() == Some(b.bare_name())
                    }),
                    "{}: no row of {} plays {}",
                    p.name(),
                    matrix.source,
                    b.name
                );
            }
            assert!(offers
                .selftest
                .check_behavior("no-such-flaw", offers.behaviors[0].transports[0])
                .is_err());
        }
        assert_eq!(
            protocols_with_own,
            ["librarian", "connector", "agent-standard"]
        );
    }
}
