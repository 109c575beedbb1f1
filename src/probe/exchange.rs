//! An exchange as a suite writes it: the request the probe sends (method, path, headers, a body
//! template or raw bytes) and the credentials it carries.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// `Authorization: Bearer KEY` when an API key is given, none otherwise.
    #[default]
    Default,
    /// No Authorization header.
    None,
    /// A bearer token that is not the key.
    Wrong,
}

/// A request template.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeSpec {
    #[serde(default = "post")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub auth: AuthMode,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body template (see `template`).
    #[serde(default)]
    pub body: Option<Value>,
    /// A body sent as these exact bytes (for bad requests).
    #[serde(default)]
    pub raw_body: Option<String>,
    /// Content-Type for a body; `application/json` unless set.
    #[serde(default)]
    pub content_type: Option<String>,
    /// A request no conforming platform sends (a missing or a wrong key, a body that is not
    /// JSON, an unknown path): sent with `x-agent-tck-case: NAME`, so that a mock agent judging
    /// its caller knows it for the probe's own test and not the platform's fault.
    #[serde(default)]
    pub deliberate: bool,
    /// The exchange that stands for the platform's own requests to its method and path: in
    /// traffic the kit did not send (`agent-tck proxy`, `agent-tck judge`), each answer to that
    /// method and path is judged by this exchange's cases ([`crate::probe::traffic`]). At most
    /// one per method and path; the probe itself ignores it.
    #[serde(default)]
    pub traffic: bool,
}

/// The header that marks a deliberate request ([`ExchangeSpec::deliberate`]).
pub const DELIBERATE_HEADER: &str = "x-agent-tck-case";

fn post() -> String {
    "POST".into()
}
