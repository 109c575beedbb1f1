//! Stub agents and helpers shared by the tests.

#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use agent_tck::mock::reference::ReferenceAgent;
use agent_tck::mock::server::{self, Running};
use agent_tck::mock::{Reply, Responder};
use agent_tck::probe::{self, ProbeSettings, Suite};
use agent_tck::report::{CaseResult, Report, Status};
use agent_tck::transport::http::BaseUrl;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

pub const SEED: u64 = 42;
pub const KEY: &str = "s3cret-test-key";

fn loopback() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

/// The conforming reference agent, served on a free loopback port.
pub async fn reference_agent(api_key: Option<&str>) -> Running {
    serve(ReferenceAgent::new("reference-agent", SEED), api_key).await
}

/// Serves any responder (with the real mock server: routing, auth, /health).
pub async fn serve(responder: impl Responder, api_key: Option<&str>) -> Running {
    let app = server::app(Arc::new(responder), api_key.map(str::to_string));
    server::spawn(loopback(), app).await.expect("bind loopback")
}

/// The reference agent with its JSON answer at one endpoint rewritten: the way a broken agent
/// differs from a conforming one in exactly one respect.
pub struct Mutated<F> {
    pub endpoint: &'static str,
    pub inner: ReferenceAgent,
    pub mutate: F,
}

pub fn mutated<F: Fn(&mut Value) + Send + Sync + 'static>(
    endpoint: &'static str,
    mutate: F,
) -> Mutated<F> {
    Mutated {
        endpoint,
        inner: ReferenceAgent::new("reference-agent", SEED),
        mutate,
    }
}

impl<F: Fn(&mut Value) + Send + Sync + 'static> Responder for Mutated<F> {
    fn respond(&self, endpoint: &str, body: &[u8]) -> Reply {
        let reply = self.inner.respond(endpoint, body);
        if endpoint != self.endpoint || reply.status != 200 {
            return reply;
        }
        let mut value: Value =
            serde_json::from_slice(&reply.body).expect("the reference agent answers JSON");
        (self.mutate)(&mut value);
        Reply::json(200, &value)
    }
}

/// The reference agent with the raw reply at one endpoint replaced.
pub struct Replaced<F> {
    pub endpoint: &'static str,
    pub inner: ReferenceAgent,
    pub reply: F,
}

pub fn replaced<F: Fn() -> Reply + Send + Sync + 'static>(
    endpoint: &'static str,
    reply: F,
) -> Replaced<F> {
    Replaced {
        endpoint,
        inner: ReferenceAgent::new("reference-agent", SEED),
        reply,
    }
}

impl<F: Fn() -> Reply + Send + Sync + 'static> Responder for Replaced<F> {
    fn respond(&self, endpoint: &str, body: &[u8]) -> Reply {
        if endpoint == self.endpoint {
            (self.reply)()
        } else {
            self.inner.respond(endpoint, body)
        }
    }
}

/// Settings for the built-in roundtable suite against `url`, with short deadlines.
pub fn settings(url: &str) -> ProbeSettings {
    let mut s = ProbeSettings::new(
        BaseUrl::parse(url).expect("url"),
        Suite::builtin("roundtable").expect("suite"),
    );
    s.seed = SEED;
    s.timeout = Duration::from_secs(10);
    s
}

pub async fn probe(url: &str, api_key: Option<&str>) -> Report {
    probe_with(url, |s| s.api_key = api_key.map(str::to_string)).await
}

pub async fn probe_with(url: &str, tweak: impl FnOnce(&mut ProbeSettings)) -> Report {
    let mut s = settings(url);
    tweak(&mut s);
    probe::run(&s, &|_| {}).await.expect("the suite runs")
}

pub fn ids_with(report: &Report, status: Status) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == status)
        .map(|c| c.id.as_str())
        .collect()
}

pub fn failed(report: &Report) -> Vec<&str> {
    ids_with(report, Status::Fail)
}

pub fn case<'a>(report: &'a Report, id: &str) -> &'a CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id} in the report"))
}

/// Asserts that exactly `expected` cases failed, and that case `id`'s message contains each of
/// `needles`.
#[track_caller]
pub fn assert_fails(report: &Report, expected: &[&str], id: &str, needles: &[&str]) {
    let mut got = failed(report);
    got.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    assert_eq!(
        got,
        want,
        "failed cases; messages: {:#?}",
        report
            .cases
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| (&c.id, &c.message))
            .collect::<Vec<_>>()
    );
    let message = &case(report, id).message;
    for needle in needles {
        assert!(
            message.contains(needle),
            "{id}: message {message:?} lacks {needle:?}"
        );
    }
}

/// A raw TCP server: each accepted connection is handed to `handle` in its own task. For peers
/// that no HTTP framework can play (trickles, garbage, resets, endless bodies).
pub async fn raw_server<F, Fut>(handle: F) -> (String, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind(loopback()).await.expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handle(stream));
        }
    });
    (url, task)
}

/// Reads a request head (up to the blank line) and its body as announced by Content-Length, so a
/// raw server answers only after the probe has sent everything.
pub async fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return buf;
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return buf,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}
