//! The cases judged across the run, once the callbacks are in.

use super::super::listener::Callback;
use super::*;
use crate::protocols::connector::listener::Listener;

/// What the rules judged across a run read: the forwards and the callbacks that followed them,
/// wherever they were heard (the probe's own callback endpoint, or a proxy between a real server
/// and the agent).
pub(crate) struct Heard<'a> {
    pub(crate) forwards: &'a [Forward],
    pub(crate) listener: &'a Listener,
    pub(crate) reply_timeout: Duration,
    /// When the agent died, since the run started.
    pub(crate) died: Option<Duration>,
    /// When the run ended, since it started, when it did not wait for the callbacks due (a
    /// proxy's): a session whose callback was still due then is not judged.
    pub(crate) ended: Option<Duration>,
}

/// Judges `case` over `n` things of `of`: passed with none of `problems`, failed naming the
/// first few, skipped saying `unexercised` with nothing to judge.
pub(super) fn over(
    case: &mut CaseResult,
    n: usize,
    of: &str,
    problems: &[String],
    note: String,
    unexercised: impl FnOnce() -> String,
) {
    let evidence = Evidence::new(n as u64, of);
    if problems.is_empty() {
        case.pass_noting(evidence, note, unexercised);
    } else {
        let message = format!("{} of {n} {of}: {}", problems.len(), a_few(problems));
        case.fail_on(evidence, message);
    }
}

/// Why a run had nothing to judge a case about callbacks by.
pub(super) fn no_callbacks(run: &Heard<'_>, answered: usize, timeout: &str) -> String {
    if answered == 0 {
        none_acknowledged(run.forwards)
    } else {
        format!(
            "no callback came within {timeout} for the {answered} acknowledged sessions (see callback.arrives): an agent that POSTs its answer to the callbackUrl it was given exercises this case"
        )
    }
}

pub(crate) fn judge_across(
    run: &Heard<'_>,
    rule: &str,
    case: &mut CaseResult,
    isolated: &[String],
    second: Option<&str>,
    flooded: Option<&str>,
) {
    let seen = Seen::of(run);
    match rule {
        "ack_within_5s" => judge_ack(run, case),
        "callback_arrives" => judge_arrival(run, &seen, case),
        "isolation" => judge_isolation(run, case, isolated),
        "second_message" => judge_second(run, &seen, case, second),
        "no_flood" => judge_flood(run, case, flooded),
        other => match callback_problems(other, &seen.callbacks) {
            Some((problems, note)) => over(
                case,
                seen.callbacks.len(),
                "callbacks",
                &problems,
                note,
                || no_callbacks(run, seen.sessions.len(), &seen.timeout),
            ),
            None => case.skip(format!("no rule {rule}")),
        },
    }
}

/// The acknowledged sessions and the callbacks they got, as the callback rules judge them.
struct Seen {
    /// --reply-timeout, as written in messages.
    timeout: String,
    /// The sessions whose forward was acknowledged (the failing one apart, and those whose
    /// agent died before their callback was due: no evidence either way), sorted.
    sessions: Vec<String>,
    /// Their callbacks, by session.
    callbacks: Vec<(String, Callback)>,
}

impl Seen {
    fn of(run: &Heard<'_>) -> Seen {
        // A session whose callback was still due when the agent died, or when the run ended,
        // has no callback for a reason not its own.
        let cut_short = |f: &Forward| {
            [run.died, run.ended]
                .into_iter()
                .flatten()
                .any(|d| f.ended_at + run.reply_timeout > d)
                && run.listener.callbacks(&f.session).is_empty()
        };
        let mut sessions: Vec<String> = run
            .forwards
            .iter()
            .filter(|f| !f.failing && f.acknowledged() && !cut_short(f))
            .map(|f| f.session.clone())
            .collect();
        sessions.sort();
        sessions.dedup();
        let callbacks = sessions
            .iter()
            .flat_map(|s| {
                run.listener
                    .callbacks(s)
                    .into_iter()
                    .map(move |c| (s.clone(), c))
            })
            .collect();
        Seen {
            timeout: humantime::format_duration(run.reply_timeout).to_string(),
            sessions,
            callbacks,
        }
    }
}

