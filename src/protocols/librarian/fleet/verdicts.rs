//! The verdicts on what a run gathered (live or recorded): how each answer stands to its
//! client's behaviour, tallied per rule and per client, and the cases.

use super::*;
use crate::protocols::librarian::answers::{ByClient, ServerAnswers};

/// How one answer stands to what its client's behaviour calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Judged {
    Held,
    Broken,
    /// The answer says nothing of the fault (why, for the report).
    Nothing(&'static str),
}

/// A 429 to a client that is not about the rate: the server limited the agent before it
/// looked at the request.
pub(super) const LIMITED: &str = "answered 429 (the rate limit, before the request was looked at)";
/// A 401/403 to a request no registry says its agent may make.
pub(super) const UNTOLD: &str =
    "answered 401/403 to a request no registry says its agent may make, which \
                      cannot be told from a wrong refusal; give --registry (the server's \
                      config/agents.yaml)";
/// A conforming client refused a request its agent may not make.
pub(super) const NOT_PERMITTED: &str = "refused 401/403 a request its agent may not make (a right \
                             answer, no service to judge); speak for an agent the registry \
                             allows to read";
/// Injected text in a request its agent may make anyway.
pub(super) const NOTHING_FORBIDDEN: &str =
    "answers to injected text in a request no registry forbids \
                                 its agent, so an approval says nothing of the injection; \
                                 give --registry, for an agent whose allowed_targets or \
                                 capabilities are limited";

/// How `o` stands to what a client of `behavior` must get. A 404 or 405 is no answer of an
/// endpoint that exists: it never holds. A refusal for authorization (401/403) is a right
/// answer to a request the client's agent may not make, and with no registry to say, no
/// answer at all to judge.
pub(super) fn judged(behavior: &str, o: &Outcome) -> Judged {
    let s = o.status.unwrap_or(0);
    let ok = (200..300).contains(&s);
    let approved = ok && o.decision.as_deref() == Some("approved");
    let refusal = (400..500).contains(&s) && !matches!(s, 404 | 405 | 429);
    let about_rate = matches!(behavior, "conforming" | "flood" | "burst");
    let about_credentials = matches!(
        behavior,
        "wrong-token" | "foreign-agent-id" | "unregistered-agent-id"
    );
    if s == 429 && !about_rate {
        return Judged::Nothing(LIMITED);
    }
    if matches!(s, 401 | 403) && !about_credentials {
        match o.permitted {
            Some(false) if behavior == "conforming" => return Judged::Nothing(NOT_PERMITTED),
            Some(false) => return Judged::Held,
            None => return Judged::Nothing(UNTOLD),
            Some(true) => {}
        }
    }
    if behavior == "injection" && o.permitted != Some(false) && o.status.is_some() {
        return Judged::Nothing(NOTHING_FORBIDDEN);
    }
    let held = match behavior {
        "conforming" => ok,
        "flood" | "burst" => ok || s == 429,
        "oversized" | "missing-fields" => refusal || (ok && !approved),
        "malformed-json" => refusal,
        _ if about_credentials => s == 401 || s == 403,
        // The answer, not its status: a forbidden target approved is the fault.
        "injection" => refusal || (ok && o.decision.is_some() && !approved),
        _ => ok || refusal,
    };
    if held {
        Judged::Held
    } else {
        Judged::Broken
    }
}

/// The most requests of `outcomes` sent within any one minute.
pub(super) fn most_in_a_minute(outcomes: &[Outcome]) -> usize {
    let mut at: Vec<Instant> = outcomes.iter().map(|o| o.sent).collect();
    at.sort();
    let mut first = 0;
    let mut most = 0;
    for last in 0..at.len() {
        while at[last].duration_since(at[first]) >= Duration::from_secs(60) {
            first += 1;
        }
        most = most.max(last - first + 1);
    }
    most
}

/// One outcome as a failure example shows it (the case names its client).
pub(super) fn shown(o: &Outcome) -> String {
    match (&o.status, &o.error) {
        (Some(s), _) => format!(
            "answered {s}{}",
            o.decision
                .as_ref()
                .map(|d| format!(" {d}"))
                .unwrap_or_default()
        ),
        (None, Some(e)) => e.clone(),
        _ => "no answer".into(),
    }
}

