//! What a line agent's judge holds: the platform's observer, the stdio checks (drains, a
//! forked agent's settling), and the replay of a forked process's journal into them.

use super::*;

impl Judge {
    pub(super) fn new(observer: Box<dyn PlatformObserver>) -> Judge {
        Judge {
            observer,
            drains: Mutex::new(Tally::default()),
            forked: Mutex::new(Forked::default()),
            applied: Applied::default(),
        }
    }

    pub(super) fn on_request(&self, seen: &Seen<'_>) {
        self.observer.on_request(seen);
        self.applied.record(0, &seen.decision.applied);
    }

    pub(super) fn on_flood(&self, whole: bool, message: &str) {
        if let Ok(mut drains) = self.drains.lock() {
            drains.check(whole, || message.to_string());
        }
    }

    pub(super) fn on_forked(&self, case: CaseResult) {
        if let Ok(mut f) = self.forked.lock() {
            f.unsettled.get_or_insert(case);
        }
    }

    pub(super) fn on_settled(&self, pass: bool, message: String) {
        if let Ok(mut f) = self.forked.lock() {
            f.settled.push((pass, message));
        }
    }

    /// Replays journal records (of every process, in order) into this judge.
    pub(super) fn replay(
        &self,
        records: Vec<line_journal::Record>,
        agent: &MockAgent,
        seq: &AtomicU64,
    ) {
        let endpoint = agent.protocol.line_endpoint().unwrap_or_default();
        let schema = agent
            .protocol
            .endpoint(endpoint)
            .and_then(|e| e.request_schema);
        // Each process numbered its requests from 0: renumbered here, in the journal's order.
        let mut renumbered: HashMap<(u32, u64), u64> = HashMap::new();
        let now = std::time::Instant::now();
        for record in records {
            match record.event {
                Event::Request {
                    seq: own,
                    agent: name,
                    line,
                    planned,
                    answer,
                    answer_len,
                } => {
                    let answer = line_journal::replayed_answer(&answer, answer_len);
                    let n = seq.fetch_add(1, Ordering::Relaxed);
                    renumbered.insert((record.pid, own), n);
                    let body = Body::checked(line.as_bytes(), schema);
                    let decision = planned.decision();
                    let Some(findings) = body.findings("the request is not JSON") else {
                        continue;
                    };
                    self.on_request(&Seen {
                        seq: n,
                        agent: &name,
                        expects_key: false,
                        endpoint,
                        auth: AuthSeen::None,
                        key_print: 0,
                        task: "",
                        body: &body,
                        schema_findings: &findings,
                        decision: &decision,
                        answer: &answer,
                        at: now,
                    });
                }
                Event::Answered {
                    seq: own,
                    agent: name,
                    outcome,
                    bytes,
                    total_us,
                    ended,
                } => {
                    let Some(n) = renumbered.get(&(record.pid, own)) else {
                        continue;
                    };
                    let total = Duration::from_micros(total_us);
                    let delivered = Delivered {
                        outcome: outcome_named(&outcome),
                        bytes,
                        ttfb: (bytes > 0).then_some(total),
                        total,
                    };
                    self.observer.on_answer(&Answered {
                        seq: *n,
                        agent: &name,
                        endpoint,
                        task: "",
                        received: now,
                        delivered: &delivered,
                        ended: ended.as_ref(),
                        at: now,
                    });
                }
                Event::Incomplete {
                    agent,
                    endpoint,
                    what,
                } => self.observer.on_incomplete(&agent, &endpoint, &what),
                Event::Flood { whole, message } => self.on_flood(whole, &message),
                Event::Forked { case } => self.on_forked(case),
                Event::Settled { pass, message } => self.on_settled(pass, message),
            }
        }
    }

    /// The verdicts: the observer's, then the stdio checks that had something to judge.
    pub(super) fn cases(&self, agent: &MockAgent) -> Vec<CaseResult> {
        // A line agent is one mock agent, never a fleet.
        let mut cases = self.observer.cases(Served::OneAgent);
        // Lines carry no headers: what is judged on them cannot apply here.
        cases.retain(|c| !crate::mock::observe::HTTP_ONLY.contains(&c.id.as_str()));
        if let Ok(drains) = self.drains.lock() {
            if drains.checked > 0 {
                cases.push(drains.judged(
                    "stdio.drains-stderr",
                    "stdio",
                    Level::Must,
                    "the harness drains the agent's stderr as it comes (a flood does not block the agent)",
                    "Local Subprocess Protocol (anything the agent writes to stderr is captured and emitted as an engine log)",
                    "stderr floods",
                    "serve --behavior stderr-flood over stdio to test it",
                ));
            }
        }
        if let Ok(f) = self.forked.lock() {
            let settled = &f.settled;
            cases.extend(f.unsettled.clone().map(|case| forked_case(case, settled)));
        }
        cases.extend(self.applied.case(std::slice::from_ref(agent)));
        cases
    }
}

/// An [`Outcome`] from its kebab-case name (as the journal writes it).
pub(super) fn outcome_named(name: &str) -> Outcome {
    crate::mock::recording::outcome_named(name).unwrap_or(Outcome::Complete)
}
