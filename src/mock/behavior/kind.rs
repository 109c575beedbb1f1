//! The behaviour type every table is made of ([`Behavior`], who [`Plays`] it), and what a parsed
//! behaviour is ([`Kind`], [`Modifier`], a content behaviour's [`Mutation`]): below the mock
//! engine's protocol interface, which names them, and its parser, which makes them.

use std::fmt;
use std::time::Duration;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::mock::args::{Args, BehaviorError};
use crate::mock::decision::Placed;

/// Variants of `malformed`: bodies a platform's JSON parser must refuse (or, for DuplicateKeys,
/// accept in a way that hides a second value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    Truncated,
    TrailingGarbage,
    SingleQuotes,
    NaN,
    Empty,
    Html,
    Array,
    DuplicateKeys,
}

impl Malformed {
    pub const ALL: [Malformed; 8] = [
        Malformed::Truncated,
        Malformed::TrailingGarbage,
        Malformed::SingleQuotes,
        Malformed::NaN,
        Malformed::Empty,
        Malformed::Html,
        Malformed::Array,
        Malformed::DuplicateKeys,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Malformed::Truncated => "truncated",
            Malformed::TrailingGarbage => "trailing-garbage",
            Malformed::SingleQuotes => "single-quotes",
            Malformed::NaN => "nan",
            Malformed::Empty => "empty",
            Malformed::Html => "html",
            Malformed::Array => "array",
            Malformed::DuplicateKeys => "duplicate-keys",
        }
    }

    pub fn parse(name: &str) -> Option<Malformed> {
        Malformed::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// Bends a conforming answer (its JSON value) for one request.
pub trait Mutation: Send + Sync + std::fmt::Debug {
    /// Changes `answer`; false when nothing applied (e.g. the endpoint has no such field).
    fn apply(&self, answer: &mut Value, at: &mut Mutating<'_>) -> bool;
}

/// What a mutation knows of the request it bends an answer for.
pub struct Mutating<'a> {
    /// The endpoint's name.
    pub endpoint: &'a str,
    /// The request body as received.
    pub request: &'a [u8],
    /// The agent's name and seed, and the request's number at this endpoint: what a payload's
    /// canary is derived from.
    pub agent: &'a str,
    pub seed: u64,
    pub n: u64,
    /// Injection payloads placed in the answer, for the journal and the platform checks.
    pub injected: &'a mut Vec<Placed>,
}

/// A delay distribution. Samples are never negative.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    Fixed(Duration),
    Uniform(Duration, Duration),
    /// Mean and standard deviation; negative draws become zero.
    Normal(Duration, Duration),
    /// Median and sigma (of the underlying normal, unitless).
    LogNormal(Duration, f64),
}

impl Dist {
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> Duration {
        let secs = match *self {
            Dist::Fixed(d) => d.as_secs_f64(),
            Dist::Uniform(lo, hi) => {
                lo.as_secs_f64() + rng.random::<f64>() * (hi.as_secs_f64() - lo.as_secs_f64())
            }
            Dist::Normal(mean, sd) => mean.as_secs_f64() + sd.as_secs_f64() * standard_normal(rng),
            Dist::LogNormal(median, sigma) => {
                median.as_secs_f64() * (sigma * standard_normal(rng)).exp()
            }
        };
        // Bounded to a day: a huge sigma must not overflow Duration.
        Duration::from_secs_f64(secs.clamp(0.0, 86_400.0))
    }

