//! A conforming Librarian on the kit's HTTP engine (`mock::http1`): what `probe librarian` is
//! tested against (the self-test, the tests), and the core of the mock Librarian. [`Flaws`]
//! switch on one departure from the document each, so that every probe case has a server that
//! breaks it.
//!
//! The four endpoints, with Bearer tokens per agent (a token names its agent; a request in
//! another agent's name is refused 403), 60 requests a minute per agent (429 with Retry-After),
//! the document's limits (content 100 KB, 20 references, 5 deviations, no deviation at all under
//! `allow_deviations: false`), its REQUIRED_FIELDS (a 400 naming the field), and decisions:
//! APPROVAL approved at its target_path (escalated when the content asks for a human, a
//! clarification without rationale), QUERY answered with context, VALIDATE approved, REPORT
//! completing an approved request of the same agent.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use super::mock::{Answered, Bearer, ClientJudge, ClientSent, Script, Step};
use super::model::{self, State, LIMITS};
use crate::mock::http1::{self, Delivered, Handler, Plan, Request, Response};

mod decision;

/// One departure from the document each, switched on by name (the list is in `behaviors.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flaws {
    /// An APPROVAL without rationale is approved.
    pub approves_without_rationale: bool,
    /// A body that is not JSON crashes the handler: 500.
    pub crashes_on_malformed_json: bool,
    /// No rate limit.
    pub no_rate_limit: bool,
    /// One rate window for every agent together.
    pub shared_rate_limit: bool,
    /// /agent/status answers any agent about any request.
    pub leaks_status: bool,
    /// Any bearer token is taken for the agent the request names.
    pub accepts_wrong_token: bool,
    /// More than 20 references pass.
    pub ignores_max_references: bool,
    /// A request that says it is pre-approved is approved, whatever the registry says.
    pub obeys_injection: bool,
    /// An agent without the capability an action needs is not refused.
    pub ignores_capabilities: bool,
    /// An escalation, once decided, shows PENDING again (a state going backwards).
    pub reverts_escalation: bool,
    /// A 429 without Retry-After.
    pub silent_429: bool,
    /// GET /agent/status/{id} is not served: 404 `{"detail":"Not Found"}`, as a web framework
    /// answers a route it lacks (every case about the status endpoint has nothing to judge
    /// but the one that judges the endpoint itself).
    pub no_status_endpoint: bool,
    /// content that is not a string (a list) is taken, as if it were empty text.
    pub accepts_any_content_type: bool,
    /// content one byte over max_content_size (102,401 bytes) passes.
    pub content_limit_off_by_one: bool,
    /// Deviations are allowed (compliance.allow_deviations: true) while the probe is told the
    /// server is in strict mode.
    pub allows_deviations: bool,
    /// Not a departure: authorization refused 403 "Agent not authorized" (see
    /// [`Librarian::forbidding`]); its matrix row must break nothing.
    pub forbids_403: bool,
    /// confidence given as a percentage (90), outside the document's 0.0 to 1.0.
    pub confidence_as_percent: bool,
    /// A QUERY answered with a status the document does not name ("success").
    pub unnamed_status: bool,
    /// timestamp written as a day-first local date ("23/11/2026 10:00:00"), not ISO 8601.
    pub local_timestamp: bool,
    /// Every rejection is answered 422 with its LibrarianResponse, `violations: []` (its
    /// feedback still says why): a refusal the agent cannot act on, where only answers to
    /// valid requests answered 2xx were once judged.
    pub unexplained_rejections: bool,
}

/// An agent the Librarian knows: its token, what it may do and where.
#[derive(Debug, Clone)]
pub struct Registered {
    pub id: String,
    pub token: String,
    pub capabilities: Vec<String>,
    pub allowed_targets: Vec<String>,
}

