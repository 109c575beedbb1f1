//! The Librarian behind `agent-tck proxy --protocol librarian --server URL`: the real
//! Librarian is the platform, the agents that call it its clients. Every client request is
//! judged by the mock Librarian's client rules ([`ClientJudge`], group `client`), one judge per
//! client so that each client is its own party; every answer of the server by the rules the
//! fleet and the probe hold every answer to ([`ServerAnswers`]: no 5xx, a LibrarianResponse of
//! the schema, the document's expectations, a 429 that says when to come back).
//!
//! Which client sent a request: the one whose key (`--agent-key NAME=KEY`) its bearer is; else
//! the agent_id its body names (its bearer then learned as that client's, for the requests
//! without a body: GET /agent/status, /agent/capabilities); else the client its bearer was
//! learned for; else `unidentified`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::answers::{asked_as, ServerAnswers};
use super::mock::{Answered, Bearer, ClientJudge, ClientSent, Step};
use super::model;
use crate::proxy::server::{
    AnswerFault, ClientRequest, ProxiedServer, Reply, ServerAnswer, ServerTraffic,
};
use crate::report::CaseResult;

/// The Librarian as the proxy stands before it.
pub struct Proxied;

/// A fault on the real Librarian's answers.
enum Fault {
    Step(Step),
    Silent429,
}

impl AnswerFault for Fault {
    fn bend(&self, _: &str, real: &Reply) -> Option<Reply> {
        let error = |status: u16, message: &str| Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: json!({ "error": message }).to_string().into(),
            delay: Duration::ZERO,
            reset: false,
        };
        match self {
            Fault::Step(Step::TooMany(secs)) => {
                let mut r = error(429, "rate limit exceeded (agent-tck proxy --fault)");
                r.headers.push(("retry-after".into(), secs.to_string()));
                Some(r)
            }
            Fault::Step(Step::ServerError) => Some(error(
                500,
                "internal server error (agent-tck proxy --fault)",
            )),
            Fault::Step(Step::Malformed) => Some(Reply {
                body: r#"{"request_id": "req-0000", "status": "appr"#.into(),
                ..error(200, "")
            }),
            Fault::Step(Step::Slow(after)) => Some(Reply {
                delay: *after,
                ..real.clone()
            }),
            Fault::Step(Step::Reset) => Some(Reply {
                reset: true,
                ..error(502, "")
            }),
            Fault::Step(_) => None,
            Fault::Silent429 => (real.status == 429).then(|| Reply {
                headers: real
                    .headers
                    .iter()
                    .filter(|h| model::says_when_to_return(std::slice::from_ref(h)).is_none())
                    .cloned()
                    .collect(),
                ..real.clone()
            }),
        }
    }
}

/// Clients (and bearer tokens) followed at most: past it, one judge for the rest.
const CLIENTS: usize = 1_000;
const TOKENS: usize = 10_000;
/// The name of a request no key, body or learned bearer names.
const UNIDENTIFIED: &str = "unidentified";
/// The judge of the clients past [`CLIENTS`].
const OTHERS: &str = "more-clients";

impl ProxiedServer for Proxied {
    /// The mock Librarian's script faults, on real answers: `429:SECS` (rate limited, with
    /// Retry-After), `500`, `malformed-json` (a truncated LibrarianResponse), `slow:DUR` (the
    /// real answer, DUR later), `reset` (the connection reset, no answer); and the reference's
    /// `silent-429` (a real 429's Retry-After and rate-limit headers taken away).
    fn fault(&self, text: &str) -> Result<Box<dyn AnswerFault>, String> {
        if text.trim() == "silent-429" {
            return Ok(Box::new(Fault::Silent429));
        }
        let step = Step::parse(text).map_err(|e| e.to_string())?;
        match step {
            Step::TooMany(_)
            | Step::ServerError
            | Step::Malformed
            | Step::Slow(_)
            | Step::Reset => Ok(Box::new(Fault::Step(step))),
            _ => Err(format!(
                "{text:?} is a decision of the mock Librarian's, not a fault on a real answer \
                 (faults: 429:SECS, 500, malformed-json, slow:DUR, reset, silent-429)"
            )),
        }
    }

