//! The deliberation's rules, judged when the verdicts are drawn: the answers still held, each
//! deliberation's phases, the failed calls not made again, the giving-up at the timeout.

use super::*;

impl Observer {
    /// Answers still held when the verdicts are drawn: a platform still waiting past its limit
    /// broke the rule; one within it is not judged.
    pub(super) fn settle_waiting(&self, s: &mut State, now: Instant) {
        let limit = self.limit();
        let expect = self.expectation();
        let waits: Vec<Wait> = s.waiting.drain().map(|(_, w)| w).collect();
        for wait in waits.iter().filter(|w| w.outlasts) {
            // Still open, within the platform's time: the run's end cut it, as one that ended
            // with the fleet's shutdown.
            let open = now.saturating_duration_since(wait.received);
            if open <= limit {
                self.cut(s, wait, now);
                continue;
            }
            let who = format!(
                "{} /{} (task {})",
                s.name(wait.agent),
                PHASES[wait.phase],
                s.task_id(wait.task)
            );
            let waited = open.as_secs_f64();
            s.gave_up.check(false, || {
                format!("{who}: the platform was still waiting after {waited:.1} s, when the mock stopped ({expect})")
            });
        }
    }

    /// Whether the platform is done with `task`: the driver's triggers were all answered after
    /// its last request, or it has been idle past the platform's timeout and grace; and no
    /// request of it was cut short by the end of the run or held past the timeout.
    pub(super) fn finished(&self, s: &State, task: &Task, now: u64) -> bool {
        let idle = self.limit().as_micros() as u64;
        !task.cut
            && !task.stuck
            && (s
                .triggers_answered
                .is_some_and(|at| task.last_request <= at)
                || now.saturating_sub(task.last_activity()) >= idle)
    }

    /// platform.phases-continue: in a finished deliberation with at least two conforming
    /// analyses, every agent whose analysis conformed was called at /challenge, and every agent
    /// called at /challenge that did not time out there was called at /vote.
    pub(super) fn phases_case(&self, s: &State, now: Instant) -> CaseResult {
        let now = self.micros(now);
        let mut tally = Tally::default();
        // (task id, phase, agent, whether the task reached /vote) of every call that was due
        // and never came.
        let mut missing: Vec<(String, usize, String, bool)> = Vec::new();
        for (&(task_key, agent), seat) in &s.seats {
            let Some(task) = s.tasks.get(&task_key) else {
                continue;
            };
            let done = self.finished(s, task, now);
            let challenge_due = seat.calls[ANALYZE].first_answer == Planned::Clean
                && task.clean >= 2
                && (done || task.phases[VOTE].begun())
                && !s.idless.contains(&(agent, CHALLENGE));
            let vote_due = seat.calls[CHALLENGE].n > 0
                && seat.calls[CHALLENGE].first_answer != Planned::TimedOut
                && done
                && !s.idless.contains(&(agent, VOTE));
            for (due, phase) in [(challenge_due, CHALLENGE), (vote_due, VOTE)] {
                if !due {
                    continue;
                }
                let came = seat.calls[phase].n > 0;
                tally.checked += 1;
                if !came {
                    tally.broken += 1;
                    missing.push((
                        task.id.to_string(),
                        phase,
                        s.name(agent).to_string(),
                        task.phases[VOTE].begun(),
                    ));
                }
            }
        }
        missing.sort();
        tally.examples = missing_examples(&missing);
        let mut case = tally.judged(
            "platform.phases-continue",
            "deliberation",
            Level::Must,
            "every agent whose /analyze answer conformed is called at /challenge, and every agent called at /challenge that did not time out there is called at /vote (in a deliberation with at least two conforming analyses)",
            "Overview (Phase 1 analyze, Phase 2 challenge, Phase 3 vote); Error Handling (other agents continue the deliberation); Timeouts",
            "calls due to agents (at /challenge once the deliberation reached /vote, at /vote once it was over)",
            "no deliberation with two conforming analyses was seen whole: run one with at least two conforming agents, and let it end (a trigger the platform answers, or the platform's timeout of quiet before the fleet stops)",
        );
        // A deliberation that reached /vote but was not seen over: its /vote calls were not
        // judged, and a pass must not read as if they were.
        let unfinished = s
            .tasks
            .values()
            .filter(|t| t.phases[VOTE].begun() && !self.finished(s, t, now))
            .count();
        if unfinished > 0 && case.status != Status::Skip {
            let note = format!(
                "the /vote calls of {} not judged: {} not seen over (no trigger answered, nor the platform's timeout of quiet before the run ended)",
                crate::text::count(unfinished as u64, "deliberations"),
                if unfinished == 1 { "it was" } else { "they were" }
            );
            if case.message.is_empty() {
                case.message = note;
            } else {
                case.message.push_str(&format!("; {note}"));
            }
        }
        let cut = s.tasks.values().filter(|t| t.cut).count();
        if cut > 0 && case.status == Status::Skip {
            let when = match &s.run_end {
                Some(end) => format!("when {}", end.describe()),
                None => "by the end of the run".to_string(),
            };
            case.message.push_str(&format!(
                " ({} {} cut short {when}, with a request still open)",
                crate::text::count(cut as u64, "tasks"),
                if cut == 1 { "was" } else { "were" }
            ));
        }
        case
    }
}

/// The cases a request refused for its credentials could have been taken for the agent's own
/// failure in (or, for platform.bearer, cannot be told apart in): each says how it was counted.
pub(super) const BLAMED_BY_REFUSALS: [&str; 3] = [
    "platform.bearer",
    "platform.challenge-no-failed",
    "platform.failed-not-recalled",
];

