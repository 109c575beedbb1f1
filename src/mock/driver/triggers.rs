//! The triggers' verdicts: what each trigger got (its answer, its time, its expectations)
//! judged into the trigger's cases, and how a failure with the platform is said.

use super::*;

/// The trigger's cases, and how many triggers the deliberation deadline ran out on.
#[derive(Default)]
pub struct Triggers {
    pub cases: Vec<CaseResult>,
    pub overdue: usize,
    /// When the deadline first ran out (a moment before the fleet closed that trigger).
    pub abandoned: Option<Instant>,
}

/// One trigger: its number, how long it took, and how it ended.
pub(super) struct Triggered {
    pub(super) n: usize,
    pub(super) started: Instant,
    pub(super) elapsed: Duration,
    pub(super) answer: Result<http::Response, Failure>,
    /// When the deadline ran out shorter than the spec's: the agents' requests the platform
    /// was still waiting for within its own timeout.
    pub(super) within: Vec<String>,
}

/// The deliberation deadline, against the spec's bound.
pub(super) struct ShortDeadline {
    pub(super) deadline: Duration,
    pub(super) bound: Duration,
    /// The platform's timeout for each agent call.
    pub(super) timeout: Duration,
}

impl ShortDeadline {
    /// Trigger `n`, cut by the deadline after `elapsed` while the platform waited for `within`.
    pub(super) fn describe(&self, n: usize, elapsed: Duration, within: &[String]) -> String {
        let more = match within.len() {
            0..=3 => String::new(),
            k => format!(" and {} more", k - 3),
        };
        format!(
            "#{n}: the deliberation deadline {} ran out after {:.1} s while the platform was still waiting, within its own timeout {}, for {}{more}; the spec lets a deliberation take {}",
            humantime::format_duration(self.deadline),
            elapsed.as_secs_f64(),
            humantime::format_duration(self.timeout),
            within[..within.len().min(3)].join(", "),
            humantime::format_duration(self.bound),
        )
    }
}

/// What the triggers got, sorted by the case each finding belongs to.
#[derive(Default)]
struct Sorted {
    sent: usize,
    unreachable: Vec<String>,
    silent: Vec<String>,
    late: Vec<String>,
    /// Triggers the platform's death cut: no evidence of how it answers (platform.alive says it).
    died: Vec<String>,
    errors: Vec<String>,
    unmet: Vec<String>,
    /// The times of the answers, sorted.
    latencies: Vec<Duration>,
    /// Triggers whose deadline, the run's own, ran out while the platform still waited for an
    /// agent within its timeout: not the platform's failure, not judged.
    cut: Tally,
    /// Those whose deadline ran out on the platform's account.
    overdue: Vec<String>,
    below_500: u64,
}

impl Sorted {
    fn of(
        spec: &TriggerSpec,
        conditions: &[Condition],
        short: &ShortDeadline,
        results: &[Triggered],
    ) -> Sorted {
        let mut s = Sorted {
            sent: results.len(),
            ..Sorted::default()
        };
        for Triggered {
            n,
            elapsed,
            answer,
            within,
            ..
        } in results
        {
            let took = format!("{:.1} s", elapsed.as_secs_f64());
            if !within.is_empty() {
                s.cut.check(false, || short.describe(*n, *elapsed, within));
            }
            if let Err(Failure::Silent(e) | Failure::Late(e)) = answer {
                if within.is_empty() {
                    s.overdue.push(format!("#{n}: {e} (waited {took})"));
                }
            }
            match answer {
                Err(Failure::Unreachable(e)) => {
                    s.unreachable.push(format!("#{n}: {e} (after {took})"))
                }
                Err(Failure::Silent(e)) => s.silent.push(format!("#{n}: {e} (waited {took})")),
                Err(Failure::Late(e)) => s.late.push(format!("#{n}: {e} (waited {took})")),
                Err(Failure::Cut(e)) => s.died.push(format!("#{n}: {e}")),
                Ok(r) => {
                    s.latencies.push(*elapsed);
                    if r.status >= 500 {
                        s.errors.push(format!(
                            "#{n}: {} {}",
                            r.status,
                            crate::text::excerpt(&r.body, 200)
                        ));
                    } else {
                        // A 5xx is platform.no-5xx's finding; judging its body too would report it twice.
                        s.below_500 += 1;
                        s.unmet.extend(
                            expectations(spec, conditions, r)
                                .into_iter()
                                .map(|u| format!("#{n}: {u}")),
                        );
                    }
                }
            }
        }
        s.latencies.sort();
        s
    }

