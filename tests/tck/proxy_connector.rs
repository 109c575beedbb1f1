//! `agent-tck proxy --protocol connector` between an agent server of our own (`agent_server.rs`'s
//! reference, conforming or with one flaw) and external agents of our own (the kit's reference
//! external agent, conforming or with one flaw): the forwards go through the proxy with their
//! callbackUrl pointing back at it, the callbacks come back through it. A conforming pair
//! passes; each agent flaw is caught by the probe's case under that agent, each server flaw by
//! the fleet's case under the platform; an agent that dies is named once, as the agent's; a run
//! with no traffic says so; a recording judged again gives the live verdicts.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tck::mock::http1;
use agent_tck::protocols::connector::reference::{ExternalAgent, Flaws, INPUT_PATH};
use agent_tck::protocols::connector::relay::ConnectorRelay;
use agent_tck::protocols::connector::ws::{ws_url, Client, Dialect};
use agent_tck::proxy::relay::{start, RelayRunning, RelaySettings};
use agent_tck::report::{Report, Status};
use agent_tck::transport::http::{send, BaseUrl, Limits, Request};

use crate::agent_server::{self, Flaw};

/// A key an agent calls back with.
const KEY: &str = "connector-callback-key-5c1e";

/// How long the stand waits for the traffic of one message to settle (a busy 2-core machine).
const SETTLE: Duration = Duration::from_secs(20);

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// What stands behind the proxy in one test.
struct Stand {
    /// Each external agent: its name and its flaws.
    agents: Vec<(&'static str, Flaws)>,
    /// The proxy's faults on real traffic: (agent, fault).
    faults: Vec<(&'static str, &'static str)>,
    server: Flaw,
    /// User messages sent on each agent's session.
    messages: usize,
    /// Stop agent `alpha` after its first message's callback, before the next message.
    kill_alpha: bool,
    /// After the messages, agent alpha's session is called back once more with this bearer
    /// key (the document plans a token on the callbacks).
    key: Option<&'static str>,
    /// The agents call back (not when the server's forwards give them nothing to call back at).
    callbacks: bool,
    record: Option<std::path::PathBuf>,
}

impl Stand {
    fn of(agents: Vec<(&'static str, Flaws)>, server: Flaw) -> Stand {
        Stand {
            agents,
            faults: Vec::new(),
            server,
            messages: 1,
            kill_alpha: false,
            callbacks: true,
            key: None,
            record: None,
        }
    }
}

/// The proxy before real agents, as the tests start it.
async fn proxy_for(
    agents: &[(String, String, Vec<String>)],
    record: Option<std::path::PathBuf>,
) -> RelayRunning {
    start(RelaySettings {
        protocol: "connector",
        calls_back: &ConnectorRelay,
        agents: agents
            .iter()
            .map(|(name, url, faults)| (name.clone(), BaseUrl::parse(url).unwrap(), faults.clone()))
            .collect(),
        listen: loopback(),
        reply_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(30),
        duration: None,
        record,
        seed: 7,
        strict: false,
        log: false,
    })
    .await
    .unwrap()
}

/// Waits until `done` holds, at most `SETTLE`; false when it never did.
async fn settled(done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + SETTLE;
    while Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Creates `session` for `agent_id` on the server at `url`.
async fn create(url: &str, agent_id: &str, session: &str) {
    let request = Request {
        method: "POST".into(),
        path: "/api/plugins/sessions/operations/create".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::json!({"agentId": agent_id, "sessionId": session})
            .to_string()
            .into(),
    };
    let answer = send(&BaseUrl::parse(url).unwrap(), &request, Limits::default())
        .await
        .unwrap();
    assert_eq!(answer.status, 201, "create {session}");
}

/// Runs the stand: each agent's session created, its messages sent over the server's WebSocket,
/// each waited for until the proxy has passed on its forward and a callback (or the run's
/// timeouts passed), then the run ended and judged.
async fn run(stand: Stand) -> Report {
    let mut agents = Vec::new();
    let mut served = HashMap::new();
    for (name, flaws) in &stand.agents {
        let running = http1::spawn(Arc::new(ExternalAgent::new(*flaws)), loopback())
            .await
            .unwrap();
        let faults = stand
            .faults
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, f)| f.to_string())
            .collect();
        agents.push((name.to_string(), running.url(), faults));
        served.insert(*name, running);
    }
    let proxy = proxy_for(&agents, stand.record.clone()).await;
    let bound = agent_server::bind().await;
    let url = bound.1.clone();
    let inputs = stand
        .agents
        .iter()
        .map(|(name, _)| {
            (
                format!("ext-{name}"),
                format!("http://{}/agents/{name}{INPUT_PATH}", proxy.addr),
            )
        })
        .collect();
    let _server = agent_server::start(bound, stand.server, inputs);
    let handler = proxy.handler.clone();
    let mut clients = Vec::new();
    for (name, _) in &stand.agents {
        let session = format!("s-{name}");
        create(&url, &format!("ext-{name}"), &session).await;
        let client = Client::connect(
            &ws_url(&BaseUrl::parse(&url).unwrap()),
            &session,
            Dialect::Document,
            SETTLE,
        )
        .await
        .unwrap();
        assert!(client.wait_for(SETTLE, |m| m.kind == "session_ready").await);
        clients.push(client);
    }
    let (mut sent, mut due) = (0, 0);
    for n in 0..stand.messages {
        if n == 1 && stand.kill_alpha {
            if let Some(alpha) = served.remove("alpha") {
                alpha.stop().await;
            }
        }
        for client in &clients {
            client.say(&format!("message {n}")).await.unwrap();
        }
        sent += clients.len() as u64;
        // Each agent still up calls back at least once per message.
        if stand.callbacks {
            due += served.len() as u64;
        }
        // Every forward passed on, a callback for each message of an agent still up, and
        // every exchange over.
        let over = settled(|| {
            handler.forwards.load(Ordering::Relaxed) >= sent
                && handler.callbacks.load(Ordering::Relaxed) >= due
                && handler.open.load(Ordering::Relaxed) == 0
        })
        .await;
        assert!(
            over,
            "the traffic of message {n} did not settle within {SETTLE:?}"
        );
    }
    if let Some(key) = stand.key {
        let request = Request {
            method: "POST".into(),
            path: "/callbacks/alpha/external/sessions/s-alpha/messages".into(),
            headers: vec![
                ("content-type".into(), "text/plain".into()),
                ("authorization".into(), format!("Bearer {key}")),
            ],
            body: "one more answer".into(),
        };
        let proxy_url = BaseUrl::parse(&format!("http://{}", proxy.addr)).unwrap();
        let answer = send(&proxy_url, &request, Limits::default()).await.unwrap();
        assert_eq!(answer.status, 200, "the keyed callback, relayed");
        assert!(settled(|| handler.open.load(Ordering::Relaxed) == 0).await);
    }
    for client in clients {
        client.close().await;
    }
    proxy.end("the test's end".into()).await.unwrap()
}

fn statuses(report: &Report) -> BTreeMap<String, Status> {
    report
        .cases
        .iter()
        .map(|c| (c.id.clone(), c.status))
        .collect()
}

fn failed(report: &Report) -> Vec<String> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id.clone())
        .collect()
}

