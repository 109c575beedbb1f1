//! The platform's own tests: the fixtures (test agents, calls to the platform), then one module
//! per concern.

use std::future::Future;

use agent_tck::mock::{Reply, Responder};
use agent_tck::protocols::roundtable::reference::ReferenceAgent;

use super::deliberation::text;
use super::*;
use crate::support::{raw_server, read_request, stub, Req, KEY, SEED};

const AGENT_TIMEOUT: Duration = Duration::from_secs(1);
const CONTENT: &str = "Review the authentication module for security vulnerabilities";
const ADMIN: &str = "admin-token";

/// One request a test agent received.
#[derive(Debug, Clone)]
struct Seen {
    /// The path without its leading slash, prefix included (`team/c/analyze`).
    endpoint: String,
    authorization: Option<String>,
    body: Value,
}

impl Seen {
    fn of(req: &Req) -> Seen {
        Seen {
            endpoint: req.endpoint.clone(),
            authorization: req
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            body: req.json(),
        }
    }
}

/// How a test agent answers: (endpoint without the prefix, body) → reply.
type Answer = Box<dyn Fn(&str, &[u8]) -> Reply + Send + Sync>;

/// The reference agent named `name` (so its answers carry that name).
fn reference(name: &'static str) -> Answer {
    let agent = ReferenceAgent::new(name, SEED);
    Box::new(move |endpoint, body| agent.respond(endpoint, body))
}

/// The reference agent named `name`, with its JSON answer at `endpoint` rewritten by `mutate`.
fn rewriting(
    name: &'static str,
    endpoint: &'static str,
    mutate: impl Fn(&mut Value) + Send + Sync + 'static,
) -> Answer {
    let inner = reference(name);
    Box::new(move |at, body| {
        let reply = inner(at, body);
        if at != endpoint || reply.status != 200 {
            return reply;
        }
        let mut answer: Value =
            serde_json::from_slice(&reply.body).expect("the reference agent answers JSON");
        mutate(&mut answer);
        Reply::json(200, &answer)
    })
}

/// The same reply to every request.
fn always(reply: Reply) -> Answer {
    Box::new(move |_, _| reply.clone())
}

fn invalid_json() -> Reply {
    Reply {
        status: 200,
        content_type: "application/json",
        body: Bytes::from_static(b"{\"agent_name\": \"bad\", "),
    }
}

/// An agent on a loopback port that records every request it receives.
struct TestAgent {
    name: &'static str,
    url: String,
    /// Registered as its api_key, and required by the agent.
    key: Option<&'static str>,
    seen: Arc<Mutex<Vec<Seen>>>,
    _server: Option<Running>,
}

impl TestAgent {
    async fn new(name: &'static str, answer: Answer) -> TestAgent {
        TestAgent::serve(name, answer, None, "").await
    }

    async fn reference(name: &'static str) -> TestAgent {
        TestAgent::new(name, reference(name)).await
    }

    /// A reference agent that requires `Authorization: Bearer KEY` (401 otherwise).
    async fn keyed(name: &'static str) -> TestAgent {
        TestAgent::serve(name, reference(name), Some(KEY), "").await
    }

    /// A reference agent served under `/prefix` (its base URL carries the prefix).
    async fn prefixed(name: &'static str, prefix: &'static str) -> TestAgent {
        TestAgent::serve(name, reference(name), None, prefix).await
    }

    async fn serve(
        name: &'static str,
        answer: Answer,
        key: Option<&'static str>,
        prefix: &'static str,
    ) -> TestAgent {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let journal = seen.clone();
        let server = stub(move |req| {
            let request = Seen::of(&req);
            let reply = answer_as(&request, &req.body, &answer, key, prefix);
            journal.lock().expect("journal").push(request);
            reply
        })
        .await;
        let url = match prefix {
            "" => server.url(),
            _ => format!("{}/{prefix}", server.url()),
        };
        TestAgent {
            name,
            url,
            key,
            seen,
            _server: Some(server),
        }
    }

    /// Reads each request and never answers (the connection stays open).
    async fn hanging(name: &'static str) -> TestAgent {
        let (url, _task) = raw_server(|mut stream| async move {
            read_request(&mut stream).await;
            std::future::pending::<()>().await;
        })
        .await;
        TestAgent {
            name,
            url,
            key: None,
            seen: Arc::default(),
            _server: None,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("journal").clone()
    }

    fn endpoints(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.endpoint).collect()
    }

    fn bodies(&self, endpoint: &str) -> Vec<Value> {
        self.seen()
            .into_iter()
            .filter(|s| s.endpoint == endpoint)
            .map(|s| s.body)
            .collect()
    }
}

