//! One mock session, from start to report: serve the fleet, drive the platform if the fleet
//! file says how, wait (for the triggers, or for Ctrl-C), stop, close the journal and judge the
//! platform. `mock agent` is a session with a fleet of one.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::agent::MockAgent;
use super::driver::Driver;
use super::fleet::{self, Layout};
use super::journal::Journal;
use super::protocol::{AgentProtocol, PlatformExpect, RunEnd, Served};
use crate::error::Error;
use crate::report::{CaseResult, Evidence, Interruption, Level, Report, RunInfo, Signal, Status};
use crate::text::Redactor;
use std::sync::atomic::Ordering;

/// Everything a session needs, validated.
pub struct SessionSettings {
    /// The protocol the agents speak: its observer judges the platform, its name is the report's.
    pub protocol: &'static dyn AgentProtocol,
    pub agents: Vec<MockAgent>,
    pub layout: Layout,
    pub host: IpAddr,
    pub port: u16,
    /// Base URL given to the platform at registration (agents answer under it as they do
    /// under the bound address).
    pub advertise: Option<String>,
    pub driver: Option<Driver>,
    /// What the platform is expected to do (its agent timeout, its turn limit), to judge it.
    pub expect: PlatformExpect,
    pub journal: Option<PathBuf>,
    pub journal_body_cap: usize,
    pub seed: u64,
    /// Keep serving after the triggers until interrupted.
    pub serve_after: bool,
    pub strict: bool,
    /// What to print once the fleet listens.
    pub banner: Banner,
    /// A line per answered request on stdout.
    pub log_requests: bool,
}

/// The first lines a session prints (stdout): scripts read the URL at the end of the first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Banner {
    /// `mock agent`: one line ending with the agent's URL.
    Agent,
    /// `mock fleet`: the listening addresses, then an agent per line (the first 20).
    Fleet,
}

/// How a session ended: its report, marked interrupted ([`Report::interrupted`]) when `stop`
/// completed while the fleet was still driving the platform (registering, triggering), the
/// cases not reached skipped as such.
pub struct Ran {
    pub report: Report,
}

/// How the message of a case an interruption left unjudged begins.
pub const NOT_REACHED: &str = "not reached: the run was interrupted";

/// How long deregistration may take after an interruption: the user asked to stop, and a
/// platform that hangs must not hold the report back (an uninterrupted run gives each
/// deregistration the registration deadline).
/// What ended a run whose platform went down, as the observers' cut answers say it.
const PLATFORM_WENT_DOWN: &str = "the platform went down: see platform.alive";

const DEREGISTER_WHEN_INTERRUPTED: Duration = Duration::from_secs(10);

