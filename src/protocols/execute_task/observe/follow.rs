//! What the observer follows of each request the harness sends: its agent's conversations
//! and chains, the turn it says, its history, the tool results it carries, the answers held.

use super::*;

impl State {
    pub(super) fn on_request(&mut self, seen: &Seen<'_>, limit: u32, stated: bool) {
        self.common.on_request(seen);
        let agent = self.agents.entry(seen.agent.to_string()).or_default();
        if agent.pending_bad.take().is_some() {
            self.after_bad.check(true, String::new);
        }
        let answer = answer_seen(seen);
        if answer.bad.is_some() {
            agent.pending_bad = answer.bad.clone();
        }
        let Some(body) = seen.body.value() else {
            return;
        };
        let task = body
            .get("task_description")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.requests += 1;
        self.note_form(seen.agent, task);
        let Some(turn) = body.get("turn").and_then(Value::as_u64) else {
            self.no_turn += 1;
            self.turnless(seen.agent, task, answer, limit, stated);
            return;
        };
        let agent = self.agents.entry(seen.agent.to_string()).or_default();
        let turn = u32::try_from(turn).unwrap_or(u32::MAX);
        let empty = Vec::new();
        let history = body
            .get("conversation_history")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let name = seen.agent;
        let first_task = match history.first() {
            Some(entry) => hash_of(&entry.get("content").and_then(Value::as_str).unwrap_or("")),
            None => hash_of(&task),
        };

        // Which conversation this continues: the one whose first task opens this history, at
        // the turn before; with no history to tell by, the latest at the turn before. A request
        // whose history opens with a task never seen joins a conversation in its middle (the
        // crafted single exchanges of a probe look like that too): followed from here, not
        // judged on what came before.
        let continued = if turn <= 1 {
            None
        } else {
            let at = |c: &Conversation| c.turn + 1 == turn;
            if history.is_empty() {
                agent.conversations.iter().rposition(at)
            } else {
                agent
                    .conversations
                    .iter()
                    .rposition(|c| at(c) && c.first_task == first_task)
            }
        };

        // The turn limit, on the conversations followed from their start.
        let from_start = turn == 1 || continued.is_some_and(|i| agent.conversations[i].from_start);
        if from_start {
            self.over_limit.check(turn <= limit, || {
                format!(
                    "{name}: turn {turn}, past {} {limit}",
                    if stated {
                        "--expect-max-turns"
                    } else {
                        "any sensible limit:"
                    }
                )
            });
            if !stated {
                self.over_default.check(turn <= DEFAULT_LIMIT, || {
                    format!("{name}: turn {turn}, past the spec's default limit of {DEFAULT_LIMIT}")
                });
            }
        }
        match (turn, continued) {
            (0, _) => self.turns.check(false, || {
                format!("{name}: turn 0 (turns start at 1): {}", excerpt_str(task, 80))
            }),
            (1, _) => self.turns.check(history.is_empty(), || {
                format!(
                    "{name}: turn 1 with {} history entries (a first turn has none: does the turn go up?)",
                    history.len()
                )
            }),
            (_, Some(_)) => self.turns.check(true, String::new),
            (_, None) => {
                self.joined += 1;
                // The same conversation at another turn: the turn did not go up by one (a
                // retry of the same turn is not judged).
                if let Some(c) = agent
                    .conversations
                    .iter()
                    .rev()
                    .find(|c| c.first_task == first_task && c.turn != turn && !history.is_empty())
                {
                    let before = c.turn;
                    self.turns.check(false, || {
                        format!("{name}: turn {turn} followed turn {before} of the same conversation (the turn goes up by one)")
                    });
                }
            }
        }

        if let Some(i) = continued {
            let previous = &agent.conversations[i];
            // The history: the earlier turns kept, the previous exchange added.
            let kept = history.len() >= previous.history_len
                && history_hash(history, previous.history_len) == previous.history_hash;
            let grew = history.len() > previous.history_len;
            self.history.check(kept && grew, || {
                if !kept {
                    format!(
                        "{name}: turn {turn}'s history ({} entries) does not start with turn {}'s ({} entries): earlier turns were dropped or changed",
                        history.len(),
                        turn - 1,
                        previous.history_len
                    )
                } else {
                    format!(
                        "{name}: turn {turn}'s history has {} entries, as turn {}'s had: the previous exchange is not in it",
                        history.len(),
                        turn - 1
                    )
                }
            });
            // What follows the mock's last answer.
            let last = previous.answer.clone();
            let after = last.action.clone();
            self.loop_ends.check(!last.ends_loop(), || {
                format!(
                    "{name}: turn {turn} came after {after} at turn {} (the loop ends there)",
                    turn - 1
                )
            });
            if last.calls_tools() {
                let broken = missing_result(task, &last.tools)
                    .map(|why| format!("{name} turn {turn}: {why}"));
                self.tool_results
                    .check(broken.is_none(), || broken.unwrap_or_default());
            }
            let c = &mut agent.conversations[i];
            c.turn = turn;
            c.history_len = history.len();
            c.history_hash = history_hash(history, history.len());
            c.answer = answer;
        } else {
            let old = if agent.conversations.len() >= CONVERSATIONS {
                agent.conversations.pop_front()
            } else {
                None
            };
            agent.conversations.push_back(Conversation {
                first_task,
                from_start: turn == 1,
                turn,
                history_len: history.len(),
                history_hash: history_hash(history, history.len()),
                answer,
            });
            if let Some(old) = old {
                self.let_go(&old);
            }
        }
    }