/// How the requests refused for their credentials were counted, a line per agent and what they
/// carried; None when there were none.
pub(super) fn refusals_note(s: &State) -> Option<String> {
    let lines: Vec<String> = s
        .refused
        .iter()
        .map(|((agent, no_key), &n)| {
            let with = credentials(agent, *no_key);
            let sent = if *no_key { "no key" } else { "a wrong key" };
            let (what, were, each) = if n == 1 {
                ("a request".to_string(), "was", "")
            } else {
                (format!("{n} requests"), "were", "each ")
            };
            format!(
                "{what} to {agent} with {with} {were} refused 401: {each}counted as a call to another agent registered at {agent}'s URL, not as {agent} failing; the fleet cannot tell this from the platform sending {agent} itself {sent}, which platform.bearer judges"
            )
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Up to [`EXAMPLES`] lines, one per task and phase: which agents never got the call, and how
/// the deliberation went on without them.
pub(super) fn missing_examples(missing: &[(String, usize, String, bool)]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for group in missing.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
        if lines.len() == EXAMPLES {
            break;
        }
        let (task, phase, went_on) = (&group[0].0, group[0].1, group[0].3);
        let agents: Vec<&str> = group.iter().map(|m| m.2.as_str()).collect();
        let why = match phase {
            CHALLENGE => "their /analyze answers conformed",
            _ => "they were challenged and did not time out",
        };
        let after = match (phase, went_on) {
            (CHALLENGE, true) => "the platform went on to /vote without them".to_string(),
            _ => format!("the deliberation ended after /{}", PHASES[phase - 1]),
        };
        lines.push(format!(
            "task {task}: /{} never came for {} ({why}); {after}",
            PHASES[phase],
            agents.join(", ")
        ));
    }
    lines
}

impl Observer {
    /// platform.failed-not-recalled: an agent whose first answer in a phase failed is excluded from
    /// that phase: one call per task and phase, the count and the times in the message. Judged in
    /// deliberations of two agents or more: a single agent sent one task's exchanges over and over
    /// is agent-tck's probe at work (one task_id per run), not a round table.
    ///
    /// Only a failure the platform saw counts: an answer the run's own end cut (the fleet's
    /// shutdown, before the platform's timeout for a hang) never failed as far as the platform
    /// knows, and whether it would call the agent again is not known; the case names those.
    pub(super) fn retries_case(&self, s: &State, now: Instant, served: Served) -> CaseResult {
        let mut tally = Tally::default();
        let mut recalled: Vec<(String, usize, String, Call)> = Vec::new();
        // (seat, phase, call) of each failed first answer the run's end cut.
        let mut cut: Vec<((Key, Key), usize, Call)> = Vec::new();
        for (&(task, agent), seat) in &s.seats {
            if s.tasks.get(&task).is_none_or(|t| t.agents < 2) {
                continue;
            }
            for (phase, call) in seat.calls.iter().enumerate() {
                if !call.first_answer.failed() {
                    continue;
                }
                if call.first_end != End::Ended {
                    cut.push(((task, agent), phase, *call));
                    continue;
                }
                tally.checked += 1;
                if call.n > 1 {
                    tally.broken += 1;
                    recalled.push((s.task_id(task), phase, s.name(agent).to_string(), *call));
                }
            }
        }
        recalled.sort_by(|a, b| (&a.0, a.1, &a.2).cmp(&(&b.0, b.1, &b.2)));
        tally.examples = recalled
        .iter()
        .take(EXAMPLES)
        .map(|(task, phase, agent, call)| {
            let how = match call.first_answer {
                Planned::TimedOut => "timed out",
                _ => "failed",
            };
            format!(
                "{agent} /{} (task {task}): called {}{} times, the first {:.1} s and the last {:.1} s after the run started, though its first answer {how}",
                PHASES[*phase],
                call.n,
                if call.n == u8::MAX { "+" } else { "" },
                f64::from(call.first_ms) / 1e3,
                f64::from(call.last_ms) / 1e3,
            )
        })
        .collect();
        let mut case = tally.judged(
        "platform.failed-not-recalled",
        "deliberation",
        Level::Must,
        "an agent whose answer failed in a phase (timed out, errored, malformed) is marked failed for that phase: it is not called again in that phase of the task",
        "Timeouts (marked as failed for that phase); Error Handling (excluded from this phase)",
        "first failed answers of an agent in a phase of a task",
        &format!(
            "no agent's answer failed in a deliberation of two agents or more: {}, then run a deliberation",
            match served {
                Served::Proxy => "put a failing --fault on an agent (--fault NAME=hang, http-error, malformed-json)".to_string(),
                _ => "add an agent with a failing behaviour (hang, http-error, malformed-json) to a fleet".to_string(),
            }
        ),
    );
        cut.sort_by_cached_key(|(seat, phase, _)| {
            (s.task_id(seat.0), *phase, s.name(seat.1).to_string())
        });
        let mut cuts = Tally::default();
        let end = s.run_end.as_ref().map(|e| self.micros(e.at));
        for (seat, phase, call) in &cut {
            let agent = s.name(seat.1);
            let sent = u64::from(call.first_ms) * 1000;
            let open_for =
                Duration::from_micros(end.unwrap_or_else(|| self.micros(now)).saturating_sub(sent));
            let doing = match call.first_answer {
                Planned::TimedOut => "hanging",
                _ => "being answered",
            };
            cuts.check(false, || {
                format!(
                    "{}, so whether it would call {agent} again is not known",
                    self.cut_text(s, (seat.0, seat.1, *phase), open_for, doing)
                )
            });
        }
        note_cut(&mut case, &cuts, "failed answers");
        case
    }
}
