//! Runs a suite against an agent: cases in dependency layers, each exchange sent once (at most
//! `concurrency` at a time) under the transport's deadline and byte cap. A case whose `needs:`
//! did not pass, or whose `needs_answer:` left no answer to read, is skipped with the reason:
//! one endpoint with no answer is one failure, and a readable answer that breaks one rule is
//! still judged by the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{OnceCell, Semaphore};

use super::checks::Check;
use super::exchange::DELIBERATE_HEADER;
use super::outcome::Outcome;
use super::plugin::{Ctx, Verdict, OWN_ANSWER};
use super::suite::{AuthMode, CaseSpec, ExchangeSpec, Requirement, Suite};
use super::template::{self, Fill, RunValues};
use crate::content::Content;
use crate::judge::tape::{in_case, Tape, TapeSpec};
use crate::judge::Party;
use crate::report::{CaseResult, Evidence, Exchange, Report, RunInfo, Status};
use crate::text::{excerpt, excerpt_str, shell_quote, Redactor};
use crate::transport::http::{self, BaseUrl, Limits};
use crate::transport::liveness::{self, Watch};

/// `--timeout`'s default: the deadline of each exchange.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// `--max-body`'s default, in bytes.
pub const DEFAULT_MAX_BODY: usize = 5_000_000;
/// `--max-field`'s default, in characters.
pub const DEFAULT_MAX_FIELD: usize = 50_000;

/// Validated settings for one probe run (see `cli` for the flags).
#[derive(Debug, Clone)]
pub struct ProbeSettings {
    pub base: BaseUrl,
    pub api_key: Option<String>,
    /// Deadline of each exchange.
    pub timeout: Duration,
    pub max_body: usize,
    pub max_field: usize,
    pub seed: u64,
    /// `--only` patterns (empty: every case).
    pub only: Vec<String>,
    pub strict: bool,
    /// Exchanges in flight at once.
    pub concurrency: usize,
    pub suite: Suite,
    /// `--record` / `--replay`: the exchanges written to a file, or judged from one.
    pub tape: TapeSpec,
}

impl ProbeSettings {
    /// Defaults as the CLI documents them, for `base` and `suite`.
    pub fn new(base: BaseUrl, suite: Suite) -> ProbeSettings {
        ProbeSettings {
            base,
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            max_body: DEFAULT_MAX_BODY,
            max_field: DEFAULT_MAX_FIELD,
            seed: 0,
            only: Vec::new(),
            strict: false,
            concurrency: 4,
            suite,
            tape: TapeSpec::Off,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            deadline: self.timeout,
            max_body: self.max_body,
            ..Limits::default()
        }
    }

    /// The bearer token sent where a suite asks for a wrong key: derived from the seed, never the key.
    fn wrong_key(&self) -> String {
        format!(
            "agent-tck-wrong-key-{:016x}",
            self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        )
    }
}

/// What a case's answer is called in its evidence: `answer to the exchange analyze`.
fn own_label(exchange: Option<&str>) -> String {
    match exchange {
        Some(name) => format!("answer to exchange {name}"),
        None => "answers".to_string(),
    }
}

/// Longest request body written inline into a report's `curl` command.
const INLINE_BODY_LIMIT: usize = 256 * 1024;

struct Sent {
    outcome: Arc<Outcome>,
    elapsed: Duration,
    detail: Exchange,
    /// When the exchange broke (refused, reset, closed), since the run started: what the
    /// agent's watch decides was its own act or its death's.
    broke_at: Option<Duration>,
}

struct Runner<'a> {
    settings: &'a ProbeSettings,
    run_values: RunValues,
    exchanges: Mutex<HashMap<String, Arc<OnceCell<Arc<Sent>>>>>,
    permits: Semaphore,
    results: Mutex<HashMap<String, CaseResult>>,
    /// Whether the agent is still there ([`crate::transport::liveness`]).
    watch: Watch,
    /// Per case, when the exchanges it rests on broke.
    broke: Mutex<HashMap<String, Vec<Duration>>>,
}

