//! A small axum server for the tests' canned peers: a [`Responder`] (or any router) on a loopback
//! port, with optional bearer auth on the protocol endpoints. The kit itself serves agents with
//! its own engine (`mock::fleet`); this is the tests' second HTTP stack, on purpose.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::Response;
use axum::routing::any;
use axum::Router;
use tokio::net::TcpListener;

use agent_tck::mock::{Reply, Responder};

/// Largest request body the mock accepts (a platform may send long content).
const MAX_REQUEST: usize = 32 * 1024 * 1024;

struct AppState {
    responder: Arc<dyn Responder>,
    api_key: Option<String>,
}

/// The HTTP app for one agent. With `api_key`, protocol endpoints require `Authorization: Bearer
/// KEY` (401 otherwise); /health stays open, as platforms poll it without credentials.
pub fn app(responder: Arc<dyn Responder>, api_key: Option<String>) -> Router {
    let state = Arc::new(AppState { responder, api_key });
    Router::new()
        .route("/{endpoint}", any(handle))
        .fallback(|| async { to_response(Reply::error(404, "no such endpoint")) })
        .layer(DefaultBodyLimit::max(MAX_REQUEST))
        .with_state(state)
}

async fn handle(
    State(state): State<Arc<AppState>>,
    Path(endpoint): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let expected = match endpoint.as_str() {
        "analyze" | "challenge" | "vote" => Method::POST,
        "health" => Method::GET,
        _ => return to_response(Reply::error(404, format!("no endpoint /{endpoint}"))),
    };
    if method != expected {
        return to_response(Reply::error(405, format!("/{endpoint} takes {expected}")));
    }
    if endpoint != "health" {
        if let Some(key) = &state.api_key {
            let sent = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            match sent.and_then(|v| v.strip_prefix("Bearer ")) {
                Some(token) if token == key => {}
                Some(_) => return to_response(Reply::error(401, "wrong API key")),
                None => {
                    return to_response(Reply::error(401, "missing Authorization: Bearer <key>"))
                }
            }
        }
    }
    to_response(state.responder.respond(&endpoint, &body))
}

fn to_response(reply: Reply) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, reply.content_type)
        .body(Body::from(reply.body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// A running server: its address, and a handle that stops it.
pub struct Running {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets requests in flight finish, and waits.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Binds `addr` (port 0: the OS picks) and serves `app` in the background.
pub async fn spawn(addr: SocketAddr, app: Router) -> std::io::Result<Running> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, app, async {
        let _ = stopped.await;
    }));
    Ok(Running { addr, stop, task })
}

/// Serves until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
