//! The run: settings, each case of the suite in the file's order (skipped when it cannot be
//! judged, else its scenario run and judged), then the cases judged across the run.

use std::time::{Duration, Instant};

use crate::judge::tape::{in_case, Tape};
use crate::probe::checks::Check;
use crate::probe::suite::{CaseSpec, SuiteError};
use crate::protocols::librarian::model::{self};
use crate::protocols::librarian::rules::{suite, RuleCallError, Scenario};
use crate::report::{CaseResult, Report};
use crate::text::Redactor;
use crate::transport::http::{self};
use crate::transport::liveness;

use super::across::judge_across;
use super::auth::auth;
use super::client::Client;
use super::lifecycle::{escalation, lifecycle};
use super::limits::{limit, strict_deviations};
use super::malformed::{bad_input, missing_field};
use super::rate::{rate_isolation, rate_limit, retry_after};
use super::read_only::{capabilities, context};
use super::registry::{action_outside, capabilities_match, target_outside, unregistered};
use super::requests::{status_lookup, status_no_leak, status_unknown, valid_request};
use super::robustness::{concurrent, unicode};
use super::settings::Settings;
use super::verdict::Verdict;

/// Why a probe of a Librarian could not run: its built-in cases did not load, or one does not
/// run one rule the probe knows. The kit's own cases, not the user's: a run that could not go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error("case {case}: a librarian case runs one rule")]
    NotOneRule { case: String },
    #[error(transparent)]
    Rule(#[from] RuleCallError),
    /// `--record` could not write, or `--replay` does not hold what the run asked.
    #[error("{0}")]
    Tape(String),
}

impl From<crate::judge::tape::TapeError> for RunError {
    fn from(e: crate::judge::tape::TapeError) -> Self {
        RunError::Tape(e.to_string())
    }
}

impl crate::error::LayerError for RunError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Run
    }
}

/// The case that names a Librarian that went down mid-run.
const ALIVE: &str = "librarian.alive";