/// `ack_within_5s`: only an acknowledgement (2xx) is timed; a 404 at once is no
/// acknowledgement.
fn judge_ack(run: &Heard<'_>, case: &mut CaseResult) {
    let acked: Vec<&Forward> = run.forwards.iter().filter(|f| f.acknowledged()).collect();
    let late: Vec<String> = acked
        .iter()
        .filter(|f| f.elapsed > FORWARD_TIMEOUT)
        .map(|f| {
            format!(
                "{} acknowledged after {:.1} s (the server gives up at 5 s, and never retries)",
                f.what,
                f.elapsed.as_secs_f64()
            )
        })
        .collect();
    over(
        case,
        acked.len(),
        "forwards acknowledged 2xx",
        &late,
        String::new(),
        || none_acknowledged(run.forwards),
    );
}

/// `callback_arrives`: every acknowledged session called back (or refused unread, said so).
fn judge_arrival(run: &Heard<'_>, seen: &Seen, case: &mut CaseResult) {
    let timeout = &seen.timeout;
    let missing: Vec<String> = seen
        .sessions
        .iter()
        .filter(|s| run.listener.callbacks(s).is_empty())
        .map(|s| match run.listener.refused(s).first() {
            Some(why) => {
                format!("{s}: its callback was refused unread, {why} (raise --max-body to take it)")
            }
            None => format!("{s}: no callback within {timeout}"),
        })
        .collect();
    over(
        case,
        seen.sessions.len(),
        "acknowledged sessions",
        &missing,
        String::new(),
        || none_acknowledged(run.forwards),
    );
}

/// The problems of each callback under a callback rule, and the note of a pass; None for a
/// rule that is not one of them.
fn callback_problems(rule: &str, all: &[(String, Callback)]) -> Option<(Vec<String>, String)> {
    let each = |bad: &dyn Fn(&Callback) -> Option<String>| -> Vec<String> {
        all.iter()
            .filter_map(|(s, c)| bad(c).map(|why| format!("{s}: {why}")))
            .collect()
    };
    let judged = match rule {
        "callback_exact_url" => each(&|c| {
            (!c.exact).then(|| {
                format!(
                    "to {}, given {}: {}",
                    c.path,
                    c.given,
                    url_difference(&c.given, &c.path)
                )
            })
        }),
        "callback_method" => each(&|c| {
            (c.method != "POST").then(|| {
                format!(
                    "{} {} (the document: POST; the kit's endpoint answered 405)",
                    c.method, c.path
                )
            })
        }),
        "callback_not_empty" => each(&|c| {
            c.body
                .iter()
                .all(u8::is_ascii_whitespace)
                .then(|| match c.body.len() {
                    0 => "an empty body".to_string(),
                    n => format!("a whitespace-only body ({n} bytes)"),
                })
        }),
        "callback_raw_text" => {
            let wrapped = each(&|c| {
                serde_json::from_slice::<Value>(&c.body)
                    .is_ok_and(|v| v.is_object())
                    .then(|| format!("a JSON envelope, not raw text: {}", excerpt(&c.body, 80)))
            });
            let mut types: Vec<String> = all
                .iter()
                .map(|(_, c)| c.content_type.clone().unwrap_or_else(|| "(none)".into()))
                .collect();
            types.sort();
            types.dedup();
            return Some((wrapped, format!("Content-Type: {}", types.join(", "))));
        }
        _ => return None,
    };
    Some((judged, String::new()))
}

/// `second_message`: two messages on one session, two callbacks.
fn judge_second(run: &Heard<'_>, seen: &Seen, case: &mut CaseResult, second: Option<&str>) {
    let Some(session) = second else {
        case.skip(
            "the second message was not sent (resilience.second-message did not run its forwards)",
        );
        return;
    };
    let n = run.listener.callbacks(session).len();
    if n >= 2 {
        case.pass(
            Evidence::new(n as u64, "callbacks for two messages on one session"),
            String::new,
        );
    } else {
        case.fail_on(
            Evidence::new(2, "messages on one session"),
            format!(
                "{} for two messages on one session within {}",
                crate::text::count(n as u64, "callbacks"),
                seen.timeout
            ),
        );
    }
}

