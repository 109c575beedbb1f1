//! Fuzz targets: one function for each parser that reads bytes from the other side (or from a
//! user's file), each taking the raw input and asserting what must hold whatever it is.
//!
//! Two runners share them:
//! - cargo-fuzz (libFuzzer, nightly): `fuzz/fuzz_targets/<name>.rs` calls [`run`] with its name;
//!   `scripts/fuzz.sh` runs every target for a while, seeded from `fuzz/seeds/<name>/`;
//! - the ordinary test suite on stable: `tests/tck/fuzz.rs` runs each target over a few thousand
//!   inputs made by [`mutations`] from the same seeds with a fixed RNG seed, so CI runs them too,
//!   and every input a fuzzer once crashed on (`fuzz/regressions/<name>/`) is replayed there.
//!
//! Beyond "no panic, no hang", each target checks its parser's own promises: bodies within their
//! caps, lines without their newline and within theirs, nothing lost between the lines read and the
//! bytes that came, every loader's error naming the file it read, a conforming mock's answer to a
//! valid request meeting the protocol's schema.

use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::mock::agent::MockAgent;
use crate::mock::behavior::For;
use crate::mock::fleet::{FleetFile, FleetHandler};
use crate::mock::http1::{self, Delivered, Handler, Outcome, ServerLimits};
use crate::mock::journal::Journal;
use crate::mock::line_server::LineService;
use crate::mock::protocol::{AgentProtocol, PlatformExpect};
use crate::protocols::{execute_task, roundtable};

/// A fuzz target: any bytes in, a panic when a promise is broken.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("mock_request", mock_request),
    ("mock_body", mock_body),
    ("probe_response", probe_response),
    ("line_reader", line_reader),
    ("suite_yaml", suite_yaml),
    ("config_yaml", config_yaml),
];

/// Runs target `name` on `data`; panics on an unknown name.
pub fn run(name: &str, data: &[u8]) {
    let (_, target) = TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fuzz target {name:?}"));
    target(data)
}

/// The file name every loader is given: its errors must name it.
const SOURCE: &str = "fuzzed.yaml";

/// A caller-side bound for anything that waits: a target that needs it has hung.
const HANG: Duration = Duration::from_secs(10);

thread_local! {
    /// One runtime per thread, reused by every input (building one costs more than most inputs).
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    /// The mock fleets the request targets talk to, built once.
    static FLEETS: Vec<FleetHandler> = fleets();
    /// The built-in round-table suite (`roundtable::suite()` hands out a copy each time).
    static SUITE: crate::probe::Suite = roundtable::suite().expect("the built-in suite");
    /// A conforming execute_task agent serving lines.
    static LINES: LineService = {
        let agent = agents(&execute_task::Agents, "agents:\n  - name: et\n").remove(0);
        LineService::judged(agent, &PlatformExpect::timeout(Duration::from_secs(30)))
    };
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    RUNTIME.with(|rt| {
        rt.block_on(async {
            tokio::time::timeout(HANG, future)
                .await
                .expect("the target hung: no end within 10 s")
        })
    })
}

/// A stream over an input held in memory: reads hand out at most `chunk` bytes at a time (so the
/// parsers see requests split anywhere), then end of stream; writes are counted and dropped.
/// A `reply` feed says nothing until it has been written to, as a server answers a request (an
/// HTTP client refuses bytes that come before its request).
struct Feed {
    data: Bytes,
    chunk: usize,
    written: usize,
    reply: bool,
    waiting: Option<std::task::Waker>,
}

impl Feed {
    fn new(data: &[u8], chunk: usize) -> Feed {
        Feed {
            data: Bytes::copy_from_slice(data),
            chunk: chunk.max(1),
            written: 0,
            reply: false,
            waiting: None,
        }
    }

    fn reply(data: &[u8], chunk: usize) -> Feed {
        Feed {
            reply: true,
            ..Feed::new(data, chunk)
        }
    }
}

