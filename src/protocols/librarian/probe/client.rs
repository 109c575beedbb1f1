//! The kit's client of a Librarian: its requests (a 429 waited out outside the rate group),
//! what came back, what the run saw (for the cases judged across it), and the gates: whether an
//! endpoint answers its own valid request before a refusal from it counts.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use crate::probe::exchange::DELIBERATE_HEADER;
use crate::protocols::librarian::model::{self, LIMITS};
use crate::protocols::librarian::reference::Registered;
use crate::report::Exchange;
use crate::text::excerpt;
use crate::transport::http::{self, Limits, Request};
use crate::transport::liveness::{self, Watch};

use super::settings::Settings;

/// One answer the run got, for the cases judged across it.
pub(super) struct Seen {
    pub(super) what: String,
    /// Which of the four endpoints answered (`request`, `status`, `context`, `capabilities`).
    pub(super) endpoint: &'static str,
    pub(super) status: u16,
    pub(super) elapsed: Duration,
    /// The request (for requests to /agent/request) and the parsed answer.
    pub(super) request: Option<Value>,
    pub(super) answer: Option<Value>,
    /// A case of its own judged this answer's 5xx (a malformed request's, say): not counted
    /// again by `request.no-5xx`.
    pub(super) judged: bool,
}

pub(super) struct Client<'a> {
    pub(super) s: &'a Settings,
    pub(super) seen: Vec<Seen>,
    /// Refusals for a missing field: (field, answer).
    pub(super) missing: Vec<(String, Value)>,
    pub(super) n: usize,
    /// Whether a 429 is waited out (false in the rate group: there it is the finding).
    pub(super) patient: bool,
    /// Whether the running case judges a 5xx itself.
    pub(super) judges_5xx: bool,
    /// The headers of the first 429 the rate group got.
    pub(super) limited_with: Option<Vec<(String, String)>>,
    /// Whether each endpoint answered its own valid request (see [`Gate`]), asked once a run.
    pub(super) gates: std::collections::HashMap<Gate, Result<(), Unopened>>,
    /// The running case, when its requests are the probe's own tests rather than a client's
    /// (see `runner::marked`): each is sent with `x-agent-tck-case: CASE`, so that a mock
    /// Librarian judging its caller sets it aside.
    pub(super) marked: Option<String>,
    /// Whether the Librarian is still there ([`crate::transport::liveness`]).
    pub(super) watch: Watch,
    /// When the running case's requests broke (refused, reset, closed): the run's end asks the
    /// watch whether the Librarian's death did it.
    pub(super) broke: Vec<Duration>,
}

/// A request that got no answer (the transport's words): the running case fails with them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub(super) struct NoAnswer(#[from] http::Error);

/// Why no `--token` agent may make a request (see [`Client::able_with`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum NoAsker {
    /// No registry, and no agent but the one excluded (or none at all).
    #[error("needs a second agent; give --token twice (AGENT=TOKEN)")]
    NoOther,
    /// The registry lets none of them: `why` for each.
    #[error(
        "no --token agent may make {what} ({}); give --token for an agent the registry \
         allows it",
        .why.join("; ")
    )]
    NoneMay { what: String, why: Vec<String> },
}

/// What an endpoint answered its own valid request instead of what the document says (see
/// [`Gate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum GateClosed {
    #[error(
        "a valid {request_type} to POST /agent/request was answered {decision}, not a \
         LibrarianResponse ({} judges that)",
        Gate::Request(request_type).judged_by()
    )]
    Request {
        request_type: &'static str,
        decision: String,
    },
    #[error(
        "GET /agent/status/{{request_id}} of the agent's own request was answered {status} \
         ({} judges that)",
        Gate::Status.judged_by()
    )]
    Status { status: u16 },
    #[error(
        "GET /agent/capabilities was answered {status} ({} judges that)",
        Gate::Capabilities.judged_by()
    )]
    Capabilities { status: u16 },
}