    fn answered(&self) -> usize {
        self.latencies.len()
    }

    fn silent_note(&self, deadline: Duration) -> String {
        format!(
            "{} of {} got no answer head within the deliberation deadline {} (see platform.deliberation-deadline):\n  {}",
            self.silent.len(),
            crate::text::count(self.sent as u64, "triggers"),
            humantime::format_duration(deadline),
            self.silent.join("\n  ")
        )
    }

    /// Why no answer was there to judge.
    fn unanswered(&self) -> String {
        if self.answered() == 0 && !self.died.is_empty() {
            return not_judged_at_all(&self.died, "");
        }
        format!(
            "no trigger got a whole answer ({} unreachable, {} without an answer head, {} late): see platform.trigger and platform.deliberation-deadline",
            self.unreachable.len(),
            self.silent.len(),
            self.late.len()
        )
    }

    /// platform.trigger: the triggers reached the platform.
    fn reached(&self, case: &mut CaseResult, target: &str, deadline: Duration) {
        // A trigger with no answer head within the deadline tells nothing of whether the
        // platform answers at all: that wait is the deadline case's failure, and this case
        // says what it saw.
        let headed = self.answered() + self.late.len();
        let mut note = format!(
            "{} sent to {target}; {headed} got an HTTP answer",
            crate::text::count(self.sent as u64, "triggers")
        );
        if !self.silent.is_empty() {
            note = format!("{note}; {}", self.silent_note(deadline));
        }
        note.push_str(&not_judged(&self.died));
        settle(
            case,
            Evidence::new((headed + self.unreachable.len()) as u64, "triggers"),
            &self.unreachable,
            note,
            || {
                not_judged_at_all(
                    &self.died,
                    &format!("not judged: {}", self.silent_note(deadline)),
                )
            },
        );
    }

    /// platform.deliberation-deadline: each deliberation answered within the deadline.
    fn within_deadline(&self, case: &mut CaseResult, deadline: Duration) {
        let answered = self.answered();
        settle(
            case,
            Evidence::new(
                (answered + self.overdue.len()) as u64,
                "triggered deliberations",
            ),
            &self.overdue,
            format!(
                "{answered} of {} answered within {}; {}",
                self.sent,
                humantime::format_duration(deadline),
                latency_summary(&self.latencies)
            ),
            || {
                not_judged_at_all(
                    &self.died,
                    "no trigger reached the platform (see platform.trigger), so no deliberation ran",
                )
            },
        );
        note_cut(case, &self.cut, "deliberations");
    }

    /// platform.no-5xx: no answer was a server error.
    fn no_5xx(&self, case: &mut CaseResult) {
        let answered = self.answered() as u64;
        settle(
            case,
            Evidence::new(answered, "deliberation answers"),
            &self.errors,
            format!("{}, none 5xx", crate::text::count(answered, "answers")),
            || self.unanswered(),
        );
    }

    /// The expectations stated, on the answers below 500.
    fn expected(&self, case: &mut CaseResult) {
        let answered = self.answered();
        settle(
            case,
            Evidence::new(self.below_500, "deliberation answers below 500"),
            &self.unmet,
            format!(
                "{} met every expectation",
                crate::text::count(self.below_500, "answers")
            ),
            || {
                if answered == 0 {
                    self.unanswered()
                } else {
                    format!("every answer was a 5xx ({answered}, see platform.no-5xx): the expectations are judged on answers below 500")
                }
            },
        );
    }
}

