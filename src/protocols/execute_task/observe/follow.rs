//! What the observer follows of each request the harness sends: its agent's conversations
//! and chains, the turn it says, its history, the tool results it carries, the answers held.

use super::*;

/// A request that says its turn, as the observer reads it.
struct Turned<'a> {
    name: &'a str,
    task: &'a str,
    turn: u32,
    history: &'a [Value],
    /// Whether the request carried `conversation_history` at all (optional in the spec).
    has_history: bool,
    /// Hash of the task that opens the conversation: the history's first entry, else this task.
    first_task: u64,
}

impl<'a> Turned<'a> {
    fn read(name: &'a str, task: &'a str, turn: u64, body: &'a Value) -> Self {
        let history = body
            .get("conversation_history")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let first_task = match history.first() {
            Some(entry) => hash_of(&entry.get("content").and_then(Value::as_str).unwrap_or("")),
            None => hash_of(&task),
        };
        Turned {
            name,
            task,
            turn: u32::try_from(turn).unwrap_or(u32::MAX),
            history,
            has_history: body.get("conversation_history").is_some(),
            first_task,
        }
    }
}

impl AgentState {
    /// Which conversation this continues: the one whose first task opens this history, at
    /// the turn before; with no history to tell by, the latest at the turn before. A request
    /// whose history opens with a task never seen joins a conversation in its middle (the
    /// crafted single exchanges of a probe look like that too): followed from here, not
    /// judged on what came before.
    fn continued(&self, r: &Turned<'_>) -> Option<usize> {
        if r.turn <= 1 {
            return None;
        }
        let at = |c: &Conversation| c.turn + 1 == r.turn;
        if r.history.is_empty() {
            self.conversations.iter().rposition(at)
        } else {
            self.conversations
                .iter()
                .rposition(|c| at(c) && c.first_task == r.first_task)
        }
    }

    /// The turn of the same conversation, followed at another turn than the one before this
    /// (a retry of the same turn is not judged).
    fn other_turn(&self, r: &Turned<'_>) -> Option<u32> {
        self.conversations
            .iter()
            .rev()
            .find(|c| c.first_task == r.first_task && c.turn != r.turn && !r.history.is_empty())
            .map(|c| c.turn)
    }

    /// Follows the request: the conversation it continues moves to its turn (what it was is
    /// given back, to judge the request by), else a new one starts (the oldest let go, given
    /// back when the agent already has as many as are followed).
    fn follow(&mut self, r: &Turned<'_>, continued: Option<usize>, answer: AnswerSeen) -> Followed {
        let history_len = r.history.len();
        let history_hash = history_hash(r.history, history_len);
        if let Some(i) = continued {
            let c = &mut self.conversations[i];
            let now = Conversation {
                first_task: c.first_task,
                from_start: c.from_start,
                turn: r.turn,
                history_len,
                history_hash,
                answer,
            };
            return Followed::Continued(std::mem::replace(c, now));
        }
        let old = if self.conversations.len() >= CONVERSATIONS {
            self.conversations.pop_front()
        } else {
            None
        };
        self.conversations.push_back(Conversation {
            first_task: r.first_task,
            from_start: r.turn == 1,
            turn: r.turn,
            history_len,
            history_hash,
            answer,
        });
        Followed::Started(old)
    }
}

/// What following a request did to its agent's conversations.
enum Followed {
    /// It continued this conversation, as it was at the turn before.
    Continued(Conversation),
    /// It started one, letting this one go.
    Started(Option<Conversation>),
}

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
        self.on_turn(
            &Turned::read(seen.agent, task, turn, body),
            answer,
            limit,
            stated,
        );
    }

    /// A request that says its turn: follows its conversation and judges the turn, the limit,
    /// and (when it continues one followed) its history and what it does after the mock's
    /// last answer.
    fn on_turn(&mut self, r: &Turned<'_>, answer: AnswerSeen, limit: u32, stated: bool) {
        let agent = self.agents.entry(r.name.to_string()).or_default();
        let continued = agent.continued(r);
        let from_start =
            r.turn == 1 || continued.is_some_and(|i| agent.conversations[i].from_start);
        let other_turn = match continued {
            None if r.turn > 1 => agent.other_turn(r),
            _ => None,
        };
        let followed = agent.follow(r, continued, answer);
        // The turn limit, on the conversations followed from their start.
        if from_start {
            self.judge_limit(r, limit, stated);
        }
        self.judge_turn(r, continued.is_some(), other_turn);
        match followed {
            Followed::Continued(previous) => self.judge_continued(r, &previous),
            Followed::Started(Some(old)) => self.let_go(&old),
            Followed::Started(None) => {}
        }
    }

    /// The turn against the limit stated (else any sensible one) and the spec's default.
    fn judge_limit(&mut self, r: &Turned<'_>, limit: u32, stated: bool) {
        let (name, turn) = (r.name, r.turn);
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

    /// The turn number: starts at 1 with no history, goes up by one in a conversation.
    /// `other_turn` is the turn of the same conversation, when the request continued none.
    fn judge_turn(&mut self, r: &Turned<'_>, continued: bool, other_turn: Option<u32>) {
        let (name, turn, history) = (r.name, r.turn, r.history);
        match (turn, continued) {
            (0, _) => self.turns.check(false, || {
                format!("{name}: turn 0 (turns start at 1): {}", excerpt_str(r.task, 80))
            }),
            (1, _) => self.turns.check(history.is_empty(), || {
                format!(
                    "{name}: turn 1 with {} history entries (a first turn has none: does the turn go up?)",
                    history.len()
                )
            }),
            (_, true) => self.turns.check(true, String::new),
            (_, false) => {
                self.joined += 1;
                // The same conversation at another turn: the turn did not go up by one (a
                // retry of the same turn is not judged).
                if let Some(before) = other_turn {
                    self.turns.check(false, || {
                        format!("{name}: turn {turn} followed turn {before} of the same conversation (the turn goes up by one)")
                    });
                }
            }
        }
    }

    /// A request that continues a conversation followed, against what it was at the turn
    /// before: its history, and what follows the mock's last answer.
    fn judge_continued(&mut self, r: &Turned<'_>, previous: &Conversation) {
        let (name, turn, history) = (r.name, r.turn, r.history);
        // The history: the earlier turns kept, the previous exchange added. A request without
        // one (the spec's Request Body marks it optional) is not judged on it.
        let kept = history.len() >= previous.history_len
            && history_hash(history, previous.history_len) == previous.history_hash;
        let grew = history.len() > previous.history_len;
        if !r.has_history {
            self.no_history += 1;
        } else {
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
        }
        // What follows the mock's last answer.
        let last = &previous.answer;
        let after = &last.action;
        self.loop_ends.check(!last.ends_loop(), || {
            format!(
                "{name}: turn {turn} came after {after} at turn {} (the loop ends there)",
                turn - 1
            )
        });
        if last.calls_tools() {
            let broken =
                missing_result(r.task, &last.tools).map(|why| format!("{name} turn {turn}: {why}"));
            self.tool_results
                .check(broken.is_none(), || broken.unwrap_or_default());
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
