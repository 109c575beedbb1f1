//! The proxy as the mock engine's request handler: each request of the platform's is routed to
//! the real agent its path names, passed on, and its answer written back (bent by the agent's
//! `--fault`s, when it has some); on the way, the platform's request is judged by the
//! protocol's platform rules (the fleet's observer, told as a fleet tells it) and the agent's
//! answer by its agent rules (the probe suite's cases for ordinary traffic).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::bend::{Bent, RequestFault, Requests, What};
use super::forward::{self, Forwarded, Given};
use super::judging::{Answer, Judge};
use crate::judge::Message;
use crate::mock::agent::MockAgent;
use crate::mock::applied::Applied;
use crate::mock::decision::Decision;
use crate::mock::fleet::Incoming;
use crate::mock::http1::{Delivered, Fault, Handler, Plan, Request, Response};
use crate::mock::journal::AuthSeen;
use crate::mock::protocol::{AgentProtocol, Answered, PlatformObserver, Seen};
use crate::mock::recording::Recorded;
use crate::mock::Body;
use crate::probe::outcome::Sent;
use crate::probe::traffic::LiveAnswer;
use crate::transport::http;
use crate::transport::pool::Pool;

/// One real agent behind the proxy.
pub struct Upstream {
    /// Its name, and its faults (a mock agent whose conforming answers are the real ones).
    pub faults: MockAgent,
    /// Its real URL, and the connections open to it.
    pub pool: Pool,
    /// The faults on the platform's requests to it (`--fault NAME=request:…`).
    pub requests: Requests,
}

impl Upstream {
    fn name(&self) -> &str {
        self.faults.name()
    }

    /// How the request's Authorization stands to the agent's key, when the proxy was told it.
    fn auth(&self, sent: Option<&str>) -> AuthSeen {
        let sent = sent.map(|s| s.strip_prefix("Bearer ").unwrap_or(s).trim());
        match (&self.faults.profile.api_key, sent) {
            (None, _) => AuthSeen::Unknown,
            (Some(k), Some(s)) if s == k => AuthSeen::Ok,
            (Some(_), Some(_)) => AuthSeen::Wrong,
            (Some(_), None) => AuthSeen::Missing,
        }
    }
}

/// What the agent rules judge of an answer the platform left before it came, after `waited`:
/// an answer too late once the wait reached their `timeout`; else nothing (it may yet have
/// come in time).
pub fn left_unanswered(waited: Duration, timeout: Duration) -> Option<http::Error> {
    (waited >= timeout).then(|| http::Error::Timeout {
        deadline: waited,
        phase: "no response head received when the platform left".into(),
    })
}

/// Counts the deliberations that reached the protocol's last phase (`--deliberations N`).
pub struct Deliberations {
    /// The endpoint whose answer ends one (the round table's /vote).
    pub last: &'static str,
    /// How many end the run (None: no such limit).
    pub wanted: Option<u64>,
    ended: Mutex<BTreeSet<String>>,
    /// Told when the wanted number ended and no exchange is open.
    pub done: tokio::sync::Notify,
}

impl Deliberations {
    pub fn new(protocol: &dyn AgentProtocol, wanted: Option<u64>) -> Deliberations {
        let last = protocol
            .endpoints()
            .iter()
            .rev()
            .find(|e| e.request_schema.is_some())
            .map_or("", |e| e.name);
        Deliberations {
            last,
            wanted,
            ended: Mutex::new(BTreeSet::new()),
            done: tokio::sync::Notify::new(),
        }
    }

    pub fn count(&self) -> u64 {
        self.ended.lock().map_or(0, |e| e.len() as u64)
    }

    fn answered(&self, endpoint: &str, task: &str, open: u64) {
        let Some(wanted) = self.wanted else { return };
        let Ok(mut ended) = self.ended.lock() else {
            return;
        };
        if endpoint == self.last && !task.is_empty() && (ended.len() as u64) < wanted {
            ended.insert(task.to_string());
        }
        if ended.len() as u64 >= wanted && open == 0 {
            self.done.notify_one();
        }
    }
}

