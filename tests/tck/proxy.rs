//! `agent-tck proxy` between a platform of our own (`platform`, a conforming one or one that
//! breaks one rule) and agents of our own (the mock engine's, conforming or with one flaw),
//! judged from the traffic between them: each platform flaw is named the platform's by the
//! fleet's rule, each agent flaw the agent's by the probe's case, a correct pair passes, and a
//! fault the proxy injects into a real answer shows how the platform handles it — never as the
//! agent's fault.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use agent_tck::mock::behavior;
use agent_tck::mock::protocol::PlatformExpect;
use agent_tck::probe::traffic::TrafficLimits;
use agent_tck::protocols::roundtable;
use agent_tck::proxy::judging::Judging;
use agent_tck::proxy::run::{start, AgentAt, ProxySettings};
use agent_tck::report::{Exit, Report, Status};
use agent_tck::transport::http::BaseUrl;

use crate::harness_judged::Flaws;
use crate::platform::{self, PlatformConfig, Variant};
use crate::support::{self, SEED};

/// The platform's timeout for an agent: short, so that a hang costs a test a second.
const PLATFORM_TIMEOUT: Duration = Duration::from_secs(1);
const CONTENT: &str = "Review the authentication module for security vulnerabilities";
const KEY: &str = "proxy-test-key-7f3a";

/// What stands behind the proxy in one test.
pub(crate) struct Stand<'a> {
    pub(crate) variant: Variant,
    /// Each real agent: its name and its own behaviour (its flaw, or `conforming`).
    pub(crate) agents: &'a [(&'a str, &'a str)],
    /// Agents served by the test itself (name, URL), in place of the mock ones of those names.
    pub(crate) real: &'a [(&'a str, String)],
    /// The proxy's faults on real answers, or on the platform's requests with `request:`
    /// before the behaviour (as `--fault` takes them): (agent, fault).
    pub(crate) faults: &'a [(&'a str, &'a str)],
    /// The agents are registered with a key, which the proxy is told.
    pub(crate) keys: bool,
    pub(crate) deliberations: usize,
    /// Where the proxy records the traffic.
    pub(crate) record: Option<std::path::PathBuf>,
    /// The run ends as soon as the deliberations are answered, with no quiet after them.
    pub(crate) at_once: bool,
    /// The run ends itself (`--duration`, `--deliberations`) rather than at the test's word.
    pub(crate) duration: Option<Duration>,
    pub(crate) end_after: Option<u64>,
    /// `--judging`.
    pub(crate) judging: Judging,
    /// The platform calls a phase's agents one after another, not at once.
    pub(crate) one_at_a_time: bool,
}

impl Stand<'_> {
    pub(crate) fn of(variant: Variant) -> Stand<'static> {
        Stand {
            variant,
            agents: &[
                ("alpha", "conforming"),
                ("beta", "conforming"),
                ("gamma", "conforming"),
            ],
            real: &[],
            faults: &[],
            keys: false,
            deliberations: 2,
            record: None,
            at_once: false,
            duration: None,
            end_after: None,
            judging: Judging::Every,
            one_at_a_time: false,
        }
    }
}

