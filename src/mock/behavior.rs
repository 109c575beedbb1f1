//! The behaviour catalogue and its one syntax, shared by `--behavior` and fleet files.
//!
//! ```text
//! list  := item ("," item)*
//! item  := NAME [":" args] ["@" endpoint ("+" endpoint)*]
//! args  := arg (";" arg)*        arg := KEY "=" VALUE | VALUE   (a bare VALUE is the main parameter)
//! ```
//!
//! e.g. `slow:ttfb=lognormal(2s,0.5);body=100ms`, `malformed-json:truncated@vote`,
//! `http-error:429;retry_after=5`, `reset:mid-body=100`, `flaky:0.3`. Commas inside parentheses
//! belong to the argument. An item without `@` applies to the protocol's endpoints (/analyze,
//! /challenge and /vote of the round table); /health stays conforming unless an item names it.
//! Modifiers (`flaky`, `fail-first`) decide *whether* a request misbehaves; the other items
//! decide *how*, and they compose in layers (content, then encoding, then status, then the wire).
//!
//! The behaviours below HTTP, of the encoding, status and wire, and of stdio are the engine's and
//! fit every protocol; content behaviours belong to a protocol ([`ContentBehavior`]), which
//! implements them on its own answers.

use std::fmt;
use std::time::Duration;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::args::Args;
pub use super::args::BehaviorError;
use super::encoding::Malformed;
use super::protocol::{AgentProtocol, Endpoint, Mutation};

mod engine;

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

/// Checks that every item fits the transport (`http`: HTTP, else a line transport; `stdio`: the
/// stdio one) of an agent of `protocol`; the error names the item. (Content behaviours fit their
/// protocol by construction: [`parse_list`] refuses another protocol's.)
pub fn check_fit(
    items: &[Item],
    protocol: &dyn AgentProtocol,
    http: bool,
    stdio: bool,
) -> Result<(), BehaviorError> {
    for item in items {
        let What::Behavior(kind) = &item.what else {
            continue;
        };
        let why = match kind.scope() {
            Scope::Stdio if protocol.line_endpoint().is_none() => Some(format!(
                "a stdio behaviour, and {} agents are not served over stdio",
                protocol.name()
            )),
            Scope::Stdio if !stdio => Some("a stdio behaviour (use --stdio)".to_string()),
            Scope::Http if !http => Some("a fault below HTTP (use --port)".to_string()),
            _ => None,
        };
        if let Some(why) = why {
            return Err(BehaviorError::item(&item.source, why));
        }
    }
    Ok(())
}

/// Decides whether a request misbehaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Modifier {
    /// Misbehave with this probability, per request.
    Flaky(f64),
    /// Misbehave on the first N requests (per endpoint), then conform.
    FailFirst(u64),
}

/// One parsed item: a behaviour or a modifier, and the endpoints it applies to.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub what: What,
    /// Empty: the protocol endpoints.
    pub endpoints: Vec<String>,
    /// The text it was parsed from, for reports.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum What {
    Behavior(Kind),
    Modifier(Modifier),
}