/// Runs the session until it ends (triggers done, or `stop` completes) and returns the report.
/// A `stop` that completes cuts the run short as Ctrl-C would.
pub async fn run(
    settings: SessionSettings,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<Report, Error> {
    let stop = async {
        stop.await;
        Signal::Interrupt
    };
    run_to_end(settings, stop).await.map(|ran| ran.report)
}

/// [`run`], the platform's exchanges with the agents and the run's moments recorded to
/// `record` as they are judged (JSON lines, [`crate::judge::record`]): a judging offline
/// ([`super::recording::rejudge`]) gives the report's platform verdicts again.
pub async fn run_recorded(
    settings: SessionSettings,
    stop: impl std::future::Future<Output = ()> + Send,
    record: &std::path::Path,
) -> Result<Report, Error> {
    let stop = async {
        stop.await;
        Signal::Interrupt
    };
    run_to_end_recording(settings, stop, Some(record))
        .await
        .map(|ran| ran.report)
}

/// [`run`], `stop` saying which signal came.
pub async fn run_to_end(
    settings: SessionSettings,
    stop: impl std::future::Future<Output = Signal> + Send,
) -> Result<Ran, Error> {
    run_to_end_recording(settings, stop, None).await
}

async fn run_to_end_recording(
    mut settings: SessionSettings,
    stop: impl std::future::Future<Output = Signal> + Send,
    record: Option<&std::path::Path>,
) -> Result<Ran, Error> {
    let started = Instant::now();
    let started_at = crate::report::now_rfc3339();
    let secrets = secrets(&settings);
    let (served, recorded) = serve(&mut settings, started, record).await?;
    let mismatch = mismatch(&settings).await;
    let reach = Reach {
        listen: settings.host,
        advertise: settings.advertise.as_deref(),
        mismatch: mismatch.as_deref(),
    };
    let advertised = advertised_urls(&served, settings.advertise.as_deref());
    tokio::pin!(stop);
    let mut run = Progress {
        cases: Vec::new(),
        registered: Vec::new(),
        stopped: true,
        ended_by: None,
        started,
    };
    let mut interrupted = match &settings.driver {
        Some(driver) => {
            let driving = Driving {
                driver,
                served: &served,
                advertised: &advertised,
                reach: &reach,
                seed: settings.seed,
                serve_after: settings.serve_after,
            };
            driving.drive(&mut run, &mut stop).await
        }
        None => {
            (&mut stop).await;
            run.ended_by = Some((Instant::now(), SERVED_UNTIL_STOPPED.into(), false));
            None
        }
    };
    tell_the_end(settings.driver.as_ref(), &served, &mut run);
    if interrupted.is_some() {
        crate::errln!("interrupted: stopping the fleet and writing the reports");
    }
    if let Some(driver) = &settings.driver {
        wind_down(driver, &mut run, &mut interrupted, &mut stop).await;
        let last = served.handler.timeline.last_request();
        run.cases.extend(driver.alive_case(last).await);
    }
    served.stop(Duration::from_secs(2)).await;
    let made = Made {
        started,
        started_at,
        secrets,
    };
    let cases = judged(&settings, &served, run.cases, recorded)?;
    let mut report = report(&settings, &served, cases, made);
    // The servers are stopped: what is queued is the whole journal.
    let lines = served.handler.journal.close().await?;
    if let Some(path) = &settings.journal {
        crate::errln!("wrote {} ({lines} records)", path.display());
    }
    report.interrupted = interrupted.map(|(by, after)| {
        Interruption::of(by, after, &report.cases, |c| {
            !c.message.starts_with(NOT_REACHED)
        })
    });
    Ok(Ran { report })
}

/// The warning, said once, when the advertised address is not one the fleet listens on.
async fn mismatch(settings: &SessionSettings) -> Option<String> {
    let advertise = settings.advertise.as_deref()?;
    let warning = super::reach::advertise_warning(settings.host, advertise).await?;
    crate::errln!("{warning}");
    Some(warning)
}

/// Tells the observer how the run ended, when it ended on its own account. A platform that
/// went down ended the run for its observer then: what it dropped as it died (its calls to the
/// agents) is its death's doing, not a giving-up.
fn tell_the_end(driver: Option<&Driver>, served: &fleet::Served, run: &mut Progress) {
    if let Some(died) = driver.and_then(Driver::went_down_at) {
        if run.ended_by.as_ref().is_none_or(|(at, _, _)| died < *at) {
            run.ended_by = Some((died, PLATFORM_WENT_DOWN.into(), true));
        }
    }
    if let Some((at, why, abandoned)) = run.ended_by.take() {
        served.handler.observer.on_run_end(&RunEnd {
            at,
            after: at.saturating_duration_since(run.started),
            why,
            abandoned,
        });
    }
}

/// The keys of the agents and the platform: never shown in a report.
fn secrets(settings: &SessionSettings) -> Vec<String> {
    settings
        .agents
        .iter()
        .filter_map(|a| a.profile.api_key.clone())
        .chain(
            settings
                .driver
                .as_ref()
                .and_then(|d| d.secret())
                .map(str::to_string),
        )
        .collect()
}

/// Serves the agents (taken from `settings`), judged by the protocol's observer (recording to
/// `record` when given), and says where.
async fn serve(
    settings: &mut SessionSettings,
    started: Instant,
    record: Option<&std::path::Path>,
) -> Result<(fleet::Served, Option<super::recording::Recorded>), Error> {
    let journal = match &settings.journal {
        Some(path) => Journal::create(path, settings.journal_body_cap, started).await?,
        None => Journal::off(started),
    };
    // Compile the schemas now, not inside the first request the platform sends.
    let _ = crate::schema::schemas();
    let mut observer = super::observe::observer_for(settings.protocol, &settings.expect);
    let mut recorded = None;
    if let Some(path) = record {
        let (recording, handle) = super::recording::Recording::wrap(observer, path, started)
            .map_err(|e| Error::usage(e.to_string()))?;
        observer = Box::new(recording);
        recorded = Some(handle);
    }
    let served = fleet::serve(
        std::mem::take(&mut settings.agents),
        settings.layout,
        settings.host,
        settings.port,
        journal,
        observer,
    )
    .await?;
    served
        .handler
        .log_requests
        .store(settings.log_requests, Ordering::Relaxed);
    match settings.banner {
        Banner::Agent => print_agent(&served, settings.seed),
        Banner::Fleet => print_listening(&served, settings.advertise.as_deref()),
    }
    Ok((served, recorded))
}

/// What a run has come to so far.
struct Progress {
    cases: Vec<CaseResult>,
    /// The agents the platform registered.
    registered: Vec<String>,
    /// Whether `stop` has completed (it must not be polled again then).
    stopped: bool,
    /// What ended the run, once it ended: the answers still open are the run's to cut.
    ended_by: Option<(Instant, String, bool)>,
    started: Instant,
}

/// Which signal interrupted the run, and after how long.
type Interrupted = Option<(Signal, Duration)>;

/// The platform's driving: registrations, then triggers.
struct Driving<'a> {
    driver: &'a Driver,
    served: &'a fleet::Served,
    advertised: &'a [String],
    reach: &'a Reach<'a>,
    seed: u64,
    serve_after: bool,
}

