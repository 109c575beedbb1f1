//! The mock engine over raw TCP: request framing (keep-alive, chunked bodies, Expect), bad
//! requests, the journal (nothing dropped, bodies capped), `slow` never early, and a shutdown
//! that ends hung exchanges.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use agent_tck::mock::agent::{MockAgent, Profile};
use agent_tck::mock::behavior::parse_list;
use agent_tck::mock::fleet::{self, Layout, Served};
use agent_tck::mock::journal::Journal;
use agent_tck::protocols::roundtable::observe::Observer;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::TempDir;

const ANALYZE: &str = r#"{"task_id":"t1","content":"review the login module"}"#;

async fn serve_one(behavior: &str, journal: Journal) -> Served {
    let profile = Profile {
        name: "engine".into(),
        domain: "general review".into(),
        capabilities: Vec::new(),
        api_key: None,
    };
    let items = parse_list(behavior, crate::support::roundtable()).unwrap();
    let agent = MockAgent::new(&agent_tck::protocols::roundtable::Agents, profile, items, 1);
    fleet::serve(
        vec![agent],
        Layout::PerAgent,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        0,
        journal,
        Box::new(Observer::new(Duration::from_secs(120))),
    )
    .await
    .unwrap()
}

fn post(path: &str, body: &str, extra: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
}

/// Reads one response (head and Content-Length body) from `stream`.
async fn read_response(stream: &mut TcpStream) -> (u16, String, Vec<u8>) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(
            n > 0,
            "closed before a full head: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let status: u16 = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed mid-body");
        body.extend_from_slice(&chunk[..n]);
    }
    (status, head, body)
}

async fn connect(served: &Served) -> TcpStream {
    TcpStream::connect(served.addrs[0]).await.unwrap()
}

#[deadline::test]
async fn a_connection_carries_several_requests_until_the_client_closes_it() {
    let served = serve_one("conforming", Journal::off(Instant::now())).await;
    let mut stream = connect(&served).await;
    for _ in 0..3 {
        stream
            .write_all(post("/analyze", ANALYZE, "").as_bytes())
            .await
            .unwrap();
        let (status, head, body) = read_response(&mut stream).await;
        assert_eq!(status, 200, "{head}");
        assert!(head.contains("connection: keep-alive"), "{head}");
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["agent_name"], "engine");
    }
    stream
        .write_all(post("/analyze", ANALYZE, "connection: close\r\n").as_bytes())
        .await
        .unwrap();
    let (_, head, _) = read_response(&mut stream).await;
    assert!(head.contains("connection: close"), "{head}");
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.unwrap();
    assert!(
        rest.is_empty(),
        "the server closed after `connection: close`"
    );
    served.stop(Duration::from_secs(1)).await;
}

/// `Connection` is a list of tokens, in any case: `close` among others closes; HTTP/1.0 stays open
/// only with `keep-alive`.
#[deadline::test]
async fn connection_tokens_are_read_as_a_list() {
    let served = serve_one("conforming", Journal::off(Instant::now())).await;
    let cases = [
        ("HTTP/1.1", "Connection: Upgrade, Close\r\n", true),
        ("HTTP/1.1", "Connection: not-close\r\n", false),
        ("HTTP/1.0", "Connection: Keep-Alive\r\n", false),
        ("HTTP/1.0", "", true),
    ];
    for (version, header, closes) in cases {
        let mut stream = connect(&served).await;
        let request = post("/analyze", ANALYZE, header).replacen("HTTP/1.1", version, 1);
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, head, _) = read_response(&mut stream).await;
        assert_eq!(status, 200, "{version} {header:?}: {head}");
        let expected = if closes { "close" } else { "keep-alive" };
        assert!(
            head.contains(&format!("connection: {expected}")),
            "{version} {header:?}: {head}"
        );
    }
    served.stop(Duration::from_secs(1)).await;
}

#[deadline::test]
async fn chunked_bodies_and_expect_continue_are_understood() {
    let served = serve_one("conforming", Journal::off(Instant::now())).await;
    let mut stream = connect(&served).await;
    let (a, b) = ANALYZE.split_at(10);
    let request = format!(
        "POST /analyze HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // `connection: close` above: read both answers (100, then 200) to the end, whatever the
    // segments they came in.
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut all))
        .await
        .expect("the server closes after the answer")
        .unwrap();
    let all = String::from_utf8_lossy(&all);
    assert!(
        all.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"),
        "{all}"
    );
    let body = &all[all.rfind("\r\n\r\n").unwrap() + 4..];
    let answer: Value = serde_json::from_str(body).unwrap();
    assert_eq!(answer["agent_name"], "engine");
    served.stop(Duration::from_secs(1)).await;
}

