//! `agent-tck probe librarian`: the kit plays agent clients against a Librarian server and runs
//! the cases of `suites/librarian.yaml`, each a small scenario of requests (`rules::Scenario`),
//! in the file's order; the cases that look across the run are judged last.
//!
//! The client keeps to the protocol itself: outside the rate group, a 429 is waited out
//! (Retry-After, at most 60 s) and the request retried, at most 3 times (max_retry_attempts),
//! so that a run soon after another is not failed by the Librarian's own limit.
//!
//! Each case asks with a --token agent the registry (`--registry`) allows to make its request
//! (see `client::Client::able`), so the order of the tokens changes no verdict; without a registry the
//! first asks, and a 403 to a valid request is not judged (a right answer for an agent that
//! may not).
//!
//! A case passes only on evidence (how many of what it judged). A refusal counts only from an
//! endpoint that answers its own valid request (see `client::Gate`): against a server without the
//! routes, only the cases that judge an endpoint itself fail, and the rest skip saying what
//! would exercise them.
//!
//! - `settings`: a run's validated settings; `runner`: the run loop and each case's bookkeeping;
//! - `client`: the requests, what came back, and the gates;
//! - `verdict`: what a scenario finds, and the judging the groups share;
//! - the scenario groups, one module per group of cases: `requests` (request.*, status.*),
//!   `malformed` (fields.*, input.*), `limits`, `auth`, `read_only` (context, capabilities),
//!   `lifecycle`, `rate`, `registry` (registry.*, robustness.injection), `robustness`;
//! - `across`: the cases judged across the whole run.

mod across;
mod auth;
mod client;
mod lifecycle;
mod limits;
mod malformed;
mod rate;
mod read_only;
mod registry;
mod requests;
mod robustness;
mod runner;
mod settings;
mod verdict;

pub use runner::{case_ids, list_cases, run, RunError};
pub use settings::Settings;
