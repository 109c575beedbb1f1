//! The behaviours of an execute_task agent: the one table of them (its stdio transport's quirks,
//! its content behaviours), as `mock behaviors` lists them and `--behavior` parses them.

use super::mutate::{inject, Edit};
use crate::mock::args::{unknown_variant, Args, BehaviorError};
use crate::mock::behavior::{Behavior, Kind, Plays};
use crate::mock::injection;

/// execute_task's agents' behaviours: the quirks of its stdio transport (the engine plays them,
/// for any agent served over stdio), then its content behaviours (`mock behaviors` lists both
/// with the engine's).
pub const BEHAVIORS: &[Behavior] = &[
    Behavior {
        name: "stdio-banner",
        what: "execute_task over stdio: a non-JSON line on stdout before the first answer",
        rule: "Local Subprocess Protocol: single-line JSON on stdout",
        expects: "",
        plays: Plays::Engine(|_| Ok(Kind::StdioBanner)),
    },
    Behavior {
        name: "stdio-pretty",
        what: "execute_task over stdio: pretty-printed, multi-line JSON",
        rule: "Local Subprocess Protocol: single-line JSON on stdout",
        expects: "",
        plays: Plays::Engine(|_| Ok(Kind::StdioPretty)),
    },
    Behavior {
        name: "exits-early",
        what: "execute_task over stdio: exits (status 3) after reading a request, without answering",
        rule: "Local Subprocess Protocol",
        expects: "",
        plays: Plays::Engine(|_| Ok(Kind::ExitsEarly)),
    },
    Behavior {
        name: "stderr-flood",
        what: "execute_task over stdio: bytes=N (default 50MB) to stderr before each answer",
        rule: "Local Subprocess Protocol: stderr is captured as an engine log",
        expects: "",
        plays: Plays::Engine(stderr_flood),
    },
    Behavior {
        name: "forks-and-exits",
        what: "execute_task over stdio: a child that holds stdout open and sleeps; the agent answers and exits",
        rule: "the harness kills the agent's process group",
        expects: "",
        plays: Plays::Engine(|_| Ok(Kind::ForksAndExits)),
    },
    Behavior {
        name: "never-finishes",
        what: "execute_task: always call_tool, never a final answer",
        rule: "the max turn limit (default 5)",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::NeverFinishes))),
    },
    Behavior {
        name: "unknown-action",
        what: "execute_task: an action the spec does not list",
        rule: "Response Body: the action field",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::UnknownAction))),
    },
    Behavior {
        name: "missing-required",
        what: "execute_task: call_tool without tool_name",
        rule: "Response Body: call_tool",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::MissingRequired))),
    },
    Behavior {
        name: "ignores-governance",
        what: "execute_task: after governance feedback (GOVERNANCE ERROR, or a policy_violation status), the same violating call again",
        rule: "Policy Violations (governance feedback)",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::IgnoresGovernance))),
    },
    Behavior {
        name: "wrong-schema",
        what: "variants: missing-field (call_tool without tool_name), wrong-type (tool_params a string, or summary a number)",
        rule: "Response Body: the fields of each action",
        expects: "",
        plays: Plays::Content(|a| {
            let v = a.get("variant", true).unwrap_or("missing-field");
            match v {
                "missing-field" => Ok(Box::new(Edit::MissingRequired)),
                "wrong-type" => Ok(Box::new(Edit::WrongType)),
                _ => Err(unknown_variant(
                    a.item(),
                    v,
                    ["missing-field", "wrong-type"].into_iter(),
                )),
            }
        }),
    },
    Behavior {
        name: "null-bytes",
        what: "a NUL character in summary, instructions and reason",
        rule: "Multi-turn Flow (the harness shows and forwards summaries)",
        expects: "",
        plays: Plays::Content(|_| Ok(Box::new(Edit::NullBytes))),
    },
    Behavior {
        name: "injection",
        what: "prompt-injection payloads (mocks/injection/) with canary tokens in summary, instructions, reason and tool_params; select=ID|FAMILY[+...], per_answer=N",
        rule: "Multi-turn Flow (the harness shows and forwards summaries, tool parameters)",
        expects: "",
        plays: Plays::Content(|a| injection::Injection::parse(a, |_, answer, texts| inject(answer, texts))),
    },
];

/// `stderr-flood:bytes=N` (default 50MB).
fn stderr_flood(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    let item = a.item();
    Ok(Kind::StderrFlood {
        bytes: match a.get("bytes", true) {
            None => 50_000_000,
            Some(v) => crate::units::parse_bytes(v)
                .map_err(|e| BehaviorError::item(item, format!("bytes={v:?}: {e}")))?,
        },
    })
}