/// The trigger's four cases, judged on what each trigger got.
pub(super) fn judge_triggers(
    spec: &TriggerSpec,
    conditions: &[Condition],
    short: &ShortDeadline,
    target: &str,
    results: &[Triggered],
) -> [CaseResult; 4] {
    let [mut reached, mut deadline_case, mut no5xx, mut expect_case] = trigger_cases();
    let sorted = Sorted::of(spec, conditions, short, results);
    sorted.reached(&mut reached, target, short.deadline);
    sorted.within_deadline(&mut deadline_case, short.deadline);
    sorted.no_5xx(&mut no5xx);
    sorted.expected(&mut expect_case);
    [reached, deadline_case, no5xx, expect_case]
}

/// The trigger's cases, not judged yet.
pub(super) fn trigger_cases() -> [CaseResult; 4] {
    let reached = CaseResult::new(
        "platform.trigger",
        "deliberation",
        Level::Must,
        "each trigger reaches the platform and gets an HTTP answer (a connection, no reset)",
        "fleet file: platform.trigger",
    );
    let deadline_case = CaseResult::new("platform.deliberation-deadline",
            "deliberation",
            Level::Must,
            "each triggered deliberation is answered within 3 × the platform's timeout plus a margin, even with hanging and slow agents",
            "Timeouts (agents that do not answer are excluded, not waited for)",
        );
    let no5xx = CaseResult::new("platform.no-5xx",
            "deliberation",
            Level::Must,
            "each triggered deliberation is answered without a 5xx, despite malformed or hostile agents",
            "Error Handling (the platform never crashes because of a single agent failure)",
        );
    let expect_case = CaseResult::new(
        "platform.trigger-expect",
        "deliberation",
        Level::Must,
        "each deliberation's answer meets the fleet file's expectations (status, JSON conditions)",
        "fleet file: platform.trigger.expect",
    );
    [reached, deadline_case, no5xx, expect_case]
}

/// Why a request to the platform got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The deadline ran out before any answer head came.
    Silent(String),
    /// The deadline ran out while the answer's body was arriving.
    Late(String),
    /// No answer at all: no connection, a reset, not HTTP.
    Unreachable(String),
    /// Cut by the platform's death (the skip message, naming the case that reports it): no
    /// evidence of how the platform answers.
    Cut(String),
}

/// ` (N not judged: …)` after a note, for the requests the platform's death cut.
pub(super) fn not_judged(cut: &[String]) -> String {
    match cut {
        [] => String::new(),
        [one] => format!(" (1 not judged: {one})"),
        [first, ..] => format!(" ({} not judged, the first: {first})", cut.len()),
    }
}

/// The skip message of a case none of whose requests was judged: the platform's death, when it
/// cut them, else `otherwise`.
pub(super) fn not_judged_at_all(cut: &[String], otherwise: &str) -> String {
    match cut.first() {
        Some(first) => match first.split_once(": not judged: ") {
            Some((_, why)) => format!("not judged: {why}"),
            None => first.clone(),
        },
        None => otherwise.to_string(),
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Silent(m) | Failure::Late(m) | Failure::Unreachable(m) | Failure::Cut(m) => {
                f.write_str(m)
            }
        }
    }
}

/// The HTTP client's error, told of the platform rather than of an agent.
pub(super) fn platform_error(e: http::Error, deadline_why: &str) -> Failure {
    match e {
        http::Error::Connect { addr, reason } => Failure::Unreachable(format!(
            "platform unreachable: cannot connect to {addr}: {reason}"
        )),
        http::Error::Timeout { deadline, phase } => {
            let why = format!(
                "no complete answer within {} ({deadline_why}): {phase}",
                humantime::format_duration(deadline)
            );
            // The client's words for how far the exchange got (transport::http::Progress): a
            // body arriving means a head came.
            if phase.starts_with("body") {
                Failure::Late(why)
            } else {
                Failure::Silent(why)
            }
        }
        http::Error::Reset { phase } => {
            Failure::Unreachable(format!("connection reset by the platform {phase}"))
        }
        other => Failure::Unreachable(format!("the platform: {other}")),
    }
}