/// Runs the suite; `on_case` hears of each case as it ends.
pub async fn run(
    settings: &Settings,
    on_case: &(dyn Fn(&CaseResult) + Send + Sync),
) -> Result<Report, RunError> {
    let suite = suite()?;
    let run_info = settings
        .common
        .run_info(crate::protocols::librarian::NAME, settings.base.to_string());
    // Redacted from a report made on Ctrl-C as from this one.
    crate::probe::interrupt::secrets(settings.tokens.iter().map(|(_, t)| t.clone()));
    let tape = Tape::open(&settings.common.tape)?;
    if let Some(tape) = &tape {
        // Each request carries the time it was written.
        tape.volatile(r#""timestamp":"[^"]*""#);
    }
    let mut client = Client::new(settings, run_info.started, tape.clone());
    let mut cases = Vec::new();
    let mut across = Vec::new();
    // Per case, when its requests broke.
    let mut broke = std::collections::HashMap::new();
    let reachable = reach(&client, settings).await;
    for spec in suite.cases() {
        if !settings.wants(&spec.id.value) {
            continue;
        }
        let scenario = scenario_of(spec)?;
        let mut case = spec.case();
        if let Err(e) = &reachable {
            case.skip(format!(
                "not judged: the Librarian is unreachable ({e}); start it, or point --url at it"
            ));
        } else if let Scenario::Across(a) = scenario {
            across.push((a, case));
            continue;
        } else if let Some(why) = unmet_need(spec, &scenario, settings) {
            case.skip(why);
        } else {
            run_case(&mut client, spec, &scenario, &mut case).await;
            broke.insert(case.id.clone(), std::mem::take(&mut client.broke));
        }
        on_case(&case);
        cases.push(case);
    }
    client.watch.at_end().await;
    client.watch.skip_what_it_cut(&mut cases, &broke, ALIVE);
    if let Some(alive) = client.watch.case(ALIVE, "librarian", "REST API Endpoints") {
        on_case(&alive);
        cases.insert(0, alive);
    }
    if let Err(e) = &reachable {
        // One failure that says why, rather than every case failing for it.
        let first = unreachable(e);
        on_case(&first);
        cases.insert(0, first);
    }
    if let Some(tape) = &tape {
        tape.finish()?;
    }
    for (a, mut case) in across {
        judge_across(&client, a, &mut case);
        on_case(&case);
        cases.push(case);
    }
    let secrets: Vec<String> = settings.tokens.iter().map(|(_, t)| t.clone()).collect();
    let mut report = run_info.report(cases, &Redactor::new(secrets));
    report.notes.push(assumptions_note());
    Ok(report)
}

/// Connects to the Librarian, as the case `librarian.reachable`: why it could not, in the
/// words of a Librarian rather than the client's words of an agent.
async fn reach(client: &Client<'_>, settings: &Settings) -> Result<Duration, String> {
    // The client's messages speak of an agent; here the peer is the Librarian.
    let connect = liveness::connect(&client.watch, &settings.base, settings.timeout);
    in_case("librarian.reachable", connect)
        .await
        .map_err(|e| match e {
            http::Error::Connect { addr, reason } => format!("cannot connect to {addr}: {reason}"),
            other => other.to_string(),
        })
}

/// Why a reachable Librarian's case cannot be judged in this run (what it needs that the
/// settings do not give), if it cannot.
fn unmet_need(spec: &CaseSpec, scenario: &Scenario, settings: &Settings) -> Option<&'static str> {
    if spec.group() == "rate" && settings.quick {
        Some(
            "not judged under --quick: the rate group sends a minute's worth of requests; \
             run without --quick to exercise it",
        )
    } else if needs_two(scenario) && settings.tokens.len() < 2 {
        Some("not judged: needs a second agent; give --token twice (AGENT=TOKEN)")
    } else if needs_registry(scenario) && settings.registry.is_none() {
        Some("not judged: needs the Librarian's agent registry; give --registry agents.yaml")
    } else {
        None
    }
}

/// Runs one case's scenario and judges it into `case`, timed.
async fn run_case(
    client: &mut Client<'_>,
    spec: &CaseSpec,
    scenario: &Scenario,
    case: &mut CaseResult,
) {
    client.patient = spec.group() != "rate";
    client.judges_5xx = matches!(
        scenario,
        Scenario::MissingField { .. }
            | Scenario::BadInput(_)
            | Scenario::Limit { .. }
            | Scenario::Auth(_)
    );
    client.marked = marked(scenario).then(|| spec.id.value.clone());
    let t0 = Instant::now();
    // Its calls are recorded (and replayed) as its own.
    in_case(spec.id.value.clone(), judge(client, scenario, case)).await;
    case.set_duration(t0.elapsed());
}

/// `librarian.reachable`, failed: the Librarian could not be reached (`why`).
fn unreachable(why: &str) -> CaseResult {
    let mut first = CaseResult::new(
        "librarian.reachable",
        "librarian",
        crate::report::Level::Must,
        "the Librarian accepts a connection",
        "REST API Endpoints",
    )
    .precondition();
    first.fail(format!("the Librarian is unreachable: {why}"));
    first
}