/// What every answer of the run tells, tallied per rule.
#[derive(Default)]
pub(super) struct Tallies {
    /// Every answer, by the rules any server's answer is held to (shared with the proxy).
    server: ServerAnswers,
    refusals: ByClient,
    flood: Tally,
    conforming: ByClient,
    /// Answered requests per kind of client (2xx only for `conforming`, whose p99 is a case).
    latency: BTreeMap<String, Vec<Duration>>,
}

impl Tallies {
    /// `live`: whether the server answered as a Librarian at all (some request got a
    /// LibrarianResponse); until it has, no refusal, limit or latency of it means anything.
    pub(super) fn of(fleet: &Fleet, results: &[Vec<Outcome>], live: bool) -> Tallies {
        let mut t = Tallies::default();
        for (c, outcomes) in fleet.clients.iter().zip(results) {
            for o in outcomes {
                t.add(c, o, live);
            }
            if c.behavior == "flood"
                && live
                && most_in_a_minute(outcomes) > LIMITS.per_minute as usize
            {
                let limited = outcomes.iter().any(|o| o.status == Some(429));
                t.flood.check(limited, || {
                    format!(
                        "{} sent {} requests in {} and was never answered 429",
                        c.name,
                        outcomes.len(),
                        humantime::format_duration(fleet.duration)
                    )
                });
            }
        }
        t
    }

    pub(super) fn add(&mut self, c: &Client, o: &Outcome, live: bool) {
        let answered = o.status.is_some_and(|s| s < 500);
        // A 5xx or no answer breaks the rule whatever else the server does.
        if live || !answered {
            self.server.no5xx.check(&c.label(), answered, || shown(o));
        }
        if live {
            self.judge_answer(c, o);
        }
        let verdict = judged(&c.behavior, o);
        if c.behavior == "conforming" {
            // Judged even when nothing else is: a conforming client answered 404 is the
            // server's failure to serve the protocol at all.
            match verdict {
                Judged::Nothing(why) => self.conforming.unjudged(&c.label(), why),
                v => self
                    .conforming
                    .check(&c.label(), v == Judged::Held, || shown(o)),
            }
            if verdict == Judged::Held {
                self.latency
                    .entry(c.behavior.clone())
                    .or_default()
                    .push(o.elapsed);
            }
            return;
        }
        if !live {
            return;
        }
        match verdict {
            Judged::Nothing(why) => self.refusals.unjudged(&c.label(), why),
            v => self.refusals.check(&c.label(), v == Judged::Held, || {
                let want = CLIENT_BEHAVIORS
                    .iter()
                    .find(|b| b.name == c.behavior)
                    .map_or("", |b| b.expects);
                format!("{}; expected {want}", shown(o))
            }),
        }
        if o.status.is_some() {
            self.latency
                .entry(c.behavior.clone())
                .or_default()
                .push(o.elapsed);
        }
    }
}

impl Tallies {
    /// The answer itself, whichever client got it and whatever its fault: a 2xx is a
    /// LibrarianResponse of the schema, meeting the document's expectations; a rejection
    /// names its violations; a 429 says when to come back.
    pub(super) fn judge_answer(&mut self, c: &Client, o: &Outcome) {
        self.server.judge(
            &c.label(),
            o.status.unwrap_or(0),
            o.judged.as_ref(),
            o.come_back.as_ref(),
        );
    }
}

/// The case that carries a server that is down.
pub(super) const DOWN_CASE: &str = "fleet.no-5xx";

