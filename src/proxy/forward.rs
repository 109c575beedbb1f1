//! One request passed on to a real agent, and its answer turned into what the mock engine
//! writes: the answer as it came (its status, headers and body), or, when none came, what the
//! platform would have met on the wire without the proxy (a refused connection, a reset, a
//! timeout).

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::probe::outcome::Parsed;

use crate::mock::http1::{Fault, Plan, Response};
use crate::mock::{Answer, Body, Reply, Responder};
use crate::transport::http;
use crate::transport::pool::Pool;

/// Header fields of a hop, not of the message: never passed on (RFC 9110 §7.6.1), nor the
/// framing ones, which each side writes for itself.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    "host",
];

pub fn passed_on(name: &str) -> bool {
    !HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h))
}

/// The most body bytes the proxy takes from an agent to pass on: far past any protocol's limit
/// (the agent rules judge the limit; this only bounds the proxy's memory).
pub const MAX_FORWARDED_BODY: usize = 64 * 1024 * 1024;

/// How a forward ended.
pub enum Forwarded {
    /// The agent answered (whatever it said), or the exchange with it failed: its result.
    Came(Result<http::Response, http::Error>),
    /// The platform left before the agent answered (it gave up).
    PlatformLeft,
    /// The run ended first.
    Stopped,
}

/// Sends `method path` with `headers` and `body` to the agent `to` (its open connections),
/// until it answers, `deadline` passes, the platform leaves (`left`) or the run stops (`stop`).
#[allow(clippy::too_many_arguments)]
pub async fn forward<'h>(
    to: &Pool,
    method: &str,
    path: &str,
    headers: impl Iterator<Item = (&'h str, &'h str)>,
    body: Bytes,
    deadline: Duration,
    left: Option<&CancellationToken>,
    stop: &CancellationToken,
) -> Forwarded {
    let request = http::Request {
        method: method.to_string(),
        path: path.to_string(),
        // Hop-by-hop fields are left out before the others are copied.
        headers: headers
            .filter(|(n, _)| passed_on(n))
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body,
    };
    let limits = http::Limits {
        deadline,
        max_body: MAX_FORWARDED_BODY,
        ..http::Limits::default()
    };
    let left = async {
        match left {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        result = to.send(&request, limits) => Forwarded::Came(result),
        () = left => Forwarded::PlatformLeft,
        () = stop.cancelled() => Forwarded::Stopped,
    }
}

/// `request:reset`: the request's head and half its body written to the agent on a connection
/// of the proxy's own (never a pooled one, which the next request would reuse), then the
/// connection reset (RST). Over https the cut comes before any byte (the kit writes no TLS by
/// hand). What the platform meets: a reset, as if the agent had cut it.
pub async fn cut<'h>(
    to: &Pool,
    method: &str,
    path: &str,
    headers: impl Iterator<Item = (&'h str, &'h str)>,
    body: &[u8],
) -> Forwarded {
    use tokio::io::AsyncWriteExt;
    let base = to.base();
    let tcp = match http::open_tcp(base).await {
        Ok(tcp) => tcp,
        Err(e) => return Forwarded::Came(Err(e)),
    };
    let mut tcp = tcp;
    if !base.tls {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}:{}\r\n",
            base.host, base.port
        );
        for (n, v) in headers.filter(|(n, _)| passed_on(n)) {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        let half = &body[..body.len() / 2];
        // A write that fails finds the agent gone already: cut either way.
        let _ = tcp.write_all(&[head.as_bytes(), half].concat()).await;
        let _ = tcp.flush().await;
    }
    let _ = tcp.set_zero_linger();
    drop(tcp);
    Forwarded::Came(Err(http::Error::Reset {
        phase: "cut by the proxy mid-body (--fault request:reset)".into(),
    }))
}

/// A real agent's answer as the conforming answer the mock engine's behaviours bend (the
/// `--fault`s): its status and body; its JSON value (and the keys it repeats) when it is a
/// 2xx of JSON (parsed once, here).
pub struct Given {
    reply: Reply,
    parsed: Option<Parsed>,
}

impl Given {
    pub fn of(response: &http::Response) -> Given {
        let parsed = (200..300)
            .contains(&response.status)
            .then(|| crate::probe::dupkeys::parse(&response.body).ok())
            .flatten();
        Given {
            reply: Reply {
                status: response.status,
                // Put back from the answer's own headers once the faults are applied.
                content_type: "application/json",
                body: response.body.clone(),
            },
            parsed,
        }
    }
}

impl Responder for Given {
    fn respond_body(&self, _: &str, _: &Body<'_>) -> Reply {
        self.reply.clone()
    }

    fn respond_value(&self, _: &str, _: &Body<'_>) -> Answer {
        match &self.parsed {
            Some(p) if self.reply.status == 200 => Answer::Json(200, p.value.clone()),
            _ => Answer::Reply(self.reply.clone()),
        }
    }
}

impl Given {
    /// The answer's body as JSON, when it was a 2xx of JSON: for the judge, not parsed again.
    pub fn into_json(self) -> Option<Parsed> {
        self.parsed
    }

    /// Whether the answer was a 2xx whose body is JSON.
    pub fn is_json(&self) -> bool {
        self.parsed.is_some()
    }
}