#[deadline::test]
async fn bad_requests_get_a_clear_4xx_and_a_close() {
    let served = serve_one("conforming", Journal::off(Instant::now())).await;
    let huge_header = format!(
        "GET /health HTTP/1.1\r\nx-big: {}\r\n\r\n",
        "a".repeat(70 * 1024)
    );
    let cases: [(String, u16, &str); 4] = [
        (
            "SSH-2.0-OpenSSH\r\n\r\n".into(),
            400,
            "not a valid HTTP/1.1 request",
        ),
        (huge_header, 431, "larger than 64 KiB"),
        (
            post("/analyze", "{", "").replace("content-length: 1", "content-length: x"),
            400,
            "is not a number",
        ),
        (
            post("/vote", ANALYZE, "").replace("POST", "GET"),
            405,
            "/vote takes POST",
        ),
    ];
    for (request, want, says) in cases {
        let mut stream = connect(&served).await;
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, _, body) = read_response(&mut stream).await;
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, want, "{body}");
        assert!(body.contains(says), "{body}");
    }
    served.stop(Duration::from_secs(1)).await;
}

#[deadline::test]
async fn the_journal_keeps_every_request_under_load_and_caps_bodies() {
    let dir = TempDir::new("journal");
    let path = dir.0.join("journal.jsonl");
    let journal = Journal::create(&path, 512, Instant::now()).await.unwrap();
    let served = serve_one("conforming", journal).await;
    let addr = served.addrs[0];
    const N: usize = 300;
    let clients = (0..N).map(|i| async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let content = if i == 0 {
            "x".repeat(2_000)
        } else {
            format!("task {i}")
        };
        let body = serde_json::json!({"task_id": format!("t{i}"), "content": content}).to_string();
        stream
            .write_all(post("/analyze", &body, "connection: close\r\n").as_bytes())
            .await
            .unwrap();
        read_response(&mut stream).await.0
    });
    let statuses = futures::future::join_all(clients).await;
    assert!(statuses.iter().all(|s| *s == 200));
    served.stop(Duration::from_secs(2)).await;
    assert_eq!(served.handler.journal.close().await.unwrap(), 2 * N as u64);
    let records: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut requests: Vec<u64> = records
        .iter()
        .filter(|r| r["event"] == "request")
        .map(|r| r["seq"].as_u64().unwrap())
        .collect();
    let mut answers: Vec<u64> = records
        .iter()
        .filter(|r| r["event"] == "answer")
        .map(|r| r["seq"].as_u64().unwrap())
        .collect();
    requests.sort();
    answers.sort();
    assert_eq!(requests, (1..=N as u64).collect::<Vec<_>>());
    assert_eq!(answers, requests);
    let long = records.iter().find(|r| r["task_id"] == "t0").unwrap();
    assert_eq!(long["body_capped"], true);
    assert!(long["body_bytes"].as_u64().unwrap() > 2_000);
    let short = records.iter().find(|r| r["task_id"] == "t1").unwrap();
    assert_eq!(
        (
            short["body_capped"].clone(),
            short["body"]["content"].clone()
        ),
        (Value::Bool(false), Value::from("task 1"))
    );
    assert!(records
        .iter()
        .filter(|r| r["event"] == "answer")
        .all(|r| r["outcome"] == "complete"));
}

#[deadline::test]
async fn slow_answers_are_never_early_and_the_delay_is_journaled() {
    let dir = TempDir::new("slow");
    let path = dir.0.join("journal.jsonl");
    let journal = Journal::create(&path, 1 << 20, Instant::now())
        .await
        .unwrap();
    let served = serve_one("slow:ttfb=uniform(100ms,150ms)", journal).await;
    let addr = served.addrs[0];
    let clients = (0..20).map(|_| async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(post("/analyze", ANALYZE, "").as_bytes())
            .await
            .unwrap();
        let sent = Instant::now();
        let (status, _, _) = read_response(&mut stream).await;
        (status, sent.elapsed())
    });
    for (status, elapsed) in futures::future::join_all(clients).await {
        assert_eq!(status, 200);
        assert!(elapsed >= Duration::from_millis(100), "early: {elapsed:?}");
    }
    served.stop(Duration::from_secs(2)).await;
    served.handler.journal.close().await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let planned: Vec<u64> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "request")
        .map(|r| r["decision"]["ttfb_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(planned.len(), 20);
    assert!(
        planned.iter().all(|ms| (100..=150).contains(ms)),
        "{planned:?}"
    );
    for r in text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "answer")
    {
        assert!(r["ttfb_ms"].as_f64().unwrap() >= 100.0, "{r}");
    }
}

#[deadline::test]
async fn stopping_ends_hung_exchanges_at_once() {
    let served = serve_one("hang", Journal::off(Instant::now())).await;
    let mut stream = connect(&served).await;
    stream
        .write_all(post("/analyze", ANALYZE, "").as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    served.stop(Duration::from_secs(5)).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the hung connection was closed");
    assert!(rest.is_empty(), "a hang never answers: {rest:?}");
}