/// A server that is down, checked before the fleet: one failure ([`DOWN_CASE`], naming the
/// server and why), every other case a skip that says why it was not judged. No client ran.
pub(super) fn mark_down(fleet: &Fleet, cases: &mut [CaseResult], error: &str) {
    let url = fleet.target();
    for c in cases {
        if c.id == DOWN_CASE {
            c.fail_on(
                Evidence::new(1, "requests before the fleet (GET /agent/capabilities)"),
                format!(
                    "the Librarian at {url} is down: GET /agent/capabilities got no answer \
                     ({error}); no client was started. Is it running, and is librarian.url (or \
                     --platform-url) its address?"
                ),
            );
        } else {
            c.skip(format!(
                "not judged: the Librarian at {url} is down (see {DOWN_CASE}); a Librarian \
                 answering at {url} exercises this case"
            ));
        }
    }
}

/// The verdicts on what a run gathered (live or recorded).
pub(super) fn judge(fleet: &Fleet, info: RunInfo, ran: &exchanges::Ran) -> Report {
    let asker = asker(fleet);
    let first = exchanges::unserved(&ran.before);
    let down = match &first {
        Err(Unserved::Down(e)) => Some(e.clone()),
        _ => None,
    };
    let before = asker.map(|_| first);
    let (results, cut) = exchanges::outcomes(fleet, ran);
    let live = results
        .iter()
        .flatten()
        .any(|o| o.status.is_some_and(|s| (200..300).contains(&s)) && o.decision.is_some());
    let t = Tallies::of(fleet, &results, live);
    let everyone: Vec<(&Client, &Vec<Outcome>)> = fleet.clients.iter().zip(&results).collect();
    // A server that answered nothing but 429s is a Librarian whose limit is spent (an earlier
    // probe or fleet used it): pointing elsewhere would not help, waiting would.
    // One that refused every request for its credentials was never shown a token it takes: that
    // is said once, by fleet.conforming-served; the cases with nothing to judge rest on it.
    let dead = match (rate_limit_spent(&everyone), credentials_refused(&everyone)) {
        (Some(spent), _) => format!(
            "no client got a LibrarianResponse (a 2xx with a decision) from POST \
             /agent/request: it answered 429, {spent}"
        ),
        (None, Some((refused, _))) => format!(
            "no client got a LibrarianResponse (a 2xx with a decision) from POST \
             /agent/request: {refused}, for the clients' tokens (see fleet.conforming-served)"
        ),
        (None, None) => "no client got a LibrarianResponse (a 2xx with a decision) from POST \
                 /agent/request, so the server never answered as a Librarian; point \
                 --platform-url at the Librarian's base URL"
            .to_string(),
    };
    let or_dead = |reason: &str| {
        if live {
            reason.to_string()
        } else {
            dead.clone()
        }
    };
    let g = "fleet";
    let [no5xx, valid, expected, retry_after] = t.server.cases([
        &or_dead("no client sent a request: give the fleet clients and a duration"),
        &or_dead("no client got a 2xx answer: a Librarian that answers the conforming clients exercises this case"),
        &or_dead("no client got a LibrarianResponse or a rejection: a Librarian that answers the conforming clients exercises this case"),
        &or_dead("no client was answered 429: a `behavior: flood` client over 60 requests a minute exercises it"),
    ]);
    let mut cases = vec![
        no5xx,
        t.refusals.case("fleet.refusals", Level::Must, "each misbehaving request gets the answer its fault calls for (429, 401/403, a refusal; a refusal for authorization to a request its agent may not make)", "REST API Endpoints; Validation Rules; Protocol Settings: limits; Troubleshooting: Agent not authorized", "misbehaving requests", &or_dead("the fleet has no misbehaving client whose answers say something of its fault (a 429 says nothing of a malformed request): add one (oversized, missing-fields, malformed-json, wrong-token, foreign-agent-id, unregistered-agent-id, slow-upload, injection, burst), speaking for an agent that is not flooding")),
        valid,
        expected,
        retry_after,
        t.flood.judged("fleet.flood-limited", g, Level::Must, "a client over 60 requests a minute is answered 429", "REST API Endpoints: rate_limit: 60/minute per agent", "flooding clients", &or_dead("no client sent more than 60 requests within a minute: add a `behavior: flood` client with a rate over 60/min and a duration (or request count) that lets it send more than 60")),
        refusals_said(
            t.conforming.case("fleet.conforming-served", Level::Must, "well-behaved clients are answered 2xx (never limited) while the others misbehave", "REST API Endpoints: rate_limit per agent", "conforming requests", "the fleet has no conforming client that sent a request its agent may make: add one (`behavior: conforming`), speaking for an agent of its own"),
            &everyone,
        ),
        p99_case(&t.latency, &conforming_answers(fleet, &results)),
        after_case(asker, before, ran.after.as_ref().map(exchanges::unserved)),
        latency_case(&t.latency, live),
    ];
    if let Some(error) = down {
        mark_down(fleet, &mut cases, &error);
    }
    if let Some((alive, why)) = ran.alive.clone() {
        for c in cases
            .iter_mut()
            .filter(|c| c.id == "fleet.capabilities-after")
        {
            c.skip(why.clone());
        }
        cases.insert(0, alive);
    }
    let mut report = info.report(
        cases,
        &crate::text::Redactor::new(
            fleet
                .clients
                .iter()
                .map(|c| c.token.clone())
                .collect::<Vec<_>>(),
        ),
    );
    if cut > 0 {
        report.notes.push(format!(
            "{} the Librarian's death cut {} not judged (see {ALIVE})",
            crate::text::count(cut as u64, "requests"),
            if cut == 1 { "is" } else { "are" }
        ));
    }
    report
}

