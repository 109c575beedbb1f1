//! `agent-tck proxy` (a real platform and real agents, judged from the traffic between them)
//! and `agent-tck judge` (a recording of such traffic, judged again offline): the flags checked
//! and the protocol resolved here; the run is the proxy engine's ([`crate::proxy`]).

use std::time::Duration;

use super::args::{protocol, JudgeArgs, ProxyArgs, ReplayArgs};
use super::exit::{conclude, Ended};
use super::signal::caught_signal;
use crate::error::Error;
use crate::mock::behavior::{self, For, Item};
use crate::mock::protocol::{AgentProtocol, PlatformExpect};
use crate::probe::args::seed_or_clock;
use crate::probe::traffic::TrafficLimits;
use crate::probe::Suite;
use crate::protocols;
use crate::proxy::relay::{CallsBack, RelaySettings};
use crate::proxy::run::{AgentAt, ProxySettings};
use crate::proxy::server::{ProxiedServer, ServerFault, ServerSettings};
use crate::transport::http::BaseUrl;

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
                    (c.agents.is_some() && c.traffic_suite.is_some()) || c.calls_back.is_some()
                })
                .map(|p| p.name())
                .collect();
            let before_servers = server_protocols();
            Err(Error::usage(format!(
                "--protocol {name}: the proxy does not stand between its parties yet (it does for: {})",
                able.iter().chain(&before_servers).copied().collect::<Vec<_>>().join(", ")
            )))
        }
    }
}