/// Serves the agents, the proxy before them and the platform, registers the agents at their
/// proxy URLs, runs the deliberations, then ends the proxy and returns its report.
pub(crate) async fn judged(stand: Stand<'_>) -> Report {
    let key = stand.keys.then_some(KEY);
    let mut served = Vec::new();
    let mut agents = Vec::new();
    for (name, behaviour) in stand.agents {
        let url = match stand.real.iter().find(|(n, _)| n == name) {
            Some((_, url)) => url.clone(),
            None => {
                let agent =
                    roundtable::commands::serve_one(name, key.map(str::to_string), behaviour, SEED)
                        .await
                        .expect("serve an agent");
                let url = agent.urls[0].clone();
                served.push(agent);
                url
            }
        };
        let mine = || stand.faults.iter().filter(|(n, _)| n == name);
        let faults: Vec<_> = mine()
            .filter(|(_, f)| !f.starts_with("request:"))
            .flat_map(|(_, f)| behavior::parse_list(f, support::roundtable()).expect("a fault"))
            .collect();
        let requests = mine()
            .filter_map(|(_, f)| f.strip_prefix("request:"))
            .map(|f| agent_tck::proxy::bend::parse(f, &roundtable::Agents).expect("a fault"))
            .collect();
        agents.push(AgentAt {
            name: name.to_string(),
            base: BaseUrl::parse(&url).unwrap(),
            key: key.map(str::to_string),
            faults,
            requests,
        });
    }
    let proxy = start(ProxySettings {
        protocol: &roundtable::Agents,
        suite: roundtable::suite().unwrap(),
        agents,
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        expect: PlatformExpect::timeout(PLATFORM_TIMEOUT),
        limits: TrafficLimits {
            max_body: 5_000_000,
            max_field: 50_000,
            timeout: Duration::from_secs(30),
            labelled: true,
        },
        duration: stand.duration,
        deliberations: stand.end_after,
        record: stand.record.clone(),
        seed: SEED,
        strict: false,
        log: false,
        judging: stand.judging,
    })
    .await
    .expect("the proxy starts");
    let platform = std::sync::Arc::new(
        platform::start(PlatformConfig {
            variant: stand.variant,
            agent_timeout: PLATFORM_TIMEOUT,
            one_at_a_time: stand.one_at_a_time,
            ..PlatformConfig::default()
        })
        .await,
    );
    for (name, _) in stand.agents {
        assert_eq!(platform.register(name, &proxy.url_of(name), key).await, 201);
    }
    let driven = platform.clone();
    let deliberations = stand.deliberations;
    let driving = tokio::spawn(async move {
        for _ in 0..deliberations {
            // A platform that waits on a hung agent forever (NoTimeout) is left waiting: the
            // run ends with its request open, as a user's Ctrl-C would end it.
            let bound = 3 * PLATFORM_TIMEOUT + Duration::from_secs(5);
            if tokio::time::timeout(bound, driven.deliberate(CONTENT))
                .await
                .is_err()
            {
                break;
            }
        }
    });
    let report = if stand.duration.is_some() || stand.end_after.is_some() {
        // The run ends itself; the test only bounds it.
        let ended = proxy.until(std::future::pending());
        let report = tokio::time::timeout(Duration::from_secs(60), ended)
            .await
            .expect("the run ends itself")
            .expect("a report");
        driving.abort();
        let _ = driving.await;
        report
    } else {
        driving.await.unwrap();
        // A deliberation is judged whole once the platform was quiet for its timeout and grace
        // (there is no trigger the proxy sees answered): the rule's own wait, not a readiness
        // one.
        if !stand.at_once {
            tokio::time::sleep(PLATFORM_TIMEOUT * 3).await;
        }
        proxy.end("the test's end".into()).await.expect("a report")
    };
    let Ok(platform) = std::sync::Arc::try_unwrap(platform) else {
        panic!("the platform is still driven");
    };
    platform.stop().await;
    for agent in served {
        agent.stop(Duration::from_secs(1)).await;
    }
    report
}

pub(crate) fn status_of(report: &Report, id: &str) -> Status {
    support::case(report, id).status
}

/// The cases that failed, each with its message, for assertion messages.
pub(crate) fn failures(report: &Report) -> String {
    format!("{:#?}", support::failing(report))
}

#[deadline::test]
async fn a_conforming_platform_with_conforming_agents_passes_on_evidence() {
    let report = judged(Stand::of(Variant::Conforming)).await;
    assert_eq!(report.exit_code(), Exit::Passed, "{}", failures(&report));
    for id in [
        "platform.reached-proxy",
        "platform.request-schema",
        "platform.challenge-not-own",
        "platform.phases-continue",
        "alpha/analyze.response",
        "beta/challenge.response",
        "gamma/vote.response",
    ] {
        let case = support::case(&report, id);
        assert_eq!(case.status, Status::Pass, "{id}: {}", case.message);
        assert!(case.evidence.as_ref().is_some_and(|e| e.judged > 0), "{id}");
    }
    // What a rule would need is said in the proxy's words: its agents are real, given faults.
    let recalled = support::case(&report, "platform.failed-not-recalled");
    assert_eq!(recalled.status, Status::Skip, "{}", recalled.message);
    assert!(
        recalled.message.contains("--fault NAME=hang") && !recalled.message.contains("fleet"),
        "{}",
        recalled.message
    );
}

/// The `variant` platform's report, with the proxy putting NULs in beta's real analyses.
async fn nul_in_betas_analyses(variant: Variant) -> Report {
    let faults = [("beta", "null-bytes@analyze")];
    judged(Stand {
        faults: &faults,
        ..Stand::of(variant)
    })
    .await
}

#[deadline::test]
async fn a_nul_the_proxy_put_in_a_real_answer_comes_out_stripped_at_the_others() {
    let report = nul_in_betas_analyses(Variant::Conforming).await;
    let nul = support::case(&report, "platform.nul-stripped");
    assert_eq!(nul.status, Status::Pass, "{}", nul.message);
    assert!(nul.evidence.as_ref().is_some_and(|e| e.judged > 0));
    // The NUL was the proxy's, not beta's: beta's own answers are judged clean.
    assert_eq!(
        status_of(&report, "beta/analyze.sanitization"),
        Status::Pass
    );
    assert_eq!(status_of(&report, "agent.behaviors-applied"), Status::Pass);
    assert_eq!(report.exit_code(), Exit::Passed, "{}", failures(&report));
}

