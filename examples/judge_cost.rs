//! What judging one answer costs, away from the network: the round table's agent rules (the
//! proxy's `TrafficJudge`) judge N answers of the reference agent to /analyze, each to a
//! request with its own task, and the time per answer is printed. The proxy's throughput
//! (`scripts/bench-proxy.sh`) is bounded by this figure plus what passing an answer on costs;
//! this one is steady enough to compare two builds of the judge.
//!
//! ```text
//! cargo run --release --example judge_cost -- [ANSWERS]
//! ```

use std::time::{Duration, Instant};

use agent_tck::mock::Responder;
use agent_tck::probe::outcome::Sent;
use agent_tck::probe::traffic::{LiveAnswer, TrafficJudge, TrafficLimits};
use agent_tck::protocols::roundtable::{self, reference::ReferenceAgent};
use agent_tck::transport::http::Response;

fn main() {
    let answers: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("ANSWERS is a count"))
        .unwrap_or(20_000);
    let suite = roundtable::suite().expect("the built-in round-table suite loads");
    let judge = TrafficJudge::new(
        suite,
        TrafficLimits {
            timeout: Duration::from_secs(10),
            ..TrafficLimits::default()
        },
    );
    let agent = ReferenceAgent::new("alpha", 1);
    // The exchanges, made before the clock starts: what is timed is the judge alone.
    let exchanges: Vec<(bytes::Bytes, Response)> = (0..answers.min(2_000))
        .map(|i| {
            let request = format!(
                r#"{{"task_id":"task-{i:05}","content":"Review the proposed migration of the payments service from a single PostgreSQL primary to a two-region setup, and say what should be verified before, during and after the cut-over.","context":{{"strategy":"risk-first","focus_areas":["data integrity","availability","rollback"]}}}}"#
            );
            let reply = agent.respond("analyze", request.as_bytes());
            let response = Response {
                status: reply.status,
                headers: vec![("content-type".into(), "application/json".into())],
                body: reply.body,
                body_exceeded: false,
                elapsed: Duration::from_millis(2),
            };
            (bytes::Bytes::from(request), response)
        })
        .collect();
    let started = Instant::now();
    for i in 0..answers {
        let (request, response) = &exchanges[i % exchanges.len()];
        judge.judge(LiveAnswer {
            agent: "alpha",
            method: "POST",
            path: "/analyze",
            request: Sent::Bytes(request.clone()),
            task: None,
            result: Ok(response.clone()),
            answer_json: None,
            at: started.elapsed(),
            elapsed: Duration::from_millis(2),
        });
    }
    let took = started.elapsed();
    println!(
        "{answers} answers judged in {:.3} s: {:.2} µs an answer",
        took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / answers as f64
    );
}
