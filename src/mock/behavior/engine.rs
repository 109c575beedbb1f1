//! The engine's own behaviours ([`ENGINE`]): those it plays for agents of any protocol, below
//! their answers (timing, encoding, status, the wire), and the modifiers; each with its parse.

use std::time::Duration;

use super::{Behavior, BehaviorError, Dist, Kind, LengthLie, Modifier, Plays, ResetPoint};
use crate::mock::args::{unknown_variant, Args};
use crate::mock::encoding::Malformed;

/// The engine's behaviours, for agents of any protocol, each with a one-line description and
/// the platform rule it exercises: the HTTP ones, then the modifiers. (A transport's quirks, and
/// the content behaviours, are in the table of the protocol whose agents have them.)
pub const ENGINE: &[Behavior] = &[
    Behavior::engine(
        "conforming",
        "the reference agent: valid answers",
        "200 with valid JSON: used in deliberation",
        |_| Ok(Kind::Conforming),
    ),
    Behavior::engine(
        "slow",
        "delays the first byte (ttfb=DIST) and the body (body=DIST); DIST: 2s, uniform(1s,3s), normal(2s,500ms), lognormal(2s,0.5)",
        "Timeouts (120 s, configurable)",
        slow,
    ),
    Behavior::engine(
        "hang",
        "reads the request, never answers",
        "Timeouts: marked unhealthy, excluded",
        |_| Ok(Kind::Hang),
    ),
    Behavior::engine(
        "blackhole",
        "accepts the connection, never reads (on its own port; under a shared port: after the request head)",
        "Timeouts",
        |_| Ok(Kind::Blackhole),
    ),
    Behavior::engine(
        "http-error",
        "answers a status (default 500; 429 and 503 with Retry-After) with a JSON error body",
        "Error Handling: 4xx/5xx excluded",
        http_error,
    ),
    Behavior::engine(
        "malformed-json",
        "variants: truncated, trailing-garbage, single-quotes, nan, empty, html (status 200), array, duplicate-keys; nan (a bare NaN where a number goes) finds a platform whose JSON parser takes NaN and whose own HTTP client then cannot serialise it: the later phases vanish for every agent, not only this one (a failure naming them, not skips)",
        "Error Handling: 200 with invalid JSON excluded",
        malformed_json,
    ),
    Behavior::engine(
        "oversized-body",
        "a body of size=BYTES (default 6MB) or endless",
        "Response Size Limits: 5 MB",
        oversized_body,
    ),
    Behavior::engine(
        "invalid-utf8",
        "bytes that are not UTF-8 inside a string",
        "Error Handling: invalid JSON",
        |_| Ok(Kind::InvalidUtf8),
    ),
    Behavior::engine(
        "reset",
        "RST (SO_LINGER 0) before-headers, after-headers, or mid-body=N",
        "Error Handling: never crash on one agent",
        |a| Ok(Kind::Reset(reset_point(a)?)),
    ),
    Behavior::engine(
        "close-mid-body",
        "closes (FIN) after at=N body bytes (default half)",
        "Error Handling",
        close_mid_body,
    ),
    Behavior::engine(
        "garbage-then-close",
        "non-HTTP bytes, then close",
        "Error Handling",
        |_| Ok(Kind::GarbageThenClose),
    ),
    Behavior::engine(
        "dribble",
        "the whole answer at N bytes per second (default 10)",
        "Timeouts: a total deadline, not per byte",
        dribble,
    ),
    Behavior::engine(
        "content-length-mismatch",
        "Content-Length says more (default) or less than the body",
        "Error Handling",
        content_length_mismatch,
    ),
    Behavior::engine(
        "wrong-content-type",
        "a valid JSON body labelled text/plain (or the given type)",
        "clients that check Content-Type",
        |a| Ok(Kind::WrongContentType(a.get("type", true).unwrap_or("text/plain").to_string())),
    ),
    Behavior {
        name: "flaky",
        what: "modifier: misbehave with probability P (default 0.5), else conform",
        rule: "intermittent failures",
        expects: "",
        plays: Plays::Modifier(flaky),
    },
    Behavior {
        name: "fail-first",
        what: "modifier: misbehave on the first N requests per endpoint (default 1), then conform",
        rule: "retries and recovery",
        expects: "",
        plays: Plays::Modifier(|a| Ok(Modifier::FailFirst(a.number("n", true, 1)?))),
    },
];

