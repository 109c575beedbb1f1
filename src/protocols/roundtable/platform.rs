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
