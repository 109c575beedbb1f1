//! Turns per second against an execute_task agent, for `scripts/bench-task.sh`: N exchanges of a
//! first-turn request over one transport, timed as a whole.
//!
//! ```text
//! cargo run --release --example turns -- stdio-persistent|stdio-per-turn|tcp TARGET [N]
//! ```
//! TARGET is the agent's command (stdio) or HOST:PORT (tcp). Prints `MODE N turns in S s: R turns/s`.

use std::time::{Duration, Instant};

use agent_tck::transport::socket::{SocketAddrSpec, SocketAgent, SocketMode};
use agent_tck::transport::stdio::{StdioAgent, StdioConfig, StdioMode};

const REQUEST: &[u8] =
    br#"{"task_description":"Identify the customer with ID cust_123.","turn":1,"conversation_history":[]}"#;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(target)) = (args.first(), args.get(1)) else {
        eprintln!("usage: turns stdio-persistent|stdio-per-turn|tcp TARGET [N]");
        std::process::exit(2);
    };
    let n: u32 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(1000);
    let deadline = Duration::from_secs(10);
    let started = Instant::now();
    let mut failures = 0;
    match mode.as_str() {
        "tcp" => {
            let mut agent = SocketAgent::new(
                SocketAddrSpec::Tcp(target.clone()),
                SocketMode::Persistent,
                1 << 20,
            );
            for _ in 0..n {
                failures += agent.exchange(REQUEST, deadline).await.is_err() as u32;
            }
            agent.close().await;
        }
        stdio => {
            let mode = if stdio == "stdio-per-turn" {
                StdioMode::PerTurn
            } else {
                StdioMode::Persistent
            };
            let mut agent =
                StdioAgent::new(StdioConfig::new(target.clone(), mode)).unwrap_or_else(|e| {
                    eprintln!("turns: {e}");
                    std::process::exit(2)
                });
            for _ in 0..n {
                failures += agent.exchange(REQUEST, deadline).await.is_err() as u32;
            }
            agent.shutdown().await;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{mode} {n} turns in {secs:.2} s: {:.0} turns/s ({failures} failed)",
        f64::from(n) / secs
    );
}