impl AsyncRead for Feed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.reply && self.written == 0 {
            self.waiting = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        let part = self.data.split_to(n);
        buf.put_slice(&part);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Feed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.written += buf.len();
        if let Some(waker) = self.waiting.take() {
            waker.wake();
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The first byte of an input chooses how it is cut into reads (1 to 64 bytes, or all at once).
fn split_first(data: &[u8]) -> (usize, &[u8]) {
    match data.split_first() {
        Some((&b, rest)) if b < 192 => (usize::from(b % 64) + 1, rest),
        Some((_, rest)) => (usize::MAX, rest),
        None => (usize::MAX, data),
    }
}

/// A conforming round-table agent with a key and one without, and a conforming execute_task
/// agent, each fleet on one (unbound) port.
fn fleets() -> Vec<FleetHandler> {
    let fleet = |protocol: &'static dyn AgentProtocol, yaml: &str| {
        let agents = agents(protocol, yaml);
        let observer = crate::mock::observe::observer_for(
            protocol,
            &PlatformExpect::timeout(Duration::from_secs(30)),
        );
        FleetHandler::shared(agents, Journal::off(Instant::now()), observer)
    };
    vec![
        fleet(
            &roundtable::Agents,
            "agents:\n  - name: rt\n  - name: keyed\n    api_key: k3y\n",
        ),
        fleet(&execute_task::Agents, "agents:\n  - name: et\n"),
    ]
}

/// The agents of a fleet file's `yaml`.
fn agents(protocol: &'static dyn AgentProtocol, yaml: &str) -> Vec<MockAgent> {
    let at = For {
        protocol,
        others: &[],
    };
    FleetFile::parse("fuzz-fleet.yaml", yaml)
        .and_then(|f| f.agents("fuzz-fleet.yaml", 1, at))
        .expect("the fuzz fleet loads")
}

fn local() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 8080))
}

/// One request through a fleet's handler, as the engine would after reading it; checks the plan.
fn handle(fleet: &FleetHandler, request: http1::Request) -> http1::Plan {
    let (plan, note) = block_on(fleet.handle(request));
    assert!(
        (100..=599).contains(&plan.response.status),
        "the mock planned status {}",
        plan.response.status
    );
    let delivered = Delivered {
        outcome: Outcome::Complete,
        bytes: plan.response.body.len() as u64,
        ttfb: Some(Duration::ZERO),
        total: Duration::ZERO,
    };
    block_on(fleet.finish(note, delivered));
    plan
}

/// What a platform sends a mock over one connection: requests read by the mock engine (head,
/// Content-Length or chunked body, `Expect: 100-continue`, pipelining; a small body cap so the 413
/// path is reachable), each handed to the fleets' handlers as `mock fleet` would.
pub fn mock_request(data: &[u8]) {
    const MAX_BODY: usize = 16 * 1024;
    let (chunk, input) = split_first(data);
    let mut feed = Feed::new(input, chunk);
    let mut buf = BytesMut::new();
    let limits = ServerLimits { max_body: MAX_BODY };
    FLEETS.with(|fleets| {
        for _ in 0..16 {
            let read = block_on(http1::read_request(&mut feed, &mut buf, limits));
            match read {
                Ok(Some(parts)) => {
                    let request = parts.stamp(local(), local());
                    assert!(request.body.len() <= MAX_BODY, "a body past the cap");
                    for fleet in fleets {
                        handle(fleet, request.clone());
                    }
                    if request.close {
                        break;
                    }
                }
                Ok(None) => break,
                Err(http1::ReadError::Bad {
                    status,
                    message,
                    target,
                }) => {
                    assert!(matches!(status, 400 | 413 | 431), "refused with {status}");
                    assert!(!message.is_empty(), "a refusal without a reason");
                    for fleet in fleets {
                        fleet.refused(local(), target.as_deref(), status, &message);
                    }
                    break;
                }
                Err(http1::ReadError::Incomplete { target, what }) => {
                    assert!(!what.is_empty(), "an incomplete request without a reason");
                    for fleet in fleets {
                        fleet.incomplete(local(), target.as_deref(), &what);
                    }
                    break;
                }
                Err(http1::ReadError::Io(e)) => panic!("an in-memory read failed: {e}"),
            }
        }
    });
}

