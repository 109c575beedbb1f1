//! A peer that dies mid-run is named once, when and after what; the cases it kept from being
//! judged skip saying so; no case counts its death as evidence. Its twins: a peer that breaks
//! connections on purpose but stays up (its breaks are its own act), and a peer that answers
//! everything (no outage).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_tck::mock::Responder;
use agent_tck::protocols::roundtable::reference::ReferenceAgent;
use agent_tck::report::{Report, Status};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use crate::support::{self, SEED};

/// What a raw agent does with its `n`th request (counted from 0).
#[derive(Clone, Copy)]
enum Fate {
    Answer,
    /// Close the connection without an answer (an RST), staying up.
    Reset,
    /// Die: stop listening and drop every connection, this one first.
    Die,
}

/// A round-table agent on a raw socket that answers as the reference agent does, until `fate`
/// says otherwise. Returns its URL.
async fn raw_agent(fate: impl Fn(usize, &str) -> Fate + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let fate = Arc::new(fate);
    let count = Arc::new(AtomicUsize::new(0));
    let dead = Arc::new(Notify::new());
    tokio::spawn(async move {
        let mut handlers = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { break };
                    let (fate, count, dead) = (fate.clone(), count.clone(), dead.clone());
                    handlers.spawn(async move { handle(stream, &*fate, &count, &dead).await });
                }
                _ = dead.notified() => break,
            }
        }
        // Dead: the listener goes (new connections are refused) and so does every connection.
        drop(listener);
        handlers.abort_all();
    });
    url
}

async fn handle(
    mut stream: TcpStream,
    fate: &(dyn Fn(usize, &str) -> Fate + Send + Sync),
    count: &AtomicUsize,
    dead: &Notify,
) {
    let request = support::read_request(&mut stream).await;
    let text = String::from_utf8_lossy(&request);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    match fate(count.fetch_add(1, Ordering::SeqCst), &path) {
        Fate::Answer => {
            let endpoint = path.trim_start_matches('/');
            let reply =
                ReferenceAgent::new("reference-agent", SEED).respond(endpoint, body.as_bytes());
            let head = format!(
                "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                reply.status,
                reply.content_type,
                reply.body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&reply.body).await;
        }
        Fate::Reset => support::reset(stream),
        Fate::Die => {
            support::reset(stream);
            dead.notify_one();
        }
    }
}

/// With SHOW set in the environment, prints every case and the notes (to read a run by eye).
fn show(report: &Report) {
    if std::env::var("SHOW").is_ok() {
        for c in &report.cases {
            eprintln!("{:?} {} {}", c.status, c.id, c.message);
        }
        eprintln!("{:?}", report.notes);
    }
}

/// The run's one failure is `id`: the death, named once.
#[track_caller]
fn only_failure_is(report: &Report, id: &str) {
    let failing = support::failing(report);
    assert_eq!(
        failing.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [id],
        "{failing:#?}"
    );
}

async fn probe(url: &str) -> Report {
    support::probe_with(url, |s| s.concurrency = 1).await
}

fn alive_message(report: &Report) -> Option<(Status, String)> {
    report
        .cases
        .iter()
        .find(|c| c.id == "agent.alive")
        .map(|c| (c.status, c.message.clone()))
}

