//! Hostile peers: the probe talks to untrusted servers. Each test serves one misbehaviour over raw
//! TCP and checks that exactly `analyze.response` fails (the TCP connect of `agent.reachable`
//! succeeds), with a message that names the reason, and that the run neither hangs, nor reads
//! without bound, nor panics.

use std::time::{Duration, Instant};

use agent_tck::report::{Report, Status};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::support::*;

const ANALYZE: &str = "analyze.response";

/// Probes only `analyze.response` (and `agent.reachable`, which it needs) at `url`.
async fn probe_analyze(url: &str, timeout: Duration, max_body: usize) -> (Report, Duration) {
    let started = Instant::now();
    let report = probe_with(url, |s| {
        s.only = vec![ANALYZE.into()];
        s.timeout = timeout;
        s.max_body = max_body;
    })
    .await;
    (report, started.elapsed())
}

/// Serves, to every connection that sends a request, whatever `answer` writes. The connection
/// `agent.reachable` opens and closes without a request gets nothing.
async fn answering<F, Fut>(answer: F) -> String
where
    F: Fn(TcpStream) -> Fut + Send + Sync + Copy + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (url, _task) = raw_server(move |mut stream| async move {
        if read_request(&mut stream).await.is_empty() {
            return;
        }
        answer(stream).await;
    })
    .await;
    url
}

/// Serves one fixed response (then closes the connection gracefully).
async fn fixed(response: Vec<u8>) -> String {
    let response: &'static [u8] = Box::leak(response.into_boxed_slice());
    answering(move |mut stream| async move {
        let _ = stream.write_all(response).await;
        let _ = stream.shutdown().await;
    })
    .await
}