impl Driving<'_> {
    /// Drives the platform until the triggers are done (then serves on, if asked, until
    /// `stop`), or until `stop` interrupts it.
    async fn drive<S>(&self, run: &mut Progress, stop: &mut std::pin::Pin<&mut S>) -> Interrupted
    where
        S: std::future::Future<Output = Signal>,
    {
        let driver = self.driver;
        let mut ended_by = None;
        let drive = self.register_and_trigger(&mut run.cases, &mut run.registered, &mut ended_by);
        // The moment of the interrupt is taken before the driving is dropped (and with it
        // a trigger's connection, whose close the platform may answer by dropping its calls
        // to agents): what ends after it is the run's doing.
        let interrupt = async {
            let by = (&mut *stop).await;
            (by, Instant::now())
        };
        let interrupted = tokio::select! {
            _ = drive => None,
            (by, at) = interrupt => {
                ended_by = Some((at, INTERRUPTED.into(), true));
                Some((by, run.started.elapsed()))
            }
        };
        run.ended_by = ended_by;
        if interrupted.is_none() && (self.serve_after || driver.trigger.is_none()) {
            crate::errln!("serving until interrupted (Ctrl-C)…");
            (&mut *stop).await;
            run.ended_by = Some((Instant::now(), SERVED_UNTIL_STOPPED.into(), false));
        } else if interrupted.is_none() {
            run.stopped = false;
        }
        interrupted
    }

    async fn register_and_trigger(
        &self,
        cases: &mut Vec<CaseResult>,
        registered: &mut Vec<String>,
        ended_by: &mut Option<(Instant, String, bool)>,
    ) {
        let (driver, handler) = (self.driver, &self.served.handler);
        let agents = &handler.agents;
        cases.extend(driver.register(agents, self.advertised, registered).await);
        if driver.register.is_some() && registered.is_empty() {
            // A deliberation among none of the fleet's agents would test nothing.
            cases
                .extend(driver.trigger_skipped(
                    "skipped: no agent was registered (platform.register failed)",
                ));
            return;
        }
        let waiting = || handler.observer.waiting_within_timeout(Instant::now());
        let before = handler.protocol_requests.load(Ordering::Relaxed);
        let triggers = driver.trigger(self.seed, &waiting).await;
        let why = driver.end_of_triggers(triggers.overdue);
        *ended_by = Some(match triggers.abandoned {
            Some(at) => (at, why, true),
            None => (Instant::now(), why, false),
        });
        let triggered = triggers.cases;
        let reached = handler.protocol_requests.load(Ordering::Relaxed) - before;
        if Driver::all_answered(&triggered) {
            handler.observer.on_triggers_answered(Instant::now());
        }
        let ran = triggered
            .iter()
            .any(|c| c.id == "platform.trigger" && c.status != Status::Skip);
        cases.extend(triggered);
        if ran {
            cases.push(reached_fleet(reached, driver, self.advertised, self.reach));
        }
    }
}