/// A request body (what a platform posts) at every endpoint of every fleet agent; a body that
/// meets the endpoint's request schema must get a conforming agent's 200 (agents with a key get
/// it; the keyed agent is also sent none).
pub fn mock_body(data: &[u8]) {
    let body = Bytes::copy_from_slice(data);
    let parsed: Option<Value> = serde_json::from_slice(data).ok();
    FLEETS.with(|fleets| {
        for fleet in fleets {
            for agent in &fleet.agents {
                for endpoint in agent.protocol.endpoints() {
                    let mut headers = http1::Headers::default();
                    headers.push("content-type", "application/json");
                    if let Some(key) = &agent.profile.api_key {
                        headers.push("authorization", &format!("Bearer {key}"));
                    }
                    let request = http1::Request {
                        method: endpoint.method.to_string(),
                        target: format!("/agents/{}/{}", agent.name(), endpoint.name),
                        headers,
                        body: body.clone(),
                        close: false,
                        received: Instant::now(),
                        peer: local(),
                        local: local(),
                        left: None,
                    };
                    let plan = handle(fleet, request.clone());
                    let valid = match (endpoint.request_schema, &parsed) {
                        (Some(schema), Some(v)) => {
                            crate::schema::schemas().validate(schema, v).is_empty()
                        }
                        _ => false,
                    };
                    // The quick check is only a shortcut: what it admits, the validator finds
                    // valid, and its members are the parsed body's.
                    let quick = crate::mock::Body::checked(data, endpoint.request_schema);
                    if let Some(members) = quick.admitted() {
                        assert!(valid, "/{}: admitted, yet not valid", endpoint.name);
                        for member in &members.members {
                            let parsed = parsed.as_ref().and_then(|v| v.get(member.key));
                            assert_eq!(
                                parsed.map(|v| v.to_string()),
                                serde_json::from_slice::<Value>(member.raw)
                                    .ok()
                                    .map(|v| v.to_string()),
                                "/{}: member {:?}",
                                endpoint.name,
                                member.key
                            );
                        }
                    }
                    if valid {
                        assert_eq!(
                            plan.response.status,
                            200,
                            "{} /{}: a conforming agent refused a valid request: {}",
                            agent.name(),
                            endpoint.name,
                            String::from_utf8_lossy(&plan.response.body)
                        );
                    }
                    if agent.profile.api_key.is_some() {
                        let mut bare = request;
                        bare.headers.retain(|name, _| name != "authorization");
                        let plan = handle(fleet, bare);
                        if endpoint.needs_key {
                            assert_eq!(plan.response.status, 401, "no key, yet answered");
                        }
                    }
                }
            }
        }
    });
}

/// The body cap of [`read_response`].
const PROBE_MAX_BODY: usize = 32 * 1024;

/// An agent's answer to the probe's POST /analyze, the input (after its first byte, see
/// [`split_first`]) read by the probe's HTTP client: what [`probe_response`] judges, public so
/// that the tests can check that the seeds get as far as a response.
pub fn read_response(
    data: &[u8],
) -> Result<crate::transport::http::Response, crate::transport::http::Error> {
    use crate::transport::http;
    let (chunk, input) = split_first(data);
    let base = http::BaseUrl::parse("http://127.0.0.1:9").expect("a base URL");
    let request = http::Request {
        method: "POST".into(),
        path: "/analyze".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: Bytes::from_static(b"{}"),
    };
    let limits = http::Limits {
        deadline: HANG,
        max_body: PROBE_MAX_BODY,
        max_head: 8 * 1024,
    };
    block_on(http::exchange_over(
        Feed::reply(input, chunk),
        &base,
        &request,
        limits,
    ))
}

/// What an agent answers the probe: bytes read as an HTTP/1.1 response by the probe's client
/// (status line, headers, Content-Length, chunked or close-delimited body; small caps on head and
/// body), then the body parsed as the probe parses it (one JSON object, the recursion limit) and
/// every check of the built-in round-table suite evaluated on it, as every exchange's answer.
pub fn probe_response(data: &[u8]) {
    const MAX_BODY: usize = PROBE_MAX_BODY;
    let (_, input) = split_first(data);
    let result = read_response(data);
    match &result {
        Ok(response) => {
            assert!((100..=999).contains(&response.status));
            // At most one frame past the cap, and the frame came from the input.
            assert!(response.body.len() <= MAX_BODY + input.len());
            assert!(response.body_exceeded || response.body.len() <= MAX_BODY);
            if let Ok(v) = crate::probe::outcome::parse_body(response, MAX_BODY) {
                assert!(v.is_object());
                let _ = execute_task::model::check_answer(&v);
                let _ = execute_task::model::discover_name(&v);
            }
        }
        Err(e) => assert!(!e.to_string().is_empty(), "an error without a message"),
    }
    SUITE.with(|suite| judge_with_suite(suite, result));
}