/// Why a gate did not open: the endpoint was not asked, got no answer, or answered otherwise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Unopened {
    #[error(transparent)]
    NoAsker(#[from] NoAsker),
    #[error("{what} got no answer: {cause}")]
    NoAnswer { what: String, cause: NoAnswer },
    /// The status gate's QUERY, answered with nothing to look up.
    #[error(
        "a valid QUERY was answered {decision}, with no request_id to look up \
         (request.query judges that)"
    )]
    NoRequestId { decision: String },
    #[error(transparent)]
    Closed(#[from] GateClosed),
}

/// Why a case has nothing to judge: its skip's reason, word for word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Unjudged {
    #[error("not judged: {0}")]
    NoAsker(#[from] NoAsker),
    #[error(
        "not judged: {0}; an endpoint that answers its valid requests exercises this case (a \
         refusal from one that refuses everything says nothing of its rules)"
    )]
    Unopened(#[from] Unopened),
    #[error(
        "not judged: this case needs an approved APPROVAL first, and a valid one was answered \
         {decision}; a Librarian that approves request.approval's APPROVAL exercises it"
    )]
    NotApproved { decision: String },
    /// The APPROVAL a case needs first got no answer: skipped with the transport's words.
    #[error(transparent)]
    NoAnswer(#[from] NoAnswer),
}

/// What a refusal is measured against: the endpoint answering its own valid request. A server
/// that answers everything 404 refuses every faulty request too, and that says nothing of its
/// rules; so the cases about refusals are judged only once the endpoint has answered a valid
/// request as the document says (a LibrarianResponse, a RequestStatus, an AgentCapabilities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Gate {
    /// POST /agent/request answered a valid request of this type with a LibrarianResponse.
    Request(&'static str),
    /// GET /agent/status/{id} answered 200 for a request this agent made.
    Status,
    /// GET /agent/capabilities answered 200 with JSON.
    Capabilities,
}

impl Gate {
    /// The case that judges the endpoint itself, for a reader sent there.
    pub(super) fn judged_by(self) -> &'static str {
        match self {
            Gate::Request("QUERY") => "request.query",
            Gate::Request("VALIDATE") => "request.validate",
            Gate::Request(_) => "request.approval",
            Gate::Status => "status.lookup",
            Gate::Capabilities => "capabilities.get",
        }
    }
}

/// Whether `got` is the answer `gate`'s endpoint gives a valid request; if not, what it was.
pub(super) fn gate_verdict(gate: Gate, got: &Got) -> Result<(), GateClosed> {
    let answered = match gate {
        Gate::Request(_) => got.decided(),
        Gate::Status | Gate::Capabilities => {
            got.status == 200 && got.json.as_ref().is_some_and(Value::is_object)
        }
    };
    if answered {
        return Ok(());
    }
    Err(match gate {
        Gate::Request(request_type) => GateClosed::Request {
            request_type,
            decision: got.decision(),
        },
        Gate::Status => GateClosed::Status { status: got.status },
        Gate::Capabilities => GateClosed::Capabilities { status: got.status },
    })
}

/// The gate of a request type (a REPORT needs an approved APPROVAL: the APPROVAL's).
pub(super) fn request_gate(request_type: &str) -> Gate {
    let t = ["QUERY", "VALIDATE"]
        .into_iter()
        .find(|t| *t == request_type)
        .unwrap_or("APPROVAL");
    Gate::Request(t)
}

/// The endpoint a path is on (for the cases judged across the run).
pub(super) fn endpoint_of(path: &str) -> &'static str {
    match path {
        "/agent/request" => "request",
        "/agent/context" => "context",
        "/agent/capabilities" => "capabilities",
        _ => "status",
    }
}

/// What came back from one request.
pub(super) struct Got {
    pub(super) status: u16,
    pub(super) json: Option<Value>,
    pub(super) retry_after: Option<String>,
    pub(super) headers: Vec<(String, String)>,
    pub(super) exchange: Exchange,
}

impl Got {
    pub(super) fn approved(&self) -> bool {
        (200..300).contains(&self.status)
            && self
                .json
                .as_ref()
                .and_then(|v| v.get("status"))
                .and_then(Value::as_str)
                == Some("approved")
    }