impl Registered {
    /// Why this agent may not make a request of `action` on `target_type` (empty: none named),
    /// if it may not: the capability the action needs (a change `write`, a read `read`), and
    /// the target among its allowed_targets.
    pub fn lacks(&self, action: &str, target_type: &str) -> Option<String> {
        if let Some(needed) = model::capability_for(action) {
            if !self.capabilities.iter().any(|c| c == needed) {
                return Some(format!(
                    "{} lacks required capability {needed} to {action} (capabilities: {})",
                    self.id,
                    self.capabilities.join(", ")
                ));
            }
        }
        self.forbids(target_type).then(|| {
            format!(
                "{} may not touch {target_type} (allowed_targets: {})",
                self.id,
                self.allowed_targets.join(", ")
            )
        })
    }

    /// Whether `target_type` (empty: none named) is outside the agent's allowed_targets.
    pub fn forbids(&self, target_type: &str) -> bool {
        !target_type.is_empty()
            && !self
                .allowed_targets
                .iter()
                .any(|t| t == "all" || t == target_type)
    }

    /// Why the agent may not make `request` (its action and target_type), if it may not.
    pub fn refuses(&self, request: &Value) -> Option<String> {
        self.lacks(
            request["action"].as_str().unwrap_or(""),
            request["target_type"].as_str().unwrap_or(""),
        )
    }

    /// An agent that may do anything anywhere.
    pub fn any(id: &str, token: &str) -> Registered {
        Registered {
            id: id.into(),
            token: token.into(),
            capabilities: vec![
                "read".into(),
                "write".into(),
                "analyze".into(),
                "validate".into(),
            ],
            allowed_targets: vec!["all".into()],
        }
    }
}

struct Stored {
    agent: String,
    request_type: String,
    state: State,
    /// An escalation a human decides (APPROVED) at this moment.
    decided_at: Option<Instant>,
}

#[derive(Default)]
struct Books {
    requests: HashMap<String, Stored>,
    /// Request times per agent in the last minute ("*" when shared).
    windows: HashMap<String, VecDeque<Instant>>,
    next: u64,
}

/// The Librarian as the HTTP engine's handler.
pub struct Librarian {
    agents: Vec<Registered>,
    flaws: Flaws,
    books: Mutex<Books>,
    /// No registry: any bearer token is taken, for the agent it first speaks for.
    open: bool,
    learned: Mutex<HashMap<String, Registered>>,
    /// Every bearer token a client sent, numbered in order of first sight: the judge names a
    /// token by its number, and the report masks the tokens themselves.
    tokens: Mutex<HashMap<String, usize>>,
    /// The mock Librarian's script of decisions and faults, and its judge of the client.
    script: Option<Mutex<Script>>,
    pub judge: Option<ClientJudge>,
    /// How long an escalation waits for its human (then APPROVED).
    escalation: std::time::Duration,
    /// `mock librarian --journal`: a JSON line per request the client sent.
    journal: Option<Mutex<std::io::BufWriter<std::fs::File>>>,
    started: Instant,
}

/// Most requests remembered (the oldest are forgotten first).
const REMEMBERED: usize = 100_000;

impl Librarian {
    pub fn new(agents: Vec<Registered>, flaws: Flaws) -> Librarian {
        Librarian {
            open: agents.is_empty(),
            agents,
            flaws,
            books: Mutex::new(Books::default()),
            learned: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            script: None,
            judge: None,
            escalation: std::time::Duration::from_secs(1),
            journal: None,
            started: Instant::now(),
        }
    }

    /// Refuses an agent's request outside its capabilities or allowed_targets 403 "Agent not
    /// authorized" (an APPROVAL's; the rules decide the rest as before).
    /// Authorization refused as many servers do it, before any decision, where the reference
    /// answers 200 `rejected` naming the violation: both are right, and the fleet and the
    /// probe must take either.
    pub fn forbidding(mut self) -> Librarian {
        self.flaws.forbids_403 = true;
        self
    }

    /// compliance.allow_deviations: true (the document's strict mode is off): a request with
    /// deviations within max_deviations is decided as if it had none.
    pub fn allowing_deviations(mut self) -> Librarian {
        self.flaws.allows_deviations = true;
        self
    }

    /// Journals every request to `path` (created), a JSON line each.
    pub fn journaling(mut self, path: &std::path::Path) -> Result<Librarian, ServerError> {
        let file = std::fs::File::create(path).map_err(|e| ServerError::Journal {
            path: path.display().to_string(),
            cause: e.to_string(),
        })?;
        self.journal = Some(Mutex::new(std::io::BufWriter::new(file)));
        Ok(self)
    }