/// Every check of every case of `suite`, on `result` as the answer of every exchange.
fn judge_with_suite(
    suite: &crate::probe::Suite,
    result: Result<crate::transport::http::Response, crate::transport::http::Error>,
) {
    use crate::probe::exchange::AuthMode;
    use crate::probe::outcome::Outcome as ProbeOutcome;
    use crate::probe::plugin::Ctx;

    const MAX_BODY: usize = PROBE_MAX_BODY;
    let outcome = Arc::new(ProbeOutcome::new(AuthMode::Default, None, result));
    let protocol = suite.protocol;
    let mut names: Vec<String> = Vec::new();
    for case in suite.cases() {
        names.extend(case.exchange.iter().cloned());
        names.extend(case.checks.iter().flat_map(|c| c.extra_exchanges(protocol)));
    }
    let exchanges = names
        .into_iter()
        .map(|n| (n, outcome.clone()))
        .collect::<std::collections::HashMap<_, _>>();
    for case in suite.cases() {
        let ctx = Ctx {
            protocol,
            outcome: Some(outcome.as_ref()),
            exchanges: &exchanges,
            reachable: Some(Ok("connected".into())),
            max_body: MAX_BODY,
            max_field: 10_000,
            status_judged: case
                .checks
                .iter()
                .any(crate::probe::checks::Check::judges_status),
            live: false,
            notes: true,
        };
        for check in &case.checks {
            if let crate::probe::plugin::Verdict::Broken(why) = check.evaluate(&ctx) {
                assert!(
                    !why.is_empty(),
                    "{}: a failure without a message",
                    case.id.value
                );
                break;
            }
        }
    }
}

/// What a line agent writes (stdio, sockets): the probe's capped line reader over the bytes, each
/// line judged as an execute_task answer; and the same bytes as a platform's lines to the stdio
/// mock of a conforming execute_task agent. Every line comes without its newline and within the
/// cap, and the lines read and the bytes still pending are exactly the input, in order.
pub fn line_reader(data: &[u8]) {
    use crate::transport::lines::{LineReader, ReadFail};

    let (chunk, rest) = split_first(data);
    let (max_line, input) = match rest.split_first() {
        Some((&b, input)) => (usize::from(b) * 64 + 1, input),
        None => (1, rest),
    };
    let mut feed = Feed::new(input, chunk);
    let mut reader = LineReader::new(max_line);
    let mut seen = Vec::with_capacity(input.len());
    let mut too_long = false;
    block_on(async {
        loop {
            match reader.read_line(&mut feed).await {
                Ok(Some(line)) => {
                    assert!(line.len() <= max_line, "a line past the cap");
                    assert!(!line.contains(&b'\n'), "a line with its newline");
                    seen.extend_from_slice(&line);
                    seen.push(b'\n');
                    if let Ok(answer) = serde_json::from_slice::<Value>(&line) {
                        let _ = execute_task::model::check_answer(&answer);
                    }
                }
                Ok(None) => break,
                Err(ReadFail::TooLong(e)) => {
                    assert!(e.to_string().contains(&max_line.to_string()));
                    too_long = true;
                    break;
                }
                Err(ReadFail::Io(e)) => panic!("an in-memory read failed: {e}"),
            }
        }
    });
    if !too_long {
        assert_eq!(
            reader.lines(),
            seen.iter().filter(|&&b| b == b'\n').count() as u64
        );
        seen.extend_from_slice(&reader.take_all());
        assert!(
            seen == input,
            "the lines and the pending bytes are not the input"
        );
    }
    LINES.with(|service| {
        let served = block_on(crate::mock::line_server::serve_stream(
            service,
            Feed::new(input, chunk),
            Feed::new(&[], 1),
        ));
        assert!(served.is_ok(), "an in-memory stream failed: {served:?}");
    });
}

/// A suite file of the user's, for each protocol that reads one.
pub fn suite_yaml(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for file in user_files().filter(|f| f.suite) {
        if let Err(e) = (file.parse)(SOURCE, &text) {
            named(&e.to_string());
        }
    }
}

/// Every kind of file a registered protocol reads.
fn user_files() -> impl Iterator<Item = crate::protocols::plugin::UserFile> {
    crate::protocols::REGISTRY
        .iter()
        .flat_map(|p| p.capabilities().files)
        .copied()
}

