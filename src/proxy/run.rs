//! A proxy run: serve the agents' URLs, pass the platform's requests on until the run ends
//! (Ctrl-C, `--duration`, `--deliberations N`), then draw both sides' verdicts into one report.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bend::{bent_case, RequestFault, Requests};
use super::handler::{Deliberations, ProxyHandler, Upstream};
use super::judging::{Judge, Judging};
use super::report::{by_party, reached_case, report_of};
use super::settings::{settings_context, RecordedAgent, RunSettings, SETTINGS_EVENT};
use crate::error::Error;
use crate::judge::record::Recorder;
use crate::judge::Party;
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::behavior::Item;
use crate::mock::http1::{self, ServerLimits};
use crate::mock::protocol::{AgentProtocol, PlatformExpect, PlatformObserver, RunEnd, Served};
use crate::mock::recording::Recording;
use crate::probe::traffic::{TrafficJudge, TrafficLimits};
use crate::probe::Suite;
use crate::report::Report;
use crate::text::Redactor;
use crate::transport::http::BaseUrl;
use crate::transport::pool::Pool;

/// How long the platform must have sent nothing, once `--deliberations N` were seen to their
/// last phase, for the run to end.
pub const QUIET: Duration = Duration::from_secs(2);

/// One real agent, as `--agent NAME=URL` (and `--agent-key`, `--fault`) gave it.
pub struct AgentAt {
    pub name: String,
    pub base: BaseUrl,
    /// Its key, when the user gave it: the platform's bearer is judged against it.
    pub key: Option<String>,
    pub faults: Vec<Item>,
    /// The faults on the platform's requests to it (`--fault NAME=request:…`).
    pub requests: Vec<RequestFault>,
}

/// Everything a proxy run needs, checked.
pub struct ProxySettings {
    pub protocol: &'static dyn AgentProtocol,
    /// The suite whose cases judge the agents' answers.
    pub suite: Suite,
    pub agents: Vec<AgentAt>,
    pub listen: SocketAddr,
    pub expect: PlatformExpect,
    pub limits: TrafficLimits,
    pub duration: Option<Duration>,
    pub deliberations: Option<u64>,
    pub record: Option<PathBuf>,
    pub seed: u64,
    pub strict: bool,
    pub log: bool,
    pub judging: Judging,
}

/// A proxy being served.
pub struct Running {
    pub handler: Arc<ProxyHandler>,
    pub addr: SocketAddr,
    server: http1::Running,
    started: Instant,
    started_at: String,
    secrets: Vec<String>,
    settings: Ended,
}

/// What the report needs of the settings once the run is over.
struct Ended {
    protocol: &'static str,
    seed: u64,
    strict: bool,
    duration: Option<Duration>,
    deliberations: Option<u64>,
    record: Option<PathBuf>,
    judging: Judging,
}

impl Running {
    /// The URL the platform is to be given for agent `name`.
    pub fn url_of(&self, name: &str) -> String {
        format!("http://{}/agents/{name}", self.addr)
    }

    /// Each agent's proxy URL and real URL.
    pub fn routes(&self) -> Vec<(String, String)> {
        self.handler
            .upstreams
            .iter()
            .map(|u| (self.url_of(u.faults.name()), u.pool.base().to_string()))
            .collect()
    }

    /// Serves until `stop` completes, `--duration` passes or `--deliberations` are over; then
    /// stops and returns the report.
    pub async fn until(
        self,
        stop: impl std::future::Future<Output = String> + Send,
    ) -> Result<Report, Error> {
        let duration = after(self.settings.duration);
        let deliberations = async {
            match self.settings.deliberations {
                Some(n) => loop {
                    self.handler.deliberations.done.notified().await;
                    // A platform may send a phase's calls a moment apart (one after another, or
                    // gathered but not all sent before the first is answered): the run ends
                    // only once QUIET passed with no request coming and none open, so that the
                    // last deliberation's other calls are not cut off by the proxy's end.
                    let seen = self.handler.requests_seen();
                    tokio::time::sleep(QUIET).await;
                    if self.handler.requests_seen() == seen && self.handler.open_now() == 0 {
                        break format!(
                            "--deliberations {n} (and {} with no request after them)",
                            humantime::format_duration(QUIET)
                        );
                    }
                },
                None => std::future::pending().await,
            }
        };
        let why = tokio::select! {
            why = stop => why,
            why = duration => why,
            why = deliberations => why,
        };
        self.end(why).await
    }