fn slow(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    let ttfb = a.get("ttfb", true).map(Dist::parse).transpose()?;
    let body = a.get("body", false).map(Dist::parse).transpose()?;
    Ok(Kind::Slow {
        ttfb: ttfb.unwrap_or(Dist::Fixed(Duration::from_secs(5))),
        body: body.unwrap_or(Dist::Fixed(Duration::ZERO)),
    })
}

fn http_error(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    let item = a.item();
    let status: u16 = a.number("status", true, 500)?;
    if !(400..=599).contains(&status) {
        return Err(BehaviorError::item(
            item,
            format!("status {status} is not a 4xx or 5xx"),
        ));
    }
    let default_retry = matches!(status, 429 | 503).then_some(30);
    let retry_after =
        match a.get("retry_after", false) {
            None => default_retry,
            Some("none") => None,
            Some(v) => Some(v.parse().map_err(|_| {
                BehaviorError::item(item, format!("retry_after={v:?} is not seconds"))
            })?),
        };
    Ok(Kind::HttpError {
        status,
        retry_after,
    })
}

fn malformed_json(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    let v = a.get("variant", true).unwrap_or("truncated");
    Ok(Kind::MalformedJson(Malformed::parse(v).ok_or_else(
        || unknown_variant(a.item(), v, Malformed::ALL.iter().map(|m| m.name())),
    )?))
}

fn oversized_body(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    let item = a.item();
    Ok(match a.get("size", true) {
        Some("endless") => Kind::OversizedBody {
            bytes: 0,
            endless: true,
        },
        size => Kind::OversizedBody {
            bytes: match size {
                None => 6_000_000,
                Some(s) => crate::units::parse_bytes(s)
                    .map_err(|e| BehaviorError::item(item, format!("size={s:?}: {e}")))?,
            },
            endless: false,
        },
    })
}

fn close_mid_body(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    let item = a.item();
    Ok(Kind::CloseMidBody(
        a.get("at", true)
            .map(|v| {
                v.parse()
                    .map_err(|_| BehaviorError::item(item, format!("at={v:?} is not a byte count")))
            })
            .transpose()?,
    ))
}

fn dribble(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    let rate: u32 = a.number("rate", true, 10)?;
    if rate == 0 {
        return Err(BehaviorError::item(
            a.item(),
            "the rate must be at least 1 byte/s",
        ));
    }
    Ok(Kind::Dribble {
        bytes_per_sec: rate,
    })
}

fn content_length_mismatch(a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    Ok(Kind::ContentLengthMismatch(
        match a.get("declared", true).unwrap_or("more") {
            "more" => LengthLie::More,
            "less" => LengthLie::Less,
            v => return Err(unknown_variant(a.item(), v, ["more", "less"].into_iter())),
        },
    ))
}

fn flaky(a: &mut Args<'_>) -> Result<Modifier, BehaviorError> {
    let p: f64 = a.number("p", true, 0.5)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(BehaviorError::item(
            a.item(),
            format!("p={p} is not a probability (0..1)"),
        ));
    }
    Ok(Modifier::Flaky(p))
}

fn reset_point(a: &mut Args<'_>) -> Result<ResetPoint, BehaviorError> {
    let item = a.item();
    if let Some(n) = a.get("mid-body", false) {
        return n
            .parse()
            .map(ResetPoint::MidBody)
            .map_err(|_| BehaviorError::item(item, format!("mid-body={n:?} is not a byte count")));
    }
    match a.get("at", true).unwrap_or("mid-body") {
        "before-headers" => Ok(ResetPoint::BeforeHeaders),
        "after-headers" => Ok(ResetPoint::AfterHeaders),
        "mid-body" => Ok(ResetPoint::MidBody(100)),
        v => Err(unknown_variant(
            item,
            v,
            ["before-headers", "after-headers", "mid-body=N"].into_iter(),
        )),
    }
}