/// What the user says the platform does: its timeout (default 120 s) and its turn limit.
fn expect_of(args: &ProxyArgs) -> PlatformExpect {
    PlatformExpect {
        timeout: args.platform_timeout.unwrap_or(Duration::from_secs(120)),
        max_turns: args.expect_max_turns,
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

/// `--fault NAME=request:…`: a fault on the platform's requests to NAME, not on its answers.
const REQUEST_PREFIX: &str = "request:";

/// Refuses a `--fault NAME=request:…` where requests are not bent, saying `why`.
fn no_request_faults(faults: &[String], why: &str) -> Result<(), Error> {
    match faults.iter().find(|f| {
        f.split_once('=')
            .is_some_and(|(_, b)| b.starts_with(REQUEST_PREFIX))
    }) {
        Some(text) => Err(Error::usage(format!("--fault {text}: {why}"))),
        None => Ok(()),
    }
}

/// `BEHAVIOUR[@ENDPOINT][:P%]` as the mock's behaviour list: the share becomes `flaky`.
fn fault_items(
    text: &str,
    protocol: &'static dyn AgentProtocol,
) -> Result<Vec<Item>, behavior::BehaviorError> {
    let (items, share) =
        crate::proxy::share::split(text).map_err(|why| behavior::BehaviorError::item(text, why))?;
    let mut list = items.to_string();
    if share < 1.0 {
        list.push_str(&format!(",flaky:{share}"));
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

/// `--agent NAME=URL`, `--agent-key NAME=KEY` and `--fault NAME=…` as given.
struct Flags<'a> {
    agents: &'a [String],
    keys: &'a [String],
    faults: &'a [String],
}

/// The agents as the flags give them, each with its key and faults (`protocol`: the agents
/// the faults are the mock's behaviours of; None: they take none).
fn agents_of(
    flags: Flags<'_>,
    protocol: Option<&'static dyn AgentProtocol>,
) -> Result<Vec<AgentAt>, Error> {
    let mut agents: Vec<AgentAt> = Vec::new();
    for text in flags.agents {
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
            requests: Vec::new(),
        });
    }
    let find = |flag: &str, name: &str| -> Result<usize, Error> {
        agents.iter().position(|a| a.name == name).ok_or_else(|| {
            Error::usage(format!(
                "{flag} {name}=…: no --agent {name}=URL (the agents: {})",
                flags
                    .agents
                    .iter()
                    .filter_map(|a| a.split_once('=').map(|(n, _)| n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    };
    let mut keys = Vec::new();
    for text in flags.keys {
        // The key is never repeated in a message.
        let (name, key) = text
            .split_once('=')
            .filter(|(_, k)| !k.trim().is_empty())
            .ok_or_else(|| Error::usage("--agent-key: expected NAME=KEY"))?;
        keys.push((find("--agent-key", name)?, key.to_string()));
    }
    let mut faults = Vec::new();
    let mut requests = Vec::new();
    for text in flags.faults {
        let (name, fault) = named("--fault", text, "BEHAVIOUR")?;
        let Some(protocol) = protocol else {
            return Err(Error::usage(format!(
                "--fault {text}: these agents take no faults"
            )));
        };
        if let Some(on_request) = fault.strip_prefix(REQUEST_PREFIX) {
            let parsed = crate::proxy::bend::parse(on_request, protocol)
                .map_err(|e| Error::usage(format!("--fault {name}={fault}: {e}")))?;
            requests.push((find("--fault", name)?, parsed));
            continue;
        }
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
    for (i, fault) in requests {
        agents[i].requests.push(fault);
    }
    Ok(agents)
}

/// The protocols whose server the proxy stands before.
fn server_protocols() -> Vec<&'static str> {
    protocols::REGISTRY
        .iter()
        .filter(|p| p.capabilities().proxied_server.is_some())
        .map(|p| p.name())
        .collect()
}

/// The protocol's server as the proxy stands before it, if its platform is a server its agents
/// call.
fn proxied_server(name: &str) -> Result<Option<&'static dyn ProxiedServer>, Error> {
    Ok(protocol(name)?.capabilities().proxied_server)
}

/// `--fault NAME=FAULT[@PATH][:P%]` before a server: on the answers to client NAME (`all`:
/// every client), at paths that start with PATH, on P% of them.
fn server_fault(text: &str, proxied: &dyn ProxiedServer) -> Result<ServerFault, Error> {
    let (client, fault) = named("--fault", text, "FAULT")?;
    let wrong = |what: String| Error::usage(format!("--fault {text}: {what}"));
    let (rest, share) = crate::proxy::share::split(fault).map_err(wrong)?;
    let (step, at) = match rest.split_once('@') {
        Some((step, at)) => (step, Some(at.to_string())),
        None => (rest, None),
    };
    Ok(ServerFault {
        client: (client != "all").then(|| client.to_string()),
        at,
        share,
        fault: proxied.fault(step).map_err(wrong)?,
        source: text.to_string(),
    })
}

/// `agent-tck proxy --protocol P --server URL`: the proxy before a server, its clients judged
/// by the client rules and its answers by the server rules.
async fn proxy_server(
    args: ProxyArgs,
    proxied: &'static dyn ProxiedServer,
) -> Result<Ended, Error> {
    let name = &args.protocol;
    if !args.agents.is_empty() {
        return Err(Error::usage(format!(
            "--agent: the {name} platform is a server its agents call, so the proxy stands \
             before the server, not before agents: give --server URL (the real server) and \
             point the agents at the proxy's URL; each is judged as a client, named by its \
             agent_id (--agent-key NAME=KEY to judge its bearer)"
        )));
    }
    if args.deliberations.is_some() {
        return Err(Error::usage(format!(
            "--deliberations: {name} has no deliberations; end the run with --duration or Ctrl-C"
        )));
    }
    if args.judging != crate::proxy::judging::Judging::Every {
        return Err(Error::usage(format!(
            "--judging: the {name} server's answers and its clients' requests are judged as \
             they pass (their rules count and time each exchange); --judging spare is for the \
             agent rules of the protocols whose agents the proxy stands before"
        )));
    }
    if args.platform_timeout.is_some() {
        return Err(Error::usage(format!(
            "--platform-timeout: the {name} platform is the server, which waits on no agent; \
             --timeout bounds the proxy's wait for the server's answer"
        )));
    }
    let server = args.server.as_deref().ok_or_else(|| {
        Error::usage(format!(
            "--protocol {name}: give --server URL, the real server the agents call"
        ))
    })?;
    let server =
        BaseUrl::parse(server).map_err(|e| Error::usage(format!("--server {server}: {e}")))?;
    let mut keys: Vec<(String, String)> = Vec::new();
    for text in &args.agent_keys {
        // The key is never repeated in a message.
        let (agent, key) = text
            .split_once('=')
            .filter(|(_, k)| !k.trim().is_empty())
            .ok_or_else(|| Error::usage("--agent-key: expected NAME=KEY"))?;
        if keys.iter().any(|(n, _)| n == agent) {
            return Err(Error::usage(format!("--agent-key {agent}: given twice")));
        }
        keys.push((agent.to_string(), key.to_string()));
    }
    no_request_faults(
        &args.faults,
        &format!("the clients' requests are not bent for --protocol {} (faults on the platform's requests work for round table and execute_task over HTTP); --fault CLIENT=FAULT bends the server's answers", args.protocol),
    )?;
    let faults = args
        .faults
        .iter()
        .map(|text| server_fault(text, proxied))
        .collect::<Result<Vec<_>, _>>()?;
    let seed = seed_or_clock(args.seed);
    let running = crate::proxy::server::start(ServerSettings {
        protocol: protocol(name)?.name(),
        proxied,
        server,
        keys,
        faults,
        listen: args.listen,
        timeout: args.timeout,
        duration: args.duration,
        record: args.record.clone(),
        seed,
        strict: args.strict,
        log: args.log && !args.output.quiet,
    })
    .await?;
    announce(
        &format!(
            "agent-tck proxy ({name}) on {} (seed {seed}): give the agents this URL in place of the server's",
            running.url()
        ),
        &[(running.url(), running.server())],
    );
    let stop = async { format!("{}", caught_signal().await) };
    let report = running.until(stop).await?;
    conclude(report, &args.output)
}

/// What a running proxy prints first: `head`, each URL it serves and where it goes, and how to
/// end it.
fn announce(head: &str, routes: &[(String, String)]) {
    crate::outln!("{head}");
    for (proxied, real) in routes {
        crate::outln!("  {proxied}  ->  {real}");
    }
    crate::outln!("Ctrl-C ends the run and writes the reports");
}

/// The protocol's relay, when its agents call the platform back (the connector's).
fn calls_back(name: &str) -> Result<Option<&'static dyn CallsBack>, Error> {
    Ok(protocol(name)?.capabilities().calls_back)
}

/// `agent-tck proxy` of a protocol whose agents call the platform back: the flags it takes,
/// checked, and the relay served until Ctrl-C or `--duration`.
async fn relay(args: ProxyArgs, calls_back: &'static dyn CallsBack) -> Result<Ended, Error> {
    let name = args.protocol.as_str();
    let refuse = |flag: &str| {
        Error::usage(format!(
            "{flag}: not for --protocol {name} (its agents are judged on their acknowledgements and callbacks)"
        ))
    };
    if !args.agent_keys.is_empty() {
        return Err(refuse("--agent-key"));
    }
    if args.deliberations.is_some() {
        return Err(refuse("--deliberations"));
    }
    if args.judging != crate::proxy::judging::Judging::Every {
        return Err(refuse("--judging spare"));
    }
    no_request_faults(
        &args.faults,
        &format!("the server's forwards are not bent for --protocol {name} (faults on the platform's requests work for round table and execute_task over HTTP); --fault NAME=BEHAVIOUR bends the agent's acknowledgements and callbacks"),
    )?;
    let flags = Flags {
        agents: &args.agents,
        keys: &[],
        faults: &[],
    };
    let mut agents: Vec<(String, BaseUrl, Vec<String>)> = agents_of(flags, None)?
        .into_iter()
        .map(|a| (a.name, a.base, Vec::new()))
        .collect();
    // The faults are the protocol's to read: the relay says which it knows.
    for text in &args.faults {
        let (name, fault) = named("--fault", text, "BEHAVIOUR")?;
        let agent = agents
            .iter_mut()
            .find(|a| a.0 == name)
            .ok_or_else(|| Error::usage(format!("--fault {name}=…: no --agent {name}=URL")))?;
        agent.2.push(fault.to_string());
    }
    let seed = seed_or_clock(args.seed);
    let settings = RelaySettings {
        protocol: protocol(name)?.name(),
        calls_back,
        agents,
        listen: args.listen,
        reply_timeout: args.timeout,
        deadline: args.platform_timeout.unwrap_or(Duration::from_secs(120))
            + Duration::from_secs(30),
        duration: args.duration,
        record: args.record.clone(),
        seed,
        strict: args.strict,
        log: args.log && !args.output.quiet,
    };
    let running = crate::proxy::relay::start(settings).await?;
    announce(
        &format!(
            "agent-tck proxy ({name}) on http://{} (seed {seed}): give the platform each agent's proxy URL; the agents are given the proxy's callback URLs",
            running.addr
        ),
        &running.routes(),
    );
    let stop = async { format!("{}", caught_signal().await) };
    let report = running.until(stop).await?;
    conclude(report, &args.output)
}

/// `agent-tck proxy`: serves until Ctrl-C, `--duration` or `--deliberations`, then reports.
pub(super) async fn proxy(args: ProxyArgs) -> Result<Ended, Error> {
    args.output.check()?;
    if let Some(command) = &args.stdio {
        return proxy_stdio(command, &args).await;
    }
    if let Some(calls_back) = calls_back(&args.protocol)? {
        return relay(args, calls_back).await;
    }
    if let Some(server) = proxied_server(&args.protocol)? {
        return proxy_server(args, server).await;
    }
    if args.server.is_some() {
        return Err(Error::usage(format!(
            "--server: the proxy stands before a server only for a protocol whose platform is \
             one ({}); the {} platform calls its agents: give --agent NAME=URL for each",
            server_protocols().join(", "),
            args.protocol
        )));
    }
    if args.agents.is_empty() {
        return Err(Error::usage(
            "--agent NAME=URL: give each real agent the platform calls (at least one)",
        ));
    }
    let (agents_protocol, suite) = proxied(&args.protocol)?;
    let flags = Flags {
        agents: &args.agents,
        keys: &args.agent_keys,
        faults: &args.faults,
    };
    let agents = agents_of(flags, Some(agents_protocol))?;
    let seed = seed_or_clock(args.seed);
    let settings = ProxySettings {
        protocol: agents_protocol,
        suite,
        agents,
        listen: args.listen,
        expect: expect_of(&args),
        limits: TrafficLimits {
            max_body: args.max_body,
            max_field: 50_000,
            timeout: args.timeout,
            labelled: true,
        },
        duration: args.duration,
        deliberations: args.deliberations,
        record: args.record.clone(),
        seed,
        strict: args.strict,
        log: args.log && !args.output.quiet,
        judging: args.judging,
    };
    let running = crate::proxy::run::start(settings).await?;
    announce(
        &format!(
            "agent-tck proxy ({}) on http://{} (seed {seed}): register each agent with the platform at its proxy URL",
            args.protocol, running.addr
        ),
        &running.routes(),
    );
    let stop = async { format!("{}", caught_signal().await) };
    let report = running.until(stop).await?;
    conclude(report, &args.output)
}

/// `agent-tck proxy --stdio CMD`: the harness's agent command, relaying to the real agent and
/// judging both; exits with the agent's status (the verdicts are the reports').
async fn proxy_stdio(command: &str, args: &ProxyArgs) -> Result<Ended, Error> {
    use crate::proxy::stdio::{StdioSettings, AGENT};
    if !args.agents.is_empty() {
        return Err(Error::usage(
            "--stdio and --agent: one or the other (--stdio CMD is the harness's agent command, \
             relaying to the agent it starts; --agent NAME=URL serves agents over HTTP)",
        ));
    }
    let (agents_protocol, suite) = proxied(&args.protocol)?;
    if agents_protocol.line_endpoint().is_none()
        || args.protocol != crate::protocols::execute_task::NAME
    {
        return Err(Error::usage(format!(
            "--stdio: --protocol {} is not spoken over stdio; the proxy relays stdio for --protocol {} only",
            args.protocol,
            crate::protocols::execute_task::NAME
        )));
    }
    if args.deliberations.is_some() {
        return Err(Error::usage(
            "--deliberations: not with --stdio (one process relays one conversation, and ends with the agent)",
        ));
    }
    if args.server.is_some() {
        return Err(Error::usage(
            "--server: not with --stdio (the agent is the command --stdio starts)",
        ));
    }
    if args.judging != crate::proxy::judging::Judging::Every {
        return Err(Error::usage(
            "--judging spare: not with --stdio (one conversation's answers are judged as they pass)",
        ));
    }
    let argv = crate::transport::stdio::split_command(command)
        .map_err(|e| Error::usage(format!("--stdio {command:?}: {e}")))?;
    let mut faults = Vec::new();
    let mut requests = Vec::new();
    for text in &args.faults {
        let (name, fault) = named("--fault", text, "BEHAVIOUR")?;
        if name != AGENT {
            return Err(Error::usage(format!(
                "--fault {name}=…: under --stdio the agent is named {AGENT} (--fault {AGENT}={fault})"
            )));
        }
        if let Some(on_request) = fault.strip_prefix(REQUEST_PREFIX) {
            let parsed = crate::proxy::bend::parse(on_request, agents_protocol)
                .map_err(|e| Error::usage(format!("--fault {text}: {e}")))?;
            if let Some(why) = crate::proxy::bend::not_over_lines(&parsed) {
                return Err(Error::usage(format!("--fault {text}: {why}")));
            }
            requests.push(parsed);
            continue;
        }
        let items = fault_items(fault, agents_protocol)
            .map_err(|e| Error::usage(format!("--fault {text}: {e}")))?;
        line_faults(&items).map_err(|why| Error::usage(format!("--fault {text}: {why}")))?;
        faults.extend(items);
    }
    let mut secrets = Vec::new();
    for text in &args.agent_keys {
        // The key is never repeated in a message.
        let (name, key) = text
            .split_once('=')
            .filter(|(_, k)| !k.trim().is_empty())
            .ok_or_else(|| Error::usage("--agent-key: expected NAME=KEY"))?;
        if name != AGENT {
            return Err(Error::usage(format!(
                "--agent-key {name}=…: under --stdio the agent is named {AGENT}"
            )));
        }
        secrets.push(key.to_string());
    }
    let record = args.record.as_deref().map(stdio_recording).transpose()?;
    let seed = seed_or_clock(args.seed);
    let settings = StdioSettings {
        protocol: agents_protocol,
        suite,
        argv,
        faults,
        requests,
        expect: expect_of(args),
        limits: TrafficLimits {
            max_body: args.max_body,
            max_field: 50_000,
            timeout: args.timeout,
            // Lines carry no header fields.
            labelled: false,
        },
        record,
        seed,
        strict: args.strict,
        log: args.log && !args.output.quiet,
        secrets,
    };
    // Everything of ours goes to stderr: stdout carries the protocol's lines only.
    let stop = async {
        match args.duration {
            Some(d) => tokio::select! {
                s = caught_signal() => format!("{s}"),
                () = tokio::time::sleep(d) => format!("--duration {}", humantime::format_duration(d)),
            },
            None => format!("{}", caught_signal().await),
        }
    };
    let end = crate::proxy::stdio::run(settings, stop).await?;
    let mut report = end.report;
    crate::protocols::stamp(&mut report);
    args.output.apply_baseline(&mut report)?;
    let text = crate::report::console::render(&report, false);
    let shown = if args.output.quiet {
        super::exit::console_end(&text)
    } else {
        &text
    };
    crate::err!("{shown}");
    args.output.write(&report)?;
    // The harness sees the agent's own status: 128 + the signal's number when one ended it.
    let code = match end.status {
        Some(status) => {
            use std::os::unix::process::ExitStatusExt;
            status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1)
        }
        None => 1,
    };
    Ok(Ended::AgentExit(u8::try_from(code).unwrap_or(1)))
}

/// The faults that make sense on a line: the content ones and the timing ones (hang, slow);
/// not a fault below HTTP (a TCP reset has no line to bend), nor the stdio mock's own
/// behaviours (a banner, an early exit: the real agent's to show).
fn line_faults(items: &[Item]) -> Result<(), String> {
    use crate::mock::behavior::kind::Scope;
    use crate::mock::behavior::What;
    for item in items {
        if let What::Behavior(kind) = &item.what {
            match kind.scope() {
                Scope::Any => {}
                Scope::Http => {
                    return Err(format!(
                        "{} is a fault below HTTP (a connection's), and --stdio relays lines: \
                         use a fault on the answer's content or time (malformed-json, \
                         null-bytes, oversized-field, injection, hang, slow)",
                        item.source
                    ))
                }
                Scope::Stdio => {
                    return Err(format!(
                        "{} is what a mock stdio agent does of itself, not a fault the proxy \
                         puts on a real agent's answer line",
                        item.source
                    ))
                }
            }
        }
    }
    Ok(())
}

/// `--record` under `--stdio`: this process's own file. A harness starts one proxy per
/// conversation, so many write at once: each writes its own file in a directory (`DIR/`, JSON
/// lines; `DIR/*.har`, HAR: the `*` is the conversation's start and pid), and `agent-tck judge
/// DIR` judges them together. A single file shared by processes is refused: a HAR is one JSON
/// document, and a process killed mid-write would spoil the lines of the others.
fn stdio_recording(path: &std::path::Path) -> Result<std::path::PathBuf, Error> {
    let text = path.to_string_lossy();
    let name = crate::proxy::stdio::conversation_name();
    let (dir, file) = if path.is_dir() || text.ends_with('/') {
        (path.to_path_buf(), format!("{name}.jsonl"))
    } else {
        match path.file_name().map(|f| f.to_string_lossy().into_owned()) {
            Some(f) if f.contains('*') => (
                path.parent()
                    .map(std::path::Path::to_path_buf)
                    .unwrap_or_default(),
                f.replacen('*', &name, 1),
            ),
            _ => {
                return Err(Error::usage(format!(
                    "--record {text}: under --stdio each conversation is its own process, and \
                     they cannot share one file: give a directory (--record {}/, a JSON lines \
                     file per conversation) or a pattern (--record '{}/*.har'); `agent-tck judge \
                     DIR` judges them together",
                    text.trim_end_matches(".har").trim_end_matches(".jsonl"),
                    text.trim_end_matches(".har").trim_end_matches(".jsonl"),
                )))
            }
        }
    };
    let dir = if dir.as_os_str().is_empty() {
        std::path::PathBuf::from(".")
    } else {
        dir
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        Error::usage(format!(
            "--record {text}: cannot create {}: {e}",
            dir.display()
        ))
    })?;
    Ok(dir.join(file))
}

/// A proxy run's recording: its entries and the run's settings; a usage error naming the file
/// when it cannot be read or holds no settings.
/// (the entries, the run's settings, and when the recording ends when it was cut before its
/// close).
type Recording = (
    Vec<crate::judge::Entry>,
    crate::proxy::settings::RunSettings,
    Option<f64>,
);

fn recording(file: &std::path::Path) -> Result<Recording, Error> {
    let shown = file.display();
    let read =
        crate::judge::record::read_recording(file).map_err(|e| Error::usage(e.to_string()))?;
    let mut entries = read.entries;
    let cut = if read.cut {
        crate::proxy::judge::close_cut(&mut entries)
    } else {
        None
    };
    let settings = crate::proxy::settings::RunSettings::of(&entries).ok_or_else(|| {
        Error::usage(format!(
            "{shown}: no proxy settings in it (a recording of `agent-tck proxy --record`, which writes them as it starts, is what this reads)"
        ))
    })?;
    Ok((entries, settings, cut))
}

/// `agent-tck judge FILE`: a proxy run's recording judged again, with the run's settings.
pub(super) fn judge(args: JudgeArgs) -> Result<Ended, Error> {
    args.output.check()?;
    if args.file.is_dir() {
        return judge_directory(&args);
    }
    let shown = args.file.display().to_string();
    let (entries, settings, cut) = recording(&args.file)?;
    let name = args.protocol.as_deref().unwrap_or(&settings.protocol);
    let unjudged = |e: &dyn std::fmt::Display| Error::usage(format!("{shown}: {e}"));
    let mut cases = match (calls_back(name)?, proxied_server(name)?) {
        (Some(calls_back), _) => {
            let agents: Vec<(String, Vec<String>)> = settings
                .agents
                .iter()
                .map(|a| (a.name.clone(), a.faults.clone()))
                .collect();
            let relay = calls_back
                .relay(&agents, settings.limits().timeout, settings.seed)
                .map_err(|e| Error::usage(format!("{shown}: the recorded --fault {e}")))?;
            crate::proxy::relay::judge(relay.as_ref(), &entries).map_err(|e| unjudged(&e))?
        }
        (None, Some(server)) => {
            crate::proxy::server::judge(&entries, server, &settings).map_err(|e| unjudged(&e))?
        }
        (None, None) => {
            let (protocol, suite) = proxied(name)?;
            crate::proxy::judge::judge(&entries, protocol, suite, &settings)
                .map_err(|e| unjudged(&e))?
        }
    };
    if let Some(at_ms) = cut {
        cases.insert(0, crate::proxy::judge::cut_case(at_ms));
    }
    let report = crate::proxy::report::report_of(
        name,
        format!("the platform and agents recorded in {shown}"),
        (settings.seed, args.strict),
        cases,
        &crate::text::Redactor::new(Vec::new()),
    );
    conclude(report, &args.output)
}

/// `agent-tck judge DIR`: every recording in DIR (`proxy --stdio --record DIR/`, a file per
/// conversation) judged together, as one run; a recording cut by its process's death fails
/// `run.completed`, naming it.
fn judge_directory(args: &JudgeArgs) -> Result<Ended, Error> {
    let shown = args.file.display().to_string();
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&args.file)
        .map_err(|e| Error::usage(format!("{shown}: {e}")))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.is_file()
                && path.extension().is_some_and(|x| {
                    x.eq_ignore_ascii_case("jsonl") || x.eq_ignore_ascii_case("har")
                })
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::usage(format!(
            "{shown}: no recording in it (a directory of `proxy --stdio --record DIR/` holds a .jsonl or .har file per conversation)"
        )));
    }
    // A file with nothing in it is a conversation whose proxy was killed before it wrote
    // anything: counted as cut, not an error that hides the others.
    let total = files.len();
    let mut empty = Vec::new();
    files.retain(|f| match std::fs::metadata(f) {
        Ok(m) if m.len() == 0 => {
            empty.push(format!("{} (empty)", f.display()));
            false
        }
        _ => true,
    });
    if files.is_empty() {
        return Err(Error::usage(format!(
            "{shown}: every recording in it is empty (their proxies were killed before they wrote anything): {}",
            empty.join(", ")
        )));
    }
    let mut read: Vec<Recording> = files
        .iter()
        .map(|f| recording(f))
        .collect::<Result<_, _>>()?;
    // JSON lines are whole line by line, but a conversation whose process was killed has no
    // close: it is cut too.
    for (entries, _, cut) in &mut read {
        if cut.is_none() {
            *cut = crate::proxy::judge::close_cut(entries);
        }
    }
    let name = args
        .protocol
        .as_deref()
        .unwrap_or(&read[0].1.protocol)
        .to_string();
    let (protocol, suite) = proxied(&name)?;
    let together: Vec<(&[crate::judge::Entry], &crate::proxy::settings::RunSettings)> = read
        .iter()
        .map(|(entries, settings, _)| (entries.as_slice(), settings))
        .collect();
    let mut cases = crate::proxy::judge::judge_together(&together, protocol, suite)
        .map_err(|e| Error::usage(format!("{shown}: {e}")))?;
    let mut cut: Vec<String> = files
        .iter()
        .zip(&read)
        .filter_map(|(file, (_, _, cut))| {
            cut.map(|ms| format!("{} ({:.1} s in)", file.display(), ms / 1000.0))
        })
        .collect();
    cut.extend(empty);
    let last_cut = read.iter().filter_map(|(_, _, cut)| *cut).reduce(f64::max);
    if let Some(at_ms) = last_cut.or((!cut.is_empty()).then_some(0.0)) {
        let mut case = crate::proxy::judge::cut_case(at_ms);
        case.message = format!(
            "{} of the {} recordings end without their close (their proxy was killed or died): {}; the verdicts on those conversations are drawn where they end",
            cut.len(),
            total,
            cut.join(", ")
        );
        cases.insert(0, case);
    }
    let mut report = crate::proxy::report::report_of(
        &name,
        format!(
            "the {} recorded in {shown}",
            crate::text::count(total as u64, "conversations")
        ),
        (read[0].1.seed, args.strict),
        cases,
        &crate::text::Redactor::new(Vec::new()),
    );
    report.notes.push(format!(
        "judged together: {}",
        crate::text::count(files.len() as u64, "recordings")
    ));
    conclude(report, &args.output)
}