/// Runs the probe. `on_case` is called as each case finishes (for a progress indicator). The
/// error is a configuration error (an `--only` that matches nothing, a dependency cycle).
pub async fn run(
    settings: &ProbeSettings,
    on_case: &(dyn Fn(&CaseResult) + Sync),
) -> crate::error::Result<Report> {
    let run = RunInfo::start(
        "probe",
        settings.suite.file.protocol.clone(),
        settings.base.to_string(),
        settings.seed,
        settings.strict,
    );
    super::interrupt::started(&run);
    super::interrupt::secrets(settings.api_key.clone());
    let chosen = settings.suite.select(&settings.only)?;
    let layers = settings.suite.layers(&chosen)?;
    let tape = Tape::open(&settings.tape)?;
    let runner = Runner {
        settings,
        run_values: RunValues::new(settings.seed),
        exchanges: Mutex::new(HashMap::new()),
        permits: Semaphore::new(settings.concurrency.max(1)),
        results: Mutex::new(HashMap::new()),
        watch: Watch::http(
            format!("the agent at {}", settings.base),
            run.started,
            &settings.base.host,
            settings.base.port,
        )
        .taped(
            tape.clone(),
            Party::Agent(settings.suite.file.protocol.clone()),
        ),
        broke: Mutex::new(HashMap::new()),
    };
    for layer in layers {
        // Each case is told of as it ends, not when its layer does: a run cut short by Ctrl-C
        // reports every case that had ended.
        let results = futures::future::join_all(layer.iter().map(|id| async {
            let result = runner.run_case(id).await;
            on_case(&result);
            result
        }))
        .await;
        for result in results {
            runner
                .results
                .lock()
                .expect("results lock")
                .insert(result.id.clone(), result);
        }
    }
    runner.watch.at_end().await;
    let mut by_id = runner.results.into_inner().expect("results lock");
    let mut cases: Vec<CaseResult> = chosen.iter().filter_map(|id| by_id.remove(id)).collect();
    let broke = runner.broke.into_inner().expect("broke lock");
    if let Some(tape) = &tape {
        tape.finish()?;
    }
    liveness_verdicts(&settings.suite, &runner.watch, &broke, &mut cases);
    let mut report = run.report(cases, &Redactor::new(settings.api_key.clone()));
    report.suite_file = settings.suite.user_file.clone();
    Ok(report)
}

/// The skip message of a case whose need `need` failed (followed, for a `needs_answer:`, by
/// why its answer could not be read).
fn failed(need: &str) -> String {
    format!("skipped: it needs {need}, which failed")
}

/// When the agent went down: a case that rests on an exchange the outage cut is a skip saying
/// so (so is a case skipped because it needed one), and the outage is reported once, by a MUST
/// case beside the suite's reachability case (`agent.reachable` → `agent.alive`).
fn liveness_verdicts(
    suite: &Suite,
    watch: &Watch,
    broke: &HashMap<String, Vec<Duration>>,
    cases: &mut Vec<CaseResult>,
) {
    if !watch.went_down() {
        return;
    }
    let reach = suite
        .file
        .cases
        .iter()
        .find(|c| c.checks.iter().any(|k| matches!(k, Check::Reachable)));
    let (id, group, spec) = match reach {
        Some(c) => {
            let prefix = c.id.value.rsplit_once('.').map_or("peer", |(p, _)| p);
            (format!("{prefix}.alive"), c.group(), c.spec.clone())
        }
        None => (
            "peer.alive".to_string(),
            "peer".to_string(),
            suite.file.spec.clone(),
        ),
    };
    let cut = watch.skip_what_it_cut(cases, broke, &id);
    for case in cases.iter_mut().filter(|c| c.status == Status::Skip) {
        let skipped_for = |need: &String| {
            let failed = failed(need);
            case.message == failed
                || case
                    .message
                    .starts_with(&format!("{failed} with no answer"))
        };
        if let Some(need) = cut.iter().find(|need| skipped_for(need)) {
            case.message = format!(
                "skipped: it needs {need}, which was not judged: {} went down (see {id})",
                watch.who
            );
        }
    }
    if let Some(alive) = watch.case(&id, &group, &spec) {
        cases.insert(0, alive);
    }
}