fn ok_json(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The number after `after` in `message` (e.g. the byte count in "stopped reading after N bytes").
fn number_after(message: &str, after: &str) -> usize {
    let rest = &message[message
        .find(after)
        .unwrap_or_else(|| panic!("{message:?} lacks {after:?}"))
        + after.len()..];
    rest.chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {after:?} in {message:?}"))
}

/// Probes `url` (deadline `timeout`, the default body cap): exactly analyze.response fails, its
/// message holding every needle. Returns how long the probe took.
async fn assert_analyze_fails(url: &str, timeout: Duration, needles: &[&str]) -> Duration {
    let (report, elapsed) = probe_analyze(url, timeout, 5_000_000).await;
    assert_fails(&report, &[ANALYZE], ANALYZE, needles);
    elapsed
}

/// The probe gave up on a slow peer within `limit` rather than hanging.
fn assert_prompt(elapsed: Duration, limit: Duration) {
    assert!(elapsed < limit, "the probe hung: {elapsed:?}");
}

/// Probes an agent whose body never ends (with --max-body 100000): exactly analyze.response
/// fails, saying so, after reading at most one frame past the cap, and promptly.
async fn assert_stops_at_max_body(url: &str) {
    let max_body = 100_000;
    let (report, elapsed) = probe_analyze(url, Duration::from_secs(30), max_body).await;
    assert_fails(
        &report,
        &[ANALYZE],
        ANALYZE,
        &[
            "the body exceeds 100000 bytes (--max-body",
            "stopped reading after",
        ],
    );
    let read = number_after(&case(&report, ANALYZE).message, "stopped reading after ");
    assert!(
        read > max_body && read <= max_body + 128 * 1024,
        "read {read} bytes for a max_body of {max_body}"
    );
    assert_prompt(elapsed, Duration::from_secs(10));
}

// ---- time: a peer that is slow on purpose ----------------------------------------------------

#[deadline::test]
async fn a_body_trickled_one_byte_a_second_is_cut_off_at_the_total_deadline() {
    let url = answering(|mut stream| async move {
        let head =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n";
        if stream.write_all(head).await.is_err() {
            return;
        }
        // A deadline reset by each byte would never fire: the byte comes well within it.
        loop {
            if stream.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
    .await;
    let elapsed = assert_analyze_fails(
        &url,
        Duration::from_secs(2),
        &[
            "no complete answer within 2s (the deadline, --timeout)",
            "body still arriving after",
        ],
    )
    .await;
    assert_prompt(elapsed, Duration::from_secs(8));
}

#[deadline::test]
async fn a_head_trickled_one_byte_a_second_is_cut_off_at_the_total_deadline() {
    let url = answering(|mut stream| async move {
        for byte in b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{}" {
            if stream.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
    .await;
    let elapsed = assert_analyze_fails(
        &url,
        Duration::from_secs(2),
        &[
            "no complete answer within 2s (the deadline, --timeout)",
            "no response head received",
        ],
    )
    .await;
    assert_prompt(elapsed, Duration::from_secs(8));
}

#[deadline::test]
async fn a_peer_that_accepts_and_never_answers_times_out() {
    let url = answering(|stream| async move {
        // Hold the connection open, silent, until the test's runtime ends.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(stream);
    })
    .await;
    let elapsed = assert_analyze_fails(
        &url,
        Duration::from_secs(1),
        &[
            "no complete answer within 1s (the deadline, --timeout)",
            "no response head received",
        ],
    )
    .await;
    assert_prompt(elapsed, Duration::from_secs(6));
}

// ---- size: a peer that sends too much ------------------------------------------------------------

#[deadline::test]
async fn an_endless_chunked_body_stops_at_max_body() {
    let url = answering(|mut stream| async move {
        let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
        if stream.write_all(head).await.is_err() {
            return;
        }
        let chunk = format!("4000\r\n{}\r\n", "x".repeat(0x4000));
        while stream.write_all(chunk.as_bytes()).await.is_ok() {}
    })
    .await;
    assert_stops_at_max_body(&url).await;
}

#[deadline::test]
async fn an_endless_body_without_length_stops_at_max_body() {
    let url = answering(|mut stream| async move {
        let head =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n[";
        if stream.write_all(head).await.is_err() {
            return;
        }
        let chunk = "1,".repeat(8192);
        while stream.write_all(chunk.as_bytes()).await.is_ok() {}
    })
    .await;
    assert_stops_at_max_body(&url).await;
}

#[deadline::test]
async fn a_one_megabyte_header_block_is_refused() {
    // Few, large headers: the byte limit.
    let mut head = String::from("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n");
    for i in 0..16 {
        head.push_str(&format!("x-padding-{i}: {}\r\n", "a".repeat(64 * 1024)));
    }
    head.push_str("content-length: 2\r\n\r\n{}");
    let url = fixed(head.into_bytes()).await;
    assert_analyze_fails(&url, Duration::from_secs(10), &["the response head (status line and headers) is too large: more than 65536 bytes or more than 100 header fields"]).await;
}

#[deadline::test]
async fn a_header_block_of_many_small_headers_is_refused() {
    // Many small headers, ~1 MB in all: the header count limit comes first.
    let mut head = String::from("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n");
    for i in 0..50_000 {
        head.push_str(&format!("x-h-{i}: {i:>12}\r\n"));
    }
    head.push_str("content-length: 2\r\n\r\n{}");
    assert!(head.len() > 1_000_000);
    let url = fixed(head.into_bytes()).await;
    assert_analyze_fails(&url, Duration::from_secs(10), &["the response head (status line and headers) is too large: more than 65536 bytes or more than 100 header fields"]).await;
}

#[deadline::test]
async fn a_small_head_with_too_many_headers_is_refused() {
    // 150 headers in 4 KB: within the byte limit, over the header count limit.
    let mut head = String::from("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n");
    for i in 0..150 {
        head.push_str(&format!("x-h-{i}: {i}\r\n"));
    }
    head.push_str("content-length: 2\r\n\r\n{}");
    assert!(head.len() < 8192);
    let url = fixed(head.into_bytes()).await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["more than 100 header fields"],
    )
    .await;
}

// ---- shape: a peer that sends nonsense -------------------------------------------------------

#[deadline::test]
async fn two_hundred_thousand_nested_arrays_fail_without_overflowing_the_stack() {
    let mut body = "[".repeat(200_000);
    body.push_str(&"]".repeat(200_000));
    let url = fixed(ok_json(body.as_bytes())).await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["the body is not usable JSON: nested deeper than 128 levels"],
    )
    .await;
}

#[deadline::test]
async fn two_hundred_thousand_nested_objects_fail_without_overflowing_the_stack() {
    let mut body = r#"{"a":"#.repeat(200_000);
    body.push('1');
    body.push_str(&"}".repeat(200_000));
    let url = fixed(ok_json(body.as_bytes())).await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["the body is not usable JSON: nested deeper than 128 levels"],
    )
    .await;
}

#[deadline::test]
async fn a_peer_that_speaks_another_protocol_is_not_http() {
    let mut garbage = b"SSH-2.0-OpenSSH_9.6\r\n".to_vec();
    // Deterministic "random" binary.
    let mut x: u32 = 0x9e37_79b9;
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        garbage.push(x as u8);
    }
    let url = fixed(garbage).await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["not a valid HTTP response"],
    )
    .await;
}

#[deadline::test]
async fn a_body_that_is_not_utf8_names_the_byte_and_its_offset() {
    let url = fixed(ok_json(b"{\"agent_name\": \"\xff\xfe\"}")).await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["the body is not valid UTF-8: byte 0xff at offset 16"],
    )
    .await;
}

// ---- the connection: a peer that hangs up ----------------------------------------------------

#[deadline::test]
async fn a_reset_connection_is_reported_as_reset() {
    let url = answering(|stream| async move {
        // SO_LINGER 0: closing sends RST, not FIN. (Deprecated in tokio because a non-zero linger
        // blocks the thread on drop; a zero linger does not block.)
        #[allow(deprecated)]
        let _ = stream.set_linger(Some(Duration::ZERO));
        drop(stream);
    })
    .await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["connection reset by the agent before the response head arrived"],
    )
    .await;
}

