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
use crate::proxy::run::{AgentAt, ProxySettings};
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

/// `--agent NAME=URL`, `--agent-key NAME=KEY` and `--fault NAME=…` as given.
struct Flags<'a> {
    agents: &'a [String],
    keys: &'a [String],
    faults: &'a [String],
}

/// The agents as the flags give them, each with its key and faults.
fn agents_of(
    flags: Flags<'_>,
    protocol: &'static dyn AgentProtocol,
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
    for text in flags.faults {
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
    if let Some(command) = &args.stdio {
        return proxy_stdio(command, &args).await;
    }
    let (agents_protocol, suite) = proxied(&args.protocol)?;
    let flags = Flags {
        agents: &args.agents,
        keys: &args.agent_keys,
        faults: &args.faults,
    };
    let agents = agents_of(flags, agents_protocol)?;
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
    let argv = crate::transport::stdio::split_command(command)
        .map_err(|e| Error::usage(format!("--stdio {command:?}: {e}")))?;
    let mut faults = Vec::new();
    for text in &args.faults {
        let (name, fault) = named("--fault", text, "BEHAVIOUR")?;
        if name != AGENT {
            return Err(Error::usage(format!(
                "--fault {name}=…: under --stdio the agent is named {AGENT} (--fault {AGENT}={fault})"
            )));
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
        expect: PlatformExpect::timeout(args.platform_timeout.unwrap_or(Duration::from_secs(120))),
        limits: TrafficLimits {
            max_body: args.max_body,
            max_field: 50_000,
            timeout: args.timeout,
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
    let (protocol, suite) = proxied(name)?;
    let mut cases = crate::proxy::judge::judge(&entries, protocol, suite, &settings)
        .map_err(|e| Error::usage(format!("{shown}: {e}")))?;
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
    let (protocol, suite) = proxied(&settings.protocol)?;
    let flags = Flags {
        agents: &args.agents,
        keys: &args.agent_keys,
        faults: &[],
    };
    let agents = agents_of(flags, protocol)?;
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