/// How a case's checks settled on what they read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Settled {
    /// Every check held: the last one's evidence (counted in [`OWN_ANSWER`] for the case's
    /// own answer: the probe names it after the exchange, the traffic judge counts answers
    /// itself), with every check's note.
    Pass { evidence: Evidence, note: String },
    /// A check broke: why.
    Fail(String),
    /// A check had nothing to judge (or the case has no checks): why.
    Skip(String),
}

/// Settles a case by its checks, in order: the first that breaks fails it, one with nothing to
/// judge skips it; else it passes on the last check's evidence, with every check's note. The
/// probe's cases and the cases that judge live traffic ([`super::traffic`]) both settle here.
pub(crate) fn settle_checks(spec: &CaseSpec, ctx: &Ctx<'_>) -> Settled {
    let mut notes = Vec::new();
    let mut evidence = None;
    for check in &spec.checks {
        match check.evaluate(ctx) {
            Verdict::Held(judged) if judged.judged == 0 => {
                return Settled::Skip(format!("nothing to judge: {}", judged.note));
            }
            Verdict::Held(judged) => {
                if !judged.note.is_empty() {
                    notes.push(judged.note);
                }
                // The last check is the case's most specific one: its count is the evidence.
                evidence = Some(Evidence::new(judged.judged, judged.of));
            }
            Verdict::Broken(why) => return Settled::Fail(why),
        }
    }
    match evidence {
        Some(evidence) => Settled::Pass {
            evidence,
            note: match notes.len() {
                0 | 1 => notes.pop().unwrap_or_default(),
                _ => notes.join("; "),
            },
        },
        None => Settled::Skip("the case has no checks: nothing to judge".into()),
    }
}

fn judge_checks(spec: &CaseSpec, ctx: &Ctx<'_>, result: &mut CaseResult) {
    match settle_checks(spec, ctx) {
        Settled::Pass { mut evidence, note } => {
            if evidence.of == OWN_ANSWER {
                evidence.of = own_label(spec.exchange.as_deref());
            }
            result.pass_noting(evidence, note, String::new)
        }
        Settled::Fail(why) => result.fail(why),
        Settled::Skip(why) => result.skip(why),
    }
}

/// Why a case cannot be judged: a case under its `needs:` did not pass, or one under its
/// `needs_answer:` did not pass and left no answer to read (a needed case that failed on its
/// schema, say, leaves one: this case judges it). `status` is a needed case's verdict (None: it
/// has none, and does not hold this one back); `unreadable` why its answer cannot be read.
pub(crate) fn unmet_need(
    spec: &CaseSpec,
    status: impl Fn(&str) -> Option<Status>,
    unreadable: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let needs = spec.needs.iter().map(|n| (n, false));
    let answers = spec.needs_answer.iter().map(|n| (n, true));
    needs
        .chain(answers)
        .find_map(|(need, answer_only)| match status(need)? {
            Status::Pass | Status::Stale => None,
            Status::Fail | Status::Xfail if answer_only => unreadable(need)
                .map(|why| format!("{} with no answer to read ({why})", failed(need))),
            Status::Fail | Status::Xfail => Some(failed(need)),
            Status::Skip => Some(format!("skipped: it needs {need}, which was skipped")),
        })
}