    /// `2s`, `fixed(2s)`, `uniform(1s,3s)`, `normal(2s,500ms)`, `lognormal(2s,0.5)`.
    pub fn parse(text: &str) -> Result<Dist, BehaviorError> {
        let text = text.trim();
        let Some((name, rest)) = text.split_once('(') else {
            return duration(text).map(Dist::Fixed);
        };
        let inner = rest
            .strip_suffix(')')
            .ok_or_else(|| BehaviorError::item(text, "missing ')'"))?;
        let args: Vec<&str> = inner.split(',').map(str::trim).collect();
        let two = |what: &str| -> Result<(&str, &str), BehaviorError> {
            match args.as_slice() {
                [a, b] => Ok((a, b)),
                _ => Err(BehaviorError::item(
                    text,
                    format!("{name} takes two arguments ({what})"),
                )),
            }
        };
        match name.trim() {
            "fixed" => match args.as_slice() {
                [d] => duration(d).map(Dist::Fixed),
                _ => Err(BehaviorError::item(text, "fixed takes one duration")),
            },
            "uniform" => {
                let (lo, hi) = two("low, high")?;
                let (lo, hi) = (duration(lo)?, duration(hi)?);
                if hi < lo {
                    return Err(BehaviorError::item(
                        text,
                        "the high bound is below the low one",
                    ));
                }
                Ok(Dist::Uniform(lo, hi))
            }
            "normal" => {
                let (mean, sd) = two("mean, standard deviation")?;
                Ok(Dist::Normal(duration(mean)?, duration(sd)?))
            }
            "lognormal" => {
                let (median, sigma) = two("median, sigma")?;
                let sigma: f64 = sigma
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| {
                        BehaviorError::item(text, format!("sigma {sigma:?} is not a number ≥ 0"))
                    })?;
                Ok(Dist::LogNormal(duration(median)?, sigma))
            }
            other => Err(BehaviorError::item(
                text,
                format!("unknown distribution {other:?} (fixed, uniform, normal, lognormal)"),
            )),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |d: &Duration| humantime::format_duration(*d).to_string();
        match self {
            Dist::Fixed(x) => write!(f, "{}", d(x)),
            Dist::Uniform(a, b) => write!(f, "uniform({},{})", d(a), d(b)),
            Dist::Normal(a, b) => write!(f, "normal({},{})", d(a), d(b)),
            Dist::LogNormal(a, s) => write!(f, "lognormal({},{s})", d(a)),
        }
    }
}

/// Box–Muller: one draw from N(0, 1).
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn duration(text: &str) -> Result<Duration, BehaviorError> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    crate::units::parse_duration(text).map_err(|e| BehaviorError::item(text, e.to_string()))
}

/// Where `reset` cuts the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetPoint {
    BeforeHeaders,
    AfterHeaders,
    /// After this many body bytes.
    MidBody(u64),
}

/// How `content-length-mismatch` lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthLie {
    /// Declares more bytes than it sends, then closes (the reader waits, then sees EOF).
    More,
    /// Declares fewer bytes than the JSON (the reader gets a truncated document).
    Less,
}

/// One misbehaviour (or `conforming`).
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Conforming,
    Slow {
        ttfb: Dist,
        body: Dist,
    },
    Hang,
    Blackhole,
    HttpError {
        status: u16,
        retry_after: Option<u64>,
    },
    MalformedJson(Malformed),
    OversizedBody {
        bytes: usize,
        endless: bool,
    },
    InvalidUtf8,
    Reset(ResetPoint),
    /// Graceful close after this many body bytes (None: half the body).
    CloseMidBody(Option<u64>),
    GarbageThenClose,
    Dribble {
        bytes_per_sec: u32,
    },
    ContentLengthMismatch(LengthLie),
    WrongContentType(String),
    /// A content behaviour of the agent's protocol.
    Content(Content),
    // over stdio only:
    /// A non-JSON line on stdout before the first answer.
    StdioBanner,
    /// Answers as pretty-printed, multi-line JSON.
    StdioPretty,
    /// Exits (status 3) after reading a request, without answering.
    ExitsEarly,
    /// Writes this many bytes to stderr before each answer.
    StderrFlood {
        bytes: usize,
    },
    /// Starts a child that holds stdout open and sleeps, then answers and exits.
    ForksAndExits,
}

/// A content behaviour as parsed: its name and the mutation it applies.
#[derive(Debug, Clone)]
pub struct Content {
    pub name: &'static str,
    pub mutation: std::sync::Arc<dyn Mutation>,
}

impl PartialEq for Content {
    /// Two content items are the same when they name the same behaviour with the same arguments.
    fn eq(&self, other: &Content) -> bool {
        self.name == other.name && format!("{:?}", self.mutation) == format!("{:?}", other.mutation)
    }
}

/// Which transports a behaviour fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Any transport the protocol has.
    Any,
    /// Over stdio only.
    Stdio,
    /// Below HTTP: an HTTP transport only.
    Http,
}