    /// Notes a task_description in the reference harness's forms (a Python dict's repr).
    pub(super) fn note_form(&mut self, agent: &str, task: &str) {
        if !python_repr(task) {
            return;
        }
        self.dict_forms += 1;
        if self.dict_repr.len() < crate::mock::observe::EXAMPLES {
            let what = if governance_feedback(task) {
                "a policy violation as a Python dict's repr, not the spec's `GOVERNANCE ERROR: …` text"
            } else {
                "a Python dict's repr where JSON or text was expected"
            };
            self.dict_repr
                .push(format!("{agent}: {what}: {}", excerpt_str(task, 160)));
        }
    }

    /// A request without `turn`: it continues the agent's chain when it carries the result of
    /// the tool the mock called last (judged as a tool result and counted against the turn
    /// limit), else it starts a chain.
    pub(super) fn turnless(
        &mut self,
        name: &str,
        task: &str,
        answer: AnswerSeen,
        limit: u32,
        stated: bool,
    ) {
        let Some(agent) = self.agents.get_mut(name) else {
            return;
        };
        let carried = agent
            .chains
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.answer.calls_tools() && missing_result(task, &c.answer.tools).is_none()
            })
            .min_by_key(|(_, c)| c.requests)
            .map(|(i, _)| i);
        let Some(i) = carried else {
            let old = (agent.chains.len() >= CONVERSATIONS)
                .then(|| agent.chains.pop_front())
                .flatten();
            agent.chains.push_back(Chain {
                requests: 1,
                answer,
            });
            if let Some(old) = old {
                self.let_go_chain(&old);
            }
            return;
        };
        let chain = &mut agent.chains[i];
        chain.requests += 1;
        chain.answer = answer;
        let requests = chain.requests;
        self.tool_results.check(true, String::new);
        self.over_limit.check(requests <= limit, || {
            format!(
                "{name}: request {requests} of a conversation followed by its tool results (no `turn`), past {} {limit}",
                if stated { "--expect-max-turns" } else { "any sensible limit:" }
            )
        });
        if !stated {
            self.over_default.check(requests <= DEFAULT_LIMIT, || {
                format!("{name}: request {requests} of a conversation followed by its tool results (no `turn`), past the spec's default limit of {DEFAULT_LIMIT}")
            });
        }
    }

    /// A chain no longer followed: whether the harness had to end it.
    pub(super) fn let_go_chain(&mut self, c: &Chain) {
        if c.requests > 1 && c.answer.keeps_going() {
            self.left_to_harness += 1;
            self.longest_left = self.longest_left.max(c.requests);
        }
    }

    /// A conversation no longer followed: whether the harness had to end it.
    pub(super) fn let_go(&mut self, c: &Conversation) {
        if c.from_start && c.turn > 1 && c.answer.keeps_going() {
            self.left_to_harness += 1;
            self.longest_left = self.longest_left.max(c.turn);
        }
    }
}