/// The proxy's handler.
pub struct ProxyHandler {
    pub upstreams: Vec<Upstream>,
    by_name: HashMap<String, usize>,
    pub protocol: &'static dyn AgentProtocol,
    pub observer: Box<dyn PlatformObserver>,
    /// The agent rules, judging as `--judging` says.
    pub traffic: Judge,
    /// The recording, when `--record` asked for one: what the agents answered is added to the
    /// exchanges the observer's recording writes.
    pub recorded: Mutex<Option<Recorded>>,
    pub applied: Applied,
    pub deliberations: Deliberations,
    /// How long the proxy waits for an agent at most (past the platform's own timeout, which
    /// ends the wait first when the platform leaves).
    pub deadline: Duration,
    pub started: Instant,
    pub stop: CancellationToken,
    /// A line per exchange on stdout.
    pub log: bool,
    seq: AtomicU64,
    open: AtomicU64,
    /// Protocol requests (not /health, not a probe's marked ones) the platform sent.
    pub protocol_requests: AtomicU64,
}

/// What [`Handler::finish`] needs of a request.
pub struct Note {
    seq: u64,
    agent: Option<usize>,
    endpoint: Cow<'static, str>,
    task: String,
    received: Instant,
    /// Told to the observer (the platform's request, judged): its answer is told too.
    judged: bool,
    /// The agent's answer, for the agent rules once the platform has it.
    answer: Option<Answer>,
}