/// What a test agent answers: 401 without its key, 404 outside its prefix, else `answer`.
fn answer_as(
    request: &Seen,
    body: &[u8],
    answer: &Answer,
    key: Option<&str>,
    prefix: &str,
) -> Reply {
    if let Some(key) = key {
        if request.authorization.as_deref() != Some(format!("Bearer {key}").as_str()) {
            return Reply::error(401, "missing or wrong Authorization: Bearer <key>");
        }
    }
    let endpoint = match prefix {
        "" => Some(request.endpoint.as_str()),
        _ => request.endpoint.strip_prefix(&format!("{prefix}/")),
    };
    match endpoint {
        Some(endpoint) => answer(endpoint, body),
        None => Reply::error(404, format!("no endpoint /{}", request.endpoint)),
    }
}

fn config(variant: Variant) -> PlatformConfig {
    PlatformConfig {
        variant,
        agent_timeout: AGENT_TIMEOUT,
        ..PlatformConfig::default()
    }
}

/// One request to the platform's API, with the kit's bounded client: (status, JSON body).
async fn call(
    platform: &Platform,
    method: &str,
    path: &str,
    body: Option<&Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(token) = token {
        headers.push(("authorization".to_string(), format!("Bearer {token}")));
    }
    let request = Request {
        method: method.into(),
        path: path.into(),
        headers,
        body: body
            .map(|b| Bytes::from(serde_json::to_vec(b).expect("JSON")))
            .unwrap_or_default(),
    };
    let base = BaseUrl::parse(&platform.url).expect("the platform's URL");
    let limits = Limits {
        deadline: Duration::from_secs(20),
        ..Limits::default()
    };
    let response = send(&base, &request, limits)
        .await
        .expect("the platform answers");
    let json = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, json)
}

async fn register_body(platform: &Platform, body: Value) -> (u16, Value) {
    call(platform, "POST", "/api/v1/agents", Some(&body), None).await
}

async fn register(platform: &Platform, agent: &TestAgent) -> (u16, Value) {
    let mut body = json!({"name": agent.name, "domain": "general review", "base_url": agent.url});
    if let Some(key) = agent.key {
        body["api_key"] = json!(key);
    }
    register_body(platform, body).await
}

async fn task(platform: &Platform, body: Value) -> (u16, Value) {
    call(
        platform,
        "POST",
        "/api/v1/round-table/tasks",
        Some(&body),
        None,
    )
    .await
}

/// Starts a `variant` platform, registers `agents`, runs one task over all of them and stops
/// the platform. None when the task did not complete within 3 × the agent timeout.
async fn deliberate(variant: Variant, agents: &[TestAgent]) -> Option<(u16, Value)> {
    let platform = start(config(variant)).await;
    for agent in agents {
        assert_eq!(register(&platform, agent).await.0, 201, "{}", agent.name);
    }
    let answer = tokio::time::timeout(
        3 * AGENT_TIMEOUT,
        task(&platform, json!({"content": CONTENT})),
    )
    .await
    .ok();
    platform.stop().await;
    answer
}

/// A deliberation that must complete.
async fn completed(variant: Variant, agents: &[TestAgent]) -> (u16, Value) {
    deliberate(variant, agents)
        .await
        .unwrap_or_else(|| panic!("{}: the task did not complete", variant.name()))
}

/// The agent names in a /challenge body's other_analyses, sorted.
fn other_names(challenge: &Value) -> Vec<String> {
    let mut names: Vec<String> = challenge["other_analyses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| text(a, "agent_name").to_string())
        .collect();
    names.sort();
    names
}

/// Whether any string in `value` satisfies `test`.
fn any_string(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(s) => test(s),
        Value::Array(items) => items.iter().any(|v| any_string(v, test)),
        Value::Object(map) => map.iter().any(|(k, v)| test(k) || any_string(v, test)),
        _ => false,
    }
}

/// The `excluded[phase]` entries as (agent, reason).
fn excluded(answer: &Value, phase: &str) -> Vec<(String, String)> {
    answer["excluded"][phase]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (text(e, "agent").to_string(), text(e, "reason").to_string()))
        .collect()
}

#[track_caller]
fn assert_reason(answer: &Value, phase: &str, agent: &str, needle: &str) {
    let all = excluded(answer, phase);
    let reason = all
        .iter()
        .find(|(a, _)| a == agent)
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("{agent} is not excluded from {phase}: {all:?}"));
    assert!(
        reason.contains(needle),
        "{agent}: {reason:?} lacks {needle:?}"
    );
}

mod conforming;
mod registration;
mod variants;