    fn judge(&self, keys: &[(String, String)]) -> Box<dyn ServerTraffic> {
        let clients = keys
            .iter()
            .map(|(name, _)| (name.clone(), ClientJudge::behind_proxy()))
            .collect();
        Box::new(Judge {
            keys: keys
                .iter()
                .filter(|(_, k)| !k.is_empty())
                .cloned()
                .collect(),
            state: Mutex::new(State {
                clients,
                tokens: HashMap::new(),
                server: ServerAnswers::default(),
            }),
        })
    }
}

struct Judge {
    /// Each client's key, by name (secrets: never in a message).
    keys: Vec<(String, String)>,
    state: Mutex<State>,
}

struct State {
    clients: BTreeMap<String, ClientJudge>,
    /// Bearer tokens learned → their client.
    tokens: HashMap<String, String>,
    server: ServerAnswers,
}

/// A request as the rules read it.
struct Read<'a> {
    path: &'a str,
    token: Option<&'a str>,
    body: Option<Value>,
}

fn read<'a>(request: &'a ClientRequest<'_>) -> Read<'a> {
    let path = request
        .target
        .split_once('?')
        .map_or(request.target, |(p, _)| p);
    let token = request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.strip_prefix("Bearer ").unwrap_or(v).trim())
        .filter(|t| !t.is_empty());
    Read {
        path,
        token,
        body: serde_json::from_slice(request.body).ok(),
    }
}

/// A name as the report can show it: the agent_id a body gives, kept short and plain.
fn plain(name: &str) -> String {
    let name: String = name
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    if name.is_empty() {
        UNIDENTIFIED.to_string()
    } else {
        name
    }
}

impl Judge {
    /// Who sent a request, and how its bearer stands (see the module's doc).
    fn who(&self, state: &mut State, r: &Read<'_>) -> (String, Bearer) {
        let keyed = r
            .token
            .and_then(|t| self.keys.iter().find(|(_, k)| k == t))
            .map(|(name, _)| name.clone());
        let named = r
            .body
            .as_ref()
            .and_then(|b| b["agent_id"].as_str())
            .map(plain);
        let learned = r.token.and_then(|t| state.tokens.get(t)).cloned();
        let client = keyed
            .or(named)
            .or(learned)
            .unwrap_or_else(|| UNIDENTIFIED.to_string());
        if let Some(t) = r.token {
            if client != UNIDENTIFIED && state.tokens.len() < TOKENS {
                state
                    .tokens
                    .entry(t.to_string())
                    .or_insert_with(|| client.clone());
            }
        }
        let bearer = match r.token {
            None => Bearer::Missing,
            Some(t) => match self.keys.iter().find(|(name, _)| *name == client) {
                Some((_, key)) if key != t => Bearer::NotTheKey,
                _ => Bearer::Sent,
            },
        };
        (client, bearer)
    }
}

/// A client's judge, made on its first request (past [`CLIENTS`], the one for the rest).
fn judge_of<'s>(state: &'s mut State, client: &str) -> &'s ClientJudge {
    let name = if state.clients.contains_key(client) || state.clients.len() < CLIENTS {
        client
    } else {
        OTHERS
    };
    state
        .clients
        .entry(name.to_string())
        .or_insert_with(ClientJudge::behind_proxy)
}

const BEARERS: [(Bearer, &str); 3] = [
    (Bearer::Missing, "missing"),
    (Bearer::Sent, "sent"),
    (Bearer::NotTheKey, "not-the-key"),
];

