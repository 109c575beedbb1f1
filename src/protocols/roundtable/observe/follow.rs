//! What the observer follows of each request: its task's phases, each (task, agent) seat's
//! calls and what they planned, the requests still waiting for their answers.

use super::*;

impl Observer {
    pub fn new(platform_timeout: Duration) -> Observer {
        // Sized for the most they hold: no rehash of a hundred thousand entries in the middle of
        // a request (a latency spike), and a fleet's memory reaches its level at once.
        let state = State {
            tasks: FastMap::with_capacity_and_hasher(MAX_TRACKED, Default::default()),
            seats: FastMap::with_capacity_and_hasher(MAX_SEATS, Default::default()),
            ..State::default()
        };
        Observer {
            platform_timeout,
            started: Instant::now(),
            state: Mutex::new(state),
            canaries_placed: AtomicBool::new(false),
        }
    }

    pub(super) fn micros(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.started).as_micros() as u64
    }

    /// How long the platform may hold an agent's request: its timeout and the grace.
    pub(super) fn limit(&self) -> Duration {
        self.platform_timeout + grace(self.platform_timeout)
    }

    /// Books a call of `phase` to `agent` in `task` (a task id the request carried); true when
    /// it is the agent's first call in that phase of the task.
    pub(super) fn book(
        &self,
        s: &mut State,
        seen: &Seen<'_>,
        phase: usize,
        planned: Planned,
        carries: Carries,
        caller: &Caller,
    ) -> bool {
        let now = self.micros(seen.at);
        let task_key = key(seen.task);
        let agent_key = caller.key;
        s.names
            .entry(agent_key)
            .or_insert_with(|| caller.name(seen.agent));
        if s.tasks.len() >= MAX_TRACKED && !s.tasks.contains_key(&task_key) {
            s.untracked += 1;
            return false;
        }
        let seat_key = (task_key, agent_key);
        if s.seats.len() >= MAX_SEATS && !s.seats.contains_key(&seat_key) {
            s.untracked += 1;
            return false;
        }
        let task = s
            .tasks
            .entry(task_key)
            .or_insert_with(|| Task::new(seen.task));
        task.last_request = task.last_request.max(now);
        let p = &mut task.phases[phase];
        if !p.begun() {
            *p = Phase {
                first_request: now,
                wait_ended: now,
            };
        }
        let seat = s.seats.entry(seat_key).or_insert_with(|| {
            task.agents = task.agents.saturating_add(1);
            Seat::default()
        });
        let call = &mut seat.calls[phase];
        let ms = u32::try_from(now / 1000).unwrap_or(u32::MAX);
        let first = call.n == 0;
        if first {
            call.first_answer = planned;
            call.first_ms = ms;
            if phase == ANALYZE {
                seat.sent_nul = carries.nul;
                seat.sent_long = carries.long.is_some();
                task.clean = task
                    .clean
                    .saturating_add(u16::from(planned == Planned::Clean));
                // Only the fleet's agents' failures: another agent at one of their URLs has a
                // name at the platform the fleet does not know, so whether the platform left its
                // analysis out cannot be judged.
                let own = caller.refused.is_none();
                task.failed = task
                    .failed
                    .saturating_add(u16::from(own && planned.failed()));
            }
        }
        let call = &mut seat.calls[phase];
        call.n = call.n.saturating_add(1);
        call.last_ms = ms;
        if carries.nul {
            s.nul_senders.insert(agent_key);
        }
        if let (Some(prefix), true) = (carries.long, first && phase == ANALYZE) {
            s.long_prefixes.insert(seat_key, prefix);
        }
        if carries.long.is_some() {
            s.long_senders.insert(agent_key);
        }
        first
    }

    /// Judges how long the platform held a request whose answer outlasted its timeout.
    pub(super) fn judge_wait(&self, s: &mut State, wait: &Wait, delivered: &Delivered) {
        let waited = delivered.total.as_secs_f64();
        let ok = delivered.total <= self.limit();
        if !ok {
            if let Some(task) = s.tasks.get_mut(&wait.task) {
                task.stuck = true;
            }
        }
        let expect = self.expectation();
        let who = format!(
            "{} /{} (task {})",
            s.name(wait.agent),
            PHASES[wait.phase],
            s.task_id(wait.task)
        );
        match delivered.outcome {
            // (Within the platform's time, the run's end cut it: see `on_answer`.)
            Outcome::Shutdown => s.gave_up.check(false, || {
                format!("{who}: the platform was still waiting after {waited:.1} s, when the mock stopped ({expect})")
            }),
            Outcome::Hung | Outcome::PeerGone => s.gave_up.check(ok, || {
                format!("{who}: the platform gave up only after {waited:.2} s ({expect})")
            }),
            _ => s.gave_up.check(ok, || {
                format!("{who}: the platform waited {waited:.1} s for the whole answer ({expect})")
            }),
        }
    }

    /// A request whose answer the run's own end cut before the platform's timeout came: not a
    /// giving-up, and its first call's failure is one the platform never saw.
    pub(super) fn cut(&self, s: &mut State, wait: &Wait, now: Instant) {
        if wait.outlasts {
            let end = s.run_end.as_ref().map_or(now, |e| e.at);
            let words = self.cut_text(
                s,
                (wait.task, wait.agent, wait.phase),
                end.saturating_duration_since(wait.received),
                "hanging",
            );
            s.gave_up_cut.check(false, || words);
        }
        if wait.first {
            if let Some(seat) = s.seats.get_mut(&(wait.task, wait.agent)) {
                seat.calls[wait.phase].first_end = End::Cut;
            }
        }
    }

    pub(super) fn cut_text(
        &self,
        s: &State,
        (task, agent, phase): (Key, Key, usize),
        open_for: Duration,
        doing: &str,
    ) -> String {
        let end = match &s.run_end {
            Some(end) => end.describe(),
            None => "the fleet stopped".to_string(),
        };
        format!(
            "{}'s /{} (task {}) was still {doing} when {end}, {:.1} s after the platform sent it; the platform's own timeout ({}) had not come",
            s.name(agent),
            PHASES[phase],
            s.task_id(task),
            open_for.as_secs_f64(),
            humantime::format_duration(self.platform_timeout)
        )
    }

    /// platform.gives-up: judged on the answers that outlasted the platform's timeout and
    /// ended (given up on, or held past it); those the run's own end cut before that timeout
    /// came are named, not judged.
    pub(super) fn gives_up_case(&self, s: &State) -> CaseResult {
        let mut case = s.gave_up.judged(
            "platform.gives-up",
            "deliberation",
            Level::Must,
            &format!(
                "the platform gives up on an agent that does not answer within {}, closing the request's connection",
                self.timeout_words()
            ),
            "Timeouts (the platform waits 120 seconds, configurable, for each endpoint)",
            "answers that outlasted the platform's timeout",
            "no agent held an answer past the platform's timeout: add an agent with the hang behaviour (or slow:DUR beyond the timeout) and state the platform's timeout (platform.timeout, --platform-timeout)",
        );
        note_cut(
            &mut case,
            &s.gave_up_cut,
            "answers meant to outlast the platform's timeout",
        );
        case
    }

    pub(super) fn expectation(&self) -> String {
        format!("expected to give up within {}", self.timeout_words())
    }

    /// The platform's timeout and the grace allowed past it, in words that cannot be read as
    /// one sum: "its timeout 2m (and 7s of grace)", not "(2m + 7s)" (which reads as 127 s).
    pub(super) fn timeout_words(&self) -> String {
        format!(
            "its timeout {} (and {} of grace)",
            humantime::format_duration(self.platform_timeout),
            humantime::format_duration(grace(self.platform_timeout))
        )
    }
}