#[deadline::test]
async fn a_platform_that_forwards_the_nul_is_named_and_the_agent_is_not() {
    let report = nul_in_betas_analyses(Variant::NoNulStripping).await;
    let nul = support::case(&report, "platform.nul-stripped");
    assert_eq!(nul.status, Status::Fail, "{}", nul.message);
    assert!(nul.message.contains("beta"), "{}", nul.message);
    let agents_failed: Vec<_> = support::failed(&report)
        .into_iter()
        .filter(|id| id.contains('/'))
        .collect();
    assert!(agents_failed.is_empty(), "{agents_failed:?}");
}

#[deadline::test]
async fn each_platform_flaw_is_the_platforms_by_the_fleets_rule() {
    let failed = [("gamma", "http-error:500@analyze")];
    for (variant, faults, keys, rule) in [
        (
            Variant::OwnAnalysisInChallenge,
            &[][..],
            false,
            "platform.challenge-not-own",
        ),
        (
            Variant::KeepsFailedAgents,
            &failed[..],
            false,
            "platform.challenge-no-failed",
        ),
        (Variant::NoBearer, &[][..], true, "platform.bearer"),
    ] {
        let report = judged(Stand {
            faults,
            keys,
            deliberations: 1,
            ..Stand::of(variant)
        })
        .await;
        let case = support::case(&report, rule);
        assert_eq!(
            case.status,
            Status::Fail,
            "{}: {}",
            variant.name(),
            case.message
        );
        assert!(
            support::failed(&report)
                .iter()
                .all(|id| id.starts_with("platform.")),
            "{}: {}",
            variant.name(),
            failures(&report)
        );
        // The same stand with a conforming platform: the rule holds, on evidence.
        let report = judged(Stand {
            faults,
            keys,
            deliberations: 1,
            ..Stand::of(Variant::Conforming)
        })
        .await;
        let case = support::case(&report, rule);
        assert_eq!(
            case.status,
            Status::Pass,
            "conforming {rule}: {}",
            case.message
        );
    }
}

#[deadline::test]
async fn an_agents_own_flaw_is_the_agents_by_the_probes_case() {
    let agents = [
        ("alpha", "conforming"),
        ("beta", "wrong-schema:dissent-without-reason@vote"),
        ("gamma", "conforming"),
    ];
    let report = judged(Stand {
        agents: &agents,
        ..Stand::of(Variant::Conforming)
    })
    .await;
    let case = support::case(&report, "beta/vote.dissent-reason");
    assert_eq!(case.status, Status::Fail, "{}", case.message);
    assert_eq!(
        status_of(&report, "alpha/vote.dissent-reason"),
        Status::Pass
    );
    assert!(
        support::failed(&report)
            .iter()
            .all(|id| id.starts_with("beta/")),
        "{}",
        failures(&report)
    );
}

/// Judged beside the traffic (`--judging spare`), at a pace the judge keeps up with, every
/// answer is judged, and the verdicts are those of judging each answer before it is passed on.
#[deadline::test]
async fn answers_judged_on_spare_cpu_give_the_same_verdicts_when_the_judge_keeps_up() {
    let agents = [
        ("alpha", "conforming"),
        ("beta", "wrong-schema:dissent-without-reason@vote"),
        ("gamma", "conforming"),
    ];
    let verdicts = |report: &Report| -> Vec<(String, Status, Option<u64>)> {
        report
            .cases
            .iter()
            .filter(|c| c.id.contains('/'))
            .map(|c| {
                (
                    c.id.clone(),
                    c.status,
                    c.evidence.as_ref().map(|e| e.judged),
                )
            })
            .collect()
    };
    let every = judged(Stand {
        agents: &agents,
        ..Stand::of(Variant::Conforming)
    })
    .await;
    let spare = judged(Stand {
        agents: &agents,
        judging: Judging::Spare,
        ..Stand::of(Variant::Conforming)
    })
    .await;
    assert_eq!(verdicts(&spare), verdicts(&every));
    assert!(
        spare.notes.iter().any(|n| n.contains("--judging spare")),
        "{:?}",
        spare.notes
    );
    assert!(!every.notes.iter().any(|n| n.contains("--judging")));
    assert_eq!(
        support::case(&spare, "beta/vote.dissent-reason").status,
        Status::Fail
    );
    assert!(
        spare.cases.iter().all(|c| !c.message.contains("unjudged")),
        "{}",
        failures(&spare)
    );
}

