//! What the mock engine needs to know of the round table's messages and platform API, beyond
//! its endpoints: the request's id, the answer members the encoding behaviours bend, and how a
//! fleet registers its agents and triggers deliberations (`platform:` in a fleet file).

use serde_json::{json, Value};

use crate::mock::agent::Profile;
use crate::mock::protocol::{AnswerFields, PlatformApi};

/// Every request of a deliberation carries the task it belongs to.
pub const REQUEST_ID: &str = "task_id";

/// The answer members the encoding behaviours bend: the agent's name (written twice by
/// `duplicate-keys`), the free texts a platform shows (where `invalid-utf8` breaks a string),
/// and the confidence (`nan`).
pub static ANSWER_FIELDS: AnswerFields = AnswerFields {
    identity: "agent_name",
    text: &["finding", "counter_evidence", "agent_name"],
    number: "confidence",
};

/// The platform API of the spec: `POST /api/v1/agents` registers an agent (`DELETE
/// /api/v1/agents/NAME` removes it), `POST /api/v1/round-table/tasks` starts a deliberation of
/// three phases (analyze, challenge, vote), each call bounded by the platform's timeout.
pub static PLATFORM_API: PlatformApi = PlatformApi {
    agents_path: "/api/v1/agents",
    trigger_path: "/api/v1/round-table/tasks",
    trigger_body: || json!({ "content": "{{ task }}" }),
    registration,
    url_member: URL_MEMBER,
    calls_in_sequence: 3,
};

/// Where the registration body says the agent is.
const URL_MEMBER: &str = "base_url";

/// The spec's registration body.
fn registration(agent: &Profile, url: &str, mode: &str) -> Value {
    json!({
        "name": agent.name, "domain": agent.domain, URL_MEMBER: url,
        "capabilities": agent.capabilities, "mode": mode,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::mock::driver::{Driver, PlatformSpec};

    fn driver(yaml: &str) -> Driver {
        let spec: PlatformSpec = serde_saphyr::from_str(yaml).unwrap();
        Driver::new(&spec, None, &super::super::Agents).unwrap()
    }

    #[test]
    fn a_registration_is_the_specs_body() {
        let agent = Profile {
            name: "a-1".into(),
            domain: "security".into(),
            capabilities: vec!["code".into()],
            api_key: Some("k".into()),
        };
        assert_eq!(
            registration(&agent, "http://mocks:9000/agents/a-1", "sync"),
            json!({
                "name": "a-1", "domain": "security", "base_url": "http://mocks:9000/agents/a-1",
                "capabilities": ["code"], "mode": "sync",
            })
        );
    }

    #[test]
    fn the_fleet_file_drives_the_spec_api_unless_it_says_otherwise() {
        let d = driver("url: http://platform:8000\nregister: {}\ntrigger: {}\n");
        assert_eq!(d.register.as_ref().unwrap().path, "/api/v1/agents");
        let t = d.trigger.as_ref().unwrap();
        assert_eq!(t.path, "/api/v1/round-table/tasks");
        assert_eq!(t.body, json!({"content": "{{ task }}"}));
        // Three phases of 120 s each, and the 30 s margin.
        assert_eq!(t.deadline, Duration::from_secs(3 * 120 + 30));
        assert_eq!(d.agents_path(), "/api/v1/agents");

        let d = driver(
            "url: http://platform:8000\ntimeout: 10s\nregister: {path: /agents}\n\
             trigger: {path: /go, body: {q: 1}, margin: 5s}\n",
        );
        assert_eq!(d.register.as_ref().unwrap().path, "/agents");
        let t = d.trigger.as_ref().unwrap();
        assert_eq!((t.path.as_str(), &t.body), ("/go", &json!({"q": 1})));
        assert_eq!(t.deadline, Duration::from_secs(35));
    }
}