#[deadline::test]
async fn a_connection_closed_without_an_answer_is_reported_as_closed() {
    let url = answering(|mut stream| async move {
        let _ = stream.shutdown().await;
    })
    .await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["connection closed before the response head arrived"],
    )
    .await;
}

// ---- degenerate but well-formed answers: no panic --------------------------------------------

#[deadline::test]
async fn an_empty_body_fails_without_panicking() {
    let url = fixed(ok_json(b"")).await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &["the body is empty; expected a JSON object"],
    )
    .await;
}

#[deadline::test]
async fn a_json_array_body_fails_without_panicking() {
    let url = fixed(ok_json(br#"[{"agent_name": "a"}, 1, null]"#)).await;
    assert_analyze_fails(
        &url,
        Duration::from_secs(10),
        &[r#"the body is JSON but not an object: [{"agent_name":"a"},1,null]"#],
    )
    .await;
}

// ---- nobody there --------------------------------------------------------------------------------

#[deadline::test]
async fn an_unreachable_agent_fails_reachable_and_skips_everything_else() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    // With a key, the auth cases are skipped for the same reason as the rest (not for want of
    // a key).
    let report = probe_with(&url, |s| {
        s.timeout = Duration::from_secs(5);
        s.api_key = Some(KEY.into());
    })
    .await;
    assert_fails(
        &report,
        &["agent.reachable"],
        "agent.reachable",
        &[&format!(
            "agent unreachable: cannot connect to 127.0.0.1:{port}"
        )],
    );
    for case in report.cases.iter().filter(|c| c.id != "agent.reachable") {
        assert_eq!(case.status, Status::Skip, "{}: {}", case.id, case.message);
        assert!(
            case.message.starts_with("skipped: it needs "),
            "{}: {}",
            case.id,
            case.message
        );
    }
    assert!(report.cases.len() > 10, "the full suite ran");
    assert_eq!(report.exit_code(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}
