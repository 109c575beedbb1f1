//! Who a mock agent is: what a fleet file says of it, and what its platform is told at
//! registration (the protocol's [`super::protocol::PlatformApi`] writes the body).

use serde::Serialize;

/// Registration facts of an agent (what the registration body is written from).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    pub name: String,
    pub domain: String,
    pub capabilities: Vec<String>,
    #[serde(skip)]
    pub api_key: Option<String>,
}

impl Profile {
    /// The profile of the one agent `mock agent` serves: named `name`, of no capability,
    /// asking `api_key` of its callers.
    pub fn served(name: &str, api_key: Option<String>) -> Profile {
        Profile {
            name: name.to_string(),
            domain: "general review".into(),
            capabilities: Vec::new(),
            api_key,
        }
    }
}