/// Twenty sessions forwarded at once: each called back at its own URL, and no callback to a
/// session never given.
pub(super) fn judge_isolation(run: &Heard<'_>, case: &mut CaseResult, isolated: &[String]) {
    let evidence = Evidence::new(isolated.len() as u64, "sessions forwarded at once");
    let stray = run.listener.stray();
    let unanswered: Vec<String> = isolated
        .iter()
        .filter(|s| run.listener.callbacks(s).is_empty())
        .map(|s| format!("{s}: no callback"))
        .collect();
    if !stray.is_empty() {
        case.fail_on(
            evidence,
            format!(
                "{} to a session never given (answered 404), e.g. {}",
                crate::text::count(stray.len() as u64, "callbacks"),
                stray[0]
            ),
        );
    } else if !unanswered.is_empty() {
        case.fail_on(
            evidence,
            format!(
                "{} of {} got no callback at their own URL, e.g. {}",
                unanswered.len(),
                crate::text::count(isolated.len() as u64, "sessions"),
                unanswered[0]
            ),
        );
    } else {
        case.pass_noting(
            evidence,
            "each answered at its own URL; none to a session never given",
            || "no session was forwarded".into(),
        );
    }
}

/// What differs between the URL given (`given`: path and query) and the one a callback came to.
pub(super) fn url_difference(given: &str, got: &str) -> String {
    let split = |u: &str| -> (String, Option<String>) {
        match u.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (u.to_string(), None),
        }
    };
    let ((gp, gq), (p, q)) = (split(given), split(got));
    let mut said = Vec::new();
    if p != gp {
        said.push(if gp.ends_with(&p) {
            format!("the path lost its prefix `{}`", &gp[..gp.len() - p.len()])
        } else if super::super::listener::percent_decode(&p)
            == super::super::listener::percent_decode(&gp)
        {
            "the path is encoded differently".to_string()
        } else {
            format!("the path `{p}` is not `{gp}`")
        });
    }
    match (gq, q) {
        (Some(g), None) => said.push(format!("the query string `?{g}` was dropped")),
        (Some(g), Some(q)) if g != q => {
            said.push(format!("the query string is `?{q}`, not `?{g}`"))
        }
        (None, Some(q)) => said.push(format!("a query string `?{q}` was added")),
        _ => {}
    }
    if said.is_empty() {
        "they differ".into()
    } else {
        said.join(", and ")
    }
}

/// A session whose callback endpoint answers 500: each callback (told apart by its body) is
/// tried at most five times; many callbacks, each retried a few times, are no flood.
pub(super) fn judge_flood(run: &Heard<'_>, case: &mut CaseResult, flooded: Option<&str>) {
    let attempts = flooded
        .map(|s| run.listener.callbacks(s))
        .unwrap_or_default();
    // The attempts of each callback, in the order its first came.
    let mut by_body: Vec<(&[u8], Vec<Instant>)> = Vec::new();
    for a in &attempts {
        match by_body.iter_mut().find(|(b, _)| *b == a.body.as_slice()) {
            Some((_, times)) => times.push(a.at),
            None => by_body.push((&a.body, vec![a.at])),
        }
    }
    let Some((_, most)) = by_body.iter().max_by_key(|(_, t)| t.len()) else {
        let watched = Duration::from_secs(3).min(run.reply_timeout);
        case.skip(format!(
            "the agent made no callback within {} to the session whose endpoint answers 500: no retry to count; an agent that calls back (and retries a 5xx) exercises this case",
            humantime::format_duration(watched)
        ));
        return;
    };
    let gaps: Vec<String> = most
        .windows(2)
        .map(|w| format!("{} ms", w[1].duration_since(w[0]).as_millis()))
        .collect();
    let spacing = if gaps.is_empty() {
        String::new()
    } else {
        format!(", {} apart", gaps.join(", "))
    };
    let evidence = Evidence::new(
        by_body.len() as u64,
        format!(
            "callbacks to an endpoint answering 500 ({} attempts)",
            attempts.len()
        ),
    );
    let floods = by_body.iter().filter(|(_, t)| t.len() > 5).count();
    if floods > 0 {
        case.fail_on(
            evidence,
            format!(
                "{floods} of {} tried more than 5 times at a failing endpoint; the most, {} attempts of one callback{spacing}: more than a few retries, a flood",
                crate::text::count(by_body.len() as u64, "callbacks"),
                most.len()
            ),
        );
    } else {
        case.pass_noting(
            evidence,
            format!(
                "{}, at most {} each{spacing}",
                crate::text::count(by_body.len() as u64, "callbacks"),
                crate::text::count(most.len() as u64, "attempts")
            ),
            String::new,
        );
    }
}