/// The run is over: the cases an interruption left unjudged, and the deregistrations (cut
/// short by `stop`).
async fn wind_down<S>(
    driver: &Driver,
    run: &mut Progress,
    interrupted: &mut Interrupted,
    stop: &mut std::pin::Pin<&mut S>,
) where
    S: std::future::Future<Output = Signal>,
{
    let (cases, registered) = (&mut run.cases, &run.registered);
    if let Some((by, after)) = *interrupted {
        let why = format!(
            "{NOT_REACHED} ({by}) after {:.1} s, before this was judged",
            after.as_secs_f64()
        );
        cases.extend(driver.not_reached(cases, &why));
        if driver.trigger.is_some() && !cases.iter().any(|c| c.id == REACHED_FLEET) {
            let mut case = reached_fleet_case();
            case.skip(why);
            cases.push(case);
        }
        match tokio::time::timeout(DEREGISTER_WHEN_INTERRUPTED, driver.deregister(registered))
            .await
        {
            Ok(case) => cases.extend(case),
            Err(_) => crate::errln!(
                "interrupted: the platform did not answer the deregistrations within {}; {} may still be registered",
                humantime::format_duration(DEREGISTER_WHEN_INTERRUPTED),
                crate::text::count(registered.len() as u64, "agents")
            ),
        }
    } else if run.stopped {
        cases.extend(driver.deregister(registered).await);
    } else {
        // Ctrl-C during the deregistrations ends them too.
        tokio::select! {
            case = driver.deregister(registered) => cases.extend(case),
            by = &mut *stop => {
                *interrupted = Some((by, run.started.elapsed()));
                crate::errln!("interrupted: the deregistrations are cut short; writing the reports");
                cases.extend(driver.deregister_skipped(&format!(
                    "{NOT_REACHED} ({by}) during the deregistrations"
                )));
            }
        }
    }
}

/// The driver's cases, then the platform's verdicts (the observer's, the behaviours applied),
/// the recording closed once they are drawn.
fn judged(
    settings: &SessionSettings,
    served: &fleet::Served,
    mut cases: Vec<CaseResult>,
    recorded: Option<super::recording::Recorded>,
) -> Result<Vec<CaseResult>, Error> {
    cases.extend(served.handler.observer.cases(match settings.banner {
        Banner::Agent => Served::OneAgent,
        Banner::Fleet => Served::Fleet,
    }));
    if let Some(recorded) = recorded {
        recorded.close().map_err(|e| Error::run(e.to_string()))?;
    }
    cases.extend(served.handler.applied.case(&served.handler.agents));
    Ok(cases)
}

/// When the run started, and the keys its report must not show.
struct Made {
    started: Instant,
    started_at: String,
    secrets: Vec<String>,
}

/// The session's report: its cases, who made it, the timeline.
fn report(
    settings: &SessionSettings,
    served: &fleet::Served,
    cases: Vec<CaseResult>,
    made: Made,
) -> Report {
    let target = settings
        .driver
        .as_ref()
        .map(|d| d.base.to_string())
        .unwrap_or_else(|| caller_of(&served.urls));
    let mut run = RunInfo::start(
        "mock",
        settings.protocol.name(),
        target,
        settings.seed,
        settings.strict,
    )
    .made_by(match settings.banner {
        Banner::Agent => format!("mock agent --protocol {}", settings.protocol.name()),
        Banner::Fleet => format!("mock fleet ({})", settings.protocol.name()),
    });
    run.started = made.started;
    run.started_at = made.started_at;
    let mut report = run.report(cases, &Redactor::new(made.secrets));
    let (timeline, answered) = served.handler.timeline.take();
    if answered > timeline.len() as u64 {
        report.notes.push(format!(
            "the timeline holds a uniform sample of {} of the {answered} answers",
            timeline.len()
        ));
    }
    report.timeline = timeline;
    let left_out = served.handler.timeline.left_out();
    if left_out > 0 {
        report.notes.push(format!(
            "the timeline leaves out the {} to requests agent-tck's probe \
             marked as its own deliberate tests (x-agent-tck-case): they are not the platform's",
            crate::text::count(left_out, "answers")
        ));
    }
    report
}