impl ServerTraffic for Judge {
    fn on_request(&self, request: &ClientRequest<'_>) -> (String, Value) {
        let r = read(request);
        let Ok(mut state) = self.state.lock() else {
            return (UNIDENTIFIED.to_string(), Value::Null);
        };
        // Judged again from a recording: who it was and how its bearer stood, as said live
        // (the bearer is masked there, and the keys are not kept).
        let recorded = request.recorded.and_then(|note| {
            let client = note["client"].as_str()?.to_string();
            let bearer = BEARERS.iter().find(|(_, word)| note["bearer"] == *word)?.0;
            Some((client, bearer))
        });
        let (client, bearer) = match recorded {
            Some(said) => said,
            None => self.who(&mut state, &r),
        };
        let judge = judge_of(&mut state, &client);
        // agent-tck's probe marks its own tests: set aside, not the client's.
        let marked = request
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(crate::probe::exchange::DELIBERATE_HEADER))
            .map(|(_, v)| *v);
        match marked {
            Some(case) => judge.on_marked(case, request.method, r.path),
            None => judge.on_request(&ClientSent {
                who: &client,
                method: request.method,
                path: r.path,
                bearer,
                body: r.body.as_ref(),
                raw: request.body,
                at: request.at,
            }),
        }
        let word = BEARERS.iter().find(|(b, _)| *b == bearer).map(|(_, w)| *w);
        let note = json!({"client": client, "bearer": word});
        (client, note)
    }

    fn on_answer(
        &self,
        request: &ClientRequest<'_>,
        client: &str,
        answer: &ServerAnswer<'_>,
        given: Option<&ServerAnswer<'_>>,
        at: Instant,
    ) {
        let r = read(request);
        let method = request.method;
        let path = r.path;
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        // The server is judged on its own answer.
        match answer {
            ServerAnswer::Came {
                status,
                headers,
                body,
            } => {
                let status = *status;
                let json: Option<Value> = serde_json::from_slice(body).ok();
                state.server.no5xx.check(client, status < 500, || {
                    format!("{method} {path} answered {status}")
                });
                let judged = (method == "POST" && path == "/agent/request")
                    .then(|| model::judge_answer(r.body.as_ref(), status, json.as_ref()))
                    .flatten()
                    .map(|j| (asked_as(r.body.as_ref()), j));
                let come_back = (status == 429)
                    .then(|| model::says_when_to_return(headers).map(|(n, v)| format!("{n}: {v}")));
                state
                    .server
                    .judge(client, status, judged.as_ref(), come_back.as_ref());
            }
            ServerAnswer::Failed(what) => state.server.no5xx.check(client, false, || {
                format!("{method} {path}: no answer ({what})")
            }),
        }
        // The client, on what it got.
        let answered = match given.unwrap_or(answer) {
            ServerAnswer::Came {
                status,
                headers,
                body,
            } => {
                let status = *status;
                let json: Option<Value> = serde_json::from_slice(body).ok();
                let field = |k: &str| {
                    json.as_ref()
                        .and_then(|v| v[k].as_str())
                        .map(str::to_string)
                };
                let two = (200..300).contains(&status);
                // A status that shows an escalation decided: polls of it are judged no more.
                if let (Some(id), true) = (path.strip_prefix("/agent/status/"), two) {
                    let state_now = field("status").unwrap_or_default().to_ascii_uppercase();
                    if !matches!(state_now.as_str(), "ESCALATED" | "PENDING" | "VALIDATING") {
                        judge_of(&mut state, client).decided(id);
                    }
                }
                Answered {
                    status,
                    decision: field("status").filter(|_| path == "/agent/request"),
                    request_id: field("request_id"),
                    retry_after: headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("retry-after"))
                        .and_then(|(_, v)| v.trim().parse().ok()),
                    retryable: status >= 500 || status == 429 || (two && json.is_none()),
                    decided_at: None,
                    at: Some(at),
                }
            }
            ServerAnswer::Failed(_) => Answered {
                retryable: true,
                at: Some(at),
                ..Answered::default()
            },
        };
        let marked = request
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(crate::probe::exchange::DELIBERATE_HEADER));
        if !marked {
            judge_of(&mut state, client).on_answer(client, path, r.body.as_ref(), &answered);
        }
    }

    fn cases(&self) -> Vec<CaseResult> {
        let Ok(state) = self.state.lock() else {
            return Vec::new();
        };
        let mut cases: Vec<CaseResult> = state
            .server
            .cases([
                "no request came through the proxy",
                "the server answered no POST /agent/request 2xx",
                "the server gave no LibrarianResponse and no rejection",
                "the server answered no request 429 (a client over 60 requests a minute would be)",
            ])
            .into();
        for (name, judge) in &state.clients {
            for mut case in judge.cases() {
                case.id = format!("{name}/{}", case.id);
                case.group = format!("agent {name}");
                cases.push(case);
            }
        }
        cases
    }
}
