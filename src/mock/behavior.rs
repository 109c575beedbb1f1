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

use super::args::Args;
pub use super::args::BehaviorError;
use super::protocol::{AgentProtocol, Endpoint};

mod engine;
pub mod kind;

pub use kind::{
    Behavior, Content, Dist, Kind, LengthLie, Modifier, Mutating, Mutation, Plays, ResetPoint,
    Scope,
};

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
    use crate::mock::encoding::Malformed;
    use crate::mock::stub::{OTHER, STUB};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::time::Duration;

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