/// The report's target when no driver named the platform: the platform, as what called the
/// agents (`the platform that called the 6 agents under http://127.0.0.1:4000/agents/`), not as
/// one of them.
fn caller_of(urls: &[String]) -> String {
    match urls {
        [] => "the platform (no agent served)".to_string(),
        [one] => format!("the platform that called {one}"),
        [first, .., last] => {
            let prefix = |url: &str| url.find("/agents/").map(|at| url[..at + 8].to_string());
            match prefix(first) {
                Some(p) if urls.iter().all(|u| u.starts_with(&p)) => {
                    format!(
                        "the platform that called the {} agents under {p}",
                        urls.len()
                    )
                }
                _ => format!(
                    "the platform that called the {} agents at {first} … {last}",
                    urls.len()
                ),
            }
        }
    }
}

const REACHED_FLEET: &str = "platform.reached-fleet";

/// What ended a run cut by Ctrl-C (or SIGTERM) while it drove the platform.
const INTERRUPTED: &str = "interrupted by Ctrl-C or SIGTERM";
/// What ended a run that served until it was stopped.
const SERVED_UNTIL_STOPPED: &str = "stopped by Ctrl-C or SIGTERM after serving";

fn reached_fleet_case() -> CaseResult {
    CaseResult::new(
        REACHED_FLEET,
        "deliberation",
        Level::Must,
        "the triggered deliberations call the fleet's agents",
        "fleet file: platform.trigger (the platform deliberates with the registered agents)",
    )
}

/// Where the fleet listens and what it told the platform, for the hint of a run whose platform
/// called none of its agents.
struct Reach<'a> {
    /// The address the fleet listens on (host: or --host).
    listen: IpAddr,
    /// advertise: or --advertise, when given.
    advertise: Option<&'a str>,
    /// The warning given when the advertised address is not one the fleet listens on.
    mismatch: Option<&'a str>,
}

impl Reach<'_> {
    /// Why the platform may not have reached the fleet at `url`, from what was set: no
    /// advertise and a loopback listener; an advertised address the fleet does not listen on;
    /// or both right here, so the cause is between the platform and this host.
    fn hint(&self, url: &str) -> String {
        let listen = self.listen;
        match self.advertise {
            None if listen.is_loopback() => format!(
                "the platform was given {url}, where the fleet listens on loopback ({listen}): from another host or container that address is the platform's own; give the fleet an address the platform reaches with advertise: or --advertise, and listen on it with host: or --host (e.g. --host 0.0.0.0)"
            ),
            None => format!(
                "the platform was given {url}, where the fleet listens ({listen}): check that the platform can reach that address (a firewall, a container network)"
            ),
            Some(advertise) if self.mismatch.is_some() => format!(
                "the platform was given {url} (advertised as {advertise}), but the fleet listens on {listen} only, so nothing answers there: listen on the advertised address with host: or --host (e.g. --host 0.0.0.0)"
            ),
            Some(advertise) => format!(
                "the platform was given {url} (advertised as {advertise}), and the fleet listens there ({listen}): check that the platform can reach that address (a firewall, a container network, a name it resolves elsewhere)"
            ),
        }
    }
}