impl Runner<'_> {
    async fn run_case(&self, id: &str) -> CaseResult {
        let spec = self.settings.suite.case(id).expect("selected ids exist");
        let mut result = spec.case();
        if spec.requires == Some(Requirement::ApiKey) && self.settings.api_key.is_none() {
            result.skip("no --api-key given: the agent is probed without a key, so refusing a missing or wrong key cannot be tested (give the agent's key with --api-key)");
            return result;
        }
        if let Some(why) = self.unmet_need(spec) {
            result.skip(why);
            return result;
        }

        let reachable = self.reach(id, spec, &mut result).await;
        let outcomes = self.send_exchanges(spec).await;
        let own = spec
            .exchange
            .as_ref()
            .and_then(|n| outcomes.get(n))
            .cloned();
        if let Some(sent) = &own {
            result.set_duration(sent.elapsed);
            result.exchange = sent.detail.clone();
        }
        self.note_broke(id, &outcomes);
        let by_name: HashMap<String, Arc<Outcome>> = outcomes
            .iter()
            .map(|(k, v)| (k.clone(), v.outcome.clone()))
            .collect();
        let ctx = Ctx {
            protocol: self.settings.suite.protocol,
            outcome: own.as_ref().map(|s| s.outcome.as_ref()),
            exchanges: &by_name,
            reachable,
            max_body: self.settings.max_body,
            max_field: self.settings.max_field,
            status_judged: spec.checks.iter().any(Check::judges_status),
            live: false,
            notes: true,
        };
        judge_checks(spec, &ctx, &mut result);
        result
    }

    /// The case's connection, when one of its checks is `Reachable` (its time is the case's):
    /// how long it took, or why it failed.
    async fn reach(
        &self,
        id: &str,
        spec: &CaseSpec,
        result: &mut CaseResult,
    ) -> Option<Result<String, String>> {
        if !spec.checks.iter().any(|c| matches!(c, Check::Reachable)) {
            return None;
        }
        let started = Instant::now();
        let connect = liveness::connect(&self.watch, &self.settings.base, self.settings.timeout);
        let r = in_case(id, connect).await;
        result.set_duration(started.elapsed());
        Some(
            r.map(|t| format!("connected in {} ms", t.as_millis()))
                .map_err(|e| e.to_string()),
        )
    }

    /// Sends the exchanges the case's checks need, then its own, each by name.
    async fn send_exchanges(&self, spec: &CaseSpec) -> HashMap<String, Arc<Sent>> {
        let mut outcomes = HashMap::new();
        let protocol = self.settings.suite.protocol;
        let mut names: Vec<String> = spec
            .checks
            .iter()
            .flat_map(|c| c.extra_exchanges(protocol))
            .collect();
        names.extend(spec.exchange.iter().cloned());
        for name in names {
            let sent = self.exchange(&name).await;
            outcomes.insert(name, sent);
        }
        outcomes
    }

    /// Records when the case's exchanges saw the agent break, if they did.
    fn note_broke(&self, id: &str, outcomes: &HashMap<String, Arc<Sent>>) {
        let broke: Vec<Duration> = outcomes.values().filter_map(|s| s.broke_at).collect();
        if !broke.is_empty() {
            self.broke
                .lock()
                .expect("broke lock")
                .insert(id.to_string(), broke);
        }
    }

    /// Why a case cannot run ([`unmet_need`]), by the verdicts so far.
    fn unmet_need(&self, spec: &CaseSpec) -> Option<String> {
        let results = self.results.lock().expect("results lock");
        unmet_need(
            spec,
            |need| results.get(need).map(|r| r.status),
            |need| self.unreadable_answer(need),
        )
    }

    /// Why case `id`'s answer cannot be read, if it cannot (None: it can).
    fn unreadable_answer(&self, id: &str) -> Option<String> {
        let exchange = self.settings.suite.case(id)?.exchange.as_ref()?;
        let sent = self
            .exchanges
            .lock()
            .expect("exchanges lock")
            .get(exchange)
            .and_then(|cell| cell.get().cloned());
        match sent {
            Some(sent) => sent.outcome.unreadable(self.settings.max_body),
            None => Some(format!("exchange {exchange} was not sent")),
        }
    }

    /// Sends exchange `name` once; later callers get the same outcome.
    async fn exchange(&self, name: &str) -> Arc<Sent> {
        let cell = self
            .exchanges
            .lock()
            .expect("exchanges lock")
            .entry(name.to_string())
            .or_default()
            .clone();
        cell.get_or_init(|| async {
            let spec = &self.settings.suite.file.exchanges[name];
            let _permit = self
                .permits
                .acquire()
                .await
                .expect("semaphore never closed");
            // Its calls are recorded (and replayed) as the exchange's.
            Arc::new(in_case(name, self.send(name, spec)).await)
        })
        .await
        .clone()
    }

    async fn send(&self, name: &str, spec: &ExchangeSpec) -> Sent {
        let settings = self.settings;
        let mut headers = vec![
            (
                "user-agent".to_string(),
                format!("agent-tck/{}", crate::VERSION),
            ),
            ("accept".to_string(), "application/json".to_string()),
        ];
        let mut body_sent = None;
        let body = if let Some(template) = &spec.body {
            // Templates were rendered once at load; a failure here cannot happen for a loaded suite.
            let mut fill = Fill {
                run: &self.run_values,
                content: Content::new(settings.seed, name),
                protocol: settings.suite.protocol,
            };
            let value = template::render(template, &mut fill).unwrap_or(Value::Null);
            let mut bytes = Vec::new();
            crate::json_out::value(&mut bytes, &value);
            let bytes = Bytes::from(bytes);
            body_sent = Some(value);
            bytes
        } else {
            spec.raw_body.clone().map(Bytes::from).unwrap_or_default()
        };
        if spec.body.is_some() || spec.raw_body.is_some() {
            headers.push((
                "content-type".into(),
                spec.content_type
                    .clone()
                    .unwrap_or_else(|| "application/json".into()),
            ));
        }
        match (spec.auth, &settings.api_key) {
            (AuthMode::Default, Some(key)) => {
                headers.push(("authorization".into(), format!("Bearer {key}")))
            }
            (AuthMode::Wrong, _) => headers.push((
                "authorization".into(),
                format!("Bearer {}", settings.wrong_key()),
            )),
            _ => {}
        }
        if spec.deliberate {
            headers.push((DELIBERATE_HEADER.into(), name.to_string()));
        }
        headers.extend(
            spec.headers
                .iter()
                .map(|(k, v)| (k.to_lowercase(), v.clone())),
        );
        let request = http::Request {
            method: spec.method.clone(),
            path: spec.path.clone(),
            headers,
            body,
        };
        let started = Instant::now();
        let (result, broke_at) =
            liveness::send(&self.watch, &settings.base, &request, settings.limits()).await;
        let elapsed = started.elapsed();
        let detail = Exchange {
            request: Some(describe_request(&settings.base, &request)),
            response: Some(match &result {
                Ok(r) => describe_response(r),
                Err(e) => format!("no usable answer: {e}"),
            }),
            reproduce: Some(curl(&settings.base, &request, settings.timeout)),
        };
        Sent {
            outcome: Arc::new(Outcome::new(spec.auth, body_sent, result)),
            elapsed,
            detail,
            broke_at,
        }
    }
}