/// Every other file a user writes: fleets of agents, for every protocol whose agents the engine
/// serves; each registered protocol's own files (fleets of clients, scenarios, scripts);
/// baselines, targets, injection corpora, matrices.
pub fn config_yaml(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match FleetFile::parse(SOURCE, &text) {
        Ok(file) => {
            for protocol in crate::protocols::agent_protocols() {
                let at = For {
                    protocol,
                    others: &[],
                };
                if let Err(e) = file.agents(SOURCE, 1, at) {
                    named(&e.to_string());
                }
            }
        }
        Err(e) => named(&e.to_string()),
    }
    let errors = [
        crate::report::baseline::Baseline::parse(SOURCE, &text)
            .err()
            .map(|e| e.to_string()),
        crate::targets::parse(SOURCE, &text)
            .err()
            .map(|e| e.to_string()),
        crate::mock::injection::Corpus::parse(SOURCE, &text)
            .err()
            .map(|e| e.to_string()),
        crate::selftest::matrix::Matrix::parse(SOURCE, &text)
            .err()
            .map(|e| e.to_string()),
    ];
    for e in errors.iter().flatten() {
        named(e);
    }
    for file in user_files().filter(|f| !f.suite) {
        if let Err(e) = (file.parse)(SOURCE, &text) {
            named(&e.to_string());
        }
    }
}

/// A loader's error must say which file it is about, and say something.
fn named(error: &str) {
    assert!(
        error.contains(SOURCE),
        "an error that does not name the file: {error:?}"
    );
    assert!(error.len() > SOURCE.len() + 2, "an empty error: {error:?}");
}

/// `count` inputs for a target made from `seeds` by a fixed-seed mutator (byte flips, inserted
/// and deleted runs, repeats, splices of two seeds, tokens that parsers trip on), the seeds
/// themselves first: the stable stand-in for a fuzzer's exploration.
pub fn mutations(seeds: &[Vec<u8>], count: usize, seed: u64) -> Vec<Vec<u8>> {
    const TOKENS: &[&[u8]] = &[
        b"\r\n",
        b"\r\n\r\n",
        b"\n",
        b"{",
        b"}",
        b"[",
        b"\"",
        b"\\u0000",
        b"\\ud800",
        b":",
        b",",
        b"null",
        b"-1",
        b"18446744073709551616",
        b"1e999",
        b"ffffffffffffffff",
        b"Transfer-Encoding: chunked\r\n",
        b"Content-Length: 5\r\n",
        b"Content-Length: -1\r\n",
        b"Expect: 100-continue\r\n",
        b"Connection: close\r\n",
        b"0\r\n\r\n",
        b"\xff\xfe",
        b"\xe2\x80\xae",
        b"&anchor ",
        b"*anchor",
        b"<<: *anchor",
        b"!!binary ",
        b"${HOME}",
        b"${UNSET_VARIABLE_OF_NOBODY}",
        b"- ",
        b": ",
        b"  ",
        b"\t",
        b"~",
        b"#",
    ];
    let mut state = seed | 1;
    let mut next = move || {
        // xorshift64*: small, fixed, the same on every machine.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut out: Vec<Vec<u8>> = seeds.to_vec();
    if seeds.is_empty() {
        return out;
    }
    while out.len() < count {
        let mut input = seeds[next() as usize % seeds.len()].clone();
        for _ in 0..1 + next() % 4 {
            let at = if input.is_empty() {
                0
            } else {
                next() as usize % (input.len() + 1)
            };
            match next() % 8 {
                0 if !input.is_empty() => {
                    let i = at.min(input.len() - 1);
                    input[i] ^= 1 << (next() % 8);
                }
                1 => input.insert(at, next() as u8),
                2 if at < input.len() => {
                    let end = (at + 1 + next() as usize % 16).min(input.len());
                    input.drain(at..end);
                }
                3 if at < input.len() => {
                    let end = (at + 1 + next() as usize % 32).min(input.len());
                    let run = input[at..end].to_vec();
                    let times = 1 + next() as usize % 64;
                    for _ in 0..times {
                        input.splice(at..at, run.iter().copied());
                    }
                }
                4 => {
                    let other = &seeds[next() as usize % seeds.len()];
                    let from = next() as usize % (other.len() + 1);
                    input.truncate(at);
                    input.extend_from_slice(&other[from..]);
                }
                5 => input.truncate(at),
                _ => {
                    let token = TOKENS[next() as usize % TOKENS.len()];
                    input.splice(at..at, token.iter().copied());
                }
            }
        }
        out.push(input);
    }
    out
}