/// `agent-tck replay FILE --agent NAME=URL`: the recorded requests sent to new versions of the
/// agents, their answers judged, and what changed printed after the report.
pub(super) async fn replay(args: ReplayArgs) -> Result<Ended, Error> {
    use crate::proxy::replay::{replay, Target};
    use crate::proxy::report::report_of;
    args.output.check()?;
    let shown = args.file.display().to_string();
    // A cut recording's requests are sent again as far as it goes.
    let (entries, settings, _) = recording(&args.file)?;
    if calls_back(&settings.protocol)?.is_some() {
        return Err(Error::usage(format!(
            "{shown}: a recording of --protocol {} is not replayed yet (its agents answer by calling back, which a replay cannot make them do to it); `agent-tck judge {shown}` judges it again",
            settings.protocol
        )));
    }
    if proxied_server(&settings.protocol)?.is_some() {
        return Err(Error::usage(format!(
            "{shown}: a recording of clients and their {} server; replay sends a platform's \
             recorded requests to new agents, and has nothing to send here (judge it again \
             with `agent-tck judge {shown}`)",
            settings.protocol
        )));
    }
    let (protocol, suite) = proxied(&settings.protocol)?;
    let flags = Flags {
        agents: &args.agents,
        keys: &args.agent_keys,
        faults: &[],
    };
    let agents = agents_of(flags, Some(protocol))?;
    let recorded: Vec<&str> = settings.agents.iter().map(|a| a.name.as_str()).collect();
    if let Some(stranger) = agents.iter().find(|a| !recorded.contains(&a.name.as_str())) {
        return Err(Error::usage(format!(
            "--agent {}: {shown} recorded no agent of that name (it has: {})",
            stranger.name,
            recorded.join(", ")
        )));
    }
    let secrets: Vec<String> = agents.iter().filter_map(|a| a.key.clone()).collect();
    let targets: Vec<Target> = agents
        .into_iter()
        .map(|a| Target {
            name: a.name,
            pool: crate::transport::pool::Pool::new(a.base),
            key: a.key,
        })
        .collect();
    let found = replay(&entries, suite, &settings, &targets)
        .await
        .map_err(|e| Error::usage(format!("{shown}: {e}")))?;
    let redactor = crate::text::Redactor::new(secrets);
    let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
    let report_as = |cases, what: &str| {
        report_of(
            &settings.protocol,
            format!("{} ({what}, {shown})", names.join(", ")),
            (settings.seed, args.strict),
            cases,
            &redactor,
        )
    };
    let mut before = report_as(found.recorded, "as recorded");
    let mut after = report_as(found.replayed, "replayed");
    crate::protocols::stamp(&mut before);
    crate::protocols::stamp(&mut after);
    after.notes.push(format!(
        "{} sent again; {} answered otherwise than recorded",
        crate::text::count(found.sent, "requests"),
        found.changed
    ));
    if found.keyless > 0 {
        after.notes.push(format!(
            "{} held a key in the recording (masked there) and went without one: give --agent-key NAME=KEY",
            crate::text::count(found.keyless, "requests")
        ));
    }
    let diff = crate::report::tools::diff(&before, &after);
    let ended = conclude(after, &args.output)?;
    crate::outln!(
        "{}",
        crate::report::tools::render_diff(&diff, "as recorded", "replayed")
    );
    if !found.changes.is_empty() {
        crate::outln!("answers that changed:");
        for change in &found.changes {
            crate::outln!("  {change}");
        }
        if found.changed > found.changes.len() as u64 {
            crate::outln!(
                "  … and {} more",
                found.changed - found.changes.len() as u64
            );
        }
    }
    Ok(ended)
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
