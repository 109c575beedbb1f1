//! A forward to the inputUrl, as the agent server makes it, and how it went.

use super::*;

/// One forward: its session, when it went, what came back.
pub(crate) struct Forward {
    pub(crate) what: String,
    pub(crate) session: String,
    pub(crate) status: Option<u16>,
    /// An excerpt of the answer's body (what a non-2xx said).
    pub(crate) said: String,
    pub(crate) elapsed: Duration,
    pub(crate) error: Option<String>,
    /// Its callback endpoint answers 500 (the no-flood case).
    pub(crate) failing: bool,
    /// Nothing listened at the inputUrl: why the connection failed.
    pub(crate) unreachable: Option<String>,
    /// When it broke (refused, reset, closed), since the run started: the agent's act, or its
    /// death's ([`crate::transport::liveness`]).
    pub(crate) broke_at: Option<Duration>,
    /// When it ended, since the run started.
    pub(crate) ended_at: Duration,
}

impl Forward {
    /// Acknowledged: answered 2xx. Any other status (a 404 from a server without the route
    /// included) is no acknowledgement, and nothing follows from it.
    pub(crate) fn acknowledged(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// How a forward that was not acknowledged went, for a failure message.
    pub(crate) fn unacknowledged(&self) -> String {
        match (&self.status, &self.error) {
            (Some(s), _) if self.said.is_empty() => format!(
                "{} ({}): answered {s}, not an acknowledgement (a 2xx)",
                self.what, self.session
            ),
            (Some(s), _) => format!(
                "{} ({}): answered {s} {}, not an acknowledgement (a 2xx)",
                self.what, self.session, self.said
            ),
            (None, Some(e)) => format!("{} ({}): {e}", self.what, self.session),
            _ => format!("{} ({}): no answer", self.what, self.session),
        }
    }
}

/// What the forwards got instead of an acknowledgement, counted (`30 answered 404`), for a
/// case that had none to judge.
pub(crate) fn none_acknowledged(forwards: &[Forward]) -> String {
    if forwards.is_empty() {
        return "no forward was sent in this run: run it with a case that forwards (forward.*, isolation.sessions, resilience.*)".into();
    }
    let mut answers: std::collections::BTreeMap<String, usize> = Default::default();
    for f in forwards {
        let key = match f.status {
            Some(s) => format!("answered {s}"),
            None => "got no answer".into(),
        };
        *answers.entry(key).or_default() += 1;
    }
    let counted: Vec<String> = answers.iter().map(|(k, n)| format!("{n} {k}")).collect();
    format!(
        "none of the {} was acknowledged 2xx ({}): a non-2xx answer is no acknowledgement; an inputUrl that answers the forwarded message 2xx exercises this case",
        crate::text::count(forwards.len() as u64, "forwards"),
        counted.join(", ")
    )
}

/// POSTs `payload` to the inputUrl as the server would (JSON, the acknowledgement awaited
/// [`ack_deadline`]), and says how it went.
pub(crate) async fn send_forward(
    s: &Settings,
    watch: &Watch,
    what: &str,
    session: &str,
    payload: &Value,
) -> Forward {
    let (base, path) = &s.input;
    let request = Request {
        method: "POST".into(),
        path: path.clone(),
        headers: vec![(
            "content-type".into(),
            "application/json; charset=utf-8".into(),
        )],
        body: Bytes::from(payload.to_string()),
    };
    let limits = Limits {
        deadline: ack_deadline(s),
        max_body: s.max_body,
        ..Limits::default()
    };
    let (result, broke_at, took) = liveness::send_timed(watch, base, &request, limits).await;
    Forward {
        broke_at,
        ended_at: watch.now(),
        what: what.to_string(),
        session: session.to_string(),
        status: result.as_ref().ok().map(|r| r.status),
        said: result
            .as_ref()
            .map(|r| excerpt(&r.body, 120))
            .unwrap_or_default(),
        // Measured, or as recorded when replaying.
        elapsed: took,
        unreachable: match &result {
            Err(http::Error::Connect { addr, reason }) => {
                Some(format!("cannot connect to {addr}: {reason}"))
            }
            _ => None,
        },
        error: result.err().map(transport_error),
        failing: false,
    }
}

/// What the transport said, with where a deadline came from (the transport can only name
/// --timeout; the kit's own bound on an acknowledgement is the server's 5 s and 2 s more).
pub(crate) fn transport_error(error: http::Error) -> String {
    match error {
        http::Error::Timeout { deadline, phase } => {
            let whence = if deadline < FORWARD_TIMEOUT + ACK_GRACE {
                "--timeout"
            } else {
                "the server's 5 s timeout and 2 s of grace, to tell a slow acknowledgement from none"
            };
            format!(
                "no complete answer within {} ({whence}): {phase}",
                humantime::format_duration(deadline)
            )
        }
        other => other.to_string(),
    }
}

/// How long the kit waits for an acknowledgement: the server's 5 s and 2 s more, to tell a
/// slow agent (`forward.within-5s`) from one that never answers (cut there, as everywhere).
pub(crate) fn ack_deadline(s: &Settings) -> Duration {
    s.timeout.min(FORWARD_TIMEOUT + ACK_GRACE)
}

/// How long past the server's 5 s the kit waits for an acknowledgement.
pub(crate) const ACK_GRACE: Duration = Duration::from_secs(2);

pub(crate) fn text_of(kind: &str) -> String {
    match kind {
        "unicode-markdown" => "# Überblick 🔐\n\n- 认证模块 *prüfen*\n- راجع الفاتورة — סקור\n\n```rust\nfn main() {}\n```".into(),
        "large" => {
            let line = "A long message from the user, repeated to reach one hundred kilobytes. ";
            line.repeat(100 * 1024 / line.len() + 1)[..100 * 1024].to_string()
        }
        _ => "hello".into(),
    }
}
