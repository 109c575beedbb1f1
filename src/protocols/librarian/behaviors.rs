//! The reference Librarian's flaws: one departure from the document each, so that every probe
//! case has a server that breaks it (`mocks/matrix-librarian.yaml`). The one list of them: the
//! catalogue's entries and [`Flaws::named`] come from it.

use super::reference::Flaws;
use crate::mock::behavior::Behavior;

crate::mock::behavior::switches!(Flaws, transports: &["http"], [
    "accepts-any-content-type" => accepts_any_content_type:
        "content that is not a string (a list) is taken, as if it were empty text",
    "content-limit-off-by-one" => content_limit_off_by_one:
        "content one byte over max_content_size (102,401 bytes) passes",
    "allows-deviations" => allows_deviations:
        "deviations are allowed while the probe is told the server is in strict mode",
    "forbids-403" => forbids_403:
        "not a departure: authorization refused 403 \"Agent not authorized\" (breaks nothing)",
    "silent-429" => silent_429: "a 429 without Retry-After",
    "no-status-endpoint" => no_status_endpoint:
        "GET /agent/status/{id} is not served: 404 {\"detail\":\"Not Found\"}",
    "reverts-escalation" => reverts_escalation:
        "an escalation, once decided, shows PENDING again (a state going backwards)",
    "obeys-injection" => obeys_injection:
        "a request that says it is pre-approved is approved, whatever the registry says",
    "ignores-capabilities" => ignores_capabilities:
        "an agent without the capability an action needs is not refused",
    "approves-without-rationale" => approves_without_rationale:
        "an APPROVAL without rationale is approved",
    "crashes-on-malformed-json" => crashes_on_malformed_json:
        "a body that is not JSON crashes the handler: 500",
    "no-rate-limit" => no_rate_limit: "no rate limit",
    "shared-rate-limit" => shared_rate_limit: "one rate window for every agent together",
    "leaks-status" => leaks_status: "/agent/status answers any agent about any request",
    "accepts-wrong-token" => accepts_wrong_token:
        "any bearer token is taken for the agent the request names",
    "ignores-max-references" => ignores_max_references: "more than 20 references pass",
    "confidence-as-percent" => confidence_as_percent:
        "confidence given as a percentage (90), outside the document's 0.0 to 1.0",
    "unnamed-status" => unnamed_status:
        "a QUERY answered with a status the document does not name (\"success\")",
    "unexplained-rejections" => unexplained_rejections:
        "every rejection answered 422 with violations: [] (its feedback still says why)",
    "local-timestamp" => local_timestamp:
        "timestamp written as a day-first local date (\"23/11/2026 10:00:00\"), not ISO 8601",
]);

/// The behaviours of the Librarian's fleet clients (a fleet file's `behavior:`), each with the
/// answer the server must give it. The one list of them: the fleet file's parse and the fleet's
/// judge read it.
pub const CLIENT_BEHAVIORS: &[Behavior] = &[
    Behavior::fleet_client(
        "conforming",
        "everyday requests its agent may make, at its rate",
        "2xx, never limited",
    ),
    Behavior::fleet_client(
        "flood",
        "queries at 600 a minute (its default rate), past the document's 60",
        "429 once over 60 a minute",
    ),
    Behavior::fleet_client(
        "oversized",
        "content 4,096 bytes over max_content_size",
        "refused: 4xx, or rejected naming the size",
    ),
    Behavior::fleet_client(
        "missing-fields",
        "an APPROVAL without rationale, or a QUERY without content",
        "refused: 4xx, or not approved",
    ),
    Behavior::fleet_client(
        "malformed-json",
        "half of a request's JSON",
        "4xx",
    ),
    Behavior::fleet_client(
        "wrong-token",
        "its agent's token with a suffix",
        "401 or 403",
    ),
    Behavior::fleet_client(
        "foreign-agent-id",
        "queries in another registered agent's name (`other:`), with its own token",
        "401 or 403",
    ),
    Behavior::fleet_client(
        "unregistered-agent-id",
        "queries in the name of an agent the registry does not know",
        "401 or 403",
    ),
    Behavior::fleet_client(
        "slow-upload",
        "everyday requests whose body trickles over `trickle:`",
        "an answer (2xx or 4xx), never a 5xx",
    ),
    Behavior::fleet_client(
        "injection",
        "an APPROVAL of a target its agent may not touch, whose content and rationale say it is pre-approved",
        "the forbidden target not approved (a refusal, or a decision other than approved)",
    ),
    Behavior::fleet_client(
        "burst",
        "all of its queries at once, at the start",
        "answered (2xx or 429), never a 5xx",
    ),
];
