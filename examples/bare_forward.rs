//! A bare forwarding proxy on hyper 1.x, the yardstick of `scripts/bench-proxy.sh` ("within 0.8×
//! of a bare forwarding proxy"): each request that comes in goes to one upstream, with its
//! method, path, query, header fields and body, and whatever came back (status, header fields,
//! body) is the answer. Nothing else: no judging, no reading of the bodies (they stream through),
//! no routing — the least a proxy does.
//!
//! ```text
//! cargo run --release --example bare_forward -- --upstream http://127.0.0.1:PORT [--port P]
//! ```
//!
//! It binds 127.0.0.1 (port 0, the default, lets the OS pick) and prints
//! `bare forward listening on http://127.0.0.1:PORT -> UPSTREAM` on stdout. The upstream's
//! connections are kept open and reused (hyper-util's legacy client, its keep-alive pool), as
//! nginx's `keepalive` and `agent-tck proxy`'s own pool do. The runtime is tokio's multi-threaded
//! one with its default worker count, as the kit's.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, CONNECTION, HOST};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

fn usage(error: &str) -> ! {
    eprintln!("bare_forward: {error}\nusage: bare_forward --upstream URL [--port P]");
    std::process::exit(2);
}

/// Header fields of a hop, not of the message (RFC 9110 §7.6.1): not passed on. `Host` names
/// this proxy; the client writes the upstream's own.
const HOP_BY_HOP: [&str; 7] = [
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authorization",
];

fn strip_hops(headers: &mut hyper::HeaderMap) {
    headers.remove(CONNECTION);
    headers.remove(HOST);
    for name in HOP_BY_HOP {
        headers.remove(HeaderName::from_static(name));
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (mut upstream, mut port) = (None, 0u16);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--upstream" => upstream = Some(value),
            "--port" => {
                port = value
                    .parse()
                    .unwrap_or_else(|_| usage(&format!("--port {value:?} is not a port")))
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let upstream = upstream.unwrap_or_else(|| usage("--upstream is required"));
    // The upstream's scheme and authority; its path, if any, is put before each request's.
    let base: Uri = upstream
        .parse()
        .unwrap_or_else(|e| usage(&format!("--upstream {upstream:?}: {e}")));
    if base.scheme_str() != Some("http") || base.authority().is_none() {
        usage(&format!("--upstream {upstream:?} is not an http:// URL"));
    }
    let prefix = base.path().trim_end_matches('/').to_string();
    let origin = format!("http://{}", base.authority().expect("checked above"));

    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    // The bodies stream through: the client's request body is the server's incoming one.
    let client: Client<HttpConnector, Incoming> = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(usize::MAX)
        .build(connector);

    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "bare forward listening on http://{} -> {upstream}",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(pair) => pair,
            Err(_) => {
                // Out of file descriptors and the like: back off, as the mock does.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (client, origin, prefix) = (client.clone(), origin.clone(), prefix.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let (client, origin, prefix) = (client.clone(), origin.clone(), prefix.clone());
                async move {
                    let (mut parts, body) = request.into_parts();
                    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
                    parts.uri = match format!("{origin}{prefix}{path}").parse() {
                        Ok(uri) => uri,
                        Err(_) => return Ok(failed(StatusCode::BAD_REQUEST, "bad path")),
                    };
                    strip_hops(&mut parts.headers);
                    match client.request(Request::from_parts(parts, body)).await {
                        Ok(mut response) => {
                            strip_hops(response.headers_mut());
                            Ok::<_, Infallible>(response.map(Either::Left))
                        }
                        // No answer from the upstream (refused, reset, closed): a 502, as
                        // nginx gives.
                        Err(e) => Ok(failed(StatusCode::BAD_GATEWAY, &e.to_string())),
                    }
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn failed(status: StatusCode, reason: &str) -> Response<Either<Incoming, Full<Bytes>>> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(format!(
        "bare_forward: {reason}\n"
    )))));
    *response.status_mut() = status;
    response
}
