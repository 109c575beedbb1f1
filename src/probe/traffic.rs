//! TEMPORARY interface stub (replaced by the traffic branch).
use crate::probe::Suite;
use crate::report::CaseResult;
use crate::transport::http::{Error, Response};
use serde_json::Value;
use std::time::Duration;
pub struct TrafficLimits {
    pub max_body: usize,
    pub max_field: usize,
    pub timeout: Duration,
}
pub struct LiveAnswer<'a> {
    pub agent: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub request: Option<Value>,
    pub result: Result<Response, Error>,
    pub at: Duration,
    pub elapsed: Duration,
}
pub struct TrafficJudge {
    limits: TrafficLimits,
}
impl TrafficJudge {
    pub fn new(_suite: Suite, limits: TrafficLimits) -> TrafficJudge {
        TrafficJudge { limits }
    }
    pub fn timeout(&self) -> Duration {
        self.limits.timeout
    }
    pub fn judge(&self, _a: LiveAnswer<'_>) {}
    pub fn cases(&self) -> Vec<CaseResult> {
        Vec::new()
    }
}
