//! The agent standard's mock agent's behaviours (`mock agent --protocol agent-standard
//! --behavior NAME[:ARG]`): each bends the response, its timing or the process, breaking one rule
//! an orchestrator (or the probe) must notice, or none. The one list of them: the catalogue's
//! entries and `mock::Behaviors::parse` read it.

use crate::mock::behavior::{Behavior, Plays};

/// Played by a command run once per call: the probe runs it with `--mode` (`exec`) or with the
/// mode on stdin (`exec-stdin`).
const EXEC: &[&str] = &["exec", "exec-stdin"];

/// The behaviours: `NAME[:ARG]` where an argument is taken.
pub const BEHAVIORS: &[Behavior] = &[
    Behavior {
        name: "conforming",
        what: "a conforming response: prose, then the JSON result",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "fenced-json",
        what: "the result in a ```json fence (allowed: must not trip a reader)",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "needs-approval",
        what: "plan mode: status needs_approval (the orchestrator must ask before executing)",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "no-json",
        what: "prose only: no JSON result",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "json-not-last",
        what: "text after the JSON result",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "fenced-sign-off",
        what: "the result in a ```json fence, then a sign-off line",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "findings-without-summary",
        what: "findings with no summary",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "wrong-status",
        what: "status \"done\", not one of the standard's four",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "wrong-mode",
        what: "execution_mode names the other mode",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "wrong-name",
        what: "agent is not the agent's own name",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "missing-scope",
        what: "plan mode: no scope",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "missing-findings",
        what: "execute mode: no findings",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "blocked",
        what: "status blocked, with a blocker that says why (conforming: must not trip a reader)",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "blocked-without-blockers",
        what: "status blocked, blockers empty",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "needs-approval-in-execute",
        what: "execute mode: status needs_approval",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "metrics-mismatch",
        what: "findings.metrics do not add up to issues_found",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "unknown-next-agent",
        what: "next_agents names an agent that does not exist",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "next-agent-cycle[:AGENT]",
        what: "next_agents names AGENT (default: itself), closing a cycle a → b → a",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "empty-summary",
        what: "present_to_user is empty",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "writes-in-plan-mode",
        what: "plan mode: writes agent-tck-plan-notes.md in its working directory",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "slow[:DUR]",
        what: "answers after DUR (default 2s)",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "hang",
        what: "prints a line, then never answers (exits after an hour)",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "huge-output[:BYTES]",
        what: "BYTES of text (default 6MB) before the result",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "endless",
        what: "text without end, until its reader goes away",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "deep-nesting",
        what: "the result is 200,000 nested objects",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "forks-and-exits",
        what: "leaves a child holding stdout (for 30 s), then exits",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
    Behavior {
        name: "injection",
        what: "present_to_user carries an instruction to the orchestrator, with a canary",
        rule: "",
        expects: "",
        plays: Plays::Own(EXEC),
    },
];