    /// Writes out what the journal holds.
    pub fn flush_journal(&self) {
        use std::io::Write as _;
        if let Some(Ok(mut j)) = self.journal.as_ref().map(|j| j.lock()) {
            let _ = j.flush();
        }
    }

    /// One journal line: the request (its body whole up to 64 KiB, as JSON when it is), the
    /// scripted step, and the answer's status and decision. Tokens are not written.
    fn journal(&self, request: &Request, parsed: Option<&Value>, step: &Step, plan: &Plan) {
        use std::io::Write as _;
        let Some(journal) = &self.journal else { return };
        const CAP: usize = 64 * 1024;
        let body = match parsed {
            Some(v) if request.body.len() <= CAP => v.clone(),
            _ => json!(crate::text::excerpt(&request.body, 2_000)),
        };
        let answer: Option<Value> = serde_json::from_slice(&plan.response.body).ok();
        let line = json!({
            "t_ms": self.started.elapsed().as_millis() as u64,
            "method": request.method,
            "path": request.path(),
            "peer": request.peer.to_string(),
            "bearer": Self::bearer(request).is_some(),
            "body_bytes": request.body.len(),
            "body": body,
            "step": format!("{step:?}"),
            "status": plan.response.status,
            "decision": answer.as_ref().and_then(|v| v.get("status")).cloned(),
            "request_id": answer.as_ref().and_then(|v| v.get("request_id")).cloned(),
        });
        if let Ok(mut j) = journal.lock() {
            let _ = writeln!(j, "{line}");
        }
    }

    /// The mock Librarian: `script` decides, a judge watches the client.
    pub fn mocking(mut self, script: Script) -> Librarian {
        self.script = Some(Mutex::new(script));
        self.judge = Some(ClientJudge::default());
        self
    }

    /// How the judge names a bearer token: `token #N`, N in order of first sight (past
    /// `TRACKED_TOKENS` tokens, one name for the rest).
    fn token_label(&self, token: &str) -> String {
        const TRACKED_TOKENS: usize = 10_000;
        let Ok(mut tokens) = self.tokens.lock() else {
            return "a token".into();
        };
        let next = tokens.len() + 1;
        match tokens.get(token) {
            Some(n) => format!("token #{n}"),
            None if next <= TRACKED_TOKENS => {
                tokens.insert(token.to_string(), next);
                format!("token #{next}")
            }
            None => format!("a token past the first {TRACKED_TOKENS}"),
        }
    }

    /// Every bearer token a client sent (for the report's redactor).
    pub fn tokens_seen(&self) -> Vec<String> {
        self.tokens
            .lock()
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The registry's tokens.
    pub fn registered_tokens(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.token.clone()).collect()
    }

    fn bearer(request: &Request) -> Option<&str> {
        request
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }

    /// The agent a request's token names (in open mode: the agent it first spoke for, `named`).
    fn by_token(&self, request: &Request, named: &str) -> Result<Registered, Response> {
        let token = Self::bearer(request)
            .ok_or_else(|| error(401, "missing Authorization: Bearer <agent token>"))?;
        if let Some(a) = self.agents.iter().find(|a| a.token == token) {
            return Ok(a.clone());
        }
        if !self.open {
            return Err(error(401, "unknown token"));
        }
        let mut learned = self.learned.lock().map_err(|_| error(500, "poisoned"))?;
        // A token is bound to the first agent a request names (a GET names none).
        if named.is_empty() {
            return Ok(learned
                .get(token)
                .cloned()
                .unwrap_or_else(|| Registered::any("agent", token)));
        }
        Ok(learned
            .entry(token.to_string())
            .or_insert_with(|| Registered::any(named, token))
            .clone())
    }

