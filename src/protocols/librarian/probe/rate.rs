//! The `rate.*` cases: the per-agent rate limit, its Retry-After, and its isolation between
//! agents.

use std::time::Instant;

use crate::protocols::librarian::model::{says_when_to_return, LIMITS};

use super::client::{Client, Gate, NoAnswer};
use super::verdict::{says_nothing, Verdict};

pub(super) async fn rate_limit(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    let a = match c.asker("QUERY").await {
        Ok(a) => a,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    let started = Instant::now();
    let mut limited = None;
    let count = LIMITS.per_minute as usize + 1;
    for i in 0..count {
        let body = c.build(a, "QUERY");
        let got = c.request("a QUERY of the burst", a, &body).await?;
        if got.status == 429 {
            c.limited_with = Some(got.headers.clone());
            limited = Some((i + 1, got));
            break;
        }
    }
    let elapsed = started.elapsed();
    Ok(match limited {
        Some((n, got)) => {
            let header = got.retry_after.as_deref().map(|v| format!(", Retry-After: {v}")).unwrap_or_else(|| ", no Retry-After header (SHOULD)".into());
            Verdict::held(n, "requests of one agent's burst", format!("429 at request {n} of {count} within {} s{header}", elapsed.as_secs()))
        }
        None => Verdict::broken(format!("{count} requests in {:.1} s from one agent, none answered 429 (rate_limit: 60/minute per agent)", elapsed.as_secs_f64())),
    })
}

/// Whether the rate group's 429 said when to come back.
pub(super) fn retry_after(c: &Client<'_>) -> Verdict {
    let Some(headers) = &c.limited_with else {
        return Verdict::skip(
            "not judged: no 429 to read; rate.limit's burst exercises it against a Librarian \
             that limits an agent at 60 requests a minute",
        );
    };
    match says_when_to_return(headers) {
        Some((n, v)) => Verdict::held(1, "429 answers", format!("{n}: {v}")),
        None => Verdict::broken(
            "the 429 carries neither Retry-After nor rate-limit headers: the client cannot tell when to come back",
        ),
    }
}

pub(super) async fn rate_isolation(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    if let Err(why) = c.opened(Gate::Request("QUERY")).await {
        return Ok(Verdict::unjudged(why));
    }
    // Agent A (the burst's) and another, B, that may ask a QUERY too.
    let (a, b) = match c.able("QUERY").and_then(|a| {
        c.able_with("a QUERY (a second agent)", Some(a), |x| {
            c.template(x, "QUERY", 0)
        })
        .map(|b| (a, b))
    }) {
        Ok(found) => found,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    // Agent A at its limit (the burst again, if rate.limit did not run).
    let mut limited = false;
    for _ in 0..=LIMITS.per_minute {
        let body = c.build(a, "QUERY");
        if c.request("a QUERY of the burst", a, &body).await?.status == 429 {
            limited = true;
            break;
        }
    }
    if !limited {
        return Ok(Verdict::skip(
            "not judged: the first agent was never limited (see rate.limit), so there was no \
             limit to be isolated from; a Librarian that limits at 60 a minute exercises it",
        ));
    }
    let body = c.build(b, "QUERY");
    let got = c.request("the second agent's QUERY", b, &body).await?;
    let other = c.agent(b).map(|(a, _)| a.clone()).unwrap_or_default();
    Ok(if got.status == 429 {
        Verdict::fail(format!("{other} was answered 429 while only the first agent was over its limit: the limit is not per agent"), &got)
    } else if got.decided() {
        Verdict::held(
            1,
            "requests of a second agent while the first was limited",
            format!(
                "{other}: {} while the first agent is limited",
                got.decision()
            ),
        )
    } else {
        says_nothing(
            &format!("{other}'s QUERY"),
            &format!("answered {}, not a LibrarianResponse", got.decision()),
            &got,
        )
    })
}
