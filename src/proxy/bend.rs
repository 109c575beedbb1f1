//! Faults on the platform's requests (`--fault NAME=request:BEHAVIOUR[@EP][:P%]`): a request on
//! its way to agent NAME, bent before it is passed on, with the mock's behaviours where they
//! mean something for a request:
//!
//! - `malformed-json[:VARIANT]`: the body's bytes as the mock breaks an answer's
//!   ([`encoding::malformed`]); `duplicate-keys` is refused (such a body still parses);
//! - `null-bytes`, `injection[:select=…]`, `oversized-field[:chars=N]`: the request's longest
//!   string (the content the agent reads) gets a NUL, a payload of the injection corpus with
//!   its canary (the `injection` behaviour itself, placed in a request), or is padded past N
//!   characters (default 60,000);
//! - `missing-field[:field=NAME]`: a member the endpoint's request schema requires removed (the
//!   first whose absence the schema refuses, or NAME);
//! - `slow[:DIST]`, `hang`: the request held before it is passed on (for DIST; for ever — until
//!   the platform leaves or the run ends): the platform meets a slow or silent agent, and the
//!   agent, which never saw the wait, is not blamed for it;
//! - `reset`: the connection to the agent cut — the proxy writes the request's head and half its
//!   body on a connection of its own, then resets it (RST); the platform's connection is reset
//!   too, as if the agent had cut it. The agent's answer to such a request is not judged (there
//!   is none); an agent the cut brought down fails its next answers by the ordinary rules.
//!
//! The answer to a bent request is not judged by the rules of an answer to a valid one: the
//! suite's cases marked `bent: [BEHAVIOUR]` judge it (see [`crate::probe::traffic`]), under the
//! agent's party; the platform rules are told the request as the platform sent it. The engine
//! names no protocol: a request is JSON, its endpoints and schemas are the protocol's.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::mock::args::{Args, BehaviorError};
use crate::mock::behavior::{Dist, Kind, Plays, ENGINE};
use crate::mock::encoding::{self, Malformed};
use crate::mock::protocol::{AgentProtocol, Endpoint, Mutating, Mutation};
use crate::report::{CaseResult, Evidence, Level};

/// The request faults: each name, and what it does to a request.
pub const REQUEST_FAULTS: &[(&str, &str)] = &[
    ("malformed-json", "the body's bytes broken (variants as the behaviour's, but duplicate-keys)"),
    ("null-bytes", "a NUL in the request's longest string"),
    ("injection", "a prompt-injection payload with its canary in the request's longest string (select=ID|FAMILY[+…])"),
    ("oversized-field", "the request's longest string padded past chars=N characters (default 60000)"),
    ("missing-field", "a member the request schema requires removed (field=NAME: that one)"),
    ("slow", "the request held for DIST before it is passed on (default 5s)"),
    ("hang", "the request held until the platform leaves (never passed on)"),
    ("reset", "the request's head and half its body written to the agent, then the connection reset"),
];

/// How a request is bent.
#[derive(Debug, Clone)]
pub enum How {
    Malformed(Malformed),
    NullBytes,
    /// The mock's `injection` behaviour, placed in the request's longest string.
    Injection(std::sync::Arc<dyn Mutation>),
    OversizedField(usize),
    MissingField(Option<String>),
    Hold(Dist),
    Hang,
    Cut,
}

/// One request fault of an agent's.
#[derive(Debug, Clone)]
pub struct RequestFault {
    pub how: How,
    /// Its behaviour's name (as the suite's `bent:` lists name it).
    pub name: &'static str,
    /// Empty: the protocol's endpoints.
    pub endpoints: Vec<String>,
    /// The share of the requests it bends (1.0: each).
    pub share: f64,
    /// As the user wrote it, after `request:`.
    pub source: String,
}

impl RequestFault {
    fn applies_to(&self, endpoint: &Endpoint) -> bool {
        if self.endpoints.is_empty() {
            endpoint.misbehaves_by_default
        } else {
            self.endpoints.iter().any(|e| e == endpoint.name)
        }
    }

    /// Whether a 4xx refusal of a request bent this way is as good as an answer: a NUL or an
    /// injection may be stripped or refused; a malformed or incomplete body must be refused,
    /// which the judging case says itself.
    pub fn refusal_holds(name: &str) -> bool {
        matches!(name, "null-bytes" | "injection")
    }
}

