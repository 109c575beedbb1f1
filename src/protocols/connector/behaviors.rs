//! The reference external agent's flaws: one departure from the document each, so that every
//! probe case has an agent that breaks it (`mocks/matrix-connector.yaml`). The one list of them:
//! the catalogue's entries and [`Flaws::named`] come from it.

use super::reference::Flaws;
use crate::mock::behavior::Behavior;

crate::mock::behavior::switches!(Flaws, transports: &["http"], [
    "slow-ack" => slow_ack: "acknowledges its first message after 6 s (past the server's 5 s)",
    "hard-coded-callback" => hard_coded_callback:
        "posts to {origin}/external/sessions/{id}/messages, not to the URL it was given",
    "json-envelope" => json_envelope: "wraps the text in a JSON envelope {\"text\": …}",
    "empty-callback" => empty_callback: "posts an empty body",
    "whitespace-callback" => whitespace_callback: "posts spaces and newlines only",
    "stray-callback" => stray_callback: "also posts to a session it was never given",
    "floods-failing-endpoint" => floods:
        "retries a failing callback endpoint 30 times without pause",
    "put-callback" => put_callback: "calls back with PUT, not POST",
    "drops-query" => drops_query: "calls back at the URL given without its query string",
    "many-callbacks" => many_callbacks:
        "not a departure: answers each message in 30 callbacks, sent together, each retried",
]);

/// The behaviours of the connector fleet's external agents (a fleet file's `behavior:`), what
/// each does (the fleet's cases say what the server must make of it). The one list of them:
/// `fleet::Behavior::parse` reads it.
pub const FLEET_BEHAVIORS: &[Behavior] = &[
    Behavior::fleet_client("conforming", "acknowledges, then calls back once", ""),
    Behavior::fleet_client("markdown", "calls back with Markdown", ""),
    Behavior::fleet_client(
        "injection",
        "calls back with prompt-injection text and a canary",
        "",
    ),
    Behavior::fleet_client(
        "slow-ack",
        "acknowledges after DUR (default 8s: past the 5 s)",
        "",
    ),
    Behavior::fleet_client("error-ack", "answers STATUS (default 500)", ""),
    Behavior::fleet_client(
        "fault",
        "reset | close | garbage | hang instead of an acknowledgement",
        "",
    ),
    Behavior::fleet_client("never-callback", "acknowledges and never calls back", ""),
    Behavior::fleet_client("many-callbacks", "calls back N times (default 3)", ""),
    Behavior::fleet_client(
        "huge-callback",
        "calls back with BYTES (default 32MiB: above common servers' limits, 1-30 MB)",
        "",
    ),
    Behavior::fleet_client("empty-callback", "calls back with an empty body", ""),
    Behavior::fleet_client(
        "whitespace-callback",
        "calls back with spaces and newlines",
        "",
    ),
    Behavior::fleet_client(
        "callback-to-unknown-session",
        "calls back to a session that does not exist",
        "",
    ),
    Behavior::fleet_client(
        "callback-to-deleted-session",
        "deletes its session, then calls back to it",
        "",
    ),
];
