//! Writes the HTML page of N synthetic targets (`report::targets_page`) and says how big it is,
//! how long it took and the process's peak memory:
//! `cargo run --release --example targets_page_figures -- N OUT.html`.
//!
//! Each target's report is shaped like a conforming agent's `probe roundtable` report on this
//! machine (40 cases in the same groups, requests of 300–1,500 characters, answers of ~650, the
//! long-content case's 16,000-character request and 100,000-character command); one target in 20
//! fails two MUST cases (a schema finding, a status), one in 50 has
//! a SHOULD warning. Used by `scripts/bench-targets-page.sh`.

use std::time::Instant;

use agent_tck::report::targets_page::TargetsPage;
use agent_tck::report::{CaseResult, Evidence, Exchange, Level, Report, RunInfo, Summary};
use agent_tck::text::Redactor;

/// (group, cases, request characters): the groups of a round-table report.
const GROUPS: [(&str, usize, usize); 5] = [
    ("analyze", 13, 475),
    ("challenge", 12, 1_418),
    ("vote", 8, 754),
    ("http", 3, 331),
    ("agent", 2, 0),
];

/// `len` characters of a plausible request or answer body.
fn filler(len: usize) -> String {
    const WORDS: &str = "Review the migration plan for the billing service: the rollback \
                         step drops the ledger index before the new schema is live. ";
    WORDS.chars().cycle().take(len).collect()
}

fn exchange(request: usize, answer: usize, url: &str) -> Exchange {
    Exchange {
        request: Some(format!(
            "POST {url}/analyze\ncontent-type: application/json\n\n{{\"task_id\":\"t-1\",\"content\":\"{}\"}}",
            filler(request)
        )),
        response: Some(format!(
            "HTTP/1.1 200 OK\ncontent-type: application/json\n\n{{\"observations\":[{{\"claim\":\"{}\"}}]}}",
            filler(answer)
        )),
        reproduce: Some(format!(
            "curl -sS -X POST {url}/analyze -H 'content-type: application/json' -d '{{\"content\":\"{}\"}}'",
            filler(request)
        )),
    }
}

fn target_report(i: usize) -> Report {
    let url = format!("http://agent-{i:05}.internal:3001");
    let mut cases = Vec::new();
    for (group, n, request) in GROUPS {
        for k in 0..n {
            let id = format!("{group}.rule-{k}");
            let title = format!("the {group} answer keeps rule {k} of the protocol");
            let mut c = CaseResult::new(&id, group, Level::Must, &title, "§4.2 Responses");
            if request > 0 {
                c.exchange = exchange(request, 655, &url);
            }
            c.pass(Evidence::new(1 + k as u64 % 3, "answers"), String::new);
            c.set_duration(std::time::Duration::from_micros(900 + 37 * k as u64));
            cases.push(c);
        }
    }
    // The long-content case.
    cases[12].exchange = Exchange {
        request: Some(filler(16_146)),
        response: Some(filler(655)),
        reproduce: Some(filler(100_159)),
    };
    let mut auth = CaseResult::new(
        "auth.missing-key",
        "auth",
        Level::Must,
        "a key is asked",
        "§2",
    );
    auth.skip("no --key given: run with --key KEY to judge the agent's authentication");
    cases.push(auth);
    if i % 20 == 7 {
        cases[0].fail(
            "$.observations[0].severity: \"urgent\" is not one of \"low\", \"medium\", \"high\"",
        );
        cases[0].exchange = exchange(475, 600, &url);
        cases[14].fail("status 500, expected 200");
    }
    if i % 50 == 3 {
        cases[20].level = Level::Should;
        cases[20].fail("the answer took 2.4 s (SHOULD: within 2 s)");
    }
    RunInfo::start("probe", "roundtable", url, 1, false).report(cases, &Redactor::new(Vec::new()))
}

/// The process's peak resident memory, from /proc (Linux), in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(out)) = (
        args.first().and_then(|n| n.parse::<usize>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: targets_page_figures N OUT.html");
        std::process::exit(2);
    };
    let path = std::path::Path::new(out);
    let started = Instant::now();
    let mut page = TargetsPage::create(path).unwrap_or_else(|e| {
        eprintln!("{out}: {e}");
        std::process::exit(1)
    });
    let mut failed = 0;
    // The merged summary, counted as the parts come (the page is given it, not the cases).
    let mut sum = Summary::default();
    for i in 0..n {
        let report = target_report(i);
        failed += usize::from(report.exit_code() != agent_tck::report::Exit::Passed);
        let s = &report.summary;
        for (total, part) in [
            (&mut sum.passed, s.passed),
            (&mut sum.failed, s.failed),
            (&mut sum.skipped, s.skipped),
            (&mut sum.failed_must, s.failed_must),
            (&mut sum.failed_should, s.failed_should),
            (&mut sum.warnings, s.warnings),
            (&mut sum.must, s.must),
            (&mut sum.skipped_must, s.skipped_must),
        ] {
            *total += part;
        }
        if let Err(e) = page.add(&format!("agent-{i:05}"), &report) {
            eprintln!("{out}: {e}");
            std::process::exit(1);
        }
    }
    let mut head = RunInfo::start("probe", "roundtable", format!("{n} targets"), 1, false)
        .report(Vec::new(), &Redactor::new(Vec::new()));
    head.command = Some("probe roundtable --targets".into());
    head.summary = sum;
    if let Err(e) = page.finish(&head, agent_tck::report::Exit::failed_if(failed > 0)) {
        eprintln!("{out}: {e}");
        std::process::exit(1);
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "{n} targets ({failed} failing): {:.1} MB of HTML in {:.2} s, peak RSS {:.1} MB",
        size as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        peak_rss_mb().unwrap_or(f64::NAN)
    );
}
