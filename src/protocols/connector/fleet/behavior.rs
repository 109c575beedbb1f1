//! What an external agent of the fleet does with a forwarded message: the behaviours, with
//! what each tests, and their parse.

use std::time::Duration;

use crate::mock::http1::Fault;
use crate::protocols::connector::behaviors::FLEET_BEHAVIORS;

/// What an external agent does with a forwarded message.
#[derive(Debug, Clone, PartialEq)]
pub enum Behavior {
    /// Acknowledges at once, calls back once.
    Conforming,
    /// Calls back with Markdown.
    Markdown,
    /// Calls back with prompt-injection text and a canary.
    Injection,
    /// Acknowledges after this long (past the server's 5 s).
    SlowAck(Duration),
    /// Answers this status.
    ErrorAck(u16),
    /// A fault below HTTP instead of an acknowledgement.
    Fault(Fault),
    /// Acknowledges and never calls back.
    NeverCallback,
    /// Calls back this many times.
    ManyCallbacks(usize),
    /// Calls back with a body of this many bytes.
    HugeCallback(usize),
    EmptyCallback,
    WhitespaceCallback,
    /// Calls back to a session that does not exist.
    UnknownSession,
    /// Deletes its session, then calls back to it.
    DeletedSession,
}

/// A huge callback's default size: 32 MiB, above the limits servers commonly set by default
/// (nginx and Fastify 1 MB, Django 2.5 MB, Kestrel 30 MB), so that a bound shows.
pub const HUGE_DEFAULT: usize = 32 << 20;

/// Why an agent's `behavior:` does not read (the fleet file names the agent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BehaviorError {
    #[error("{name} takes no argument (got {arg:?})")]
    NoArgument { name: String, arg: String },
    #[error("slow-ack:{arg}: {cause}")]
    SlowAck { arg: String, cause: String },
    #[error("error-ack:{arg}: expected a status from 300 to 599")]
    ErrorAck { arg: String },
    #[error("fault:{arg}: expected reset, close, garbage or hang")]
    Fault { arg: String },
    #[error("many-callbacks:N: N from 1 to 100")]
    ManyCallbacks,
    #[error("huge-callback:{arg}: {cause}")]
    HugeCallback { arg: String, cause: String },
    #[error("behavior {given:?} is not one of {}", .known.join(", "))]
    Unknown {
        given: String,
        known: Vec<&'static str>,
    },
}

impl Behavior {
    pub fn parse(text: &str) -> Result<Behavior, BehaviorError> {
        let (name, arg) = match text.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        let no_arg = |b: Behavior| match arg {
            None => Ok(b),
            Some(a) => Err(BehaviorError::NoArgument {
                name: name.to_string(),
                arg: a.to_string(),
            }),
        };
        match name {
            "conforming" => no_arg(Behavior::Conforming),
            "markdown" => no_arg(Behavior::Markdown),
            "injection" => no_arg(Behavior::Injection),
            "never-callback" => no_arg(Behavior::NeverCallback),
            "empty-callback" => no_arg(Behavior::EmptyCallback),
            "whitespace-callback" => no_arg(Behavior::WhitespaceCallback),
            "callback-to-unknown-session" => no_arg(Behavior::UnknownSession),
            "callback-to-deleted-session" => no_arg(Behavior::DeletedSession),
            "slow-ack" => Ok(Behavior::SlowAck(match arg {
                Some(a) => crate::units::parse_duration(a).map_err(|e| BehaviorError::SlowAck {
                    arg: a.to_string(),
                    cause: e.to_string(),
                })?,
                None => Duration::from_secs(8),
            })),
            "error-ack" => match arg.map(str::parse::<u16>) {
                None => Ok(Behavior::ErrorAck(500)),
                Some(Ok(s)) if (300..600).contains(&s) => Ok(Behavior::ErrorAck(s)),
                Some(_) => Err(BehaviorError::ErrorAck {
                    arg: arg.unwrap_or("").to_string(),
                }),
            },
            "fault" => Ok(Behavior::Fault(match arg {
                Some("reset") => Fault::ResetBeforeHead,
                Some("close") => Fault::CloseAt(0),
                Some("garbage") => Fault::Garbage("SSH-2.0-agent-tck\r\n".into()),
                Some("hang") => Fault::Hang,
                other => {
                    return Err(BehaviorError::Fault {
                        arg: other.unwrap_or("").to_string(),
                    })
                }
            })),
            "many-callbacks" => match arg.map(str::parse::<usize>) {
                None => Ok(Behavior::ManyCallbacks(3)),
                Some(Ok(n)) if (1..=100).contains(&n) => Ok(Behavior::ManyCallbacks(n)),
                Some(_) => Err(BehaviorError::ManyCallbacks),
            },
            "huge-callback" => Ok(Behavior::HugeCallback(match arg {
                Some(a) => crate::units::parse_bytes(a)
                    .map_err(|e| BehaviorError::HugeCallback {
                        arg: a.to_string(),
                        cause: e.to_string(),
                    })?
                    .clamp(64, 64 << 20),
                None => HUGE_DEFAULT,
            })),
            other => Err(BehaviorError::Unknown {
                given: other.to_string(),
                known: FLEET_BEHAVIORS.iter().map(|b| b.name).collect(),
            }),
        }
    }

    /// Whether the agent's acknowledgement misbehaves (slow, an error status, a fault below
    /// HTTP): such an agent never calls back. Not whether the server sees a failure: that is
    /// judged from the wire (`fault:close` sends a whole 200 head, an acknowledgement).
    pub fn acks_badly(&self) -> bool {
        matches!(
            self,
            Behavior::SlowAck(_) | Behavior::ErrorAck(_) | Behavior::Fault(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviours_parse_and_name_what_is_wrong() {
        assert_eq!(Behavior::parse("conforming").unwrap(), Behavior::Conforming);
        assert_eq!(
            Behavior::parse("slow-ack:6s").unwrap(),
            Behavior::SlowAck(Duration::from_secs(6))
        );
        assert_eq!(
            Behavior::parse("error-ack:503").unwrap(),
            Behavior::ErrorAck(503)
        );
        assert_eq!(
            Behavior::parse("fault:reset").unwrap(),
            Behavior::Fault(Fault::ResetBeforeHead)
        );
        assert_eq!(
            Behavior::parse("many-callbacks").unwrap(),
            Behavior::ManyCallbacks(3)
        );
        // Above the limits servers commonly set by default, so that a bound shows.
        assert_eq!(
            Behavior::parse("huge-callback").unwrap(),
            Behavior::HugeCallback(32 << 20)
        );
        let refused = |text: &str| Behavior::parse(text).unwrap_err().to_string();
        assert_eq!(
            refused("error-ack:200"),
            "error-ack:200: expected a status from 300 to 599"
        );
        assert_eq!(
            refused("markdown:1"),
            "markdown takes no argument (got \"1\")"
        );
        assert_eq!(
            refused("fault:boom"),
            "fault:boom: expected reset, close, garbage or hang"
        );
        assert_eq!(
            refused("many-callbacks:0"),
            "many-callbacks:N: N from 1 to 100"
        );
        assert!(refused("sing").starts_with("behavior \"sing\" is not one of conforming, "));
        assert!(refused("slow-ack:soon").starts_with("slow-ack:soon: "));
        assert!(refused("huge-callback:lots").starts_with("huge-callback:lots: "));
        for b in FLEET_BEHAVIORS {
            assert!(
                Behavior::parse(b.name).is_ok() || b.name == "fault",
                "{}",
                b.name
            );
        }
    }
}