impl Item {
    pub fn applies_to(&self, endpoint: &Endpoint) -> bool {
        if self.endpoints.is_empty() {
            endpoint.misbehaves_by_default
        } else {
            self.endpoints.iter().any(|e| e == endpoint.name)
        }
    }
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
    const fn engine(
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

/// The one list of a mock whose misbehaviours are switches (a struct of `bool`s, one each): the
/// name, the switch and what it does, once. It gives the catalogue's entries (`BEHAVIORS`), the
/// names (`TYPE::NAMES`, in the list's order) and the parse (`TYPE::named`; `conforming`: no
/// switch), so that no second list of names can drift from the first.
macro_rules! switches {
    ($ty:ty, transports: $transports:expr, [$($name:literal => $field:ident: $what:literal,)*]) => {
        /// Each misbehaviour, as `mock behaviors` lists it.
        pub const BEHAVIORS: &[$crate::mock::behavior::Behavior] = &[$(
            $crate::mock::behavior::Behavior {
                name: $name,
                what: $what,
                rule: "",
                expects: "",
                plays: $crate::mock::behavior::Plays::Own($transports),
            },
        )*];

        impl $ty {
            /// Each misbehaviour's name, for messages and tests.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            /// The switches of misbehaviour `name` (`conforming`: none); None: no such name.
            pub fn named(name: &str) -> Option<$ty> {
                Self::named_all(&mut std::iter::once(name)).ok()
            }

            /// The switches of every misbehaviour of `names` together (`conforming`: none);
            /// Err: the first name that is none.
            pub fn named_all(names: &mut dyn Iterator<Item = &str>) -> Result<$ty, String> {
                let mut switches = <$ty>::default();
                for name in names {
                    match name {
                        $($name => switches.$field = true,)*
                        "conforming" => {}
                        _ => return Err(name.to_string()),
                    }
                }
                Ok(switches)
            }
        }
    };
}
pub(crate) use switches;

/// Splits `text` at commas outside parentheses.
fn split_items(text: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

/// Where a behaviour list is parsed: the protocol of the agents it is for, and the others (only
/// to say, of a content behaviour of another protocol, whose it is).
#[derive(Clone, Copy)]
pub struct For<'a> {
    pub protocol: &'static dyn AgentProtocol,
    pub others: &'a [&'static dyn AgentProtocol],
}

/// Parses a comma-separated list of items for agents of `at.protocol`.
pub fn parse_list(text: &str, at: For<'_>) -> Result<Vec<Item>, BehaviorError> {
    let items: Vec<Item> = split_items(text)
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| parse_item(item, at))
        .collect::<Result<_, _>>()?;
    if items.is_empty() {
        return Err(BehaviorError::Empty);
    }
    Ok(items)
}

pub use engine::ENGINE;

/// Parses one item, e.g. `malformed-json:truncated@vote`.
pub fn parse_item(text: &str, at: For<'_>) -> Result<Item, BehaviorError> {
    let (body, endpoints) = match text.rsplit_once('@') {
        Some((b, e)) => (b.trim(), parse_endpoints(text, e, at.protocol)?),
        None => (text.trim(), Vec::new()),
    };
    let (name, args) = match body.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a)),
        None => (body, None),
    };
    let mut a = Args::parse(text, args)?;
    let behavior = find(name, at, a.item())?;
    let what = match behavior.plays {
        Plays::Engine(parse) => What::Behavior(parse(&mut a)?),
        Plays::Modifier(parse) => What::Modifier(parse(&mut a)?),
        Plays::Content(parse) => What::Behavior(Kind::Content(Content {
            name: behavior.name,
            mutation: parse(&mut a)?.into(),
        })),
        // Not of the tables `find` reads: a protocol's own mock parses its own.
        Plays::Own(_) | Plays::FleetClient => return Err(unknown(name, at)),
    };
    a.finish()?;
    Ok(Item {
        what,
        endpoints,
        source: text.trim().to_string(),
    })
}