/// How long a registration or deregistration may take.
pub(super) const REGISTRATION_DEADLINE: Duration = Duration::from_secs(30);

/// What a refused registration likely means; `url_member`: where the registration says the
/// agent's URL, `url` the URL sent. A 400 is most often a platform's guard against server-side
/// request forgery, which refuses loopback, private, link-local and `*.internal` addresses (and
/// names that resolve to them).
pub(super) fn registration_hint(status: u16, url_member: &str, url: &str) -> Cow<'static, str> {
    match status {
        409 => "(name taken) ".into(),
        400 | 422 => format!(
            "(refused: the platform may not accept {url_member} {url} — a loopback, private or *.internal address? \
             give the fleet an address the platform accepts with advertise: or --advertise, and listen on it \
             with host: or --host, e.g. --host 0.0.0.0) "
        )
        .into(),
        401 | 403 => "(the platform token is missing or wrong) ".into(),
        _ => "".into(),
    }
}

pub(super) fn expectations(
    spec: &TriggerSpec,
    conditions: &[Condition],
    r: &http::Response,
) -> Vec<String> {
    let mut unmet = Vec::new();
    let status_ok = if spec.expect.status.is_empty() {
        (200..300).contains(&r.status)
    } else {
        spec.expect.status.contains(&r.status)
    };
    if !status_ok {
        unmet.push(format!(
            "status {} (expected {})",
            r.status,
            if spec.expect.status.is_empty() {
                "2xx".to_string()
            } else {
                format!("{:?}", spec.expect.status)
            }
        ));
    }
    if !conditions.is_empty() {
        match serde_json::from_slice::<Value>(&r.body) {
            Ok(v) => unmet.extend(conditions.iter().filter_map(|c| c.violation(&v))),
            Err(e) => unmet.push(format!("the answer is not JSON: {e}")),
        }
    }
    unmet
}

/// Passes `case` on `evidence` when no problem was found (noting `ok`), else fails it listing the
/// first problems.
pub(super) fn settle(
    case: &mut CaseResult,
    evidence: Evidence,
    problems: &[String],
    ok: String,
    unexercised: impl FnOnce() -> String,
) {
    if problems.is_empty() {
        case.pass_noting(evidence, ok, unexercised);
    } else {
        case.fail_on(evidence, listing(problems));
    }
}

/// `N problems:` (`1 problem:`) and the first ten, a line each.
pub(super) fn listing(problems: &[String]) -> String {
    format!(
        "{}:\n  {}",
        crate::text::count(problems.len() as u64, "problems"),
        first_lines(problems)
    )
}

/// The first ten of `lines`, joined as an indented list.
pub(super) fn first_lines(lines: &[String]) -> String {
    lines
        .iter()
        .take(10)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n  ")
}

pub(super) fn latency_summary(sorted: &[Duration]) -> String {
    if sorted.is_empty() {
        return "no latency".into();
    }
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!(
        "latency p50 {} ms, max {} ms",
        at(0.5).as_millis(),
        sorted[sorted.len() - 1].as_millis()
    )
}

/// The trigger body with `{{ n }}` and `{{ task }}` filled in.
pub(super) fn fill(body: &Value, n: usize, seed: u64) -> Value {
    match body {
        Value::String(s) => {
            let mut s = s.replace("{{ n }}", &n.to_string());
            if s.contains("{{ task }}") {
                let task =
                    crate::content::Content::new(seed, &format!("trigger/{n}")).task_content();
                s = s.replace("{{ task }}", &task);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| fill(v, n, seed)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), fill(v, n, seed)))
                .collect(),
        ),
        other => other.clone(),
    }
}
