//! `agent-tck proxy` and `agent-tck judge` as a user runs them (README, "Judge a real platform
//! with real agents"): two of the kit's mock agents as the real agents, the probe as the
//! platform through the proxy, Ctrl-C to end it; the reports in every format, the recording
//! judged again to the same verdicts, and the agent's key in none of them.

use std::time::Duration;

use serde_json::Value;

use crate::support::{case_statuses, tck_within, text, Spawned, TempDir, RUN_DEADLINE};

const KEY: &str = "proxy-cli-key-93be41";

/// The URL at the end of a mock agent's banner (`… listening on http://127.0.0.1:PORT`).
fn agent(name: &str, key: Option<&str>) -> (Spawned, String) {
    let mut args = vec![
        "mock", "agent", "--port", "0", "--name", name, "--seed", "7",
    ];
    if let Some(key) = key {
        args.extend(["--api-key", key]);
    }
    let mut child = Spawned::tck(&args, RUN_DEADLINE);
    let banner = child.line();
    let url = banner
        .rsplit(' ')
        .next()
        .filter(|u| u.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {banner:?}"))
        .to_string();
    (child, url)
}

/// The proxy's URL, from its first line (`agent-tck proxy (…) on http://127.0.0.1:PORT …`).
fn proxy_url(proxy: &mut Spawned) -> String {
    let banner = proxy.line();
    banner
        .split(' ')
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {banner:?}"))
        .to_string()
}

fn read_json(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_try_it_judges_both_parties_and_a_recording_gives_the_same_verdicts() {
    let dir = TempDir::new("proxy-cli");
    let (alpha, alpha_url) = agent("alpha", None);
    let (beta, beta_url) = agent("beta", Some(KEY));
    let (har, json, junit, html) = (
        dir.path("try.har"),
        dir.path("proxy.json"),
        dir.path("proxy.xml"),
        dir.path("proxy.html"),
    );
    let alpha_arg = format!("alpha={alpha_url}");
    let beta_arg = format!("beta={beta_url}");
    let key_arg = format!("beta={KEY}");
    let mut proxy = Spawned::tck(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--agent",
            &alpha_arg,
            "--agent",
            &beta_arg,
            "--agent-key",
            &key_arg,
            "--fault",
            "beta=null-bytes@analyze",
            "--record",
            &har,
            "--json",
            &json,
            "--junit",
            &junit,
            "--html",
            &html,
            "--seed",
            "7",
        ],
        RUN_DEADLINE,
    );
    let base = proxy_url(&mut proxy);
    for name in ["alpha", "beta"] {
        let route = proxy.line();
        assert!(
            route.contains(&format!("{base}/agents/{name}  ->  http://")),
            "{route}"
        );
    }
    // The probe plays the platform: one agent at a time, beta with its key.
    let beta_through = format!("{base}/agents/beta");
    let probed = tck_within(
        &[
            "probe",
            "roundtable",
            "--url",
            &beta_through,
            "--api-key",
            KEY,
        ],
        RUN_DEADLINE,
    );
    // It met the proxy's NUL in beta's analysis (a SHOULD: a warning, exit 0).
    assert!(
        text(&probed).contains("WARN should analyze.sanitization"),
        "{}",
        text(&probed)
    );
    let out = proxy.interrupt(Duration::from_secs(30));
    let console = text(&out);
    assert_eq!(out.status.code(), Some(0), "{console}");
    let live = read_json(&json);
    let statuses = case_statuses(&live);
    let status = |id: &str| {
        statuses
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, s)| s.as_str())
            .unwrap_or_else(|| panic!("no {id} in {statuses:?}"))
    };
    assert_eq!(live["role"], "proxy");
    assert_eq!(status("platform.reached-proxy"), "pass");
    assert_eq!(
        status("platform.bearer"),
        "pass",
        "beta's key came with each call"
    );
    // beta's own answers held no NUL: the proxy's fault is not beta's.
    assert_eq!(status("beta/analyze.sanitization"), "pass");
    assert_eq!(status("beta/analyze.response"), "pass");
    assert_eq!(status("agent.behaviors-applied"), "pass");
    let junit_text = std::fs::read_to_string(&junit).unwrap();
    let suites: Vec<&str> = junit_text
        .split("<testsuite name=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert_eq!(
        suites,
        ["platform", "agent alpha", "agent beta", "proxy"],
        "a JUnit suite per party"
    );
    for (what, written) in [
        ("console", console.clone()),
        ("JSON", std::fs::read_to_string(&json).unwrap()),
        ("JUnit", junit_text),
        ("HTML", std::fs::read_to_string(&html).unwrap()),
        ("HAR", std::fs::read_to_string(&har).unwrap()),
    ] {
        assert!(!written.contains(KEY), "the key is in the {what} output");
    }
    let har_value: Value = serde_json::from_str(&std::fs::read_to_string(&har).unwrap())
        .expect("the recording is one JSON document");
    assert_eq!(har_value["log"]["version"], "1.2");
    // Judged again, offline: the same verdicts.
    let again = dir.path("again.json");
    let judged = tck_within(&["judge", &har, "--json", &again], RUN_DEADLINE);
    assert_eq!(judged.status.code(), Some(0), "{}", text(&judged));
    assert_eq!(case_statuses(&read_json(&again)), statuses);
    drop((alpha, beta));
}

