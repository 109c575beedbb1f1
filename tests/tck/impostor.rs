//! Two registrations at one base URL: the fleet's `alpha`, and an impostor registered by hand
//! (with the platform, not through the fleet) with a key that is not alpha's. The fleet refuses
//! the impostor's calls (401); those refusals are not alpha failing, whichever call comes first.

use std::time::Duration;

use agent_tck::report::{Report, Status};
use agent_tck::transport::http::{send, BaseUrl, Request};
use serde_json::{json, Value};

use crate::fleet::{case, drive_fleet_until};
use crate::platform::{self, PlatformConfig, Variant};

/// alpha and gamma answer as the reference agent does; broken fails /analyze (so that the rule
/// on failed agents has a failure to judge).
const FLEET: &str = r#"
agents:
  - { name: alpha, api_key: alphas-key }
  - { name: gamma }
  - { name: broken, behaviors: ["http-error@analyze"] }
"#;

/// The same, without an agent that fails: only the impostor's calls fail.
const NO_FAILING_AGENT: &str = r#"
agents:
  - { name: alpha, api_key: alphas-key }
  - { name: gamma }
"#;

/// The platform's timeout for an agent (no agent here comes near it).
const AGENT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the fleet may take to register, and a deliberation to end, on a busy machine.
const WITHIN: Duration = Duration::from_secs(20);

/// One call to the platform's API: (status, JSON body).
async fn call(base: &BaseUrl, path: &str, body: Value) -> (u16, Value) {
    let request = Request {
        method: "POST".into(),
        path: path.into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into(),
    };
    let limits = agent_tck::transport::http::Limits {
        deadline: WITHIN,
        ..Default::default()
    };
    let response = send(base, &request, limits)
        .await
        .expect("the platform answers");
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body)
}

/// Serves `fleet` to a `variant` platform that calls agents one at a time in the task's order;
/// once the fleet has registered, registers `impostor` at alpha's base URL with a wrong key and
/// runs two deliberations: the impostor called before alpha, then after it.
async fn with_impostor(variant: Variant, fleet: &'static str) -> Report {
    let platform = platform::start(PlatformConfig {
        variant,
        agent_timeout: AGENT_TIMEOUT,
        one_at_a_time: true,
        ..PlatformConfig::default()
    })
    .await;
    let spec = format!(
        "url: {}\ntimeout: {}ms\nregister: {{ path: /api/v1/agents }}\n",
        platform.url,
        AGENT_TIMEOUT.as_millis()
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let session = tokio::spawn(async move {
        drive_fleet_until(fleet, &spec, None, async {
            let _ = stopped.await;
        })
        .await
    });
    let names: Vec<&str> = if fleet.contains("broken") {
        vec!["alpha", "gamma", "broken"]
    } else {
        vec!["alpha", "gamma"]
    };
    let mut alpha_url = String::new();
    for name in &names {
        let url = platform.base_url_of(name, WITHIN).await;
        let url = url.unwrap_or_else(|| panic!("the fleet registered no {name}"));
        if *name == "alpha" {
            alpha_url = url;
        }
    }
    let base = BaseUrl::parse(&platform.url).unwrap();
    let impostor = json!({
        "name": "impostor",
        "domain": "general",
        "base_url": alpha_url,
        "api_key": "not-alphas-key",
    });
    assert_eq!(call(&base, "/api/v1/agents", impostor).await.0, 201);
    let orders = [
        [&["impostor", "alpha"][..], &names[1..]].concat(),
        [&["alpha", "impostor"][..], &names[1..]].concat(),
    ];
    for order in orders {
        let task = json!({"content": "Review the login handler", "agents": order});
        let (status, answer) = call(&base, "/api/v1/round-table/tasks", task).await;
        assert_eq!(status, 200, "{order:?}: {answer}");
        // The platform excluded the impostor (its call failed), never alpha.
        let excluded = answer["excluded"]["analyze"].to_string();
        assert!(
            excluded.contains("impostor") && !excluded.contains("\"alpha\""),
            "{order:?}: {answer}"
        );
    }
    let _ = stop.send(());
    let report = session.await.expect("the session ends");
    platform.stop().await;
    report
}

/// The note every case that could have blamed alpha carries.
const NOTE: &str = "2 requests to alpha with a key that is not alpha's were refused 401: each counted as a call to another agent registered at alpha's URL, not as alpha failing; the fleet cannot tell this from the platform sending alpha itself a wrong key, which platform.bearer judges";

/// A conforming platform sends gamma alpha's analysis, rightly: alpha's own call succeeded. The
/// impostor's refused calls are not alpha's, whether they came before alpha's or after.
#[deadline::test]
async fn a_refused_impostor_at_an_agents_url_is_not_that_agent_failing() {
    let report = with_impostor(Variant::Conforming, FLEET).await;
    let no_failed = case(&report, "platform.challenge-no-failed");
    assert_eq!(no_failed.status, Status::Pass, "{}", no_failed.message);
    assert!(no_failed.message.contains(NOTE), "{}", no_failed.message);
    let recalled = case(&report, "platform.failed-not-recalled");
    assert_eq!(recalled.status, Status::Pass, "{}", recalled.message);
    // The impostor's calls are another agent's: each failed once and was not called again.
    assert!(
        recalled.evidence.as_ref().is_some_and(|e| e.judged >= 4),
        "{:?}",
        recalled.evidence
    );
    // platform.bearer cannot tell the impostor from a platform that sent alpha a wrong key:
    // it fails, and says what the refusals were counted as.
    let bearer = case(&report, "platform.bearer");
    assert_eq!(bearer.status, Status::Fail, "{}", bearer.message);
    assert!(bearer.message.contains(NOTE), "{}", bearer.message);
    let phases = case(&report, "platform.phases-continue");
    assert_ne!(phases.status, Status::Fail, "{}", phases.message);
}

/// A platform that forwards a failed agent's analysis still fails the rule, naming that agent,
/// not alpha.
#[deadline::test]
async fn a_platform_that_keeps_a_failed_agent_still_fails_naming_it_not_alpha() {
    let report = with_impostor(Variant::KeepsFailedAgents, FLEET).await;
    let no_failed = case(&report, "platform.challenge-no-failed");
    assert_eq!(no_failed.status, Status::Fail, "{}", no_failed.message);
    assert!(
        no_failed
            .message
            .contains("from broken, whose /analyze failed")
            && !no_failed.message.contains("from alpha"),
        "{}",
        no_failed.message
    );
}

/// With no fleet agent failing, only the impostor's calls failed: the fleet cannot know the
/// impostor's name at the platform, so the rule has nothing to judge, and says why.
#[deadline::test]
async fn with_only_the_impostor_failing_the_rule_skips_and_says_why() {
    let report = with_impostor(Variant::Conforming, NO_FAILING_AGENT).await;
    let no_failed = case(&report, "platform.challenge-no-failed");
    assert_eq!(no_failed.status, Status::Skip, "{}", no_failed.message);
    assert!(
        no_failed
            .message
            .contains("no /challenge request came in a task where an agent's /analyze failed")
            && no_failed.message.contains(NOTE),
        "{}",
        no_failed.message
    );
}