impl Kind {
    pub fn scope(&self) -> Scope {
        match self {
            Kind::StdioBanner
            | Kind::StdioPretty
            | Kind::ExitsEarly
            | Kind::StderrFlood { .. }
            | Kind::ForksAndExits => Scope::Stdio,
            Kind::Blackhole
            | Kind::HttpError { .. }
            | Kind::Reset(_)
            | Kind::CloseMidBody(_)
            | Kind::GarbageThenClose
            | Kind::Dribble { .. }
            | Kind::ContentLengthMismatch(_)
            | Kind::WrongContentType(_) => Scope::Http,
            _ => Scope::Any,
        }
    }
}

/// Decides whether a request misbehaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Modifier {
    /// Misbehave with this probability, per request.
    Flaky(f64),
    /// Misbehave on the first N requests (per endpoint), then conform.
    FailFirst(u64),
}

/// A behaviour a mock can play, of any table: the engine's ([`ENGINE`]), a protocol's agents'
/// (its [`AgentProtocol::behaviors`]: content behaviours, a transport's quirks), a protocol's own
/// mock's (a reference peer's flaws, a command agent's) and its client fleets'. `mock behaviors`
/// lists each; `--behavior`, a fleet file's `behaviors:` and a matrix row name them.
#[derive(Debug, Clone, Copy)]
pub struct Behavior {
    /// As written; `NAME[:ARG]` in a protocol's own mock's table when it takes an argument.
    pub name: &'static str,
    /// What it does, in one line.
    pub what: &'static str,
    /// The rule it exercises (`exercises:` in the listing); empty when a matrix row says which
    /// cases it breaks, or `expects` what the peer must answer.
    pub rule: &'static str,
    /// What the peer must answer it, when the behaviour itself says so (a client fleet's: the
    /// fleet judges each answer by it); empty otherwise.
    pub expects: &'static str,
    /// Who plays it, and how its arguments are read.
    pub plays: Plays,
}

/// Who plays a [`Behavior`], and how.
#[derive(Debug, Clone, Copy)]
pub enum Plays {
    /// The mock engine, below the protocol's answers (timing, encoding, status, the wire, a
    /// transport's quirks): its arguments read into what it does.
    Engine(fn(&mut Args<'_>) -> Result<Kind, BehaviorError>),
    /// The mock engine: whether a request misbehaves (`flaky`, `fail-first`).
    Modifier(fn(&mut Args<'_>) -> Result<Modifier, BehaviorError>),
    /// The mock engine, on the protocol's own answers: the mutation its arguments make.
    Content(fn(&mut Args<'_>) -> Result<Box<dyn Mutation>, BehaviorError>),
    /// A protocol's own mock (a reference peer, a command agent), over these transports of its
    /// matrix (`http`, `exec`, …).
    Own(&'static [&'static str]),
    /// The clients of a protocol's fleet.
    FleetClient,
}

impl Behavior {
    /// A client fleet's behaviour: `what` each client of it does, and what the peer must answer
    /// it (empty when the fleet's cases say so).
    pub const fn fleet_client(
        name: &'static str,
        what: &'static str,
        expects: &'static str,
    ) -> Behavior {
        Behavior {
            name,
            what,
            rule: "",
            expects,
            plays: Plays::FleetClient,
        }
    }

    /// A behaviour the engine plays, with its rule.
    pub(crate) const fn engine(
        name: &'static str,
        what: &'static str,
        rule: &'static str,
        parse: fn(&mut Args<'_>) -> Result<Kind, BehaviorError>,
    ) -> Behavior {
        Behavior {
            name,
            what,
            rule,
            expects: "",
            plays: Plays::Engine(parse),
        }
    }

    /// The name without its argument's placeholder: `slow` of `slow[:DUR]`.
    pub fn bare_name(&self) -> &'static str {
        self.name.split('[').next().unwrap_or(self.name)
    }

    /// Where a protocol's own mock plays it: the matrix transports (`http`, `exec`, …), or
    /// `fleet` for a client fleet's behaviour; none for the engine's behaviours.
    pub fn transports(&self) -> &'static [&'static str] {
        match self.plays {
            Plays::Own(transports) => transports,
            Plays::FleetClient => &["fleet"],
            _ => &[],
        }
    }

    /// Whether the engine plays it for agents of any protocol (not a protocol's content).
    pub fn by_engine(&self) -> bool {
        matches!(self.plays, Plays::Engine(_) | Plays::Modifier(_))
    }
}