/// Why a request fault cannot bend a request line over stdio (None: it can). Lines pair up in
/// order on one pipe: a line never passed on would leave the agent's next answer to answer it,
/// and a connection to cut is not there.
pub fn not_over_lines(fault: &RequestFault) -> Option<String> {
    match fault.how {
        How::Hang => Some(
            "hang is not applied over stdio: the agent answers lines in order, and a line never passed on would make its next answer this one's (use slow:DUR to hold a line)".into(),
        ),
        How::Cut => Some("reset is a fault below lines: there is no connection to cut over stdio".into()),
        _ => None,
    }
}

/// How a bent request is kept in a recording: the fault, and what was passed on (the body as
/// forwarded, keys masked, `headers` with the Content-Type the fault wrote), how long it was
/// held, or that it was cut or never passed on.
pub fn recorded<'h>(bent: &Bent, headers: impl Iterator<Item = (&'h str, &'h str)>) -> Value {
    let mut out = serde_json::json!({"fault": bent.source, "behavior": bent.name});
    match &bent.what {
        What::Body(body, kind) => {
            let headers = headers.map(|(n, v)| match kind {
                Some(k) if n.eq_ignore_ascii_case("content-type") => (n, *k),
                _ => (n, v),
            });
            out["message"] = serde_json::json!(crate::judge::Message::masked(headers, body));
        }
        What::Hold(held) => out["held_ms"] = serde_json::json!(crate::judge::time::ms(*held)),
        What::Hang => out["hang"] = serde_json::json!(true),
        What::Cut => out["cut"] = serde_json::json!(true),
    }
    out
}

/// What works after `request:`, for a usage error.
pub fn known() -> String {
    REQUEST_FAULTS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `BEHAVIOUR[:ARGS][@EP[+EP]][:P%]` (the text after `request:`), as the answer-side form
/// is written; a behaviour that means nothing on a request is refused, naming the ones that do.
pub fn parse(text: &str, protocol: &dyn AgentProtocol) -> Result<RequestFault, BehaviorError> {
    let (item, share) = super::share::split(text).map_err(|why| BehaviorError::item(text, why))?;
    let (body, endpoints) = match item.rsplit_once('@') {
        Some((b, e)) => (b.trim(), endpoints_of(text, e, protocol)?),
        None => (item.trim(), Vec::new()),
    };
    let (name, args) = match body.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a)),
        None => (body, None),
    };
    let Some(&(name, _)) = REQUEST_FAULTS.iter().find(|(n, _)| *n == name) else {
        return Err(BehaviorError::item(
            name,
            format!(
                "not a fault on a request (on a request: {}; the other behaviours bend the agent's answers: --fault NAME=BEHAVIOUR)",
                known()
            ),
        ));
    };
    let mut a = Args::parse(text, args)?;
    let how = match name {
        "null-bytes" => How::NullBytes,
        "injection" => How::Injection(
            crate::mock::injection::Injection::parse(&mut a, place_in_longest)?.into(),
        ),
        "oversized-field" => How::OversizedField(a.number("chars", true, 60_000usize)?),
        "missing-field" => How::MissingField(a.get("field", true).map(str::to_string)),
        // The engine's own behaviours, parsed as the mock parses them.
        _ => match engine(name, &mut a)? {
            Kind::MalformedJson(Malformed::DuplicateKeys) => {
                return Err(BehaviorError::item(
                    text,
                    "malformed-json:duplicate-keys is not a fault on a request (the body still parses); the other variants are",
                ))
            }
            Kind::MalformedJson(v) => How::Malformed(v),
            Kind::Slow { ttfb, .. } => How::Hold(ttfb),
            Kind::Hang => How::Hang,
            _ => How::Cut,
        },
    };
    a.finish()?;
    Ok(RequestFault {
        how,
        name,
        endpoints,
        share,
        source: text.trim().to_string(),
    })
}

/// The engine behaviour `name`'s own parse (slow, hang, malformed-json, reset).
fn engine(name: &str, a: &mut Args<'_>) -> Result<Kind, BehaviorError> {
    match ENGINE.iter().find(|b| b.name == name).map(|b| &b.plays) {
        Some(Plays::Engine(parse)) => parse(a),
        _ => Err(BehaviorError::item(a.item(), "not an engine behaviour")),
    }
}

fn endpoints_of(
    text: &str,
    list: &str,
    protocol: &dyn AgentProtocol,
) -> Result<Vec<String>, BehaviorError> {
    let bent: Vec<&str> = protocol
        .endpoints()
        .iter()
        .filter(|e| e.request_schema.is_some())
        .map(|e| e.name)
        .collect();
    list.split('+')
        .map(str::trim)
        .map(|e| {
            if bent.contains(&e) {
                Ok(e.to_string())
            } else {
                Err(BehaviorError::item(
                    text,
                    format!(
                        "@{e}: no request of the protocol goes there (its requests: {})",
                        bent.join(", ")
                    ),
                ))
            }
        })
        .collect()
}

