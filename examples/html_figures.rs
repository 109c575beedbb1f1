//! The HTML report's size and the time to write it, for saved JSON reports (the self-test's, a
//! 10,000-request fleet run's): `cargo run --release --example html_figures -- A.json B.json…`.
//! Each report is read once, then rendered five times; the fastest render is given.

use std::time::{Duration, Instant};

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: html_figures REPORT.json…");
        std::process::exit(2);
    }
    for path in paths {
        let report = match agent_tck::report::tools::read(std::path::Path::new(&path)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        let mut best = Duration::MAX;
        let mut size = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let html = agent_tck::report::html::to_string(&report);
            best = best.min(t.elapsed());
            size = html.len();
        }
        println!(
            "{path}: {} cases, {} timeline spans → {:.1} KB of HTML in {:.1} ms",
            report.cases.len(),
            report.timeline.len(),
            size as f64 / 1024.0,
            best.as_secs_f64() * 1000.0
        );
    }
}
