//! The agent protocol standard (specs/agent-protocol-standard.md): agents are Markdown files
//! with a YAML frontmatter (name, description, tools, model, supports_plan_mode), and every run
//! ends with one structured JSON result. What the kit does with it so far: lint definition files
//! (`agent-tck lint agents PATH…`, console, JSON, JUnit or SARIF) and judge saved responses
//! (`agent-tck probe agent-standard --output FILE…`).
//!
//! - `definition`: a definition file read — the frontmatter, where each key and tool is, the
//!   body;
//! - `lint`: the rules, and the run over files and directories;
//! - `result`, `probe`: a response's JSON result found and judged; the run over saved responses;
//! - `commands`: the command line and the self-test.

pub mod agent_set;
pub mod behaviors;
pub mod catalogue;
pub mod commands;
pub mod definition;
pub mod exec;
pub mod fix;
pub mod journal;
pub mod lint;
pub mod mock;
pub mod orchestration;
pub mod probe;
pub mod result;
pub mod workdir;

pub use commands::AgentStandard;

/// The registry key, and the report's `protocol`.
pub const NAME: &str = "agent-standard";

/// The built-in example definitions (what the self-test lints clean).
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "suites/agent-standard/agents/architect.md",
        include_str!("../../../suites/agent-standard/agents/architect.md"),
    ),
    (
        "suites/agent-standard/agents/reviewer.md",
        include_str!("../../../suites/agent-standard/agents/reviewer.md"),
    ),
    (
        "suites/agent-standard/agents/security-scanner.md",
        include_str!("../../../suites/agent-standard/agents/security-scanner.md"),
    ),
];