#[deadline::test]
async fn an_agent_that_dies_after_five_answers_is_named_once_and_nothing_rests_on_its_death() {
    let url = raw_agent(|n, _| if n < 5 { Fate::Answer } else { Fate::Die }).await;
    let report = tokio::time::timeout(Duration::from_secs(60), probe(&url))
        .await
        .expect("the probe ends");
    let (status, message) = alive_message(&report).expect("an agent.alive case");
    assert_eq!(status, Status::Fail, "{message}");
    assert!(message.contains("stopped answering at +"), "{message}");
    // Its five answers: the connection check, then the first request of each endpoint (no
    // endpoint waits on another) and /health; it died under the next /analyze request.
    assert!(message.contains("right after "), "{message}");
    for call in [
        "POST /challenge at +",
        "POST /vote at +",
        "GET /health at +",
    ] {
        assert!(message.contains(call), "{call}: {message}");
    }
    assert!(message.contains("POST /analyze broke first"), "{message}");
    assert!(message.contains("refused"), "{message}");
    // The death is the one failure that blames the agent for it.
    let failed = support::failed(&report);
    assert!(
        failed.iter().all(|id| {
            let c = support::case(&report, id);
            *id == "agent.alive"
                || !(c.message.contains("reset")
                    || c.message.contains("unreachable")
                    || c.message.contains("closed"))
        }),
        "a failure rests on the death: {:?}",
        support::failing(&report)
    );
    let cut: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status == Status::Skip && c.message.contains("went down at +"))
        .map(|c| c.id.as_str())
        .collect();
    assert!(!cut.is_empty(), "no case says the agent went down");
    assert_eq!(report.exit_code(), 1);
}

#[deadline::test]
async fn an_agent_that_resets_one_endpoint_but_stays_up_fails_that_endpoint_and_is_not_called_dead()
{
    let url = raw_agent(|_, path| {
        if path == "/vote" {
            Fate::Reset
        } else {
            Fate::Answer
        }
    })
    .await;
    let report = probe(&url).await;
    assert_eq!(alive_message(&report), None);
    let vote = support::case(&report, "vote.response");
    assert_eq!(vote.status, Status::Fail, "{}", vote.message);
    assert!(
        vote.message.contains("reset") || vote.message.contains("closed"),
        "{}",
        vote.message
    );
}