/// The agent's own header fields on the plan's answer, in place of the engine's: all but the
/// hop-by-hop ones, and its Content-Type unless a fault wrote another.
pub fn restore_headers(plan: &mut Plan, response: &http::Response) {
    let written = plan
        .response
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone());
    let faulted_type = written.filter(|v| v != "application/json");
    let mut headers: Vec<(Cow<'static, str>, Cow<'static, str>)> = response
        .headers
        .iter()
        .filter(|(n, _)| passed_on(n))
        .filter(|(n, _)| faulted_type.is_none() || !n.eq_ignore_ascii_case("content-type"))
        .map(|(n, v)| (Cow::Owned(n.clone()), Cow::Owned(v.clone())))
        .collect();
    if let Some(kind) = faulted_type {
        headers.push((Cow::Borrowed("content-type"), kind));
    }
    plan.response.headers = headers;
}

/// What the platform meets when the exchange with the agent failed: what it would have met
/// talking to the agent itself, as near as a proxy can give it.
pub fn failed_plan(error: &http::Error) -> Plan {
    match error {
        http::Error::Reset { .. } => Plan {
            fault: Fault::ResetBeforeHead,
            ..Plan::immediate(Response::new(502, "text/plain", ""))
        },
        http::Error::Closed { .. } => Plan {
            fault: Fault::Garbage(Bytes::new()),
            ..Plan::immediate(Response::new(502, "text/plain", ""))
        },
        http::Error::Timeout { .. } => {
            Plan::immediate(Response::json_error(504, &error.to_string()))
        }
        _ => Plan::immediate(Response::json_error(502, &error.to_string())),
    }
}

/// The plan's first byte `elapsed` later than the faults planned it (a `slow` fault's delay
/// counts from when the agent answered; none: at once).
pub fn after_the_agent(plan: &mut Plan, elapsed: Duration) {
    if !plan.ttfb.is_zero() {
        plan.ttfb += elapsed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, headers: &[(&str, &str)], body: &str) -> http::Response {
        http::Response {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: Bytes::from(body.to_string()),
            body_exceeded: false,
            elapsed: Duration::from_millis(5),
        }
    }

    #[test]
    fn the_agents_headers_go_back_but_the_hops_and_a_faulted_type_do_not() {
        let real = response(
            200,
            &[
                ("content-type", "application/json; charset=utf-8"),
                ("x-agent", "alpha"),
                ("connection", "keep-alive"),
                ("content-length", "2"),
            ],
            "{}",
        );
        let mut plan = Plan::immediate(Response::new(200, "application/json", "{}"));
        restore_headers(&mut plan, &real);
        let names: Vec<&str> = plan.response.headers.iter().map(|(n, _)| &**n).collect();
        assert_eq!(names, ["content-type", "x-agent"]);
        assert_eq!(
            plan.response.headers[0].1,
            "application/json; charset=utf-8"
        );
        let mut faulted = Plan::immediate(Response::new(200, "text/html", "{}"));
        restore_headers(&mut faulted, &real);
        let types: Vec<&str> = faulted
            .response
            .headers
            .iter()
            .filter(|(n, _)| n == "content-type")
            .map(|(_, v)| &**v)
            .collect();
        assert_eq!(types, ["text/html"], "the fault's type, once");
    }

    #[test]
    fn a_200_of_json_is_given_as_a_value_and_anything_else_as_it_came() {
        let body = Body::new(b"{}");
        let json = Given::of(&response(200, &[], "{\"a\":1}"));
        assert!(matches!(json.respond_value("x", &body), Answer::Json(200, v) if v["a"] == 1));
        let error = Given::of(&response(500, &[], "{\"a\":1}"));
        assert!(matches!(error.respond_value("x", &body), Answer::Reply(r) if r.status == 500));
        let created = Given::of(&response(201, &[], "{\"a\":1}"));
        assert!(created.is_json(), "a 2xx of JSON is JSON");
        assert!(matches!(created.respond_value("x", &body), Answer::Reply(r) if r.status == 201));
        assert!(!error.is_json());
        let text = Given::of(&response(200, &[], "not json"));
        assert!(
            matches!(text.respond_value("x", &body), Answer::Reply(r) if &r.body[..] == b"not json")
        );
    }

    #[test]
    fn a_failed_exchange_is_met_as_the_platform_would_have_met_it() {
        let reset = failed_plan(&http::Error::Reset {
            phase: "mid-body".into(),
        });
        assert_eq!(reset.fault, Fault::ResetBeforeHead);
        let refused = failed_plan(&http::Error::Connect {
            addr: "127.0.0.1:9".into(),
            reason: "refused".into(),
        });
        assert_eq!(refused.response.status, 502);
        let late = failed_plan(&http::Error::Timeout {
            deadline: Duration::from_secs(1),
            phase: "no head".into(),
        });
        assert_eq!(late.response.status, 504);
        let mut slow = Plan::immediate(Response::new(200, "application/json", "{}"));
        after_the_agent(&mut slow, Duration::from_secs(3));
        assert!(slow.ttfb.is_zero(), "no fault delay: at once");
        slow.ttfb = Duration::from_secs(2);
        after_the_agent(&mut slow, Duration::from_secs(3));
        assert_eq!(slow.ttfb, Duration::from_secs(5));
    }
}
