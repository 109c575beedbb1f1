//! What the platform forwards from agent to agent: /challenge's other_analyses (never the
//! receiver's own, never a failed agent's), strings sanitized and truncated, injection payloads,
//! and the latency between phases.

use super::*;

/// The name an other_analyses entry or a key finding gives (empty when none).
pub(super) fn name_of(item: &Value) -> String {
    item.get("agent_name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// /challenge: never the receiver's own analysis, never a failed agent's; forwarded strings clean.
pub(super) fn check_challenge(s: &mut State, receiver: &str, task: &str, body: &Value) {
    let Some(others) = body.get("other_analyses").and_then(Value::as_array) else {
        return;
    };
    // One verdict per request (the case counts /challenge requests), naming the first entry
    // that is the receiver's own.
    let own = others.iter().position(|o| name_of(o) == receiver);
    s.own_analysis.check(own.is_none(), || {
        format!(
            "{receiver} got its own analysis in other_analyses[{}] (task {task})",
            own.unwrap_or_default()
        )
    });
    let task_key = key(task);
    // Judged only where an agent failed /analyze: elsewhere there is no one to leave out.
    if s.tasks.get(&task_key).is_some_and(|t| t.failed > 0) {
        let failed: Vec<String> = others
            .iter()
            .enumerate()
            .filter_map(|(i, other)| {
                let named = name_of(other);
                s.seats
                    .get(&(task_key, key(&named)))
                    .is_some_and(|seat| seat.calls[ANALYZE].first_answer.failed())
                    .then(|| format!("other_analyses[{i}] from {named}"))
            })
            .collect();
        s.failed_excluded.check(failed.is_empty(), || {
            format!(
                "{receiver} got {}, whose /analyze failed (task {task})",
                failed.join(", ")
            )
        });
    }
    for (i, other) in others.iter().enumerate() {
        let from = name_of(other);
        let at = Forward {
            task,
            from: &from,
            receiver,
            endpoint: "challenge",
            field: "other_analyses",
            index: i,
        };
        check_forwarded(s, &at, other);
    }
}

/// An item one agent's analysis became in a request to another agent.
pub(super) struct Forward<'a> {
    pub(super) task: &'a str,
    /// The agent the item names as its author.
    pub(super) from: &'a str,
    pub(super) receiver: &'a str,
    pub(super) endpoint: &'a str,
    pub(super) field: &'a str,
    pub(super) index: usize,
}

/// The strings of an item forwarded from `at.from`'s analysis: no NUL when that analysis held
/// one, none over 50,000 characters when it held such a string. Items from other agents say
/// nothing of sanitization and are not judged.
pub(super) fn check_forwarded(s: &mut State, at: &Forward<'_>, item: &Value) {
    if at.from == at.receiver || at.from.is_empty() {
        return;
    }
    let from = key(at.from);
    let Some(seat) = s.seats.get_mut(&(key(at.task), from)) else {
        return;
    };
    seat.forwarded = true;
    let (nul, long) = (seat.sent_nul, seat.sent_long);
    let sent_prefix = s.long_prefixes.get(&(key(at.task), from)).copied();
    if !nul && !long {
        return;
    }
    if nul {
        s.nul_sources.insert(from);
    }
    if long {
        s.long_sources.insert(from);
    }
    for (path, text) in strings(item) {
        let place = || {
            format!(
                "{} /{}: {}[{}]{} from {} (task {})",
                at.receiver,
                at.endpoint,
                at.field,
                at.index,
                dotted(&path),
                at.from,
                at.task
            )
        };
        if nul {
            s.nul.check(!text.contains('\0'), || {
                format!("{}: a NUL character", place())
            });
        }
        if long {
            let chars = text.chars().count();
            s.field_length.check(chars <= MAX_FIELD_CHARS, || {
                format!("{}: {}", place(), over_limit(text, chars, sent_prefix))
            });
        }
    }
}

/// What a forwarded string of `chars` characters (over the limit) is: the agent's string
/// forwarded whole, or cut at the limit with a marker appended (its first [`MAX_FIELD_CHARS`]
/// characters are those the agent sent, the rest is not), or simply that many characters.
pub(super) fn over_limit(text: &str, chars: usize, sent: Option<Long>) -> String {
    let extra = chars - MAX_FIELD_CHARS;
    let Some(sent) = sent else {
        return format!("{chars} characters");
    };
    if crate::text::fnv1a(text) == sent.whole {
        return format!("{chars} characters: the agent's string forwarded whole, not truncated");
    }
    match text.char_indices().nth(MAX_FIELD_CHARS) {
        Some((cut, _)) if sent.prefix == crate::text::fnv1a(&text[..cut]) && extra <= 200 => {
            format!(
                "50,000 characters (the agent's string, cut there) plus a {extra}-character marker {:?}: {chars} in all, over the limit (the marker counts)",
                crate::text::excerpt_str(&text[cut..], 60)
            )
        }
        _ => format!("{chars} characters"),
    }
}

/// A sanitization case (NUL stripping, field truncation): judged on the strings forwarded from
/// agents whose analyses needed it. `[id, title, spec, what the analyses held, the behaviour
/// that sends it]`.
pub(super) fn sanitized(
    tally: &Tally,
    sources: &HashSet<Key>,
    senders: &HashSet<Key>,
    [id, title, spec, held, behaviour]: [&str; 5],
) -> CaseResult {
    let n = sources.len();
    let what = format!(
        "strings forwarded from {} whose analyses held {held}",
        crate::text::count(n as u64, "agents")
    );
    let unexercised = if senders.is_empty() {
        format!("no agent's analysis held {held}: add an agent with the {behaviour} behaviour and run a deliberation past /analyze")
    } else {
        format!(
            "{} sent {held} in their analyses, and the platform forwarded none of those analyses to another agent: run a deliberation past /analyze in which they take part",
            crate::text::count(senders.len() as u64, "agents")
        )
    };
    let mut case = tally.judged(
        id,
        "sanitization",
        Level::Must,
        title,
        spec,
        &what,
        &unexercised,
    );
    if case.status == Status::Skip {
        case.message = unexercised;
    }
    case
}

pub(super) fn dotted(path: &str) -> String {
    if path.is_empty() || path.starts_with('[') {
        path.to_string()
    } else {
        format!(".{path}")
    }
}

/// Records canaries (placed by some agent) that arrive in a request to another agent.
pub(super) fn scan_canaries(s: &mut State, receiver: &str, endpoint: &str, body: &Value) {
    if s.canaries.is_empty() {
        return;
    }
    for (_, text) in strings(body) {
        for canary in injection::find_canaries(text) {
            let Some(placed) = s.canaries.get(&canary) else {
                continue;
            };
            if placed.from == receiver
                || !s
                    .reappeared_seen
                    .insert((canary.clone(), receiver.to_string()))
            {
                continue;
            }
            let placed = placed.clone();
            s.reappeared.push(Reappearance {
                canary,
                payload: placed.payload,
                family: placed.family,
                from: placed.from,
                to: receiver.to_string(),
                endpoint: endpoint.to_string(),
            });
        }
    }
}

/// platform.injection-forwarded: judged on the payloads the platform had a chance to forward
/// (in an analysis it sent another agent) and on any that reappeared.
pub(super) fn injection_case(s: &State) -> CaseResult {
    let mut case = CaseResult::new(
        "platform.injection-forwarded",
        "sanitization",
        Level::May,
        "prompt-injection payloads sent by one agent are not forwarded verbatim to others",
        "Response Sanitization (scanned for prompt injection patterns)",
    );
    let reappeared: HashSet<&str> = s.reappeared.iter().map(|r| r.canary.as_str()).collect();
    let judged = s
        .canaries
        .iter()
        .filter(|(canary, placed)| {
            reappeared.contains(canary.as_str())
                || placed
                    .analysis
                    .and_then(|seat| s.seats.get(&seat))
                    .is_some_and(|seat| seat.forwarded)
        })
        .count() as u64;
    let evidence = Evidence::new(
        judged,
        "injection payloads in analyses forwarded to other agents",
    );
    if s.reappeared.is_empty() {
        let sent = s.canaries.len();
        case.pass_noting(
            evidence,
            format!("{} in analyses the platform forwarded; none reappeared in a request to another agent", crate::text::count(judged, "payloads")),
            || if sent == 0 {
                "no agent of the fleet sent an injection payload: add an agent with the injection behaviour and run a deliberation past /analyze".into()
            } else {
                format!("{} sent, but the platform forwarded no analysis that carried one (no /challenge or /vote named the agents that sent them): run a deliberation past /analyze in which they take part", crate::text::count(sent as u64, "payloads"))
            },
        );
        return case;
    }
    let mut families: Vec<&str> = s.reappeared.iter().map(|r| r.family.as_str()).collect();
    families.sort();
    families.dedup();
    let mut message = format!(
        "forwarded unsanitized: {} of {} reappeared in requests to other agents (families: {})",
        reappeared.len(),
        crate::text::count(s.canaries.len() as u64, "payloads"),
        families.join(", ")
    );
    for r in s.reappeared.iter().take(10) {
        message.push_str(&format!(
            "\n  {} ({}, {}): from {} to {} in /{}",
            r.canary, r.payload, r.family, r.from, r.to, r.endpoint
        ));
    }
    case.fail_on(evidence, message);
    case
}

/// What the platform adds between phases: from the end of its wait for one phase's answers to
/// its first request of the next phase, per task (median and max over tasks).
pub(super) fn latency_case(s: &State) -> CaseResult {
    let mut case = CaseResult::new(
        "platform.phase-latency",
        "deliberation",
        Level::May,
        "latency the platform adds between phases (from the last answer it waited for to its next request)",
        "Timeouts (informational)",
    );
    let mut lines = Vec::new();
    let mut measured = 0;
    // Each phase to the next one the task reached: a platform that skips /challenge (or whose
    // challenges all failed) goes from /analyze to /vote, and that is a transition too.
    for (i, j) in [(ANALYZE, CHALLENGE), (CHALLENGE, VOTE), (ANALYZE, VOTE)] {
        let (from, to) = (PHASES[i], PHASES[j]);
        let mut gaps: Vec<f64> = s
            .tasks
            .values()
            .filter(|t| {
                t.phases[i].begun()
                    && t.phases[j].begun()
                    && (i + 1..j).all(|between| !t.phases[between].begun())
            })
            .map(|t| {
                t.phases[j]
                    .first_request
                    .saturating_sub(t.phases[i].wait_ended) as f64
                    / 1e3
            })
            .collect();
        if gaps.is_empty() {
            continue;
        }
        measured += gaps.len() as u64;
        gaps.sort_by(f64::total_cmp);
        lines.push(format!(
            "{from} → {to}: median {:.1} ms, max {:.1} ms over {}",
            gaps[gaps.len() / 2],
            gaps[gaps.len() - 1],
            crate::text::count(gaps.len() as u64, "tasks")
        ));
    }
    case.pass_noting(
        Evidence::new(measured, "phase transitions"),
        lines.join("\n"),
        || "no task reached two of the phases (/analyze, /challenge, /vote): run a deliberation past /analyze (at least two agents with usable analyses)".into(),
    );
    case
}