/// A request as bent, for the forward and the recording.
pub struct Bent {
    /// The fault's behaviour name and source.
    pub name: &'static str,
    pub source: String,
    pub what: What,
}

/// What the proxy does with a bent request.
pub enum What {
    /// Passes on this body (with this Content-Type, when the fault changed it).
    Body(Bytes, Option<&'static str>),
    /// Holds the request this long, then passes it on as it came.
    Hold(Duration),
    Hang,
    Cut,
}

/// An agent's request faults, and what they did.
pub struct Requests {
    faults: Vec<RequestFault>,
    rng: Mutex<ChaCha8Rng>,
    seed: u64,
    /// Requests bent, by fault source.
    bent: Mutex<BTreeMap<String, u64>>,
    /// Answers to them no case of the suite judges, by fault source.
    unjudged: Mutex<BTreeMap<String, u64>>,
}

impl Requests {
    pub fn new(faults: Vec<RequestFault>, agent: &str, seed: u64) -> Requests {
        Requests {
            faults,
            // Its own stream (not the answer faults'): "request" in ASCII, mixed in.
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(
                seed ^ crate::text::fnv1a(agent) ^ 0x0072_6571_7565_7374,
            )),
            seed,
            bent: Mutex::new(BTreeMap::new()),
            unjudged: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    pub fn sources(&self) -> Vec<String> {
        self.faults.iter().map(|f| f.source.clone()).collect()
    }

    /// The request to `endpoint` (a request of the protocol's, JSON or not) as the first fault
    /// that fires bends it; None: passed on as it came. A fault that cannot bend this request
    /// (no string in it, no required member) leaves it as it came and is not counted.
    pub fn bend(
        &self,
        protocol: &dyn AgentProtocol,
        endpoint: &Endpoint,
        agent: &str,
        body: &[u8],
    ) -> Option<Bent> {
        let fault = {
            let mut rng = self.rng.lock().ok()?;
            self.faults
                .iter()
                .filter(|f| f.applies_to(endpoint))
                .find(|f| f.share >= 1.0 || rng.random::<f64>() < f.share)?
        };
        let n = self
            .bent
            .lock()
            .map_or(0, |b| b.get(&fault.source).copied().unwrap_or(0));
        let what = match &fault.how {
            How::Malformed(v) => {
                let (bytes, kind) = encoding::malformed(*v, body, protocol.answer_fields());
                What::Body(Bytes::from(bytes), Some(kind))
            }
            How::Hold(dist) => {
                let mut rng = self.rng.lock().ok()?;
                What::Hold(dist.sample(&mut rng))
            }
            How::Hang => What::Hang,
            How::Cut => What::Cut,
            how => {
                let mut value: Value = serde_json::from_slice(body).ok()?;
                let changed = match how {
                    How::NullBytes => {
                        edit_longest(&mut value, |s| s.push_str("\u{0} (after a NUL)"))
                    }
                    How::OversizedField(chars) => edit_longest(&mut value, |s| {
                        let more = (chars + 1).saturating_sub(s.chars().count()).max(1);
                        s.extend(std::iter::repeat_n('x', more));
                    }),
                    How::MissingField(field) => {
                        missing_field(&mut value, endpoint.request_schema, field.as_deref())
                    }
                    How::Injection(mutation) => {
                        let mut injected = Vec::new();
                        mutation.apply(
                            &mut value,
                            &mut Mutating {
                                endpoint: endpoint.name,
                                request: body,
                                agent,
                                seed: self.seed,
                                n,
                                injected: &mut injected,
                            },
                        )
                    }
                    _ => false,
                };
                if !changed {
                    return None;
                }
                What::Body(Bytes::from(serde_json::to_vec(&value).ok()?), None)
            }
        };
        if let Ok(mut bent) = self.bent.lock() {
            *bent.entry(fault.source.clone()).or_default() += 1;
        }
        Some(Bent {
            name: fault.name,
            source: fault.source.clone(),
            what,
        })
    }

    /// Counts a request a recording says was bent (`agent-tck judge`).
    pub fn count(&self, source: &str) {
        if let Ok(mut bent) = self.bent.lock() {
            *bent.entry(source.to_string()).or_default() += 1;
        }
    }

    /// Counts an answer to a request bent by `source` that no case judged.
    pub fn unjudged(&self, source: &str) {
        if let Ok(mut unjudged) = self.unjudged.lock() {
            *unjudged.entry(source.to_string()).or_default() += 1;
        }
    }

    fn counts(&self) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        (
            self.bent.lock().map(|b| b.clone()).unwrap_or_default(),
            self.unjudged.lock().map(|b| b.clone()).unwrap_or_default(),
        )
    }
}

/// The proxy's case that says how many requests it bent and how (None: no agent was given a
/// request fault). A fault that bent nothing tested nothing: the case skips, naming it.
pub fn bent_case<'a>(
    agents: impl IntoIterator<Item = (&'a str, &'a Requests)>,
) -> Option<CaseResult> {
    let mut given = 0;
    let mut total = 0;
    let mut took = Vec::new();
    let mut never = Vec::new();
    for (name, requests) in agents {
        let (counts, unjudged) = requests.counts();
        for fault in &requests.faults {
            given += 1;
            match counts.get(&fault.source) {
                Some(n) => {
                    total += n;
                    let mut said = format!(
                        "{name}: request:{} on {}",
                        fault.source,
                        crate::text::count(*n, "requests")
                    );
                    if let Some(u) = unjudged.get(&fault.source) {
                        said.push_str(&format!(
                            " ({u} of their answers judged by no case: the suite marks none `bent: [{}]` where they went)",
                            fault.name
                        ));
                    }
                    took.push(said);
                }
                None => never.push(format!(
                    "{name}: request:{} bent no request (none to {} came through, or none it could bend)",
                    fault.source,
                    if fault.endpoints.is_empty() {
                        "its endpoints".to_string()
                    } else {
                        fault.endpoints.join(", ")
                    }
                )),
            }
        }
    }
    if given == 0 {
        return None;
    }
    let mut case = CaseResult::new(
        BENT_ID,
        "proxy",
        Level::May,
        "the requests the proxy bent on their way to the agents (--fault NAME=request:…); what it broke is blamed on no party",
        "agent-tck (the faults given with --fault)",
    );
    if total == 0 {
        case.skip(format!(
            "no request was bent: {}; the cases that judge answers to bent requests skip",
            never.join("; ")
        ));
    } else {
        let mut note = took.join(", ");
        if !never.is_empty() {
            note.push_str(&format!("; {}", never.join("; ")));
        }
        case.pass_noting(Evidence::new(total, "requests bent"), note, String::new);
    }
    Some(case)
}

