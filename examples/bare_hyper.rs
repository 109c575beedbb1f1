//! A bare hyper 1.x HTTP/1.1 server, the baseline of `scripts/bench-mock.sh`: it reads each
//! request whole (head and body) and answers every one with the same status, content-type and
//! body bytes, taken from a file. Nothing else: no routing, no parsing of the body, no state.
//!
//! ```text
//! cargo run --release --example bare_hyper -- --body FILE [--content-type CT] [--port P] \
//!     [--delay DUR]
//! ```
//!
//! `--delay 200ms` answers each request that long after its body was read (`sleep_until`, as the
//! mock's `slow` behaviour does): the baseline of the timing-accuracy figure.
//!
//! It binds 127.0.0.1 (port 0, the default, lets the OS pick) and prints
//! `bare hyper listening on http://127.0.0.1:PORT` on stdout. The runtime is the same as the
//! mock's: tokio's multi-threaded runtime with its default worker count.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

fn usage(error: &str) -> ! {
    eprintln!(
        "bare_hyper: {error}\nusage: bare_hyper --body FILE [--content-type CT] [--port P] \
         [--delay DUR]"
    );
    std::process::exit(2);
}

struct Args {
    body: Bytes,
    content_type: HeaderValue,
    port: u16,
    delay: Duration,
}

fn parse_args() -> Args {
    let mut body = None;
    let mut content_type = "application/json".to_string();
    let mut port = 0;
    let mut delay = Duration::ZERO;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--body" => {
                let bytes = std::fs::read(&value)
                    .unwrap_or_else(|e| usage(&format!("--body {value}: {e}")));
                body = Some(Bytes::from(bytes));
            }
            "--content-type" => content_type = value,
            "--port" => {
                port = value
                    .parse()
                    .unwrap_or_else(|_| usage(&format!("--port {value:?} is not a port")))
            }
            "--delay" => {
                delay = humantime::parse_duration(&value)
                    .unwrap_or_else(|e| usage(&format!("--delay {value:?}: {e}")))
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    Args {
        body: body.unwrap_or_else(|| usage("--body is required")),
        content_type: HeaderValue::from_str(&content_type)
            .unwrap_or_else(|_| usage(&format!("--content-type {content_type:?} is not valid"))),
        port,
        delay,
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = parse_args();
    let listener = TcpListener::bind(("127.0.0.1", args.port)).await?;
    println!("bare hyper listening on http://{}", listener.local_addr()?);
    let (body, content_type, delay) = (args.body, args.content_type, args.delay);
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
        let (body, content_type) = (body.clone(), content_type.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let (body, content_type) = (body.clone(), content_type.clone());
                async move {
                    // Read the whole request body, as the mock does before it answers.
                    let _ = request.into_body().collect().await;
                    if !delay.is_zero() {
                        tokio::time::sleep_until((Instant::now() + delay).into()).await;
                    }
                    let mut response = Response::new(Full::new(body));
                    response.headers_mut().insert(CONTENT_TYPE, content_type);
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