impl ProxyHandler {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        upstreams: Vec<Upstream>,
        protocol: &'static dyn AgentProtocol,
        observer: Box<dyn PlatformObserver>,
        traffic: Judge,
        recorded: Option<Recorded>,
        deliberations: Deliberations,
        deadline: Duration,
        started: Instant,
    ) -> ProxyHandler {
        let by_name = upstreams
            .iter()
            .enumerate()
            .map(|(i, u)| (u.name().to_string(), i))
            .collect();
        ProxyHandler {
            upstreams,
            by_name,
            protocol,
            observer,
            traffic,
            recorded: Mutex::new(recorded),
            applied: Applied::default(),
            deliberations,
            deadline,
            started,
            stop: CancellationToken::new(),
            log: false,
            seq: AtomicU64::new(0),
            open: AtomicU64::new(0),
            protocol_requests: AtomicU64::new(0),
        }
    }

    /// Requests that came, routed or not.
    pub fn requests_seen(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    /// Requests passed on to an agent and not yet answered.
    pub fn open_now(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    /// Passes the request on to the agent, bent when a request fault fires: another body,
    /// held first, cut, or never passed on.
    #[allow(clippy::too_many_arguments)]
    async fn pass_on(
        &self,
        upstream: &Upstream,
        request: &Request,
        target: &str,
        bent: Option<&Bent>,
    ) -> Forwarded {
        let headers = |kind: Option<&'static str>| {
            request.headers.iter().map(move |(n, v)| {
                let v = match kind {
                    Some(k) if n.eq_ignore_ascii_case("content-type") => k,
                    _ => v,
                };
                (n, v)
            })
        };
        let left = async {
            match &request.left {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let (body, kind) = match bent.map(|b| &b.what) {
            Some(What::Body(body, kind)) => (body.clone(), *kind),
            Some(What::Hang) => {
                return tokio::select! {
                    () = left => Forwarded::PlatformLeft,
                    () = self.stop.cancelled() => Forwarded::Stopped,
                }
            }
            Some(What::Cut) => {
                return forward::cut(
                    &upstream.pool,
                    &request.method,
                    target,
                    headers(None),
                    &request.body,
                )
                .await
            }
            Some(What::Hold(held)) => {
                tokio::select! {
                    () = tokio::time::sleep(*held) => {}
                    () = left => return Forwarded::PlatformLeft,
                    () = self.stop.cancelled() => return Forwarded::Stopped,
                }
                (request.body.clone(), None)
            }
            None => (request.body.clone(), None),
        };
        forward::forward(
            &upstream.pool,
            &request.method,
            target,
            headers(kind),
            body,
            self.deadline,
            request.left.as_ref(),
            &self.stop,
        )
        .await
    }

    /// The agent `/agents/NAME/REST` names, and REST.
    fn route<'r>(&self, path: &'r str) -> Option<(usize, &'r str)> {
        let rest = path.strip_prefix("/agents/")?;
        let (name, endpoint) = rest.split_once('/').unwrap_or((rest, ""));
        self.by_name.get(name).map(|&i| (i, endpoint))
    }

    fn not_routed(&self, request: &Request, seq: u64) -> (Plan, Note) {
        let names: Vec<&str> = self.upstreams.iter().map(Upstream::name).collect();
        let plan = Plan::immediate(Response::json_error(
            404,
            &format!(
                "no agent at {} behind this proxy (its agents: /agents/{{{}}}/…)",
                request.path(),
                names.join(",")
            ),
        ));
        let note = Note {
            seq,
            agent: None,
            endpoint: Cow::Borrowed(""),
            task: String::new(),
            received: request.received,
            judged: false,
            answer: None,
        };
        (plan, note)
    }

    /// What the agent's answer (or its absence) was, as the platform rules read a decision;
    /// and the answer's body as JSON, when it was a 2xx of JSON (parsed once, here).
    fn decide(
        &self,
        upstream: &Upstream,
        endpoint: &str,
        body: &Body<'_>,
        forwarded: &Forwarded,
        waited: Duration,
    ) -> (Plan, Decision, Option<crate::probe::outcome::Parsed>) {
        let waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
        match forwarded {
            Forwarded::Came(Ok(response)) => {
                let given = Given::of(response);
                let (mut plan, mut decision) = upstream.faults.shape(endpoint, body, &given);
                forward::restore_headers(&mut plan, response);
                forward::after_the_agent(&mut plan, waited);
                decision.ttfb_ms += waited_ms;
                let ok = (200..300).contains(&response.status);
                if ok && !given.is_json() {
                    decision.unusable.get_or_insert_with(|| {
                        format!("answered {} with a body that is not JSON", response.status)
                    });
                } else if !ok {
                    decision.unusable = Some(format!("answered {}", response.status));
                }
                (plan, decision, given.into_json())
            }
            Forwarded::Came(Err(e)) => (
                forward::failed_plan(e),
                Decision {
                    status: 0,
                    ttfb_ms: waited_ms,
                    unusable: Some(format!("no answer: {e}")),
                    ..Decision::default()
                },
                None,
            ),
            Forwarded::PlatformLeft | Forwarded::Stopped => (
                // Nothing to write: the platform is gone, or the run is ending (the engine
                // sees either at once and says how the exchange ended).
                Plan {
                    fault: Fault::Hang,
                    ..Plan::immediate(Response::new(502, "text/plain", ""))
                },
                Decision {
                    status: 0,
                    ttfb_ms: waited_ms,
                    // Not "never": the agent may yet have answered in time. Only a wait that
                    // reached the platform's timeout (ttfb_ms) counts as one that outlasted it.
                    unusable: Some(format!(
                        "{} had not answered when {}, after {waited_ms} ms",
                        upstream.name(),
                        if matches!(forwarded, Forwarded::Stopped) {
                            "the run ended"
                        } else {
                            "the platform left"
                        }
                    )),
                    ..Decision::default()
                },
                None,
            ),
        }
    }

    /// The agent's answer for the agent rules: as it came, before any fault. The answer to a
    /// request the proxy bent is judged at once by the cases of bent requests only (rare); an
    /// ordinary one is returned, to be judged once the platform has it (in [`Handler::finish`]:
    /// the judge adds nothing to the platform's wait, and the connection's next request still
    /// waits for it). One the proxy held is judged on the time the agent took once it had it;
    /// one it cut or never passed on is not judged (the agent was given nothing to answer).
    #[allow(clippy::too_many_arguments)]
    fn answer_to_judge(
        &self,
        index: usize,
        endpoint: &str,
        task: &str,
        request: &Request,
        forwarded: Forwarded,
        answer_json: Option<crate::probe::outcome::Parsed>,
        waited: Duration,
        bent: Option<&Bent>,
    ) -> Option<Answer> {
        let waited = match bent.map(|b| &b.what) {
            Some(What::Hold(held)) => waited.saturating_sub(*held),
            Some(What::Hang | What::Cut) => return None,
            _ => waited,
        };
        let result = match forwarded {
            Forwarded::Came(result) => result,
            Forwarded::PlatformLeft => {
                Err(left_unanswered(waited, self.traffic.traffic().timeout())?)
            }
            Forwarded::Stopped => return None,
        };
        if let Some(Bent {
            name,
            source,
            what: What::Body(sent, _),
        }) = bent
        {
            let judged = self.traffic.traffic().judge_bent(
                LiveAnswer {
                    answer_json: None,
                    agent: self.upstreams[index].name(),
                    method: &request.method,
                    path: &format!("/{endpoint}"),
                    task: (!task.is_empty()).then_some(task),
                    request: Sent::Bytes(sent.clone()),
                    result,
                    at: request.received.saturating_duration_since(self.started),
                    elapsed: waited,
                },
                name,
                RequestFault::refusal_holds(name),
            );
            if !judged {
                self.upstreams[index].requests.unjudged(source);
            }
            return None;
        }
        Some(Answer {
            agent: self.upstreams[index].name().to_string(),
            method: request.method.clone(),
            path: format!("/{endpoint}"),
            task: (!task.is_empty()).then(|| task.to_string()),
            request: request.body.clone(),
            result,
            answer_json,
            at: request.received.saturating_duration_since(self.started),
            elapsed: waited,
        })
    }

    /// Adds to the exchange the recording writes what the observer does not read: the
    /// request's method and header fields, the agent's own answer, and, when the proxy bent the
    /// request, how and what it passed on (`forwarded`; the exchange's request stays the
    /// platform's, as it sent it).
    fn record(
        &self,
        seq: u64,
        request: &Request,
        forwarded: &Forwarded,
        waited: Duration,
        bent: Option<&Bent>,
        given: &Response,
    ) {
        let Ok(mut recorded) = self.recorded.lock() else {
            return;
        };
        let Some(recorded) = recorded.as_mut() else {
            return;
        };
        let agent = match forwarded {
            Forwarded::Came(Ok(r)) => json!({
                "status": r.status,
                "message": Message::masked(
                    r.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
                    &r.body,
                ),
                "body_exceeded": r.body_exceeded,
                "elapsed_ms": crate::judge::time::ms(waited),
            }),
            Forwarded::Came(Err(e)) => json!({
                "error": e,
                "elapsed_ms": crate::judge::time::ms(waited),
            }),
            Forwarded::PlatformLeft => json!({"left_ms": crate::judge::time::ms(waited)}),
            Forwarded::Stopped => json!({"stopped_ms": crate::judge::time::ms(waited)}),
        };
        recorded.attach(seq, |exchange| {
            exchange.method = Some(request.method.clone());
            exchange.request = Message::masked(request.headers.iter(), &request.body);
            exchange.context["agent_answer"] = agent;
            // The answer the platform is given, with its header fields (a HAR viewer shows
            // them; the observer was told its body only).
            exchange.context["seen"]["planned"] = serde_json::to_value(Message::masked(
                given.headers.iter().map(|(n, v)| (n.as_ref(), v.as_ref())),
                &given.body,
            ))
            .unwrap_or_default();
            if let Some(bent) = bent {
                exchange.context["forwarded"] = super::bend::recorded(bent, request.headers.iter());
            }
        });
    }
}

impl Handler for ProxyHandler {
    type Note = Note;

    fn waits(&self) -> bool {
        true
    }

    async fn handle(&self, request: Request) -> (Plan, Note) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let Some((index, endpoint)) = self.route(request.path()) else {
            return self.not_routed(&request, seq);
        };
        self.open.fetch_add(1, Ordering::Relaxed);
        let upstream = &self.upstreams[index];
        let Incoming {
            authorization,
            deliberate,
            known,
            body,
        } = Incoming::read(&request, self.protocol, endpoint);
        let auth = upstream.auth(authorization);
        let task = Incoming::id(&body, self.protocol)
            .as_deref()
            .unwrap_or("")
            .to_string();
        // The target past `/agents/NAME`: the agent's own path and query.
        let target = match &request.target["/agents/".len() + upstream.name().len()..] {
            "" => "/",
            rest => rest,
        };
        // Only the protocol's own requests are bent (not a probe's deliberate ones, not
        // /health): the platform's, as the platform rules judge them.
        let bent = match known {
            Some(e) if deliberate.is_none() && e.request_schema.is_some() => upstream
                .requests
                .bend(self.protocol, e, upstream.name(), &request.body),
            _ => None,
        };
        let forwarded = self
            .pass_on(upstream, &request, target, bent.as_ref())
            .await;
        let waited = request.received.elapsed();
        let (plan, decision, answer_json) =
            self.decide(upstream, endpoint, &body, &forwarded, waited);
        self.applied.record(index, &decision.applied);
        // The platform is judged on the protocol's own messages, as the fleet judges them.
        let mut judged = false;
        let mut answer = None;
        if let (Some(case), Some(_)) = (deliberate, known.and_then(|e| e.request_schema)) {
            self.observer
                .on_probe_request(upstream.name(), endpoint, case);
        } else if let (Some(findings), Some(_)) = (
            body.findings("the body is not JSON"),
            known.and_then(|e| e.request_schema),
        ) {
            self.protocol_requests.fetch_add(1, Ordering::Relaxed);
            self.observer.on_request(&Seen {
                seq,
                agent: upstream.name(),
                expects_key: upstream.faults.profile.api_key.is_some(),
                endpoint,
                auth,
                key_print: authorization.map_or(0, |sent| {
                    crate::text::fnv1a(sent.strip_prefix("Bearer ").unwrap_or(sent).trim())
                }),
                task: &task,
                body: &body,
                schema_findings: &findings,
                decision: &decision,
                answer: &plan.response.body,
                at: request.received,
            });
            judged = true;
            self.record(
                seq,
                &request,
                &forwarded,
                waited,
                bent.as_ref(),
                &plan.response,
            );
            // Last: the agent's answer moves into what is judged (no copy of it).
            answer = self.answer_to_judge(
                index,
                endpoint,
                &task,
                &request,
                forwarded,
                answer_json,
                waited,
                bent.as_ref(),
            );
        }
        let note = Note {
            seq,
            agent: Some(index),
            endpoint: match known {
                Some(e) => Cow::Borrowed(e.name),
                None => Cow::Owned(endpoint.to_string()),
            },
            task,
            received: request.received,
            judged,
            answer,
        };
        (plan, note)
    }

    async fn finish(&self, note: Note, delivered: Delivered) {
        let Some(index) = note.agent else { return };
        if let Some(answer) = note.answer {
            self.traffic.judge(index, answer);
        }
        let name = self.upstreams[index].name();
        if note.judged {
            self.observer.on_answer(&Answered {
                seq: note.seq,
                agent: name,
                endpoint: &note.endpoint,
                task: &note.task,
                received: note.received,
                delivered: &delivered,
                ended: None,
                at: Instant::now(),
            });
        }
        if self.log {
            crate::outln!(
                "{name} /{} {} ms {:?}",
                note.endpoint,
                delivered.total.as_millis(),
                delivered.outcome
            );
        }
        let open = self.open.fetch_sub(1, Ordering::Relaxed).saturating_sub(1);
        self.deliberations
            .answered(&note.endpoint, &note.task, open);
    }
}