    /// Whether `agent` may send one more request now (a sliding minute).
    fn within_rate(&self, agent: &str) -> Result<(), Response> {
        if self.flaws.no_rate_limit {
            return Ok(());
        }
        let key = if self.flaws.shared_rate_limit {
            "*"
        } else {
            agent
        };
        let mut books = self.books.lock().map_err(|_| error(500, "poisoned"))?;
        let window = books.windows.entry(key.to_string()).or_default();
        let now = Instant::now();
        while window
            .front()
            .is_some_and(|t| now.duration_since(*t).as_secs() >= 60)
        {
            window.pop_front();
        }
        if window.len() >= LIMITS.per_minute as usize {
            let wait = window
                .front()
                .map(|t| {
                    60u64
                        .saturating_sub(now.duration_since(*t).as_secs())
                        .max(1)
                })
                .unwrap_or(60);
            let mut r = error(
                429,
                &format!(
                    "rate limit exceeded: {} requests a minute per agent",
                    LIMITS.per_minute
                ),
            );
            if !self.flaws.silent_429 {
                r.headers
                    .push(("retry-after".into(), wait.to_string().into()));
            }
            return Err(r);
        }
        window.push_back(now);
        Ok(())
    }

    /// The agent a request is in the name of (by its token, or as the flaw takes a wrong one)
    /// and its body; the answer that refuses it when the token, the body or the rate will not
    /// do.
    fn requester(&self, request: &Request) -> Result<(Registered, Value), Response> {
        let named_early = serde_json::from_slice::<Value>(&request.body)
            .ok()
            .and_then(|v| {
                v.get("agent_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default();
        let token_agent = match self.by_token(request, &named_early) {
            Ok(a) => Some(a),
            // The flaw takes any token it is shown (not none at all) for the named agent.
            Err(_)
                if self.flaws.accepts_wrong_token && request.header("authorization").is_some() =>
            {
                None
            }
            Err(r) => return Err(r),
        };
        let body: Value = match serde_json::from_slice(&request.body) {
            Ok(v) => v,
            Err(_) if self.flaws.crashes_on_malformed_json => {
                return Err(error(500, "internal server error"))
            }
            Err(e) => return Err(error(400, &format!("the body is not JSON: {e}"))),
        };
        let named = body.get("agent_id").and_then(Value::as_str).unwrap_or("");
        let agent = match token_agent {
            Some(a) if a.id == named || named.is_empty() => a,
            Some(a) => {
                return Err(error(
                    403,
                    &format!(
                        "the token is {}'s; the request is in the name of {named:?}",
                        a.id
                    ),
                ))
            }
            // A wrong token taken for the named agent (the flaw).
            None => match self.agents.iter().find(|a| a.id == named) {
                Some(a) => a.clone(),
                None => return Err(error(401, "unknown token")),
            },
        };
        self.within_rate(&agent.id)?;
        Ok((agent, body))
    }

    /// The answer that refuses a schema-invalid request (or, as the flaw does, one the agent may
    /// not make), if it is one.
    fn refused(&self, agent: &Registered, body: &Value) -> Option<Response> {
        let findings = crate::schema::schemas().validate(model::REQUEST_SCHEMA, body);
        let findings: Vec<_> = findings
            .into_iter()
            .filter(|f| {
                let overlooked = (self.flaws.approves_without_rationale
                    && f.message.contains("\"rationale\""))
                    || (self.flaws.accepts_any_content_type && f.path.contains("content"));
                !overlooked
            })
            .collect();
        if !findings.is_empty() {
            return Some(error(400, &crate::schema::findings_message(&findings)));
        }
        if self.flaws.forbids_403 && body["request_type"] == "APPROVAL" {
            if let Some(why) = agent.refuses(body) {
                return Some(error(403, &format!("Agent not authorized: {why}")));
            }
        }
        None
    }

    /// A request in an agent's name: who it is, what it asks, what the Librarian decides, and
    /// the answer that says so.
    fn agent_request(&self, request: &Request, step: &Step) -> Response {
        let (agent, body) = match self.requester(request) {
            Ok(found) => found,
            Err(r) => return r,
        };
        let agent = &agent;
        if let Some(r) = self.refused(agent, &body) {
            return r;
        }
        let started = Instant::now();
        let (status, mut extra, state) = match step {
            Step::Approve => self.scripted("approved", agent, &body),
            Step::Reject => self.scripted("rejected", agent, &body),
            Step::Clarify => self.scripted("clarification_needed", agent, &body),
            Step::Escalate(_) => self.scripted("escalated", agent, &body),
            _ => self.decide(agent, &body),
        };
        let decided_at = match (&step, state) {
            (Step::Escalate(after), _) => Some(Instant::now() + *after),
            (_, State::Escalated) => Some(Instant::now() + self.escalation),
            _ => None,
        };
        let id = {
            let Ok(mut books) = self.books.lock() else {
                return error(500, "poisoned");
            };
            books.next += 1;
            let id = format!("req-{:06}", books.next);
            if books.requests.len() >= REMEMBERED {
                books.requests.clear();
            }
            let request_type = body["request_type"].as_str().unwrap_or("").to_string();
            if request_type == "REPORT" && status == "approved" {
                if let Some(done) = body["request_id"]
                    .as_str()
                    .and_then(|r| books.requests.get_mut(r))
                {
                    done.state = State::Completed;
                }
            }
            books.requests.insert(
                id.clone(),
                Stored {
                    agent: agent.id.clone(),
                    request_type,
                    state,
                    decided_at,
                },
            );
            id
        };
        let (status, confidence, timestamp) = self.flawed(&body, status);
        let answer = json!({
            "request_id": id,
            "timestamp": timestamp,
            "processing_time_ms": started.elapsed().as_millis() as u64,
            "status": status,
            "confidence": confidence,
            "feedback": extra.remove("feedback").unwrap_or(json!("")),
            "violations": extra.remove("violations").unwrap_or(json!([])),
            "suggestions": extra.remove("suggestions").unwrap_or(json!([])),
            "approved_location": extra.remove("approved_location").unwrap_or(Value::Null),
            "assigned_id": extra.remove("assigned_id").unwrap_or(Value::Null),
            "constraints": [],
            "escalation_reason": extra.remove("escalation_reason").unwrap_or(Value::Null),
            "human_review_url": extra.remove("human_review_url").unwrap_or(Value::Null),
            "estimated_review_time": extra.remove("estimated_review_time").unwrap_or(Value::Null),
            "context": extra.remove("context").unwrap_or(Value::Null),
            "relevant_nodes": extra.remove("relevant_nodes").unwrap_or(Value::Null),
        });
        if self.flaws.unexplained_rejections && status == "rejected" {
            let mut answer = answer;
            answer["violations"] = json!([]);
            return json_response(422, &answer);
        }
        json_response(200, &answer)
    }

    /// Request `id`, if an escalation whose human has decided, takes the decision (APPROVED).
    fn settle(&self, books: &mut Books, id: &str) {
        if let Some(s) = books.requests.get_mut(id) {
            if s.state == State::Escalated && s.decided_at.is_some_and(|t| t <= Instant::now()) {
                s.state = if self.flaws.reverts_escalation {
                    State::Pending
                } else {
                    State::Approved
                };
                if let Some(j) = &self.judge {
                    j.decided(id);
                }
            }
        }
    }

    fn status(&self, request: &Request, id: &str) -> Response {
        let agent = match self.by_token(request, "") {
            Ok(a) => a,
            Err(r) => return r,
        };
        let Ok(mut books) = self.books.lock() else {
            return error(500, "poisoned");
        };
        self.settle(&mut books, id);
        match books.requests.get(id) {
            Some(s) if s.agent == agent.id || self.flaws.leaks_status => json_response(
                200,
                &json!({
                    "request_id": id,
                    "status": format!("{:?}", s.state).to_uppercase(),
                    "request_type": s.request_type,
                    "agent_id": s.agent,
                }),
            ),
            // Another agent's request is as unknown as one that never was: no leak either way.
            _ => error(404, &format!("no request {id:?}")),
        }
    }

    fn context(&self, request: &Request) -> Response {
        if let Err(r) = self.by_token(request, "") {
            return r;
        }
        let body: Value = match serde_json::from_slice(&request.body) {
            Ok(v) => v,
            Err(e) => return error(400, &format!("the body is not JSON: {e}")),
        };
        let findings = crate::schema::schemas().validate(model::CONTEXT_REQUEST_SCHEMA, &body);
        if !findings.is_empty() {
            return error(400, &crate::schema::findings_message(&findings));
        }
        json_response(
            200,
            &json!({"context": {"query": body["query"], "answer": "See arch-001."}, "relevant_nodes": [{"id": "arch-001"}]}),
        )
    }

    fn capabilities(&self, request: &Request) -> Response {
        match self.by_token(request, "") {
            Ok(a) => json_response(
                200,
                &json!({
                    "agent_id": a.id,
                    "capabilities": a.capabilities,
                    "allowed_targets": a.allowed_targets,
                    "rate_limit": format!("{}/minute", LIMITS.per_minute),
                }),
            ),
            Err(r) => r,
        }
    }
}

fn json_response(status: u16, value: &Value) -> Response {
    Response::new(
        status,
        "application/json",
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

/// What a web framework (FastAPI, say) answers for a route it does not have.
fn error_detail_not_found() -> Response {
    Response::new(404, "application/json", &br#"{"detail":"Not Found"}"#[..])
}

fn error(status: u16, message: &str) -> Response {
    Response::json_error(status, message)
}

impl Handler for Librarian {
    type Note = ();

    async fn handle(&self, request: Request) -> (Plan, ()) {
        let path = request.path().to_string();
        let parsed: Option<Value> = serde_json::from_slice(&request.body).ok();
        let who = self.who(&request, parsed.as_ref());
        // agent-tck's probe marks its own tests: the judge sets them aside (the rules still
        // answer them).
        let marked = request
            .header(crate::probe::exchange::DELIBERATE_HEADER)
            .map(str::to_string);
        let judge = self.judge.as_ref();
        if let (Some(j), Some(case)) = (judge, &marked) {
            j.on_marked(case, &request.method, &path);
        } else if let Some(j) = judge {
            j.on_request(&ClientSent {
                who: &who,
                method: &request.method,
                path: &path,
                bearer: if Self::bearer(&request).is_some() {
                    Bearer::Sent
                } else {
                    Bearer::Missing
                },
                body: parsed.as_ref(),
                raw: &request.body,
                at: request.received,
            });
        }
        let step = self.step(&request, &path, parsed.as_ref());
        let (mut plan, retryable) = self.plan(&request, &path, &step);
        if let Step::Slow(after) = step {
            plan.ttfb = after;
        }
        self.journal(&request, parsed.as_ref(), &step, &plan);
        if let Some(j) = judge.filter(|_| marked.is_none()) {
            let answered = self.answered(&plan, retryable);
            j.on_answer(&who, &path, parsed.as_ref(), &answered);
        }
        (plan, ())
    }

    async fn finish(&self, _: (), _: Delivered) {}
}

impl Librarian {
    /// Who the judge holds to account: the token (by number: a verdict never shows it), or
    /// without one the agent it names.
    fn who(&self, request: &Request, parsed: Option<&Value>) -> String {
        Self::bearer(request)
            .map(|t| self.token_label(t))
            .or_else(|| {
                parsed
                    .and_then(|v| v["agent_id"].as_str())
                    .map(|a| format!("agent {a} (no token)"))
            })
            .unwrap_or_else(|| "(anonymous)".to_string())
    }

    /// The script's step for a request (deciding by the rules when there is no script).
    fn step(&self, request: &Request, path: &str, parsed: Option<&Value>) -> Step {
        let is_request = request.method == "POST" && path == "/agent/request";
        // The script answers the valid requests to /agent/request (a REPORT only when a step
        // names it); an invalid one takes no step: the rules refuse it.
        let valid = parsed.filter(|v| {
            crate::schema::schemas()
                .validate(model::REQUEST_SCHEMA, v)
                .is_empty()
        });
        match (&self.script, valid) {
            (Some(script), Some(body)) if is_request => script
                .lock()
                .map(|mut s| s.step_for(body))
                .unwrap_or(Step::Decide),
            _ => Step::Decide,
        }
    }

    /// The answer a step plans, and whether a client may retry it (the scripted faults).
    fn plan(&self, request: &Request, path: &str, step: &Step) -> (Plan, bool) {
        let mut retryable = false;
        let plan = match step {
            Step::TooMany(secs) => {
                let mut r = error(429, "rate limit exceeded (scripted)");
                r.headers
                    .push(("retry-after".into(), secs.to_string().into()));
                retryable = true;
                Plan::immediate(r)
            }
            Step::ServerError => {
                retryable = true;
                Plan::immediate(error(500, "internal server error (scripted)"))
            }
            Step::Malformed => {
                retryable = true;
                Plan::immediate(Response::new(
                    200,
                    "application/json",
                    &br#"{"request_id": "req-0000", "status": "appr"#[..],
                ))
            }
            Step::Reset => {
                retryable = true;
                let mut p = Plan::immediate(Response::new(200, "application/json", Vec::new()));
                p.fault = http1::Fault::ResetBeforeHead;
                p
            }
            _ => Plan::immediate(self.route(request, path, step)),
        };
        (plan, retryable)
    }

    /// What the judge is told of an answer.
    fn answered(&self, plan: &Plan, retryable: bool) -> Answered {
        let answer: Option<Value> = serde_json::from_slice(&plan.response.body).ok();
        let field = |k: &str| {
            answer
                .as_ref()
                .and_then(|v| v[k].as_str())
                .map(str::to_string)
        };
        let status = plan.response.status;
        let answered = Answered {
            status,
            decision: field("status"),
            request_id: field("request_id"),
            retry_after: plan
                .response
                .headers
                .iter()
                .find(|(n, _)| n == "retry-after")
                .and_then(|(_, v)| v.parse().ok()),
            retryable: retryable || status >= 500 || status == 429,
            decided_at: None,
            at: None,
        };
        Answered {
            decided_at: self.decided_at(answered.request_id.as_deref()),
            ..answered
        }
    }

    /// When the human decides request `id`, if it is an escalation not decided yet.
    fn decided_at(&self, id: Option<&str>) -> Option<Instant> {
        let books = self.books.lock().ok()?;
        books.requests.get(id?)?.decided_at
    }

    fn route(&self, request: &Request, path: &str, step: &Step) -> Response {
        match (request.method.as_str(), path) {
            ("POST", "/agent/request") => self.agent_request(request, step),
            ("GET", p) if p.starts_with("/agent/status/") && self.flaws.no_status_endpoint => {
                error_detail_not_found()
            }
            ("GET", p) if p.starts_with("/agent/status/") => {
                self.status(request, &p["/agent/status/".len()..])
            }
            ("POST", "/agent/context") => self.context(request),
            ("GET", "/agent/capabilities") => self.capabilities(request),
            (_, "/agent/request" | "/agent/context" | "/agent/capabilities") => {
                error(405, "method not allowed")
            }
            _ => error(404, &format!("no endpoint {path}")),
        }
    }
}

/// Why a Librarian could not be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    /// `--journal PATH` cannot be created: a usage error, nothing has been served.
    #[error("--journal {path}: cannot create: {cause}")]
    Journal { path: String, cause: String },
    /// The port could not be listened on: the run cannot go on.
    #[error("{0}")]
    Listen(String),
}

impl crate::error::LayerError for ServerError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            ServerError::Journal { .. } => Class::Usage,
            ServerError::Listen(_) => Class::Run,
        }
    }
}

/// A Librarian being served.
pub struct Served {
    pub url: String,
    /// The Librarian itself (its judge, when it is the mock).
    pub librarian: Arc<Librarian>,
    running: http1::Running,
}

impl Served {
    pub async fn stop(self) {
        self.running.stop().await;
    }
}

/// Serves `librarian` on a loopback port the OS picks.
pub async fn serve(librarian: Librarian) -> Result<Served, ServerError> {
    serve_on(librarian, SocketAddr::from(([127, 0, 0, 1], 0))).await
}

/// Serves `librarian` on `addr` (port 0: the OS picks).
pub async fn serve_on(librarian: Librarian, addr: SocketAddr) -> Result<Served, ServerError> {
    let librarian = Arc::new(librarian);
    let running = http1::spawn(librarian.clone(), addr)
        .await
        .map_err(|e| ServerError::Listen(e.to_string()))?;
    Ok(Served {
        url: running.url(),
        librarian,
        running,
    })
}

#[cfg(test)]
mod tests;