#[deadline::test]
async fn a_conforming_agent_gets_no_liveness_case_and_an_unreachable_one_no_outage() {
    let agent = support::reference_agent(None).await;
    let report = probe(&agent.url()).await;
    assert_eq!(alive_message(&report), None);
    assert_eq!(report.exit_code(), 0);
    agent.stop().await;
    // Never reached: its reachability case fails; nothing went down.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let report = probe(&closed).await;
    assert_eq!(alive_message(&report), None);
    assert_eq!(
        support::case(&report, "agent.reachable").status,
        Status::Fail
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_librarian_that_dies_mid_run_is_one_failure_and_its_unjudged_rules_skip() {
    use agent_tck::protocols::librarian::commands::{
        reference, reference_registry, reference_tokens,
    };
    use agent_tck::protocols::librarian::probe::{run, Settings};
    use agent_tck::protocols::librarian::reference::Flaws;
    let served = reference(Flaws::named("conforming").unwrap())
        .await
        .unwrap();
    let to = served
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let url = support::relay(to, support::Death::AtConnection(15))
        .await
        .url;
    let settings = Settings {
        base: agent_tck::transport::http::BaseUrl::parse(&url).unwrap(),
        tokens: reference_tokens(),
        timeout: Duration::from_secs(20),
        max_body: 5_000_000,
        common: agent_tck::probe::args::Common {
            seed: 3,
            only: Vec::new(),
            strict: false,
            ..Default::default()
        },
        quick: true,
        allow_deviations: Some(false),
        registry: Some(reference_registry()),
    };
    let report = tokio::time::timeout(Duration::from_secs(120), run(&settings, &|_| {}))
        .await
        .expect("the probe ends")
        .unwrap();
    served.stop().await;
    show(&report);
    only_failure_is(&report, "librarian.alive");
    let alive = support::case(&report, "librarian.alive");
    assert!(
        alive.message.contains("the Librarian at http://"),
        "{}",
        alive.message
    );
    assert!(
        alive.message.contains("stopped answering at +"),
        "{}",
        alive.message
    );
    assert!(
        report.cases.iter().any(|c| c.status == Status::Pass),
        "the cases judged before the death keep their verdicts"
    );
    assert!(
        report
            .cases
            .iter()
            .any(|c| c.message.starts_with("not judged: the Librarian at")),
        "the cases it cut say so"
    );
    assert_eq!(report.exit_code(), 1);
}

/// A round-table platform that dies after its first challenge phase: the fleet names the death
/// once (platform.alive), and neither the trigger cut by it nor the deregistrations it refused
/// are held against the platform's handling of triggers or registrations.
#[deadline::test]
async fn a_platform_that_dies_between_phases_is_named_and_not_blamed_for_the_trigger() {
    use crate::platform::Variant;
    let report = crate::fleet::judge(Variant::DiesAfterChallenge).await;
    show(&report);
    let alive = support::case(&report, "platform.alive");
    assert_eq!(alive.status, Status::Fail, "{}", alive.message);
    assert!(
        alive.message.contains("the platform at http://"),
        "{}",
        alive.message
    );
    for id in [
        "platform.trigger",
        "platform.deliberation-deadline",
        "platform.deregister",
    ] {
        let c = support::case(&report, id);
        assert_eq!(c.status, Status::Skip, "{id}: {}", c.message);
        assert!(c.message.contains("went down at +"), "{id}: {}", c.message);
    }
    // Registration came before the death and keeps its verdict.
    assert_eq!(
        support::case(&report, "platform.register").status,
        Status::Pass
    );
    assert_eq!(report.exit_code(), 1);
}

/// An agent server that crashes when a session is deleted (the public one's unhandled
/// rejection, reproduced by hand: a text input followed at once by a session delete kills it):
/// the fleet names the death, and no verdict rests on the callbacks, forwards and messages it
/// cut — no refusal read into a broken upload, no isolation judged on callbacks never taken.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_server_that_dies_on_a_session_delete_is_named_and_nothing_rests_on_its_death() {
    use agent_tck::protocols::connector::fleet::{self, judge, Fleet};
    let _heavy = support::heavy().await;
    let (listener, _) = crate::agent_server::bind().await;
    let relay = support::relay(
        listener.local_addr().unwrap(),
        // The first delete is the fleet's own revival check; the second, the `gone` agent's.
        support::Death::OnRequest("/operations/delete", 1),
    )
    .await;
    let text = format!(
        r#"
protocol: connector
seed: 7
connector:
  url: {}
  listen: 127.0.0.1:0
  messages: 2
  clients: 2
  agents:
    - {{ name: steady, agent-id: ext-steady, behavior: conforming, sessions: 2 }}
    - {{ name: huge, agent-id: ext-huge, behavior: "huge-callback:2MiB" }}
    - {{ name: empty, agent-id: ext-empty, behavior: empty-callback }}
    - {{ name: lost, agent-id: ext-lost, behavior: callback-to-unknown-session }}
    - {{ name: gone, agent-id: ext-gone, behavior: callback-to-deleted-session }}
"#,
        relay.url
    );
    let fleet = Fleet::parse("fleet.yaml", &text, None).unwrap();
    let served = fleet::serve(&fleet).await.unwrap();
    let agents = served
        .input_urls(&fleet)
        .into_iter()
        .map(|(_, id, input)| (id, input))
        .collect();
    let _server = crate::agent_server::start(
        (listener, relay.url.clone()),
        crate::agent_server::Flaw::None,
        agents,
    );
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        judge::run(&fleet, served, false, 7),
    )
    .await
    .expect("the fleet ends");
    show(&report);
    let alive = support::case(&report, "platform.alive");
    assert_eq!(alive.status, Status::Fail, "{}", alive.message);
    assert!(
        alive.message.contains("the agent server at http://"),
        "{}",
        alive.message
    );
    assert!(alive.message.contains("broke first"), "{}", alive.message);
    for c in &report.cases {
        assert!(
            !(c.message.contains("Connection reset") || c.message.contains("connection broke")),
            "{} rests on the death: {:?} {}",
            c.id,
            c.status,
            c.message
        );
    }
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("the agent server's death cut them")),
        "{:?}",
        report.notes
    );
    assert_eq!(report.exit_code(), 1);
}

