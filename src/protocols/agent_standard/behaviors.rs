//! The agent standard's mock agent's behaviours (`mock agent --protocol agent-standard
//! --behavior NAME[:ARG]`): each bends the response, its timing or the process, breaking one rule
//! an orchestrator (or the probe) must notice, or none. The one list of them: the catalogue's
//! entries and `mock::Behaviors::parse` read it.

use crate::mock::behavior::Misbehavior;

/// Played by a command run once per call: the probe runs it with `--mode` (`exec`) or with the
/// mode on stdin (`exec-stdin`).
const EXEC: &[&str] = &["exec", "exec-stdin"];

/// The behaviours: `NAME[:ARG]` where an argument is taken.
pub const BEHAVIORS: &[Misbehavior] = &[
    Misbehavior {
        name: "conforming",
        what: "a conforming response: prose, then the JSON result",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "fenced-json",
        what: "the result in a ```json fence (allowed: must not trip a reader)",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "needs-approval",
        what: "plan mode: status needs_approval (the orchestrator must ask before executing)",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "no-json",
        what: "prose only: no JSON result",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "json-not-last",
        what: "text after the JSON result",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "fenced-sign-off",
        what: "the result in a ```json fence, then a sign-off line",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "findings-without-summary",
        what: "findings with no summary",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "wrong-status",
        what: "status \"done\", not one of the standard's four",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "wrong-mode",
        what: "execution_mode names the other mode",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "wrong-name",
        what: "agent is not the agent's own name",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "missing-scope",
        what: "plan mode: no scope",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "missing-findings",
        what: "execute mode: no findings",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "blocked",
        what: "status blocked, with a blocker that says why (conforming: must not trip a reader)",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "blocked-without-blockers",
        what: "status blocked, blockers empty",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "needs-approval-in-execute",
        what: "execute mode: status needs_approval",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "metrics-mismatch",
        what: "findings.metrics do not add up to issues_found",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "unknown-next-agent",
        what: "next_agents names an agent that does not exist",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "next-agent-cycle[:AGENT]",
        what: "next_agents names AGENT (default: itself), closing a cycle a → b → a",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "empty-summary",
        what: "present_to_user is empty",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "writes-in-plan-mode",
        what: "plan mode: writes agent-tck-plan-notes.md in its working directory",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "slow[:DUR]",
        what: "answers after DUR (default 2s)",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "hang",
        what: "prints a line, then never answers (exits after an hour)",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "huge-output[:BYTES]",
        what: "BYTES of text (default 6MB) before the result",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "endless",
        what: "text without end, until its reader goes away",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "deep-nesting",
        what: "the result is 200,000 nested objects",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "forks-and-exits",
        what: "leaves a child holding stdout (for 30 s), then exits",
        transports: EXEC,
        expects: "",
    },
    Misbehavior {
        name: "injection",
        what: "present_to_user carries an instruction to the orchestrator, with a canary",
        transports: EXEC,
        expects: "",
    },
];