/// After a trigger: whether the platform called the fleet at all. A deliberation that reached
/// no agent leaves every observer rule with nothing to judge — a row of skips that would read as
/// a pass.
fn reached_fleet(
    requests: u64,
    driver: &Driver,
    advertised: &[String],
    reach: &Reach<'_>,
) -> CaseResult {
    let mut case = reached_fleet_case();
    if requests > 0 {
        case.pass_noting(
            Evidence::new(
                requests,
                "requests that reached the fleet during the triggers",
            ),
            format!(
                "{} the fleet during the triggers",
                match requests {
                    1 => "1 request reached".to_string(),
                    n => format!("{n} requests reached"),
                }
            ),
            String::new,
        );
        return case;
    }
    let mut hints = Vec::new();
    if driver.register.is_none() {
        hints.push(
            format!(
                "the fleet file's platform: has no register: section, so the platform knows none of the fleet's agents (add `register: {{}}` for POST {})",
                driver.agents_path()
            ),
        );
    }
    if let Some(url) = advertised.first() {
        hints.push(reach.hint(url));
    }
    case.fail(format!(
        "the triggers ran, and no request reached the fleet. Check: {}",
        hints.join("; ")
    ));
    case
}

fn print_agent(served: &fleet::Served, seed: u64) {
    let (Some(agent), Some(url)) = (served.handler.agents.first(), served.urls.first()) else {
        return;
    };
    let behaviours: Vec<&str> = agent.items.iter().map(|i| i.source.as_str()).collect();
    crate::outln!(
        "agent-tck mock agent · {} {:?} [{}] · seed {seed}{} · listening on {url}",
        agent.protocol.name(),
        agent.name(),
        behaviours.join(", "),
        if agent.profile.api_key.is_some() {
            " · bearer auth on"
        } else {
            ""
        },
    );
    if served.addrs.iter().any(|a| !a.ip().is_loopback()) {
        crate::errln!("note: not listening on loopback: reachable from other machines");
    }
}

fn print_listening(served: &fleet::Served, advertise: Option<&str>) {
    let agents = &served.handler.agents;
    crate::outln!(
        "agent-tck mock fleet · {} · listening on {}",
        crate::text::count(agents.len() as u64, "agents"),
        served
            .addrs
            .iter()
            .map(|a| format!("http://{a}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(a) = advertise {
        crate::outln!("advertised to the platform as {a}");
    }
    const SHOWN: usize = 20;
    for (agent, url) in agents.iter().zip(&served.urls).take(SHOWN) {
        let behaviours: Vec<&str> = agent.items.iter().map(|i| i.source.as_str()).collect();
        crate::outln!("  {:<24} {url}  [{}]", agent.name(), behaviours.join(", "));
    }
    if agents.len() > SHOWN {
        crate::outln!("  … and {} more", agents.len() - SHOWN);
    }
}

/// Each agent's base URL as the platform should know it: the bound URL with its scheme and host
/// replaced by `advertise` when given; the port too, unless each agent has its own (then an
/// advertised port is ignored and each agent keeps its port).
fn advertised_urls(served: &fleet::Served, advertise: Option<&str>) -> Vec<String> {
    let Some(advertise) = advertise.map(|a| a.trim_end_matches('/')) else {
        return served.urls.clone();
    };
    let per_port = served.addrs.len() > 1;
    served
        .urls
        .iter()
        .map(|url| {
            let rest = url.strip_prefix("http://").unwrap_or(url);
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if per_port {
                let port = authority.rsplit(':').next().unwrap_or("");
                let host = match advertise.rsplit_once(':') {
                    Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
                    _ => advertise,
                };
                format!("{host}:{port}{path}")
            } else {
                format!("{advertise}{path}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::caller_of;

    #[test]
    fn the_target_names_the_platform_as_what_called_the_fleet() {
        let shared: Vec<String> = ["steady-1", "steady-2", "slow-1"]
            .iter()
            .map(|n| format!("http://127.0.0.1:4000/agents/{n}"))
            .collect();
        assert_eq!(
            caller_of(&shared),
            "the platform that called the 3 agents under http://127.0.0.1:4000/agents/"
        );
        let ports = vec![
            "http://127.0.0.1:4001".to_string(),
            "http://127.0.0.1:4002".to_string(),
        ];
        assert_eq!(
            caller_of(&ports),
            "the platform that called the 2 agents at http://127.0.0.1:4001 … http://127.0.0.1:4002"
        );
        assert_eq!(
            caller_of(&shared[..1]),
            "the platform that called http://127.0.0.1:4000/agents/steady-1"
        );
    }
}