fn describe_request(base: &BaseUrl, request: &http::Request) -> String {
    let mut out = format!("{} {}\n", request.method, base.join(&request.path));
    for (name, value) in &request.headers {
        out.push_str(&format!("{name}: {value}\n"));
    }
    if !request.body.is_empty() {
        out.push('\n');
        out.push_str(&excerpt(&request.body, 16_000));
    }
    out
}

fn describe_response(response: &http::Response) -> String {
    let mut out = format!(
        "HTTP {} ({} ms)\n",
        response.status,
        response.elapsed.as_millis()
    );
    for (name, value) in response.headers.iter().take(30) {
        out.push_str(&format!(
            "{}: {}\n",
            excerpt_str(name, 100),
            excerpt_str(value, 200)
        ));
    }
    out.push('\n');
    if response.body_exceeded {
        out.push_str(&format!(
            "[body cut at {} bytes: over --max-body]\n",
            response.body.len()
        ));
    }
    out.push_str(&excerpt(
        &response.body[..response.body.len().min(8_000)],
        crate::text::EXCERPT_CHARS,
    ));
    out
}

/// A `curl` command that sends the same request (the key is redacted with the rest of the report).
fn curl(base: &BaseUrl, request: &http::Request, timeout: Duration) -> String {
    let mut cmd = format!(
        "curl -sS -i --max-time {} -X {} {}",
        timeout.as_secs().max(1),
        request.method,
        shell_quote(&base.join(&request.path))
    );
    for (name, value) in &request.headers {
        if name != "user-agent" && name != "accept" {
            cmd.push_str(&format!(" -H {}", shell_quote(&format!("{name}: {value}"))));
        }
    }
    if !request.body.is_empty() {
        if request.body.len() <= INLINE_BODY_LIMIT {
            cmd.push_str(&format!(
                " --data-binary {}",
                shell_quote(&crate::text::lossy(&request.body))
            ));
        } else {
            cmd.push_str(&format!(
                " --data-binary @request.json  # the {}-byte body is in the request section",
                request.body.len()
            ));
        }
    }
    cmd
}
