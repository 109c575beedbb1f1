//! A hostile round-table agent over raw TCP, for `scripts/bench.sh` (it measures how the probe
//! copes: memory against a flood, time to give up on a trickle). Not a conforming agent.
//!
//! ```text
//! cargo run --release --example hostile_agent -- --mode MODE [--port P]
//! ```
//!
//! Modes (each answers every request, whatever its path, after reading it):
//! - `endless`: a 200 with a chunked body that never ends.
//! - `six-mb`: a valid HTTP 200 with a 6,000,000-byte JSON object (an `agent_name` padded with a
//!   huge string field): over the default `--max-body` of 5,000,000.
//! - `trickle`: a 200 head at once, then the body one byte per second, forever.
//!
//! It binds 127.0.0.1 (port 0, the default, lets the OS pick) and prints
//! `hostile agent (MODE) listening on http://127.0.0.1:PORT` on stdout.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SIX_MB: usize = 6_000_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Endless,
    SixMb,
    Trickle,
}

fn usage(error: &str) -> ! {
    eprintln!(
        "hostile_agent: {error}\nusage: hostile_agent --mode endless|six-mb|trickle [--port P]"
    );
    std::process::exit(2);
}

fn parse_args() -> (Mode, u16) {
    let mut mode = None;
    let mut port = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--mode" => {
                mode = Some(match value.as_str() {
                    "endless" => Mode::Endless,
                    "six-mb" => Mode::SixMb,
                    "trickle" => Mode::Trickle,
                    other => usage(&format!("unknown mode {other:?}")),
                })
            }
            "--port" => {
                port = value
                    .parse()
                    .unwrap_or_else(|_| usage(&format!("--port {value:?} is not a port")))
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    (mode.unwrap_or_else(|| usage("--mode is required")), port)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (mode, port) = parse_args();
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let name = match mode {
        Mode::Endless => "endless",
        Mode::SixMb => "six-mb",
        Mode::Trickle => "trickle",
    };
    println!(
        "hostile agent ({name}) listening on http://{}",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            // Write errors mean the probe hung up: that ends the connection, nothing more.
            let _ = serve(stream, mode).await;
        });
    }
}

async fn serve(mut stream: TcpStream, mode: Mode) -> std::io::Result<()> {
    if !read_request(&mut stream).await? {
        return Ok(()); // a bare connect (the probe's reachability check)
    }
    match mode {
        Mode::Endless => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                .await?;
            let chunk = format!("4000\r\n{}\r\n", "x".repeat(0x4000));
            loop {
                stream.write_all(chunk.as_bytes()).await?;
            }
        }
        Mode::SixMb => {
            let prefix = br#"{"agent_name": "hostile-agent", "padding": ""#;
            let suffix = br#""}"#;
            let mut body = Vec::with_capacity(SIX_MB);
            body.extend_from_slice(prefix);
            body.resize(SIX_MB - suffix.len(), b'x');
            body.extend_from_slice(suffix);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {SIX_MB}\r\nconnection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body).await?;
            stream.shutdown().await
        }
        Mode::Trickle => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n")
                .await?;
            loop {
                stream.write_all(b" ").await?;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Reads a request head and its Content-Length body. False when the peer sent nothing.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<bool> {
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
                return Ok(true);
            }
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(!buf.is_empty());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
