//! Servers for the connector's figures (`scripts/bench-connector.sh`):
//!
//! - `connector_figures listener SECONDS`: the probe's callback endpoint with one session given;
//!   prints the session's callback URL, serves for SECONDS;
//! - `connector_figures server FLEET_PORT SECONDS`: the reference agent server of the tests, its
//!   agent `ext-steady` at `http://127.0.0.1:FLEET_PORT/agents/steady/input`; prints its URL,
//!   serves for SECONDS.

#[path = "../tests/tck/agent_server.rs"]
#[allow(dead_code)]
mod agent_server;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_tck::mock::http1;
use agent_tck::protocols::connector::listener::Listener;

fn arg(n: usize) -> String {
    std::env::args().nth(n).unwrap_or_default()
}

fn seconds(n: usize) -> Duration {
    Duration::from_secs(arg(n).parse().unwrap_or(60))
}

#[tokio::main]
async fn main() {
    match arg(1).as_str() {
        "listener" => {
            let listener = Arc::new(Listener::default());
            let path = listener.give("bench", false);
            let running = http1::spawn(listener, SocketAddr::from(([127, 0, 0, 1], 0)))
                .await
                .expect("a loopback port");
            println!("{}{path}", running.url());
            tokio::time::sleep(seconds(2)).await;
        }
        "server" => {
            let port: u16 = arg(2).parse().expect("FLEET_PORT");
            let agents = HashMap::from([(
                "ext-steady".to_string(),
                format!("http://127.0.0.1:{port}/agents/steady/input"),
            )]);
            let bound = agent_server::bind().await;
            println!("{}", bound.1);
            let _server = agent_server::start(bound, agent_server::Flaw::None, agents);
            tokio::time::sleep(seconds(3)).await;
        }
        _ => {
            eprintln!("usage: connector_figures listener SECONDS | server FLEET_PORT SECONDS");
            std::process::exit(2);
        }
    }
}