/// What the requests of `outcomes` got, counted: `3 answered 401, 2 got no answer`.
pub(super) fn counted(outcomes: &[Outcome]) -> String {
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for o in outcomes {
        let key = match o.status {
            Some(s) => format!("answered {s}"),
            None => "got no answer".into(),
        };
        *by.entry(key).or_default() += 1;
    }
    by.iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The answers a refusal's cause is read from: the conforming clients' (or, with no conforming
/// client, every client's), each with its client.
pub(super) fn judged_answers<'a>(
    clients: &[(&'a Client, &'a Vec<Outcome>)],
) -> Vec<(&'a Client, &'a Outcome)> {
    let conforming = clients.iter().any(|(c, _)| c.behavior == "conforming");
    clients
        .iter()
        .filter(|(c, _)| !conforming || c.behavior == "conforming")
        .flat_map(|(c, outcomes)| outcomes.iter().map(move |o| (*c, o)))
        .collect()
}

/// When every answer the conforming clients got that was not a 2xx is a 429 (or, with no
/// conforming client, every answer of `clients`): what that means, and when to come back, from
/// the last Retry-After (or rate-limit header) the server sent — "the agent's rate limit is
/// spent (claude-3: …): wait 42 s (the Retry-After it sent) or use another agent". None when
/// anything else came back (that is the server's own failure, said as such).
pub(super) fn rate_limit_spent(clients: &[(&Client, &Vec<Outcome>)]) -> Option<String> {
    let refused: Vec<(&Client, &Outcome)> = judged_answers(clients)
        .into_iter()
        .filter(|(_, o)| !o.status.is_some_and(|s| (200..300).contains(&s)))
        .collect();
    if refused.is_empty() || refused.iter().any(|(_, o)| o.status != Some(429)) {
        return None;
    }
    let mut agents: Vec<&str> = refused.iter().map(|(c, _)| c.agent.as_str()).collect();
    agents.sort_unstable();
    agents.dedup();
    let last = refused
        .iter()
        .max_by_key(|(_, o)| o.sent)
        .and_then(|(_, o)| o.come_back.clone().flatten());
    let wait = match last.as_deref().and_then(|h| h.split_once(": ")) {
        Some((name, value)) if name.eq_ignore_ascii_case("retry-after") => {
            match value.trim().parse::<u64>() {
                Ok(seconds) => format!("wait {seconds} s (the Retry-After it sent)"),
                Err(_) => format!("wait until {} (the Retry-After it sent)", value.trim()),
            }
        }
        Some((name, value)) => format!("wait as its {name}: {value} says"),
        None => "wait for the limit's window to pass (a minute: the 429s said not when)".into(),
    };
    let whose = if agents.len() == 1 {
        "agent's"
    } else {
        "agents'"
    };
    Some(format!(
        "the {whose} rate limit is spent ({}: an earlier probe or fleet on this server may have \
         used it): {wait} or use another agent",
        agents.join(", ")
    ))
}

/// When every answer the conforming clients got (or, with no conforming client, every client)
/// was a refusal for credentials, 401 or 403, and none a 2xx: what the server did (`it refused
/// every request 401 (claude-3)`) and what that means — the tokens are not this server's, which
/// no rule of the server's is judged on.
pub(super) fn credentials_refused(
    clients: &[(&Client, &Vec<Outcome>)],
) -> Option<(String, String)> {
    let answers = judged_answers(clients);
    if answers.is_empty()
        || !answers
            .iter()
            .all(|(_, o)| matches!(o.status, Some(401 | 403)))
    {
        return None;
    }
    let mut agents: Vec<&str> = answers.iter().map(|(c, _)| c.agent.as_str()).collect();
    agents.sort_unstable();
    agents.dedup();
    let mut statuses: Vec<u16> = answers.iter().filter_map(|(_, o)| o.status).collect();
    statuses.sort_unstable();
    statuses.dedup();
    let statuses: Vec<String> = statuses.iter().map(u16::to_string).collect();
    let refused = format!(
        "it refused every request {} ({})",
        statuses.join("/"),
        agents.join(", ")
    );
    let meaning = if statuses.iter().any(|s| s == "403") {
        "the tokens are wrong for this server, or their agents not allowed there"
    } else {
        "the tokens are wrong for this server"
    };
    Some((refused, meaning.to_string()))
}

/// `fleet.conforming-served` says what its every refusal meant: failed, when each was a 429
/// (the limit is spent); when each was a refusal for credentials, the tokens — a skip when no
/// registry could tell a wrong refusal from a right one, a note on a failure.
pub(super) fn refusals_said(
    mut case: CaseResult,
    clients: &[(&Client, &Vec<Outcome>)],
) -> CaseResult {
    use crate::report::Status;
    if case.status == Status::Fail {
        if let Some(spent) = rate_limit_spent(clients) {
            case.message = format!("{}\n  every refusal was a 429: {spent}", case.message);
        }
    }
    if let Some((refused, meaning)) = credentials_refused(clients) {
        let fix = "give each client a token this server issued for its agent (the preset's \
                   TOKEN_1, TOKEN_2)";
        match case.status {
            Status::Fail => {
                case.message = format!("{}\n  {refused}: {meaning}? {fix}", case.message);
            }
            Status::Skip => case.skip(format!(
                "not judged: {refused}: {meaning}; {fix}, and a Librarian that serves the \
                 conforming clients exercises this case"
            )),
            _ => {}
        }
    }
    case
}

/// The fleet's conforming clients, and for each one whose requests got no 2xx answer (so
/// nothing of it to time), what they got instead.
pub(super) struct ConformingAnswers {
    clients: usize,
    unanswered: Vec<String>,
}

pub(super) fn conforming_answers(fleet: &Fleet, results: &[Vec<Outcome>]) -> ConformingAnswers {
    let conforming: Vec<(&Client, &Vec<Outcome>)> = fleet
        .clients
        .iter()
        .zip(results)
        .filter(|(c, _)| c.behavior == "conforming")
        .collect();
    let unanswered = conforming
        .iter()
        .filter(|(_, o)| {
            !o.iter()
                .any(|o| o.status.is_some_and(|s| (200..300).contains(&s)))
        })
        .map(|(c, o)| match o.len() {
            0 => format!("{}: no request sent", c.label()),
            n => format!("{}: {n} requests, {}", c.label(), counted(o)),
        })
        .collect();
    ConformingAnswers {
        clients: conforming.len(),
        unanswered,
    }
}

/// The p99 of conforming clients' 2xx answers, held to the response timeout.
pub(super) fn p99_case(
    latency: &BTreeMap<String, Vec<Duration>>,
    answers: &ConformingAnswers,
) -> CaseResult {
    let mut case = CaseResult::new(
        "fleet.conforming-latency",
        "fleet",
        Level::Must,
        "well-behaved clients are answered within 10 s at p99 while the others misbehave",
        "Protocol Settings: timeouts.response",
    );
    let mut l = latency.get("conforming").cloned().unwrap_or_default();
    l.sort();
    let evidence = Evidence::new(l.len() as u64, "2xx answers to conforming clients");
    let p = percentile(&l, 0.99);
    // The conforming clients that gave nothing to time, said on a pass too: their share of the
    // p99 is missing.
    let also = if answers.unanswered.is_empty() {
        String::new()
    } else {
        format!(
            "; no 2xx answer to time from {}",
            answers.unanswered.join("; ")
        )
    };
    if !l.is_empty() && p > LIMITS.response {
        case.fail_on(
            evidence,
            format!(
                "p99 {} ms over {} answers (the response timeout is 10 s){also}",
                p.as_millis(),
                l.len()
            ),
        );
    } else {
        case.pass_noting(
            evidence,
            format!("p99 {} ms over {} answers{also}", p.as_millis(), l.len()),
            || match answers.clients {
                0 => "not judged: the fleet has no conforming client to time: add one \
                      (`behavior: conforming`), speaking for an agent of its own"
                    .into(),
                _ => format!(
                    "not judged: no conforming client got a 2xx answer to time (see \
                     fleet.conforming-served): {}; a Librarian that answers them 2xx \
                     exercises this case",
                    answers.unanswered.join("; ")
                ),
            },
        );
    }
    case
}

/// Whether the server, which answered GET /agent/capabilities before the fleet, still does.
pub(super) fn after_case(
    asker: Option<&Client>,
    before: Option<Result<(), Unserved>>,
    after: Option<Result<(), Unserved>>,
) -> CaseResult {
    let mut case = CaseResult::new(
        "fleet.capabilities-after",
        "fleet",
        Level::Must,
        "after the fleet, the server still answers GET /agent/capabilities",
        "REST API Endpoints: /agent/capabilities",
    );
    match (asker, before) {
        (Some(_), Some(Ok(()))) => match after {
            None => {
                case.skip("not judged: GET /agent/capabilities was not asked again after the fleet")
            }
            Some(Ok(())) => case.pass_noting(
                Evidence::new(1, "capabilities requests after the fleet"),
                "200, as before the fleet",
                String::new,
            ),
            Some(Err(e)) => case.fail(format!("answered 200 before the fleet, then: {e}")),
        },
        (Some(_), Some(Err(e))) => case.skip(format!(
            "not judged: GET /agent/capabilities {e} before the fleet already, so there is no \
             \"still\" to judge; point the fleet at a Librarian that serves /agent/capabilities"
        )),
        _ => case.skip(
            "not judged: no conforming client's token to ask with; add a `behavior: \
             conforming` client",
        ),
    }
    case
}

/// Latency per kind of client, for the reader (MAY).
pub(super) fn latency_case(latency: &BTreeMap<String, Vec<Duration>>, live: bool) -> CaseResult {
    let mut case = CaseResult::new(
        "fleet.latency",
        "fleet",
        Level::May,
        "latency per kind of client (p50 / p90 / p99)",
        "Protocol Settings: timeouts",
    );
    let lines: Vec<String> = latency
        .iter()
        .map(|(kind, l)| {
            let mut l = l.clone();
            l.sort();
            format!(
                "{kind}: {} answers, p50 {} ms, p90 {} ms, p99 {} ms",
                l.len(),
                percentile(&l, 0.5).as_millis(),
                percentile(&l, 0.9).as_millis(),
                percentile(&l, 0.99).as_millis()
            )
        })
        .collect();
    let timed = if live {
        latency.values().map(Vec::len).sum::<usize>()
    } else {
        0
    };
    case.pass_noting(
        Evidence::new(timed as u64, "answers timed"),
        lines.join("\n"),
        || {
            "not judged: no answer of a server that answered as a Librarian to time; point the \
             fleet at a Librarian"
                .into()
        },
    );
    case
}