#[deadline::test]
async fn a_hang_the_proxy_injected_shows_whether_the_platform_gives_up() {
    let faults = [("gamma", "hang@analyze")];
    let report = judged(Stand {
        faults: &faults,
        deliberations: 1,
        ..Stand::of(Variant::Conforming)
    })
    .await;
    let case = support::case(&report, "platform.gives-up");
    assert_eq!(case.status, Status::Pass, "{}", case.message);
    // gamma answered: the hang was the proxy's, and gamma's answers are judged on time.
    assert_eq!(status_of(&report, "gamma/analyze.response"), Status::Pass);
}

#[deadline::test]
async fn with_no_traffic_nothing_is_green() {
    let report = judged(Stand {
        deliberations: 0,
        ..Stand::of(Variant::Conforming)
    })
    .await;
    assert_eq!(status_of(&report, "platform.reached-proxy"), Status::Fail);
    assert_ne!(report.exit_code(), Exit::Passed);
    assert_eq!(status_of(&report, "alpha/analyze.response"), Status::Skip);
}

#[deadline::test]
async fn a_recording_judged_again_gives_the_live_verdicts_and_holds_no_key() {
    let dir = support::TempDir::new("proxy-record");
    for file in ["run.jsonl", "run.har"] {
        let path = std::path::PathBuf::from(dir.path(file));
        let faults = [
            ("beta", "null-bytes@analyze"),
            ("gamma", "http-error:503@challenge"),
        ];
        let agents = [
            ("alpha", "conforming"),
            ("beta", "conforming"),
            ("gamma", "wrong-schema:dissent-without-reason@vote"),
        ];
        let live = judged(Stand {
            agents: &agents,
            faults: &faults,
            keys: true,
            record: Some(path.clone()),
            ..Stand::of(Variant::NoNulStripping)
        })
        .await;
        // The run judged both parties at fault somewhere: the recording has something to say.
        let failed = support::failed(&live);
        assert!(failed.contains(&"platform.nul-stripped"), "{failed:?}");
        assert!(failed.contains(&"gamma/vote.dissent-reason"), "{failed:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(KEY), "{file} holds the key");
        if file.ends_with(".har") {
            // Each answer the platform was given shows its header fields, as HAR viewers read them.
            let har: serde_json::Value = serde_json::from_str(&text).expect("a HAR document");
            let answered: Vec<&serde_json::Value> = har["log"]["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .filter(|e| e["response"]["status"] == 200)
                .collect();
            assert!(!answered.is_empty(), "{file}: no answered entry");
            for entry in answered {
                let response = &entry["response"];
                assert_eq!(
                    response["content"]["mimeType"], "application/json",
                    "{response}"
                );
                assert!(
                    response["headers"]
                        .as_array()
                        .is_some_and(|h| h.iter().any(|h| h["name"] == "content-type")),
                    "{response}"
                );
            }
        }
        let entries = agent_tck::judge::record::read_entries(&path).unwrap();
        let settings = agent_tck::proxy::settings::RunSettings::of(&entries).expect("the settings");
        let again = agent_tck::proxy::judge::judge(
            &entries,
            &roundtable::Agents,
            roundtable::suite().unwrap(),
            &settings,
        )
        .unwrap();
        crate::rejudge_platforms::assert_same_verdicts(&live.cases, &again);
        assert_eq!(
            again.len(),
            live.cases.len(),
            "{file}: every live case, offline"
        );
    }
}

/// An execute_task harness of our own (`harness_judged`'s, with `flaws`) and one of the kit's
/// mock agents behind the proxy, the agent's answers bent by `faults`: the proxy's report once
/// the harness ran `TASKS`, or once `linger` passed (a harness stuck waiting is still waiting).
async fn harness_judged(flaws: Flaws, faults: &str, linger: Duration) -> Report {
    use crate::harness_judged::{agent, Harness, EXPECT, TASKS};
    use agent_tck::protocols::execute_task;
    let served = agent_tck::mock::fleet::serve_one(agent("conforming"), EXPECT.timeout)
        .await
        .expect("serve the agent");
    let faults = match faults {
        "" => Vec::new(),
        f => behavior::parse_list(f, support::execute_task()).expect("a fault"),
    };
    let proxy = start(ProxySettings {
        protocol: &execute_task::Agents,
        suite: execute_task::rules::suite().unwrap(),
        agents: vec![AgentAt {
            name: "judge".into(),
            base: BaseUrl::parse(&served.urls[0]).unwrap(),
            key: None,
            faults,
            requests: Vec::new(),
        }],
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        expect: EXPECT,
        limits: TrafficLimits {
            max_body: 5_000_000,
            max_field: 50_000,
            timeout: Duration::from_secs(30),
            labelled: true,
        },
        duration: None,
        deliberations: None,
        record: None,
        seed: SEED,
        strict: false,
        log: false,
        judging: Judging::Every,
    })
    .await
    .expect("the proxy starts");
    let harness = Harness {
        url: proxy.url_of("judge"),
        flaws,
    };
    let mut run = tokio::spawn(async move {
        for task in TASKS {
            harness.run(task).await;
        }
    });
    if linger.is_zero() {
        (&mut run).await.unwrap();
    } else {
        // The run ends (as at Ctrl-C) while the harness may still be waiting.
        tokio::time::sleep(linger).await;
    }
    let report = proxy.end("the test's end".into()).await.expect("a report");
    run.abort();
    served.stop(Duration::from_secs(1)).await;
    report
}

#[deadline::test]
async fn an_execute_task_harness_is_judged_through_the_proxy_by_the_harness_rules() {
    let report = harness_judged(Flaws::default(), "", Duration::ZERO).await;
    assert_eq!(report.protocol, "execute-task");
    for id in ["platform.reached-proxy", "harness.turns", "harness.history"] {
        let case = support::case(&report, id);
        assert_eq!(case.status, Status::Pass, "{id}: {}", case.message);
    }
    assert!(support::failed(&report).is_empty(), "{}", failures(&report));
    let deadline = support::case(&report, "harness.deadline");
    assert_eq!(deadline.status, Status::Skip, "{}", deadline.message);
    assert!(
        deadline.message.contains("--fault NAME=hang") && !deadline.message.contains("serve"),
        "{}",
        deadline.message
    );
    // A hang the proxy put on the real agent's answers: the harness without a deadline waits
    // on, and harness.deadline names it; the reference harness gives up and passes it.
    let stuck = Flaws {
        no_timeout: true,
        ..Flaws::default()
    };
    let report = harness_judged(stuck, "hang", Duration::from_secs(4)).await;
    let case = support::case(&report, "harness.deadline");
    assert_eq!(case.status, Status::Fail, "{}", case.message);
    let report = harness_judged(Flaws::default(), "hang", Duration::from_secs(4)).await;
    let case = support::case(&report, "harness.deadline");
    assert_eq!(case.status, Status::Pass, "{}", case.message);
}

#[deadline::test]
async fn a_run_ended_before_its_deliberations_were_seen_over_says_their_votes_were_not_judged() {
    let report = judged(Stand {
        at_once: true,
        ..Stand::of(Variant::Conforming)
    })
    .await;
    let case = support::case(&report, "platform.phases-continue");
    // Their /challenge calls were judged (each reached /vote), their /vote calls were not.
    assert_eq!(case.status, Status::Pass, "{}", case.message);
    assert!(
        case.message
            .contains("the /vote calls of 2 deliberations not judged"),
        "{}",
        case.message
    );
}

#[deadline::test]
async fn deliberations_or_a_duration_end_the_run_and_it_says_so() {
    let report = judged(Stand {
        deliberations: 3,
        end_after: Some(2),
        ..Stand::of(Variant::Conforming)
    })
    .await;
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("2 of the 2 deliberations asked for reached their last phase")),
        "{:?}",
        report.notes
    );
    assert_eq!(status_of(&report, "platform.reached-proxy"), Status::Pass);
    // A platform that calls a phase's agents one after another: the first /vote answered ends
    // the deliberation's count, and the others' votes must still come through, not meet a
    // proxy that ended.
    let report = judged(Stand {
        deliberations: 1,
        end_after: Some(1),
        one_at_a_time: true,
        ..Stand::of(Variant::Conforming)
    })
    .await;
    for agent in ["alpha", "beta", "gamma"] {
        let vote = support::case(&report, &format!("{agent}/vote.response"));
        assert_eq!(vote.status, Status::Pass, "{agent}: {}", vote.message);
        assert_eq!(
            vote.evidence.as_ref().map(|e| e.judged),
            Some(1),
            "{agent}: {}",
            vote.message
        );
    }
    assert!(support::failed(&report).is_empty(), "{}", failures(&report));
    let report = judged(Stand {
        deliberations: 0,
        duration: Some(Duration::from_millis(300)),
        ..Stand::of(Variant::Conforming)
    })
    .await;
    assert_eq!(status_of(&report, "platform.reached-proxy"), Status::Fail);
}
