//! What a mock agent decided for one request: the behaviours it applied, the answer it planned
//! and why a platform could not use it. The journal records it; the platform checks read it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A payload placed in an answer, traceable by its canary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placed {
    pub canary: String,
    pub payload: String,
    pub family: String,
    /// Where in the answer it went (`observations[0].evidence`).
    pub path: String,
}

/// What an agent decided for one request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Decision {
    /// The items applied (their source text); empty when the answer conforms.
    pub applied: Vec<String>,
    /// The status planned.
    pub status: u16,
    /// Planned delay to the first byte.
    pub ttfb_ms: u64,
    /// Planned time to deliver the body once the head is out (body delay, dribbling).
    pub body_ms: u64,
    /// Why a platform cannot use this answer, whatever its timeout (None: usable, or usable
    /// unless it takes longer than the platform waits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injected: Vec<Placed>,
}

impl Decision {
    /// Whether a platform waiting `timeout` can use this answer.
    pub fn usable_within(&self, timeout: Duration) -> bool {
        self.unusable.is_none() && Duration::from_millis(self.ttfb_ms + self.body_ms) < timeout
    }
}