fn case<'a>(report: &'a Report, id: &str) -> &'a agent_tck::report::CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id} in {:?}", statuses(report)))
}

fn flaws(f: impl FnOnce(&mut Flaws)) -> Flaws {
    let mut flaws = Flaws::default();
    f(&mut flaws);
    flaws
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conforming_server_and_agent_pass_and_each_side_is_its_own_party() {
    let mut stand = Stand::of(vec![("alpha", Flaws::default())], Flaw::None);
    stand.messages = 2;
    let report = run(stand).await;
    assert!(failed(&report).is_empty(), "{:#?}", report.cases);
    for id in [
        "platform.reached-proxy",
        "platform.forward-schema",
        "platform.forward-once",
        "platform.callback-delivered",
        "platform.callback-no-5xx",
        "alpha/agent.alive",
        "alpha/forward.acknowledged",
        "alpha/forward.within-5s",
        "alpha/callback.arrives",
        "alpha/callback.exact-url",
        "alpha/callback.method",
        "alpha/callback.not-empty",
        "alpha/callback.raw-text",
    ] {
        assert_eq!(
            case(&report, id).status,
            Status::Pass,
            "{id}: {:?}",
            case(&report, id)
        );
    }
    assert_eq!(case(&report, "platform.forward-schema").group, "platform");
    assert_eq!(case(&report, "alpha/callback.arrives").group, "agent alpha");
    // What nothing exercised says so rather than passing.
    let timeout = case(&report, "platform.forward-timeout");
    assert_eq!(timeout.status, Status::Skip);
    assert!(timeout.message.contains("after 5 s"), "{}", timeout.message);
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_flaws_are_caught_by_the_probes_case_under_that_agent() {
    let report = run(Stand::of(
        vec![
            ("alpha", flaws(|f| f.hard_coded_callback = true)),
            ("beta", flaws(|f| f.json_envelope = true)),
            ("gamma", flaws(|f| f.put_callback = true)),
        ],
        Flaw::None,
    ))
    .await;
    let mut failing = failed(&report);
    failing.sort();
    assert_eq!(
        failing,
        [
            "alpha/callback.exact-url",
            "beta/callback.raw-text",
            "gamma/callback.method"
        ],
        "{:#?}",
        report.cases
    );
    let exact = case(&report, "alpha/callback.exact-url");
    assert!(
        exact
            .message
            .contains("the path lost its prefix `/callbacks/alpha`"),
        "{}",
        exact.message
    );
    // The hard-coded callback still reached the server, which took it.
    assert_eq!(
        case(&report, "platform.callback-delivered").status,
        Status::Pass
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_acknowledgement_is_the_agents_and_the_servers_give_up_is_judged() {
    let report = run(Stand::of(
        vec![("alpha", flaws(|f| f.slow_ack = true))],
        Flaw::None,
    ))
    .await;
    assert_eq!(
        failed(&report),
        ["alpha/forward.acknowledged"],
        "{:#?}",
        report.cases
    );
    let ack = case(&report, "alpha/forward.acknowledged");
    assert!(
        ack.message.contains("when the agent server gave up"),
        "{}",
        ack.message
    );
    // The server gave up at its 5 s: the fleet's rule held.
    assert_eq!(
        case(&report, "platform.forward-timeout").status,
        Status::Pass
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_flaws_are_caught_by_the_fleets_case_under_the_platform() {
    let mut stand = Stand::of(vec![("alpha", Flaws::default())], Flaw::WrongFieldNames);
    stand.callbacks = false;
    let report = run(stand).await;
    assert_eq!(
        failed(&report),
        ["platform.forward-schema"],
        "{:#?}",
        report.cases
    );
    // The agent's refusal of a payload that broke the document is not held against it.
    let ack = case(&report, "alpha/forward.acknowledged");
    assert_eq!(ack.status, Status::Skip, "{ack:?}");
    assert!(
        ack.message.contains("platform.forward-schema"),
        "{}",
        ack.message
    );

    let report = run(Stand::of(
        vec![("alpha", Flaws::default())],
        Flaw::NoCallbackRoute,
    ))
    .await;
    assert_eq!(
        failed(&report),
        ["platform.callback-delivered"],
        "{:#?}",
        report.cases
    );
    assert!(case(&report, "platform.callback-delivered")
        .message
        .contains("404"));
    assert_eq!(
        case(&report, "alpha/callback.exact-url").status,
        Status::Pass
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_callback_and_a_500_to_it_are_each_their_own_partys() {
    let report = run(Stand::of(
        vec![("alpha", flaws(|f| f.empty_callback = true))],
        Flaw::ServerErrorOnEmptyCallback,
    ))
    .await;
    let mut failing = failed(&report);
    failing.sort();
    assert_eq!(
        failing,
        [
            "alpha/callback.not-empty",
            "platform.callback-empty",
            "platform.callback-no-5xx"
        ],
        "{:#?}",
        report.cases
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_traffic_fails_the_precondition_and_every_rule_skips_saying_why() {
    let proxy = proxy_for(
        &[("alpha".into(), "http://127.0.0.1:9".into(), Vec::new())],
        None,
    )
    .await;
    let report = proxy.end("the test's end".into()).await.unwrap();
    assert_eq!(
        failed(&report),
        ["platform.reached-proxy"],
        "{:#?}",
        report.cases
    );
    for c in &report.cases {
        if c.id == "platform.reached-proxy" || c.id == "alpha/agent.alive" {
            continue;
        }
        assert_eq!(c.status, Status::Skip, "{c:?}");
        assert!(!c.message.is_empty(), "{c:?}");
    }
    assert!(case(&report, "alpha/callback.arrives")
        .message
        .contains("no forward reached agent alpha"));
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_dies_mid_run_is_named_once_and_the_server_is_not_blamed() {
    let mut stand = Stand::of(vec![("alpha", Flaws::default())], Flaw::None);
    stand.messages = 2;
    stand.kill_alpha = true;
    let report = run(stand).await;
    assert_eq!(
        failed(&report),
        ["alpha/agent.alive"],
        "{:#?}",
        report.cases
    );
    let alive = case(&report, "alpha/agent.alive");
    assert!(
        alive.message.contains("after answering 1 forward"),
        "{}",
        alive.message
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_judged_again_gives_the_live_verdicts() {
    let dir = crate::support::TempDir::new("proxy-connector-record");
    for file in ["run.jsonl", "run.har"] {
        let path = dir.0.join(file);
        let mut stand = Stand::of(
            vec![
                ("alpha", flaws(|f| f.hard_coded_callback = true)),
                ("beta", Flaws::default()),
            ],
            Flaw::None,
        );
        stand.faults = vec![("beta", "error-ack:503")];
        stand.record = Some(path.clone());
        stand.key = Some(KEY);
        let live = run(stand).await;
        // The key went on to the server, and nowhere else: not the recording, not the report.
        let recorded = std::fs::read_to_string(&path).unwrap();
        assert!(recorded.contains("one more answer"), "{file}");
        assert!(!recorded.contains(KEY), "{file} holds the key");
        assert!(!serde_json::to_string(&live).unwrap().contains(KEY));
        let read = agent_tck::judge::record::read_recording(&path).unwrap();
        let names = [
            ("alpha".to_string(), Vec::new()),
            ("beta".to_string(), vec!["error-ack:503".to_string()]),
        ];
        let relay = agent_tck::proxy::relay::CallsBack::relay(
            &ConnectorRelay,
            &names,
            Duration::from_secs(5),
            7,
        )
        .unwrap();
        let again = agent_tck::proxy::relay::judge(relay.as_ref(), &read.entries).unwrap();
        let again: BTreeMap<String, Status> =
            again.iter().map(|c| (c.id.clone(), c.status)).collect();
        assert_eq!(again, statuses(&live), "{file}");
        assert_eq!(again["alpha/callback.exact-url"], Status::Fail, "{file}");
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_real_traffic_show_the_servers_handling_and_are_not_the_agents() {
    let mut stand = Stand::of(
        vec![("alpha", Flaws::default()), ("beta", Flaws::default())],
        Flaw::NoForwardTimeout,
    );
    stand.faults = vec![("alpha", "slow-ack:5500ms"), ("beta", "empty-callback")];
    let report = run(stand).await;
    let mut failing = failed(&report);
    failing.sort();
    // A server that waits for the slow acknowledgement fails the 5 s rule; the empty body the
    // proxy put in beta's callback is refused 400, as it must be; neither agent is blamed.
    assert_eq!(failing, ["platform.forward-timeout"], "{:#?}", report.cases);
    let timeout = case(&report, "platform.forward-timeout");
    assert!(
        timeout.message.contains("no 5 s timeout"),
        "{}",
        timeout.message
    );
    assert_eq!(
        case(&report, "platform.callback-empty").status,
        Status::Pass
    );
    assert_eq!(
        case(&report, "beta/callback.not-empty").status,
        Status::Pass
    );
    assert_eq!(
        case(&report, "alpha/forward.within-5s").status,
        Status::Pass
    );

    // The same faults on a server that gives up at 5 s: it passes.
    let mut stand = Stand::of(vec![("alpha", Flaws::default())], Flaw::None);
    stand.faults = vec![("alpha", "slow-ack:5500ms")];
    let report = run(stand).await;
    assert!(failed(&report).is_empty(), "{:#?}", report.cases);
    assert_eq!(
        case(&report, "platform.forward-timeout").status,
        Status::Pass
    );
}

/// How many of alpha's 8 callbacks the server met empty (platform.callback-empty's evidence)
/// with `fault` on alpha, and that case's status.
async fn empty_callbacks_under(fault: &'static str) -> (Status, u64) {
    let mut stand = Stand::of(vec![("alpha", Flaws::default())], Flaw::None);
    stand.messages = 8;
    stand.faults = vec![("alpha", fault)];
    let report = run(stand).await;
    // The agent called back with text each time: what the proxy bent is not its fault.
    assert_eq!(
        case(&report, "alpha/callback.not-empty").status,
        Status::Pass,
        "{fault}"
    );
    let c = case(&report, "platform.callback-empty");
    (c.status, c.evidence.as_ref().map_or(0, |e| e.judged))
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_falls_on_its_share_of_the_exchanges_and_at_its_path_only() {
    // Every callback bent (at a path every callback's starts with): eight empty bodies met.
    assert_eq!(
        empty_callbacks_under("empty-callback@/").await,
        (Status::Pass, 8)
    );
    // Half of them, drawn from the seed: some, not all, and the same ones on a second run.
    let (status, half) = empty_callbacks_under("empty-callback:50%").await;
    assert_eq!(status, Status::Pass);
    assert!((1..8).contains(&half), "{half} of 8 bent at 50%");
    assert_eq!(empty_callbacks_under("empty-callback:50%").await.1, half);
    // At a path no callback goes to: none bent, nothing for the rule to judge.
    assert_eq!(
        empty_callbacks_under("empty-callback@/elsewhere").await,
        (Status::Skip, 0)
    );
}

#[deadline::test]
async fn a_fault_the_proxy_cannot_put_on_real_traffic_is_refused_naming_those_it_can() {
    let refused = start(RelaySettings {
        protocol: "connector",
        calls_back: &ConnectorRelay,
        agents: vec![(
            "alpha".into(),
            BaseUrl::parse("http://127.0.0.1:9").unwrap(),
            vec!["markdown".into()],
        )],
        listen: loopback(),
        reply_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(30),
        duration: None,
        record: None,
        seed: 7,
        strict: false,
        log: false,
    })
    .await;
    let Err(e) = refused else {
        panic!("a fault the proxy cannot apply was taken")
    };
    let e = e.to_string();
    assert!(e.contains("--fault alpha=markdown"), "{e}");
    assert!(e.contains("slow-ack"), "{e}");
}

/// The README's connector try-it, through the binary: the reference external agent behind the
/// proxy, the probe playing the agent server; Ctrl-C ends it; a JUnit suite per party; the
/// recording judged again to the same verdicts; `replay` of it refused, saying why.
#[test]
fn the_readmes_connector_try_it_runs_through_the_binary() {
    use crate::support::{case_statuses, tck_within, text, Spawned, TempDir, RUN_DEADLINE};
    let dir = TempDir::new("proxy-connector-cli");
    let (har, json, junit, again) = (
        dir.path("conn.har"),
        dir.path("proxy.json"),
        dir.path("proxy.xml"),
        dir.path("again.json"),
    );
    let mut agent = Spawned::tck(
        &["mock", "agent", "--protocol", "connector", "--port", "0"],
        RUN_DEADLINE,
    );
    let banner = agent.line();
    let input = banner
        .rsplit(' ')
        .next()
        .filter(|u| u.starts_with("http://"))
        .unwrap_or_else(|| panic!("no inputUrl in {banner:?}"))
        .to_string();
    let origin = input.trim_end_matches(INPUT_PATH).to_string();
    let agent_arg = format!("alpha={origin}");
    let mut proxy = Spawned::tck(
        &[
            "proxy",
            "--protocol",
            "connector",
            "--listen",
            "127.0.0.1:0",
            "--agent",
            &agent_arg,
            "--timeout",
            "10s",
            "--record",
            &har,
            "--json",
            &json,
            "--junit",
            &junit,
        ],
        RUN_DEADLINE,
    );
    let proxy_banner = proxy.line();
    let base = proxy_banner
        .split(' ')
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {proxy_banner:?}"))
        .to_string();
    let through = format!("{base}/agents/alpha{INPUT_PATH}");
    let probed = tck_within(
        &[
            "probe",
            "connector",
            "--input-url",
            &through,
            "--reply-timeout",
            "8s",
        ],
        RUN_DEADLINE,
    );
    assert_eq!(probed.status.code(), Some(0), "{}", text(&probed));
    let out = proxy.interrupt(Duration::from_secs(30));
    let console = text(&out);
    // The probe answers one session's callbacks 500 on purpose: the "server"'s failure.
    assert_eq!(out.status.code(), Some(1), "{console}");
    let live: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let statuses = case_statuses(&live);
    let failing: Vec<&str> = statuses
        .iter()
        .filter(|(_, s)| s == "fail")
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(
        failing,
        ["platform.callback-delivered", "platform.callback-no-5xx"],
        "{console}"
    );
    for id in [
        "alpha/callback.exact-url",
        "alpha/forward.acknowledged",
        "platform.forward-schema",
    ] {
        assert!(
            statuses.iter().any(|(i, s)| i == id && s == "pass"),
            "{id}: {console}"
        );
    }
    let junit_text = std::fs::read_to_string(&junit).unwrap();
    let suites: Vec<&str> = junit_text
        .split("<testsuite name=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert_eq!(
        suites,
        ["platform", "agent alpha"],
        "a JUnit suite per party"
    );
    let judged = tck_within(&["judge", &har, "--json", &again], RUN_DEADLINE);
    assert_eq!(judged.status.code(), Some(1), "{}", text(&judged));
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    assert_eq!(case_statuses(&again), statuses);
    let replayed = tck_within(&["replay", &har, "--agent", &agent_arg], RUN_DEADLINE);
    assert_eq!(replayed.status.code(), Some(2), "{}", text(&replayed));
    assert!(
        text(&replayed).contains("is not replayed yet"),
        "{}",
        text(&replayed)
    );
    drop(agent);
}