/// The report's note on the checks that rest on an assumption.
fn assumptions_note() -> String {
    format!(
        "checks that rest on an assumption (the document names these shapes without giving them): {}",
        model::ASSUMPTIONS
            .iter()
            .map(|(what, assumed)| format!("{what}: {assumed}"))
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// Whether a scenario's requests are the probe's own tests, not what a client of the protocol
/// sends: a body that breaks the rules, no token or a foreign one, content over the limit, a
/// minute's burst, what the registry does not allow, or an APPROVAL asked only to see its answer
/// (the probe does no work, so it never REPORTs it). They are marked (`x-agent-tck-case`) so
/// that `mock librarian` does not hold them against the client; the rest (valid QUERYs,
/// VALIDATEs and REPORTs, lookups, the whole lifecycle) are a client's, and judged.
pub(super) fn marked(s: &Scenario) -> bool {
    !matches!(
        s,
        Scenario::ValidRequest(_)
            | Scenario::StatusUnknown
            | Scenario::Context
            | Scenario::Capabilities
            | Scenario::Lifecycle
            | Scenario::Escalation
            | Scenario::Concurrent
    ) || *s == Scenario::ValidRequest("APPROVAL".into())
}

pub(super) fn needs_registry(s: &Scenario) -> bool {
    matches!(
        s,
        Scenario::CapabilitiesMatch
            | Scenario::TargetOutside
            | Scenario::ActionOutside
            | Scenario::Unregistered
            | Scenario::Injection
    )
}

pub(super) fn needs_two(s: &Scenario) -> bool {
    matches!(s, Scenario::StatusNoLeak | Scenario::RateIsolation)
        || *s == Scenario::Auth("foreign-agent".into())
}

pub(super) fn scenario_of(spec: &CaseSpec) -> Result<Scenario, RunError> {
    match spec.checks.first() {
        Some(Check::Rule(call)) => Ok(Scenario::of(&call.name, &call.args)?),
        _ => Err(RunError::NotOneRule {
            case: spec.id.value.clone(),
        }),
    }
}

/// Runs `scenario` and judges it into `case`.
pub(super) async fn judge(c: &mut Client<'_>, scenario: &Scenario, case: &mut CaseResult) {
    let verdict = match scenario {
        Scenario::ValidRequest(t) => valid_request(c, t).await,
        Scenario::StatusLookup => status_lookup(c).await,
        Scenario::StatusUnknown => status_unknown(c).await,
        Scenario::StatusNoLeak => status_no_leak(c).await,
        Scenario::MissingField {
            request_type,
            field,
        } => missing_field(c, request_type, field).await,
        Scenario::BadInput(kind) => bad_input(c, kind).await,
        Scenario::Limit {
            field,
            size,
            refused,
        } => limit(c, field, *size, *refused).await,
        Scenario::StrictDeviations => strict_deviations(c).await,
        Scenario::Auth(kind) => auth(c, kind).await,
        Scenario::Context => context(c).await,
        Scenario::Capabilities => capabilities(c).await,
        Scenario::Lifecycle => lifecycle(c).await,
        Scenario::Escalation => escalation(c).await,
        Scenario::RateLimit => rate_limit(c).await,
        Scenario::RateIsolation => rate_isolation(c).await,
        Scenario::RetryAfter => Ok(retry_after(c)),
        Scenario::CapabilitiesMatch => capabilities_match(c).await,
        Scenario::TargetOutside => target_outside(c, false).await,
        Scenario::Injection => target_outside(c, true).await,
        Scenario::ActionOutside => action_outside(c).await,
        Scenario::Unregistered => unregistered(c).await,
        Scenario::Unicode => unicode(c).await,
        Scenario::Concurrent => concurrent(c).await,
        // Judged once the run is over (judge_across).
        Scenario::Across(_) => return,
    };
    match verdict {
        Ok(Verdict::Held { evidence, note }) => case.pass_noting(evidence, note, || {
            "not judged: the scenario ran and had nothing to judge".into()
        }),
        Ok(Verdict::Broken { message, exchange }) => {
            case.fail(message);
            case.exchange = exchange.unwrap_or_default();
        }
        Ok(Verdict::Nothing { reason, exchange }) => {
            case.skip(reason);
            case.exchange = exchange.unwrap_or_default();
        }
        Err(e) => case.fail(e.to_string()),
    }
}

/// Every case id.
pub fn case_ids() -> Result<Vec<String>, SuiteError> {
    Ok(suite()?.ids())
}

/// `suites list --protocol librarian`.
pub fn list_cases() -> Result<String, SuiteError> {
    Ok(suite()?.list())
}
