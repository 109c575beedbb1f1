//! The fleet's handler driven without a socket: a request goes in as the HTTP engine would hand
//! it over, the plan (status, body, delays, fault) and what the observer made of it come out.
//! What a behaviour decides is tested here in microseconds; the wire (resets, dribbles, framing)
//! is tested over loopback in `tests/tck`.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use super::behavior::For;
use super::fleet::{FleetFile, FleetHandler};
use super::http1::{Delivered, Fault, Handler, Headers, Outcome, Plan, Request};
use super::journal::Journal;
use super::observe::observer_for;
use super::protocol::PlatformExpect;
use super::stub::STUB;

/// A fleet of the stub protocol on one (unbound) port, from a fleet file's `agents:`.
fn fleet(agents_yaml: &str) -> FleetHandler {
    let at = For {
        protocol: &STUB,
        others: &[],
    };
    let agents = FleetFile::parse("f.yaml", agents_yaml)
        .and_then(|f| f.agents("f.yaml", 1, at))
        .expect("the fleet file loads");
    let observer = observer_for(&STUB, &PlatformExpect::timeout(Duration::from_secs(30)));
    FleetHandler::shared(agents, Journal::off(Instant::now()), observer)
}

fn request(path: &str, headers: &[(&str, &str)], body: &str) -> Request {
    let mut fields = Headers::default();
    for (name, value) in headers {
        fields.push(name, value);
    }
    Request {
        method: "POST".into(),
        target: path.into(),
        headers: fields,
        body: bytes::Bytes::copy_from_slice(body.as_bytes()),
        close: false,
        received: Instant::now(),
        peer: SocketAddr::from((Ipv4Addr::LOCALHOST, 40000)),
        local: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)),
        left: None,
    }
}

/// One request through the handler, its answer then told delivered whole, as the engine does.
async fn send(fleet: &FleetHandler, request: Request) -> Plan {
    let (plan, note) = fleet.handle(request).await;
    let delivered = Delivered {
        outcome: Outcome::Complete,
        bytes: plan.response.body.len() as u64,
        ttfb: Some(plan.ttfb),
        total: plan.ttfb,
    };
    fleet.finish(note, delivered).await;
    plan
}

fn body_text(plan: &Plan) -> String {
    String::from_utf8_lossy(&plan.response.body).into_owned()
}

#[deadline::test]
async fn a_request_is_routed_to_its_agent_and_an_unknown_one_is_refused_by_name() {
    let fleet = fleet("agents:\n  - { name: alpha }\n  - { name: beta }\n");
    let plan = send(&fleet, request("/agents/beta/ask", &[], "{}")).await;
    assert_eq!(plan.response.status, 200);
    assert!(
        body_text(&plan).contains("\"agent\":\"beta\""),
        "{}",
        body_text(&plan)
    );

    let plan = send(&fleet, request("/agents/zed/ask", &[], "{}")).await;
    assert_eq!(plan.response.status, 404);
    assert!(body_text(&plan).contains("no mock agent at /agents/zed/ask"));

    let plan = send(&fleet, request("/agents/alpha/nowhere", &[], "{}")).await;
    assert_eq!(plan.response.status, 404);
    assert!(body_text(&plan).contains("no endpoint /nowhere"));
}

/// A keyed agent answers its key, and refuses a request without it or with another one, saying
/// which. (Whether the platform is judged for it is the observer's: the round table's tests.)
#[deadline::test]
async fn a_keyed_agent_refuses_a_missing_or_wrong_key_saying_which() {
    let fleet = fleet("agents:\n  - { name: alpha, api_key: k3y }\n");
    let keyed = request(
        "/agents/alpha/ask",
        &[("authorization", "Bearer k3y")],
        "{}",
    );
    assert_eq!(send(&fleet, keyed).await.response.status, 200);

    let plan = send(&fleet, request("/agents/alpha/ask", &[], "{}")).await;
    assert_eq!(plan.response.status, 401);
    assert!(
        body_text(&plan).contains("missing Authorization"),
        "{}",
        body_text(&plan)
    );
    let wrong = request(
        "/agents/alpha/ask",
        &[("authorization", "Bearer nope")],
        "{}",
    );
    let plan = send(&fleet, wrong).await;
    assert_eq!(plan.response.status, 401);
    assert!(
        body_text(&plan).contains("wrong API key"),
        "{}",
        body_text(&plan)
    );
}

/// What each engine behaviour decides, read off the plan: no time passes, no byte is written.
#[deadline::test]
async fn each_behaviour_shapes_the_plan_it_stands_for() {
    let fleet = fleet(concat!(
        "agents:\n",
        "  - { name: plain }\n",
        "  - { name: err, behaviors: \"http-error:503\" }\n",
        "  - { name: hung, behaviors: hang }\n",
        "  - { name: slow, behaviors: \"slow:250ms\" }\n",
        "  - { name: bad, behaviors: malformed-json }\n",
        "  - { name: loud, behaviors: shout }\n",
    ));
    let plan = |name: &str| request(&format!("/agents/{name}/ask"), &[], "{}");

    let plain = send(&fleet, plan("plain")).await;
    assert_eq!(
        (plain.response.status, plain.fault, plain.ttfb),
        (200, Fault::None, Duration::ZERO)
    );
    assert!(serde_json::from_slice::<serde_json::Value>(&plain.response.body).is_ok());

    assert_eq!(send(&fleet, plan("err")).await.response.status, 503);
    assert_eq!(send(&fleet, plan("hung")).await.fault, Fault::Hang);
    assert_eq!(
        send(&fleet, plan("slow")).await.ttfb,
        Duration::from_millis(250)
    );

    let bad = send(&fleet, plan("bad")).await;
    assert!(
        serde_json::from_slice::<serde_json::Value>(&bad.response.body).is_err(),
        "malformed-json planned JSON: {}",
        body_text(&bad)
    );

    let loud = send(&fleet, plan("loud")).await;
    assert!(body_text(&loud).contains("AT ASK"), "{}", body_text(&loud));
}
