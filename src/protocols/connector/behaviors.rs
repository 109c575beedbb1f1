//! The reference external agent's flaws: one departure from the document each, so that every
//! probe case has an agent that breaks it (`mocks/matrix-connector.yaml`). The one list of them:
//! the catalogue's entries and [`Flaws::named`] come from it.

use super::reference::Flaws;

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
