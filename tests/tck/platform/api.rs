//! The platform's HTTP API: agent registration (`/api/v1/agents`, behind the admin token) and
//! tasks (`POST /api/v1/round-table/tasks`), each run as one deliberation.

use super::deliberation::{Crash, Deliberation};
use super::*;

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/api/v1/agents", post(register).get(list))
        .route("/api/v1/agents/{name}", delete(unregister))
        .route("/api/v1/round-table/tasks", post(run_task))
        .route_layer(middleware::from_fn_with_state(shared.clone(), admin_auth))
        .layer(DefaultBodyLimit::max(MAX_REQUEST))
        .with_state(shared)
}

pub(super) fn reply(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

/// A JSON error body `{"error": message}`.
pub(super) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    reply(status, json!({ "error": message.into() }))
}

/// With an admin token configured, the API needs it as a bearer token.
pub(super) async fn admin_auth(
    State(shared): State<Arc<Shared>>,
    request: axum::extract::Request,
    next: Next,
) -> Response {
    if let Some(token) = &shared.config.admin_token {
        let sent = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if sent != Some(token.as_str()) {
            return error(
                StatusCode::UNAUTHORIZED,
                "missing or wrong Authorization: Bearer <admin token>",
            );
        }
    }
    next.run(request).await
}

/// The registration body (spec: Registration).
#[derive(Deserialize)]
pub(super) struct Registration {
    name: Option<String>,
    domain: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    #[serde(default)]
    capabilities: Vec<String>,
    mode: Option<String>,
}

impl Registration {
    /// The agent it registers, or why it cannot be registered (a 400 message).
    fn into_agent(self, refuse_loopback: bool) -> Result<Agent, String> {
        let name = self.name.ok_or("name is required")?;
        check_name(&name)?;
        let base_url = self.base_url.ok_or("base_url is required")?;
        let base = BaseUrl::parse(&base_url).map_err(|e| format!("base_url: {e}"))?;
        if refuse_loopback && is_loopback(&base.host) {
            return Err(format!(
                "base_url {base_url:?} points at a loopback address, which this platform refuses"
            ));
        }
        Ok(Agent {
            name,
            domain: self.domain.unwrap_or_else(|| "general".into()),
            base_url,
            base,
            api_key: self.api_key.filter(|k| !k.is_empty()),
            capabilities: self.capabilities,
            mode: self.mode.unwrap_or_else(|| "sync".into()),
        })
    }
}

/// Names match `^[A-Za-z][A-Za-z0-9_-]*$`: they end up in URLs, logs and other agents' prompts.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "name {name:?} is invalid: it must match ^[A-Za-z][A-Za-z0-9_-]*$"
        ))
    }
}

/// `localhost` (and its subdomains), 127.0.0.0/8, ::1 (also IPv4-mapped), and the unspecified
/// addresses, which connect to this host too.
pub(super) fn is_loopback(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
    }
}

pub(super) async fn register(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let agent = serde_json::from_slice::<Registration>(&body)
        .map_err(|e| format!("invalid registration: {e}"))
        .and_then(|r| r.into_agent(shared.config.refuse_loopback));
    let agent = match agent {
        Ok(agent) => agent,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    if shared.config.refuse_private {
        if let Err(message) = ssrf_guard(&agent.base.host, agent.base.port).await {
            return error(StatusCode::BAD_REQUEST, message);
        }
    }
    let mut agents = shared.agents();
    if agents.iter().any(|a| a.name == agent.name) {
        return error(
            StatusCode::CONFLICT,
            format!("agent name already registered: {}", agent.name),
        );
    }
    let public = agent.public();
    agents.push(agent);
    drop(agents);
    shared.registrations.send_modify(|n| *n += 1);
    reply(StatusCode::CREATED, public)
}

/// KangaKode/aiscaffold's `validate_url` (security/validators.py), its messages word for word.
pub(super) async fn ssrf_guard(host: &str, port: u16) -> Result<(), String> {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if host == "localhost" || host == "metadata.google.internal" {
        return Err(format!("base_url cannot point to {host}"));
    }
    let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map(|addrs| addrs.map(|a| a.ip()).collect())
            .unwrap_or_default(),
    };
    if addrs.iter().any(|ip| is_private(*ip)) {
        return Err("base_url cannot point to private/internal addresses".into());
    }
    if host.ends_with(".internal") {
        return Err("base_url cannot point to internal hostnames".into());
    }
    Ok(())
}

/// Python's `is_private or is_loopback or is_link_local` for the ranges that matter here.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_private() || v4.is_loopback() || v4.is_link_local() || v4.is_unspecified()
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

pub(super) async fn list(State(shared): State<Arc<Shared>>) -> Response {
    let agents = shared.agents().iter().map(Agent::public).collect();
    reply(StatusCode::OK, Value::Array(agents))
}

pub(super) async fn unregister(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Response {
    shared.deregistrations.fetch_add(1, Ordering::Relaxed);
    if shared.config.hang_deregistration {
        std::future::pending::<()>().await;
    }
    let mut agents = shared.agents();
    match agents.iter().position(|a| a.name == name) {
        Some(at) => {
            agents.remove(at);
            StatusCode::NO_CONTENT.into_response()
        }
        None => error(StatusCode::NOT_FOUND, format!("no agent named {name}")),
    }
}

/// The task body: what to deliberate and who deliberates (all registered agents by default).
#[derive(Deserialize)]
pub(super) struct Task {
    pub(super) content: String,
    #[serde(default)]
    pub(super) context: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) constraints: Option<Vec<String>>,
    #[serde(default)]
    agents: Option<Vec<String>>,
}

pub(super) async fn run_task(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let task = match serde_json::from_slice::<Task>(&body) {
        Ok(task) => task,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("invalid task: {e}")),
    };
    let participants = match shared.participants(task.agents.as_deref()) {
        Ok(participants) => participants,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    let deliberation = Deliberation {
        shared: &shared,
        task_id: shared.task_id(),
        task,
    };
    deliberation
        .run(&participants)
        .await
        .unwrap_or_else(|Crash| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: an agent answer could not be parsed",
            )
        })
}
