//! The harness's cases at the end of a run: what is still open settled, then one case per rule.

use super::*;

/// What the turn-limit cases say when no conversation exercised them, and how to.
/// Why the turn-limit cases were not judged, and what would judge them.
fn never_ends(served: Served) -> String {
    format!(
        "no conversation was left to the harness's limit (the agent ended each one, or none was followed past its first request): {} to test it",
        served.with_behavior("never-finishes")
    )
}

impl State {
    /// Settles what is still open when the mock stops: bad answers the harness never followed
    /// up (it ended the scenario cleanly), and answers still held back past `limit` (a harness
    /// still waiting past its deadline).
    pub(super) fn settle(&mut self, now: Instant, limit: Duration, expect: &str) {
        for agent in self.agents.values_mut() {
            if agent.pending_bad.take().is_some() {
                self.after_bad.check(true, String::new);
            }
        }
        for delay in self.waiting.values() {
            let waited = now.saturating_duration_since(delay.received);
            if waited > limit {
                self.deadline.check(false, || {
                    format!(
                        "{}: {}: the harness was still waiting after {:.1} s, when the mock stopped (expected to give up within {expect} + 1 s)",
                        delay.agent,
                        delay.what(),
                        waited.as_secs_f64()
                    )
                });
            }
        }
        self.waiting
            .retain(|_, d| now.saturating_duration_since(d.received) <= limit);
    }

    /// Conversations the mock kept going that the harness had to end, let go or still
    /// followed: how many, and the longest.
    pub(super) fn left_open(&self) -> (u64, u32) {
        let (mut left, mut longest) = (self.left_to_harness, self.longest_left);
        let open = self.agents.values().flat_map(|a| {
            let chain = a.chains.iter().map(|c| (c.requests, &c.answer));
            let followed = a.conversations.iter().filter(|c| c.from_start);
            chain.chain(followed.map(|c| (c.turn, &c.answer)))
        });
        for (turns, answer) in open {
            if turns > 1 && answer.keeps_going() {
                left += 1;
                longest = longest.max(turns);
            }
        }
        (left, longest)
    }

    /// The loop's cases: the turns, the history, the tool results, the loop's end.
    pub(super) fn loop_cases(&self, cases: &mut Vec<CaseResult>) {
        let followed = "a request that continues a conversation followed from an earlier one (its turn one more, its history opening with the same task)";
        cases.push(self.turns.judged(
            "harness.turns",
            GROUP,
            Level::Must,
            "turn 1 opens a conversation with an empty history; each next request is the next turn",
            "POST /execute_task: Request Body (turn); Multi-turn Flow",
            "requests with a turn",
            &self.unfollowed("a request at turn 1, or the next turn of a conversation followed"),
        ));
        let without = (self.no_history > 0).then(|| {
            format!(
                "{} continued a conversation without conversation_history (optional in the spec's Request Body), so {} not judged on it",
                crate::text::count(self.no_history, "requests"),
                if self.no_history == 1 { "it was" } else { "they were" }
            )
        });
        let mut history = self.history.judged(
            "harness.history",
            GROUP,
            Level::Must,
            "conversation_history, when sent, keeps the earlier turns and grows by the previous exchange",
            "POST /execute_task: Request Body (conversation_history); Multi-turn Flow",
            "turns that continue a conversation",
            &match &without {
                Some(without) => format!("{}; {without}", self.unfollowed(followed)),
                None => self.unfollowed(followed),
            },
        );
        if let Some(without) = without.filter(|_| history.passed()) {
            history.message = format!("{}; {without}", history.message);
        }
        cases.push(history);
        let mut tool_results = self.tool_results.judged(
            "harness.tool-results",
            GROUP,
            Level::Must,
            "after call_tool or call_multiple_tools, the next task_description carries each tool's result (or an error naming it, or a GOVERNANCE ERROR)",
            "Multi-turn Flow; Policy Violations (Governance feedback)",
            "turns after a tool call",
            &self.unfollowed("a request that follows one the mock answered with a tool call"),
        );
        if self.no_turn > 0 && tool_results.passed() {
            let one = self.no_turn == 1;
            tool_results.message = format!(
                "{} came without `turn`: {} followed by the tool results {}, so a missing result there reads as a new conversation, not as a failure",
                crate::text::count(self.no_turn, "requests"),
                if one { "it was" } else { "they were" },
                if one { "it carries" } else { "they carry" }
            );
        }
        cases.push(tool_results);
        cases.push(self.loop_ends.judged(
            "harness.loop-ends",
            GROUP,
            Level::Must,
            "nothing follows final_answer, provide_instructions or error in a conversation",
            "Multi-turn Flow (the loop ends when the agent sends final_answer, provide_instructions, error)",
            "turns that continue a conversation",
            &self.unfollowed(followed),
        ));
    }