    /// Whether this is a LibrarianResponse with a decision (whichever): the endpoint answered
    /// as the document says.
    pub(super) fn decided(&self) -> bool {
        (200..300).contains(&self.status)
            && self
                .json
                .as_ref()
                .and_then(|v| v.get("status"))
                .and_then(Value::as_str)
                .is_some_and(|s| model::STATUSES.contains(&s))
    }

    /// The answer's `request_id`, when it has one.
    pub(super) fn request_id(&self) -> Option<String> {
        self.json
            .as_ref()
            .and_then(|v| v.get("request_id"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    pub(super) fn decision(&self) -> String {
        match self
            .json
            .as_ref()
            .and_then(|v| v.get("status"))
            .and_then(Value::as_str)
        {
            Some(s) if (200..300).contains(&self.status) => format!("{} {s}", self.status),
            _ => self.status.to_string(),
        }
    }
}

impl<'a> Client<'a> {
    /// A client for one run, before its first request.
    /// A client of the Librarian `s` names, for a run that started at `started`.
    pub(super) fn new(
        s: &'a Settings,
        started: Instant,
        tape: Option<std::sync::Arc<crate::judge::tape::Tape>>,
    ) -> Client<'a> {
        Client {
            watch: Watch::http(
                format!("the Librarian at {}", s.base),
                started,
                &s.base.host,
                s.base.port,
            )
            .taped(tape, crate::judge::Party::Server),
            broke: Vec::new(),
            s,
            seen: Vec::new(),
            missing: Vec::new(),
            n: 0,
            patient: true,
            judges_5xx: false,
            limited_with: None,
            gates: std::collections::HashMap::new(),
            marked: None,
        }
    }
    pub(super) fn agent(&self, i: usize) -> Option<&(String, String)> {
        self.s.tokens.get(i)
    }

    pub(super) async fn send(
        &mut self,
        what: &str,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Bytes>,
        request: Option<&Value>,
    ) -> Result<Got, NoAnswer> {
        let mut attempt = 0;
        loop {
            let mut headers = vec![("accept".to_string(), "application/json".to_string())];
            if body.is_some() {
                headers.push(("content-type".into(), "application/json".into()));
            }
            if let Some(t) = token {
                headers.push(("authorization".into(), format!("Bearer {t}")));
            }
            if let Some(case) = &self.marked {
                headers.push((DELIBERATE_HEADER.into(), case.clone()));
            }
            let req = Request {
                method: method.into(),
                path: path.into(),
                headers,
                body: body.clone().unwrap_or_default(),
            };
            let limits = Limits {
                deadline: self.s.timeout,
                max_body: self.s.max_body,
                ..Limits::default()
            };
            let (r, broke) = liveness::send(&self.watch, &self.s.base, &req, limits).await;
            self.broke.extend(broke);
            let r = r?;
            // The transport's measure: a replay gives back the recorded one.
            let elapsed = r.elapsed;
            if r.status == 429 && self.patient && attempt < LIMITS.max_retries {
                attempt += 1;
                let wait = r
                    .header("retry-after")
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(5)
                    .clamp(1, 60);
                tokio::time::sleep(Duration::from_secs(wait)).await;
                continue;
            }
            let json: Option<Value> = serde_json::from_slice(&r.body).ok();
            self.seen.push(Seen {
                what: what.to_string(),
                endpoint: endpoint_of(path),
                status: r.status,
                elapsed,
                request: request.cloned(),
                answer: json.clone(),
                judged: self.judges_5xx,
            });
            let exchange = Exchange {
                request: Some(format!(
                    "{method} {path}{}",
                    request
                        .map(|v| format!("\n{}", excerpt(v.to_string().as_bytes(), 1_500)))
                        .unwrap_or_default()
                )),
                response: Some(format!("{} {}", r.status, excerpt(&r.body, 1_500))),
                reproduce: None,
            };
            return Ok(Got {
                status: r.status,
                json,
                retry_after: r.header("retry-after").map(str::to_string),
                headers: r.headers.clone(),
                exchange,
            });
        }
    }

    /// POST /agent/request with `body` as agent `as_agent` (index into the tokens).
    pub(super) async fn request(
        &mut self,
        what: &str,
        as_agent: usize,
        body: &Value,
    ) -> Result<Got, NoAnswer> {
        let token = self.agent(as_agent).map(|(_, t)| t.clone());
        let bytes = Bytes::from(serde_json::to_vec(body).unwrap_or_default());
        self.send(
            what,
            "POST",
            "/agent/request",
            token.as_deref(),
            Some(bytes),
            Some(body),
        )
        .await
    }

    pub(super) fn build(&mut self, as_agent: usize, request_type: &str) -> Value {
        self.n += 1;
        let agent = self
            .agent(as_agent)
            .map(|(a, _)| a.clone())
            .unwrap_or_default();
        self.template(&agent, request_type, self.n)
    }

    /// A valid request of `request_type` from `agent`, for a target the registry lets it
    /// touch when it limits the document's one.
    pub(super) fn template(&self, agent: &str, request_type: &str, n: usize) -> Value {
        let mut body = model::request(agent, request_type, n);
        let Some(entry) = self.entry_of(agent) else {
            return body;
        };
        if entry.forbids(body["target_type"].as_str().unwrap_or("")) {
            if let Some(t) = model::TARGET_TYPES.into_iter().find(|t| !entry.forbids(t)) {
                body["target_type"] = json!(t);
                body["target_path"] = json!(format!("docs/{t}/feature-{n}.md"));
            }
        }
        body
    }

    /// The registry's entry of `agent`, if the registry names it.
    pub(super) fn entry_of(&self, agent: &str) -> Option<&Registered> {
        self.s.registry.as_ref()?.iter().find(|r| r.id == agent)
    }

    /// The first --token agent (but `not`) that may make the request `make` builds for it, as
    /// the registry says (its capabilities and allowed_targets); without a registry, the first.
    /// Err: why none may, as the running case's skip.
    pub(super) fn able_with(
        &self,
        what: &str,
        not: Option<usize>,
        make: impl Fn(&str) -> Value,
    ) -> Result<usize, NoAsker> {
        let candidates = (0..self.s.tokens.len()).filter(|i| Some(*i) != not);
        if self.s.registry.is_none() {
            return candidates.into_iter().next().ok_or(NoAsker::NoOther);
        }
        let mut why = Vec::new();
        for i in candidates {
            let agent = &self.s.tokens[i].0;
            match self.entry_of(agent) {
                None => why.push(format!("{agent} is not in the registry")),
                Some(entry) => match entry.refuses(&make(agent)) {
                    None => return Ok(i),
                    Some(w) => why.push(w),
                },
            }
        }
        Err(NoAsker::NoneMay {
            what: what.to_string(),
            why,
        })
    }

    /// The first --token agent that may make a valid `request_type` (see [`Self::able_with`]).
    pub(super) fn able(&self, request_type: &str) -> Result<usize, NoAsker> {
        self.able_with(&crate::text::with_article(request_type), None, |a| {
            self.template(a, request_type, 0)
        })
    }

    /// An approved APPROVAL's request_id and the agent that asked (for REPORT and status
    /// cases); without one, why the case has nothing to judge.
    pub(super) async fn approved_id(&mut self) -> Result<(usize, String), Unjudged> {
        let i = self.able("APPROVAL")?;
        let body = self.build(i, "APPROVAL");
        let got = self.request("an APPROVAL", i, &body).await?;
        self.note(Gate::Request("APPROVAL"), &got);
        match got.request_id() {
            Some(id) if got.approved() => Ok((i, id)),
            _ => Err(Unjudged::NotApproved {
                decision: got.decision(),
            }),
        }
    }

    /// The `--token` agent that asks this case's `request_type`, once its endpoint has answered
    /// its own valid request; else why the case has nothing to judge.
    pub(super) async fn asker(&mut self, request_type: &'static str) -> Result<usize, Unjudged> {
        self.opened(Gate::Request(request_type)).await?;
        Ok(self.able(request_type)?)
    }

    /// Ok once `gate`'s endpoint has answered its own valid request (asked at most once a
    /// run); else why the running case has nothing to judge.
    pub(super) async fn opened(&mut self, gate: Gate) -> Result<(), Unjudged> {
        if !self.gates.contains_key(&gate) {
            let outcome = self.try_gate(gate).await;
            self.gates.entry(gate).or_insert(outcome);
        }
        Ok(self.gates[&gate].clone()?)
    }

    pub(super) async fn try_gate(&mut self, gate: Gate) -> Result<(), Unopened> {
        let unanswered = |what: &str, cause: NoAnswer| Unopened::NoAnswer {
            what: what.to_string(),
            cause,
        };
        let got = match gate {
            Gate::Request(t) => {
                let i = self.able(t)?;
                let body = self.build(i, t);
                let what = format!("a valid {t}");
                self.request(&what, i, &body)
                    .await
                    .map_err(|e| unanswered(&what, e))?
            }
            Gate::Status => {
                let i = self.able("QUERY")?;
                let body = self.build(i, "QUERY");
                let got = self
                    .request("a valid QUERY", i, &body)
                    .await
                    .map_err(|e| unanswered("a valid QUERY", e))?;
                let id = got.request_id().filter(|_| got.decided()).ok_or_else(|| {
                    Unopened::NoRequestId {
                        decision: got.decision(),
                    }
                })?;
                self.status(i, &id)
                    .await
                    .map_err(|e| unanswered("GET /agent/status/{id}", e))?
            }
            Gate::Capabilities => self
                .capabilities(0)
                .await
                .map_err(|e| unanswered("GET /agent/capabilities", e))?,
        };
        Ok(gate_verdict(gate, &got)?)
    }

    /// Records what a case's own valid request to `gate`'s endpoint got (the first answer
    /// decides), so that the gate is not asked again.
    pub(super) fn note(&mut self, gate: Gate, got: &Got) {
        self.gates
            .entry(gate)
            .or_insert_with(|| gate_verdict(gate, got).map_err(Unopened::from));
    }

    pub(super) async fn status(&mut self, as_agent: usize, id: &str) -> Result<Got, NoAnswer> {
        let token = self.agent(as_agent).map(|(_, t)| t.clone());
        let path = format!("/agent/status/{id}");
        self.send("a status", "GET", &path, token.as_deref(), None, None)
            .await
    }

    /// GET /agent/capabilities as agent `as_agent`.
    pub(super) async fn capabilities(&mut self, as_agent: usize) -> Result<Got, NoAnswer> {
        let token = self.agent(as_agent).map(|(_, t)| t.clone());
        self.send(
            "capabilities",
            "GET",
            "/agent/capabilities",
            token.as_deref(),
            None,
            None,
        )
        .await
    }
}

#[cfg(test)]
impl Got {
    /// An answer with `status` and, when given, a JSON body (no headers, no exchange).
    pub(super) fn answered(status: u16, json: Option<Value>) -> Got {
        Got {
            status,
            json,
            retry_after: None,
            headers: Vec::new(),
            exchange: Exchange::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_gated_by_the_approval_and_the_others_by_their_own_type() {
        assert_eq!(request_gate("REPORT"), Gate::Request("APPROVAL"));
        assert_eq!(request_gate("APPROVAL"), Gate::Request("APPROVAL"));
        assert_eq!(request_gate("QUERY"), Gate::Request("QUERY"));
        assert_eq!(request_gate("VALIDATE"), Gate::Request("VALIDATE"));
        assert_eq!(
            request_gate("query"),
            Gate::Request("APPROVAL"),
            "case matters"
        );
    }

    #[test]
    fn a_path_is_on_its_endpoint_and_any_other_is_a_status_lookup() {
        assert_eq!(endpoint_of("/agent/request"), "request");
        assert_eq!(endpoint_of("/agent/context"), "context");
        assert_eq!(endpoint_of("/agent/capabilities"), "capabilities");
        assert_eq!(endpoint_of("/agent/status/req-1"), "status");
        assert_eq!(endpoint_of("/agent/request/"), "status");
    }

    #[test]
    fn a_gate_opens_only_on_the_answer_the_document_gives_a_valid_request() {
        let approved = Got::answered(200, Some(json!({"status": "approved"})));
        assert_eq!(gate_verdict(Gate::Request("QUERY"), &approved), Ok(()));
        assert_eq!(
            gate_verdict(Gate::Request("QUERY"), &Got::answered(404, None))
                .map_err(|e| e.to_string()),
            Err(
                "a valid QUERY to POST /agent/request was answered 404, not a \
                 LibrarianResponse (request.query judges that)"
                    .into()
            )
        );
        assert_eq!(
            gate_verdict(
                Gate::Request("REPORT"),
                &Got::answered(200, Some(json!({})))
            )
            .map_err(|e| e.to_string()),
            Err(
                "a valid REPORT to POST /agent/request was answered 200, not a \
                 LibrarianResponse (request.approval judges that)"
                    .into()
            )
        );
        assert_eq!(
            gate_verdict(Gate::Status, &Got::answered(200, Some(json!([]))))
                .map_err(|e| e.to_string()),
            Err(
                "GET /agent/status/{request_id} of the agent's own request was answered 200 \
                 (status.lookup judges that)"
                    .into()
            ),
            "a 200 that is not a JSON object"
        );
        assert_eq!(
            gate_verdict(Gate::Capabilities, &Got::answered(200, Some(json!({})))),
            Ok(())
        );
        assert_eq!(
            gate_verdict(Gate::Capabilities, &Got::answered(401, Some(json!({}))))
                .map_err(|e| e.to_string()),
            Err("GET /agent/capabilities was answered 401 (capabilities.get judges that)".into())
        );
    }

    #[test]
    fn a_decision_counts_only_in_a_2xx_and_only_with_a_documented_status() {
        let got = Got::answered(
            200,
            Some(json!({"status": "approved", "request_id": "r-1"})),
        );
        assert!(got.approved() && got.decided());
        assert_eq!(got.decision(), "200 approved");
        assert_eq!(got.request_id().as_deref(), Some("r-1"));

        let rejected = Got::answered(201, Some(json!({"status": "rejected"})));
        assert!(!rejected.approved() && rejected.decided());
        assert_eq!(rejected.decision(), "201 rejected");

        let refused = Got::answered(400, Some(json!({"status": "approved"})));
        assert!(!refused.approved() && !refused.decided());
        assert_eq!(refused.decision(), "400", "no decision outside a 2xx");

        let unknown = Got::answered(200, Some(json!({"status": "pending", "request_id": 7})));
        assert!(!unknown.decided());
        assert_eq!(unknown.decision(), "200 pending");
        assert_eq!(
            unknown.request_id(),
            None,
            "a request_id that is not a string"
        );
    }

    #[test]
    fn a_skip_reason_keeps_its_words_through_each_wrapping() {
        let none_may = NoAsker::NoneMay {
            what: "a QUERY".into(),
            why: vec!["a is not in the registry".into(), "b may not read".into()],
        };
        assert_eq!(
            Unjudged::from(none_may).to_string(),
            "not judged: no --token agent may make a QUERY (a is not in the registry; b may not \
             read); give --token for an agent the registry allows it"
        );
        assert_eq!(
            Unjudged::from(NoAsker::NoOther).to_string(),
            "not judged: needs a second agent; give --token twice (AGENT=TOKEN)"
        );
        let unanswered = Unopened::NoAnswer {
            what: "a valid QUERY".into(),
            cause: NoAnswer::from(http::Error::Reset {
                phase: "before the status line".into(),
            }),
        };
        assert_eq!(
            Unjudged::from(unanswered).to_string(),
            "not judged: a valid QUERY got no answer: connection reset by the agent before the \
             status line; an endpoint that answers its valid requests exercises this case (a \
             refusal from one that refuses everything says nothing of its rules)"
        );
        assert_eq!(
            Unjudged::from(Unopened::NoRequestId {
                decision: "200".into()
            })
            .to_string(),
            "not judged: a valid QUERY was answered 200, with no request_id to look up \
             (request.query judges that); an endpoint that answers its valid requests exercises \
             this case (a refusal from one that refuses everything says nothing of its rules)"
        );
        assert_eq!(
            Unjudged::NotApproved {
                decision: "200 rejected".into()
            }
            .to_string(),
            "not judged: this case needs an approved APPROVAL first, and a valid one was \
             answered 200 rejected; a Librarian that approves request.approval's APPROVAL \
             exercises it"
        );
    }
}