#[test]
fn flags_that_cannot_be_followed_are_refused_naming_the_flag() {
    for (args, needle) in [
        (
            vec!["proxy", "--agent", "alpha"],
            "--agent \"alpha\": expected NAME=URL",
        ),
        (
            vec!["proxy", "--agent", "alpha=ftp://x"],
            "--agent alpha: ",
        ),
        (
            vec!["proxy", "--agent", "alpha=http://127.0.0.1:9", "--fault", "beta=hang"],
            "--fault beta=…: no --agent beta=URL (the agents: alpha)",
        ),
        (
            vec!["proxy", "--agent", "alpha=http://127.0.0.1:9", "--fault", "alpha=no-such"],
            "--fault alpha=no-such: ",
        ),
        (
            vec!["proxy", "--protocol", "librarian", "--agent", "a=http://127.0.0.1:9"],
            "--agent: the librarian platform is a server its agents call, so the proxy stands before the server",
        ),
        (
            vec!["proxy", "--protocol", "librarian"],
            "--protocol librarian: give --server URL, the real server the agents call",
        ),
        (
            vec!["proxy", "--server", "http://127.0.0.1:9", "--agent", "a=http://127.0.0.1:9"],
            "--server: the proxy stands before a server only for a protocol whose platform is one (librarian",
        ),
        (vec!["proxy"], "--agent NAME=URL: give each real agent the platform calls"),
        (
            vec!["proxy", "--protocol", "librarian", "--server", "http://127.0.0.1:9", "--fault", "all=approve"],
            "--fault all=approve: \"approve\" is a decision of the mock Librarian's, not a fault on a real answer",
        ),
        (
            vec!["proxy", "--protocol", "librarian", "--server", "http://127.0.0.1:9", "--judging", "spare"],
            "--judging: the librarian server's answers and its clients' requests are judged as they pass",
        ),
        (
            vec!["proxy", "--agent", "a=http://127.0.0.1:9", "--judging", "sometimes"],
            "invalid value 'sometimes' for '--judging",
        ),
        (vec!["judge", "/nonexistent/run.har"], "/nonexistent/run.har"),
    ] {
        let out = tck_within(&args, RUN_DEADLINE);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(needle), "{args:?}: {}", text(&out));
    }
}

#[test]
fn a_behaviour_that_bends_no_request_is_refused_naming_it_and_the_ones_that_do() {
    let args = [
        "proxy",
        "--agent",
        "alpha=http://127.0.0.1:9",
        "--fault",
        "alpha=request:wrong-content-type@analyze",
    ];
    let out = tck_within(&args, RUN_DEADLINE);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "--fault alpha=request:wrong-content-type@analyze: \"wrong-content-type\": not a fault on a request (on a request: malformed-json, null-bytes, injection, oversized-field, missing-field, slow, hang, reset; the other behaviours bend the agent's answers: --fault NAME=BEHAVIOUR)"
        ),
        "{}",
        text(&out)
    );
}