/// The behaviour `name` for agents of `at.protocol`: its own (content behaviours, its
/// transport's quirks), else the engine's. A transport's quirk in another protocol's table is
/// the engine's too (any agent served over that transport plays it: [`check_fit`] says whether
/// this one is). A content behaviour of another protocol, or none, is an error.
fn find(name: &str, at: For<'_>, item: &str) -> Result<&'static Behavior, BehaviorError> {
    if let Some(b) = at.protocol.behavior(name) {
        return Ok(b);
    }
    if let Some(b) = ENGINE.iter().find(|b| b.name == name) {
        return Ok(b);
    }
    let mut of_others = at.others.iter().flat_map(|p| p.behaviors());
    if let Some(b) = of_others.find(|b| b.name == name && b.by_engine()) {
        return Ok(b);
    }
    if let Some(owner) = at.others.iter().find(|p| p.behavior(name).is_some()) {
        return Err(BehaviorError::item(
            item,
            format!(
                "a behaviour of the {} protocol (its mutations know {}), not of {} (add --protocol {})",
                owner.name(),
                endpoint_list(*owner),
                at.protocol.name(),
                owner.name()
            ),
        ));
    }
    Err(unknown(name, at))
}

/// No behaviour `name` for agents of `at.protocol`: the error lists the ones there are (the
/// engine's, the transports' quirks, the modifiers, then the protocol's content behaviours).
fn unknown(name: &str, at: For<'_>) -> BehaviorError {
    let mut known: Vec<&str> = ENGINE
        .iter()
        .filter(|b| matches!(b.plays, Plays::Engine(_)))
        .map(|b| b.name)
        .collect();
    let quirks = std::iter::once(at.protocol)
        .chain(at.others.iter().copied())
        .flat_map(|p| p.behaviors())
        .filter(|b| b.by_engine());
    for b in quirks {
        if !known.contains(&b.name) {
            known.push(b.name);
        }
    }
    known.extend(
        ENGINE
            .iter()
            .filter(|b| matches!(b.plays, Plays::Modifier(_)))
            .map(|b| b.name),
    );
    known.extend(
        at.protocol
            .behaviors()
            .iter()
            .filter(|b| !b.by_engine())
            .map(|b| b.name),
    );
    let hint = crate::text::nearest(name, known.iter().copied())
        .map(|n| format!("did you mean {n:?}? "))
        .unwrap_or_default();
    BehaviorError::Unknown {
        name: name.to_string(),
        hint,
        known: known.join(", "),
    }
}

fn parse_endpoints(
    item: &str,
    text: &str,
    protocol: &dyn AgentProtocol,
) -> Result<Vec<String>, BehaviorError> {
    text.split('+')
        .map(str::trim)
        .map(|e| {
            let e = e.trim_start_matches('/');
            if protocol.endpoint(e).is_some() {
                Ok(e.to_string())
            } else {
                Err(BehaviorError::item(
                    item,
                    format!(
                        "unknown endpoint {e:?} after '@' (expected {})",
                        protocol
                            .endpoints()
                            .iter()
                            .map(|e| e.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
        })
        .collect()
}

/// `/analyze, /challenge, /vote`: the endpoints a protocol's behaviours apply to by default.
fn endpoint_list(protocol: &dyn AgentProtocol) -> String {
    protocol
        .endpoints()
        .iter()
        .filter(|e| e.misbehaves_by_default)
        .map(|e| format!("/{}", e.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::stub::{OTHER, STUB};
    use rand::SeedableRng;

    fn at() -> For<'static> {
        For {
            protocol: &STUB,
            others: &[],
        }
    }

    fn parse_list(text: &str) -> Result<Vec<Item>, BehaviorError> {
        super::parse_list(text, at())
    }

    fn parse_item(text: &str) -> Result<Item, BehaviorError> {
        super::parse_item(text, at())
    }

    fn endpoint(name: &str) -> &'static Endpoint {
        STUB.endpoint(name).unwrap()
    }

    fn kind(text: &str) -> Kind {
        match parse_item(text).unwrap().what {
            What::Behavior(k) => k,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn items_parse_with_variants_keys_and_endpoints() {
        assert_eq!(
            kind("malformed-json:nan"),
            Kind::MalformedJson(Malformed::NaN)
        );
        assert_eq!(
            kind("http-error:429"),
            Kind::HttpError {
                status: 429,
                retry_after: Some(30)
            }
        );
        assert_eq!(
            kind("http-error:status=502;retry_after=none"),
            Kind::HttpError {
                status: 502,
                retry_after: None
            }
        );
        assert_eq!(
            kind("reset:mid-body=7"),
            Kind::Reset(ResetPoint::MidBody(7))
        );
        assert_eq!(
            kind("reset:before-headers"),
            Kind::Reset(ResetPoint::BeforeHeaders)
        );
        assert_eq!(
            kind("slow:ttfb=uniform(1s, 3s);body=100ms"),
            Kind::Slow {
                ttfb: Dist::Uniform(Duration::from_secs(1), Duration::from_secs(3)),
                body: Dist::Fixed(Duration::from_millis(100))
            }
        );
        let item = parse_item("shout@tell+health").unwrap();
        assert_eq!(item.endpoints, vec!["tell", "health"]);
        assert!(item.applies_to(endpoint("tell")) && !item.applies_to(endpoint("ask")));
        let plain = parse_item("hang").unwrap();
        assert!(plain.applies_to(endpoint("ask")) && !plain.applies_to(endpoint("health")));
        match kind("shout") {
            Kind::Content(c) => assert_eq!(c.name, "shout"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_content_behaviour_belongs_to_its_protocol() {
        let others: [&'static dyn AgentProtocol; 1] = [&STUB];
        let at = For {
            protocol: &OTHER,
            others: &others,
        };
        let e = super::parse_list("shout", at).unwrap_err().to_string();
        assert!(
            e.contains("\"shout\": a behaviour of the stub protocol (its mutations know /ask, /tell), not of other"),
            "{e}"
        );
        let e = super::parse_list("shouts", at).unwrap_err().to_string();
        assert!(
            e.contains("unknown behaviour \"shouts\" (known: conforming,"),
            "{e}"
        );
    }

    #[test]
    fn transports_are_checked() {
        let items = parse_list("stdio-banner").unwrap();
        let e = check_fit(&items, &STUB, true, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("stub agents are not served over stdio"), "{e}");
        let items = parse_list("reset").unwrap();
        let e = check_fit(&items, &STUB, false, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a fault below HTTP"), "{e}");
        check_fit(&parse_list("shout,slow:1s").unwrap(), &STUB, true, false).unwrap();
    }

    #[test]
    fn lists_split_outside_parentheses() {
        let items = parse_list("slow:normal(2s,100ms), flaky:0.25 ,shout").unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].what, What::Modifier(Modifier::Flaky(0.25)));
    }

    #[test]
    fn errors_name_the_item_and_what_is_wrong() {
        let cases = [
            (
                "sloww",
                "unknown behaviour \"sloww\" (did you mean \"slow\"? known:",
            ),
            ("malformed-json:yaml", "unknown variant \"yaml\""),
            ("http-error:200", "not a 4xx or 5xx"),
            ("hang:5", "unexpected argument \"5\""),
            ("slow:tffb=2s", "unknown argument \"tffb\""),
            ("slow:uniform(3s,1s)", "high bound is below"),
            ("slow:gamma(1s,2)", "unknown distribution"),
            (
                "shout@votes",
                "unknown endpoint \"votes\" after '@' (expected ask, tell, health)",
            ),
            ("flaky:1.5", "not a probability"),
            ("dribble:0", "at least 1 byte/s"),
        ];
        for (text, expected) in cases {
            let e = parse_list(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{text}: {e}");
        }
        assert!(parse_list(" , ")
            .unwrap_err()
            .to_string()
            .contains("no behaviour"));
    }

    #[test]
    fn every_catalogue_name_parses() {
        for name in ENGINE.iter().map(|b| b.name) {
            parse_item(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn distributions_sample_within_their_shape_and_never_below_zero() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let uniform = Dist::parse("uniform(1s,2s)").unwrap();
        let normal = Dist::parse("normal(10ms,1s)").unwrap();
        let lognormal = Dist::parse("lognormal(100ms,0.5)").unwrap();
        let mut lognormal_draws = Vec::new();
        for _ in 0..2_000 {
            let u = uniform.sample(&mut rng);
            assert!(
                u >= Duration::from_secs(1) && u <= Duration::from_secs(2),
                "{u:?}"
            );
            let _ = normal.sample(&mut rng); // negative draws clamp to zero: no panic
            lognormal_draws.push(lognormal.sample(&mut rng));
        }
        lognormal_draws.sort();
        let median = lognormal_draws[lognormal_draws.len() / 2];
        assert!(
            median > Duration::from_millis(85) && median < Duration::from_millis(115),
            "median {median:?}"
        );
        assert_eq!(
            Dist::parse("fixed(2s)").unwrap().to_string(),
            Dist::parse("2s").unwrap().to_string()
        );
    }
}