    /// The turn-limit cases: the limit stated (else any), and the spec's default when none is.
    pub(super) fn limit_cases(
        &self,
        max_turns: Option<u32>,
        served: Served,
        cases: &mut Vec<CaseResult>,
    ) {
        let never = never_ends(served);
        let (left, longest) = self.left_open();
        let mut limit = self.over_limit.judged(
            "harness.turn-limit",
            GROUP,
            Level::Must,
            &format!(
                "against an agent that never finishes, the harness stops at a turn limit ({})",
                match max_turns {
                    Some(n) => format!("--expect-max-turns {n}"),
                    None => format!("any: a conversation past turn {NO_LIMIT_TURNS} has none"),
                }
            ),
            "Multi-turn Flow (the max turn limit)",
            "requests of conversations followed from their start",
            &self.unfollowed(&never),
        );
        exercised(&mut limit, left, longest, &never);
        cases.push(limit);
        if max_turns.is_some() {
            return;
        }
        let mut default = self.over_default.judged(
            "harness.turn-limit-default",
            GROUP,
            Level::Should,
            "the turn limit is the spec's default, 5, unless configured (say --expect-max-turns N)",
            "Multi-turn Flow (the max turn limit, default: 5)",
            "requests of conversations followed from their start",
            &self.unfollowed(&never),
        );
        exercised(&mut default, left, longest, &never);
        if default.passed() {
            // Stopping at 5 or before is what a harness whose limit is configured (a
            // scenario's max_turns, a flag) does too: nothing here says the default was in
            // force, so the default itself was not judged (a stop past 5 still fails).
            default.skip(format!(
                "{}: within the spec's default of {DEFAULT_LIMIT}, but a limit configured to \
                 {longest} (a scenario's max_turns, a flag of the harness) looks the same \
                 from the agent's side, so the default was not judged; harness.turn-limit \
                 judges the limit configured (say it with --expect-max-turns N)",
                default.message
            ));
        }
        cases.push(default);
    }

    /// The cases on how the harness took the mock's answers: slow or hanging ones, bad ones.
    pub(super) fn answer_cases(
        &self,
        timeout: Duration,
        served: Served,
        cases: &mut Vec<CaseResult>,
    ) {
        let mut deadline = self.deadline.judged(
            "harness.deadline",
            GROUP,
            Level::Must,
            &format!(
                "against a slow or hanging agent, the harness gives up within --expect-timeout ({}) + 1 s",
                humantime::format_duration(timeout)
            ),
            "Multi-turn Flow (a harness must not wait forever for an agent)",
            "slow or hanging answers",
            &format!(
                "{} to test the harness's deadline",
                served.with_behavior("hang (or slow:DUR)")
            ),
        );
        self.explain_deadline(&mut deadline);
        cases.push(deadline);
        cases.push(self.after_bad.judged(
            "harness.after-bad-answer",
            GROUP,
            Level::Must,
            "after a malformed, oversized or wrong-schema answer, the harness goes on or ends cleanly (never a half-written request)",
            "Response Body (one action per answer); Local Subprocess Protocol",
            "bad answers",
            &format!(
                "{} to test it",
                served.with_behavior("malformed-json (or oversized-body, unknown-action)")
            ),
        ));
    }
}