#[test]
fn a_recording_replayed_to_a_new_agent_version_says_what_changed() {
    let dir = TempDir::new("proxy-replay");
    let (old, old_url) = agent("beta", Some(KEY));
    let har = dir.path("run.har");
    let beta = format!("beta={old_url}");
    let key = format!("beta={KEY}");
    let mut proxy = Spawned::tck(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--agent",
            &beta,
            "--agent-key",
            &key,
            "--record",
            &har,
            "--quiet",
        ],
        RUN_DEADLINE,
    );
    let base = proxy_url(&mut proxy);
    let through = format!("{base}/agents/beta");
    let probed = tck_within(
        &[
            "probe",
            "roundtable",
            "--url",
            &through,
            "--api-key",
            KEY,
            "--quiet",
        ],
        RUN_DEADLINE,
    );
    assert_eq!(probed.status.code(), Some(0), "{}", text(&probed));
    let out = proxy.interrupt(Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    drop(old);
    // The new version votes without a reason for its dissent.
    let mut args = vec![
        "mock", "agent", "--port", "0", "--name", "beta", "--seed", "7",
    ];
    args.extend([
        "--api-key",
        KEY,
        "--behavior",
        "wrong-schema:dissent-without-reason@vote",
    ]);
    let mut new = Spawned::tck(&args, RUN_DEADLINE);
    let banner = new.line();
    let new_url = banner.rsplit(' ').next().unwrap().to_string();
    let json = dir.path("replayed.json");
    let target = format!("beta={new_url}");
    let replayed = tck_within(
        &[
            "replay",
            &har,
            "--agent",
            &target,
            "--agent-key",
            &key,
            "--json",
            &json,
        ],
        RUN_DEADLINE,
    );
    let said = text(&replayed);
    assert_eq!(replayed.status.code(), Some(1), "{said}");
    let statuses = case_statuses(&read_json(&json));
    assert!(
        statuses.contains(&("beta/vote.dissent-reason".to_string(), "fail".to_string())),
        "{statuses:?}"
    );
    assert!(said.contains("1 regression"), "{said}");
    assert!(
        said.contains("beta /vote: ") && said.contains("dissent_reason removed"),
        "{said}"
    );
    assert!(!said.contains(KEY) && !std::fs::read_to_string(&json).unwrap().contains(KEY));
    // Without the key, the requests go without one, and the note says so.
    let keyless = tck_within(
        &["replay", &har, "--agent", &target, "--quiet"],
        RUN_DEADLINE,
    );
    assert!(
        text(&keyless).contains("give --agent-key NAME=KEY"),
        "{}",
        text(&keyless)
    );
    drop(new);
}

#[test]
fn a_recording_cut_by_a_kill_is_judged_as_far_as_it_goes_and_never_green() {
    let dir = TempDir::new("proxy-killed");
    let (alpha, url) = agent("alpha", None);
    let har = dir.path("killed.har");
    let target = format!("alpha={url}");
    let mut proxy = Spawned::tck(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--agent",
            &target,
            "--record",
            &har,
        ],
        RUN_DEADLINE,
    );
    let base = proxy_url(&mut proxy);
    let through = format!("{base}/agents/alpha");
    let probed = tck_within(
        &["probe", "roundtable", "--url", &through, "--quiet"],
        RUN_DEADLINE,
    );
    assert_eq!(probed.status.code(), Some(0), "{}", text(&probed));
    let pid = libc::pid_t::try_from(proxy.id()).unwrap();
    // SAFETY: kill(2) on our child, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let status = proxy.wait();
    assert_eq!(status.code(), None, "killed");
    let json = dir.path("judged.json");
    let judged = tck_within(&["judge", &har, "--json", &json], RUN_DEADLINE);
    assert_eq!(judged.status.code(), Some(1), "{}", text(&judged));
    let report = read_json(&json);
    let statuses = case_statuses(&report);
    assert!(
        statuses.contains(&("run.completed".to_string(), "fail".to_string())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&("alpha/analyze.response".to_string(), "pass".to_string())),
        "the exchanges before the kill are judged: {statuses:?}"
    );
    assert!(text(&judged).contains("the recording ends without its close"));
    drop(alpha);
}