    /// Ends the run for `why` (`Ctrl-C`, `--duration 10m`): what is still open is cut, the run's
    /// act and not the platform's, and the verdicts are drawn.
    pub async fn end(self, why: String) -> Result<Report, Error> {
        let at = Instant::now();
        self.handler.observer.on_run_end(&RunEnd {
            at,
            after: at - self.started,
            why,
            abandoned: false,
        });
        self.handler.stop.cancel();
        self.server.stop().await;
        self.handler.traffic.finish().await;
        let handler = &self.handler;
        let requests = handler
            .protocol_requests
            .load(std::sync::atomic::Ordering::Relaxed);
        let mut cases = vec![reached_case(requests)];
        cases.extend(handler.observer.cases_at(Served::Proxy, Instant::now()));
        cases.extend(handler.traffic.traffic().cases());
        cases.extend(
            handler
                .applied
                .case(handler.upstreams.iter().map(|u| &u.faults)),
        );
        cases.extend(bent_case(
            handler
                .upstreams
                .iter()
                .map(|u| (u.faults.name(), &u.requests)),
        ));
        by_party(&mut cases);
        let recorded = handler.recorded.lock().ok().and_then(|mut r| r.take());
        if let Some(recorded) = recorded {
            recorded.close().map_err(|e| Error::run(e.to_string()))?;
            if let Some(path) = &self.settings.record {
                crate::errln!("wrote {}", path.display());
            }
        }
        let target = format!(
            "the platform and the {} behind http://{}/agents/",
            crate::text::count(handler.upstreams.len() as u64, "agents"),
            self.addr
        );
        let mut report = report_of(
            self.settings.protocol,
            target,
            (self.settings.seed, self.settings.strict),
            cases,
            &Redactor::new(self.secrets.clone()),
        );
        report.started_at = self.started_at.clone();
        report.duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Some(n) = self.settings.deliberations {
            report.notes.push(format!(
                "{} of the {n} deliberations asked for reached their last phase",
                handler.deliberations.count()
            ));
        }
        if self.settings.judging == Judging::Spare {
            report.notes.push(
                "the agents' answers were judged beside the traffic, on spare CPU (--judging \
                 spare): an answer the judge fell behind on was passed on unjudged, and each \
                 case says how many"
                    .to_string(),
            );
        }
        Ok(report)
    }
}

/// Once `--duration` has passed, what ends the run then (`--duration 10m`); never without one.
pub(super) async fn after(duration: Option<Duration>) -> String {
    match duration {
        Some(d) => {
            tokio::time::sleep(d).await;
            format!("--duration {}", humantime::format_duration(d))
        }
        None => std::future::pending().await,
    }
}

/// The settings a recording keeps, for `agent-tck judge` (never a key).
fn run_settings(settings: &ProxySettings) -> RunSettings {
    RunSettings {
        protocol: settings.protocol.name().to_string(),
        platform_timeout_ms: crate::judge::time::ms(settings.expect.timeout),
        timeout_ms: crate::judge::time::ms(settings.limits.timeout),
        max_body: settings.limits.max_body,
        max_field: settings.limits.max_field,
        seed: settings.seed,
        max_turns: settings.expect.max_turns,
        transport: Some(super::settings::HTTP.into()),
        agents: settings
            .agents
            .iter()
            .map(|a| RecordedAgent {
                name: a.name.clone(),
                faults: a.faults.iter().map(|i| i.source.clone()).collect(),
                requests: a.requests.iter().map(|f| f.source.clone()).collect(),
            })
            .collect(),
    }
}

/// Binds `settings.listen` and starts passing requests on.
pub async fn start(settings: ProxySettings) -> Result<Running, Error> {
    let started = Instant::now();
    let started_at = crate::report::now_rfc3339();
    let secrets: Vec<String> = settings
        .agents
        .iter()
        .filter_map(|a| a.key.clone())
        .collect();
    let (listener, addr) = http1::bind(settings.listen).await?;
    let observer = crate::mock::observe::observer_for(settings.protocol, &settings.expect);
    let (observer, recorded): (Box<dyn PlatformObserver>, _) = match &settings.record {
        Some(path) => {
            // A HAR names each exchange's URL: the proxy's for the agent, as the platform used it.
            let urls = Box::new(move |party: &Party| match party {
                Party::Agent(name) => format!("http://{addr}/agents/{name}"),
                other => crate::judge::har::default_url(other),
            });
            let recorder = Recorder::create_with_urls(path, urls)
                .map_err(|e| Error::run(format!("--record: {e}")))?;
            let (recording, recorded) = Recording::wrap_recorder(observer, recorder, started);
            recorded.event(
                SETTINGS_EVENT,
                0.0,
                settings_context(&run_settings(&settings)),
            );
            (Box::new(recording), Some(recorded))
        }
        None => (observer, None),
    };
    // Every agent is reported, the ones no answer came from too (their cases skip, saying so).
    let traffic = TrafficJudge::new(settings.suite, settings.limits);
    for agent in &settings.agents {
        traffic.expect(&agent.name);
        if !agent.requests.is_empty() {
            traffic.expect_bent(&agent.name);
        }
    }
    let traffic = Judge::new(Arc::new(traffic), settings.judging, settings.agents.len());
    let upstreams = settings
        .agents
        .into_iter()
        .map(|a| Upstream {
            faults: MockAgent::new(
                settings.protocol,
                Profile::served(&a.name, a.key),
                a.faults,
                settings.seed,
            ),
            pool: Pool::new(a.base),
            requests: Requests::new(a.requests, &a.name, settings.seed),
        })
        .collect();
    // The proxy waits for an agent past the platform's timeout: the platform, leaving, ends
    // the wait first; a platform that never leaves is judged by its own rule.
    let deadline = settings.expect.timeout.max(settings.limits.timeout) + Duration::from_secs(30);
    let mut handler = ProxyHandler::new(
        upstreams,
        settings.protocol,
        observer,
        traffic,
        recorded,
        Deliberations::new(settings.protocol, settings.deliberations),
        deadline,
        started,
    );
    handler.log = settings.log;
    let handler = Arc::new(handler);
    let server = http1::Running::on(listener, handler.clone(), ServerLimits::default())?;
    Ok(Running {
        handler,
        addr,
        server,
        started,
        started_at,
        secrets,
        settings: Ended {
            protocol: settings.protocol.name(),
            seed: settings.seed,
            strict: settings.strict,
            duration: settings.duration,
            deliberations: settings.deliberations,
            record: settings.record,
            judging: settings.judging,
        },
    })
}