/// A platform whose agent timeout is 120 s, killed while it waits on a hanging agent: its
/// connections closing as it dies are no giving-up, and no agent is judged not recalled by a
/// platform that could not have recalled it.
#[deadline::test]
async fn a_platform_killed_mid_deliberation_is_not_credited_with_giving_up() {
    use crate::platform::{self, PlatformConfig};
    let platform = platform::start(PlatformConfig {
        agent_timeout: Duration::from_secs(120),
        ..PlatformConfig::default()
    })
    .await;
    let to = platform.url.trim_start_matches("http://").parse().unwrap();
    let relay = support::relay(to, support::Death::Never).await;
    // The fault's timing, not a wait for readiness: killed 2 s in, while the hanging agent's
    // /analyze is open (were the machine slower, the death comes before it and nothing is
    // judged, which the assertions allow).
    let kill = relay.kill.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        kill.notify_one();
    });
    let report = crate::fleet::drive(&relay.url, Duration::from_secs(120)).await;
    platform.stop().await;
    show(&report);
    assert_eq!(
        support::case(&report, "platform.alive").status,
        Status::Fail
    );
    let gives_up = support::case(&report, "platform.gives-up");
    assert_ne!(gives_up.status, Status::Pass, "{}", gives_up.message);
    // The hanging agent's failure is not judged; the garbled one's, which the platform saw
    // before it died, may be.
    let recalled = support::case(&report, "platform.failed-not-recalled");
    assert!(
        recalled.status != Status::Pass
            || recalled.message.contains("hangs's /analyze")
                && recalled.message.contains("the platform went down"),
        "{:?} {}",
        recalled.status,
        recalled.message
    );
}

/// An external agent (the connector's) that dies after six forwards: the probe names the death
/// once, and the forwards and callbacks it cut are no verdict on the agent.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_agent_that_dies_mid_run_is_named_once_and_nothing_fails_on_its_death() {
    use agent_tck::mock::http1;
    use agent_tck::protocols::connector::probe::run;
    use agent_tck::protocols::connector::reference::{ExternalAgent, Flaws};
    let agent = std::sync::Arc::new(ExternalAgent::new(Flaws::named("conforming").unwrap()));
    let running = http1::spawn(agent, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let to = running.url().trim_start_matches("http://").parse().unwrap();
    let relay = support::relay(to, support::Death::AtConnection(6)).await;
    let mut settings = crate::connector::settings(&format!("{}/v1/assistant/input", relay.url));
    settings.reply_timeout = Duration::from_secs(5);
    let report = tokio::time::timeout(Duration::from_secs(120), run(&settings, &|_| {}))
        .await
        .expect("the probe ends")
        .unwrap();
    running.stop().await;
    show(&report);
    only_failure_is(&report, "agent.alive");
    assert!(report.cases.iter().any(|c| c.status == Status::Pass));
    assert_eq!(report.exit_code(), 1);
}

/// A Librarian that dies while a fleet of its clients runs: one failure names the death
/// (librarian.alive), and the requests it cut count as no 5xx, no refusal, no unserved client.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_librarian_that_dies_under_its_client_fleet_is_named_once() {
    use agent_tck::protocols::librarian::commands::{reference, reference_tokens};
    use agent_tck::protocols::librarian::fleet::{run, Fleet};
    use agent_tck::protocols::librarian::reference::Flaws;
    let served = reference(Flaws::named("conforming").unwrap())
        .await
        .unwrap();
    let to = served
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    // The first connection is the fleet's check that the server is there.
    let relay = support::relay(to, support::Death::AtConnection(12)).await;
    let t = reference_tokens();
    let text = format!(
        "protocol: librarian\nlibrarian:\n  url: {}\n  duration: 2s\n  clients:\n    - {{ name: steady, agent: {}, token: {}, behavior: conforming, rate: 600/min }}\n",
        relay.url, t[0].0, t[0].1
    );
    let fleet = Fleet::parse("fleet.yaml", &text, None).unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), run(&fleet, false, 1))
        .await
        .expect("the fleet ends");
    served.stop().await;
    show(&report);
    only_failure_is(&report, "librarian.alive");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("the Librarian's death cut")),
        "{:?}",
        report.notes
    );
    assert_eq!(report.exit_code(), 1);
}