/// The proxy's case of its bent requests.
pub const BENT_ID: &str = "proxy.requests-bent";

/// The longest string in `value` (depth first, the first of equal length), edited.
fn edit_longest(value: &mut Value, edit: impl FnOnce(&mut String)) -> bool {
    fn longest(value: &mut Value) -> Option<&mut String> {
        match value {
            Value::String(s) => Some(s),
            Value::Array(items) => items.iter_mut().filter_map(longest).reduce(longer),
            Value::Object(map) => map.values_mut().filter_map(longest).reduce(longer),
            _ => None,
        }
    }
    fn longer<'a>(a: &'a mut String, b: &'a mut String) -> &'a mut String {
        if b.len() > a.len() {
            b
        } else {
            a
        }
    }
    match longest(value) {
        Some(s) => {
            edit(s);
            true
        }
        None => false,
    }
}

/// The injection behaviour's placement in a request: each payload appended to its longest
/// string.
fn place_in_longest(_: &str, value: &mut Value, texts: &[String]) -> Vec<(String, usize)> {
    let mut placed = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        if edit_longest(value, |s| {
            s.push(' ');
            s.push_str(text);
        }) {
            placed.push(("the longest string".to_string(), i));
        }
    }
    placed
}

/// Removes `field`, or the first top-level member whose absence the request schema refuses.
fn missing_field(value: &mut Value, schema: Option<&str>, field: Option<&str>) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let name = match field {
        Some(f) => object.contains_key(f).then(|| f.to_string()),
        None => schema.and_then(|schema| {
            object.keys().find_map(|key| {
                let mut without = object.clone();
                without.remove(key);
                let findings = crate::schema::schemas().validate(schema, &Value::Object(without));
                (!findings.is_empty()).then(|| key.clone())
            })
        }),
    };
    match (name, value.as_object_mut()) {
        (Some(name), Some(object)) => object.remove(&name).is_some(),
        _ => false,
    }
}
