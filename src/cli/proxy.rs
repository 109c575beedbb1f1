//! `agent-tck proxy` (a real platform and real agents, judged from the traffic between them)
//! and `agent-tck judge` (a recording of such traffic, judged again offline): the flags checked
//! and the protocol resolved here; the run is the proxy engine's ([`crate::proxy`]).

use std::time::Duration;

use super::args::{protocol, JudgeArgs, ProxyArgs};
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

/// `agent-tck judge FILE`: a proxy run's recording judged again, with the run's settings.
pub(super) fn judge(args: JudgeArgs) -> Result<Ended, Error> {
    use crate::proxy::settings::RunSettings;
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
    let report = crate::proxy::report::report_of(
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
