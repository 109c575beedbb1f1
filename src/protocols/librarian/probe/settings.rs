//! The validated settings of one `probe librarian` run.

use std::time::Duration;

use crate::probe::args::Common;
use crate::protocols::librarian::reference::Registered;
use crate::transport::http::BaseUrl;

/// Validated settings of one run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub base: BaseUrl,
    /// (agent id, token), at least one; the second agent is needed for isolation cases.
    pub tokens: Vec<(String, String)>,
    /// Deadline of each request.
    pub timeout: Duration,
    pub max_body: usize,
    pub common: Common,
    /// Skip the rate group (it takes a minute's worth of requests).
    pub quick: bool,
    /// The Librarian's agent registry (`--registry`), for the registry cases.
    pub registry: Option<Vec<Registered>>,
    /// The Librarian's compliance.allow_deviations (`--allow-deviations`); None: not known, and
    /// limits.strict-deviations has nothing to hold the server to.
    pub allow_deviations: Option<bool>,
}

impl Settings {
    pub fn wants(&self, id: &str) -> bool {
        self.common.wants(id)
    }
}
