//! One mock agent: the reference agent's answer, bent by its behaviours into a wire [`Plan`],
//! and a [`Decision`] that says what was done (for the journal and the platform checks).

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::behavior::{Item, Kind, LengthLie, Modifier, ResetPoint, What};
use super::decision::Decision;
use super::encoding::{self, Malformed};
use super::http1::{Fault, Framing, Plan, Response};
use super::protocol::{AgentProtocol, AnswerFields, Mutating};
use super::{Answer, Body, Reply, Responder};

pub use super::profile::Profile;

pub struct MockAgent {
    pub profile: Profile,
    pub items: Vec<Item>,
    /// The protocol it speaks: its endpoints and content behaviours.
    pub protocol: &'static dyn AgentProtocol,
    /// The conforming agent whose answers the behaviours bend.
    reference: Box<dyn Responder>,
    seed: u64,
    /// Requests seen per endpoint of the protocol, in its order, and one for any other path.
    counters: Vec<AtomicU64>,
    /// A request the agent finds invalid is answered 400 at once, whatever the behaviours say
    /// (true, the default); false: the behaviours apply to it too (a hang hangs, a slow agent
    /// is slow), only the content ones cannot (there is no answer to bend).
    pub strict_requests: bool,
}

impl MockAgent {
    /// An agent of `protocol` whose conforming answers come from the protocol's reference agent.
    pub fn new(
        protocol: &'static dyn AgentProtocol,
        profile: Profile,
        items: Vec<Item>,
        seed: u64,
    ) -> MockAgent {
        let reference = protocol.reference(&profile.name, seed);
        MockAgent::with_responder(protocol, profile, items, seed, reference)
    }

    /// The same with another conforming agent (e.g. one that knows more scenarios).
    pub fn with_responder(
        protocol: &'static dyn AgentProtocol,
        profile: Profile,
        items: Vec<Item>,
        seed: u64,
        reference: Box<dyn Responder>,
    ) -> MockAgent {
        MockAgent {
            reference,
            protocol,
            profile,
            items,
            seed,
            counters: (0..=protocol.endpoints().len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            strict_requests: true,
        }
    }

    pub fn name(&self) -> &str {
        &self.profile.name
    }

    /// Whether a connection to this agent's own port is never read (a black hole on every
    /// protocol endpoint, with no modifier that could make it conform).
    pub fn is_blackhole(&self) -> bool {
        let blackhole_everywhere = self.items.iter().any(|i| {
            i.what == What::Behavior(Kind::Blackhole)
                && self
                    .protocol
                    .endpoints()
                    .iter()
                    .filter(|e| e.misbehaves_by_default)
                    .all(|e| i.applies_to(e))
        });
        blackhole_everywhere
            && !self
                .items
                .iter()
                .any(|i| matches!(i.what, What::Modifier(_)))
    }

    /// The answer to one request at `endpoint` (path without slash).
    pub fn respond(&self, endpoint: &str, body: &[u8]) -> (Plan, Decision) {
        self.respond_body(endpoint, &Body::new(body))
    }

    /// The same, with the body as the engine read it (see [`Body`]).
    pub fn respond_body(&self, endpoint: &str, body: &Body<'_>) -> (Plan, Decision) {
        self.shape(endpoint, body, self.reference.as_ref())
    }

    /// The answer `conforming` gives, bent by this agent's behaviours: a proxy's real agent's
    /// answer, as the mock's own reference agent's is.
    pub fn shape(
        &self,
        endpoint: &str,
        body: &Body<'_>,
        source: &dyn Responder,
    ) -> (Plan, Decision) {
        let endpoints = self.protocol.endpoints();
        let index = endpoints.iter().position(|e| e.name == endpoint);
        let n = self.counters[index.unwrap_or(endpoints.len())].fetch_add(1, Ordering::Relaxed);
        let applies = |item: &&Item| index.is_some_and(|i| item.applies_to(&endpoints[i]));
        // A conforming agent (the common case under load) needs no random stream at all, nor
        // the list of its items.
        let shaped = self
            .items
            .iter()
            .filter(applies)
            .any(|i| matches!(i.what, What::Behavior(ref k) if *k != Kind::Conforming))
            .then(|| {
                let items: Vec<&Item> = self.items.iter().filter(applies).collect();
                // Every random choice of this request comes from its own stream: replayable by
                // --seed.
                let mut rng = ChaCha8Rng::seed_from_u64(
                    self.seed
                        ^ crate::text::fnv1a(&format!("{}/{endpoint}/{n}", self.profile.name)),
                );
                misbehaves(&items, n, &mut rng).then_some((items, rng))
            })
            .flatten();
        // A content behaviour bends the answer's JSON value: ask for the value, so that the
        // answer is serialized once, after the bending (not serialized, parsed and serialized).
        let bends = shaped.as_ref().is_some_and(|(items, _)| {
            items
                .iter()
                .any(|i| matches!(i.what, What::Behavior(Kind::Content(_))))
        });
        let (conforming, value) = if bends {
            match source.respond_value(endpoint, body) {
                Answer::Json(200, value) => (Reply::json_placeholder(200), Some(value)),
                Answer::Json(status, value) => (Reply::json(status, &value), None),
                Answer::Reply(reply) => (reply, None),
            }
        } else {
            (source.respond_body(endpoint, body), None)
        };
        let plan = Plan::immediate(Response::new(
            conforming.status,
            conforming.content_type,
            conforming.body,
        ));
        let refused = !(200..300).contains(&conforming.status);
        let decision = Decision {
            status: conforming.status,
            // An answer the agent refused to give (a bad request, an unknown path) is no
            // usable answer, whoever caused it.
            unusable: refused.then(|| {
                format!(
                    "answered {}: the agent refused the request",
                    conforming.status
                )
            }),
            ..Decision::default()
        };
        // A request the reference agent refuses (bad JSON, unknown path) is refused as it is,
        // unless the agent is told to misbehave regardless (`strict_requests: false`).
        let Some((items, rng)) = shaped else {
            return (plan, decision);
        };
        if refused && self.strict_requests {
            return (plan, decision);
        }
        let items: Vec<&Item> = if refused {
            items
                .into_iter()
                .filter(|i| !matches!(i.what, What::Behavior(Kind::Content(_))))
                .collect()
        } else {
            items
        };
        let mut shaper = Shaper {
            endpoint,
            request: body,
            plan,
            decision,
            rng,
            agent: self,
            source,
            n,
        };
        shaper.apply(&items, value);
        (shaper.plan, shaper.decision)
    }
}

/// Whether the modifiers let this request misbehave.
fn misbehaves(items: &[&Item], n: u64, rng: &mut ChaCha8Rng) -> bool {
    let mut yes = items
        .iter()
        .any(|i| matches!(i.what, What::Behavior(ref k) if *k != Kind::Conforming));
    for item in items {
        match item.what {
            What::Modifier(Modifier::Flaky(p)) => yes &= rng.random_bool(p),
            What::Modifier(Modifier::FailFirst(first)) => yes &= n < first,
            What::Behavior(_) => {}
        }
    }
    yes
}

/// Applies behaviours to one answer, layer by layer.
struct Shaper<'a> {
    endpoint: &'a str,
    /// The request body as received.
    request: &'a Body<'a>,
    plan: Plan,
    decision: Decision,
    rng: ChaCha8Rng,
    agent: &'a MockAgent,
    /// Who gave the answer being bent.
    source: &'a dyn Responder,
    n: u64,
}

impl Shaper<'_> {
    /// `value`: the conforming answer as JSON, when the responder gave it as a value (its bytes
    /// in the plan are then still to be written).
    fn apply(&mut self, items: &[&Item], value: Option<Value>) {
        let kinds: Vec<(&Kind, &str)> = items
            .iter()
            .filter_map(|i| match &i.what {
                What::Behavior(k) if *k != Kind::Conforming => Some((k, i.source.as_str())),
                _ => None,
            })
            .collect();
        // 1. content: mutate the JSON value (read back from the bytes when the responder gave no
        // value).
        if kinds.iter().any(|(k, _)| matches!(k, Kind::Content(_))) {
            let given = value.is_some();
            let mut value = value.unwrap_or_else(|| {
                serde_json::from_slice(&self.plan.response.body).unwrap_or(Value::Null)
            });
            let mut changed = false;
            for (kind, source) in &kinds {
                if self.content(kind, &mut value) {
                    changed = true;
                    self.decision.applied.push(source.to_string());
                }
            }
            if changed {
                self.plan.response.body =
                    Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
            } else if given {
                // Nothing applied at this endpoint: the answer as the responder writes it.
                let reply = self.source.respond_body(self.endpoint, self.request);
                self.plan.response.body = reply.body;
            }
        }
        // 2. encoding, 3. status and headers, 4. the wire.
        for (kind, source) in &kinds {
            if self.encoding(kind) || self.status(kind) || self.wire(kind) {
                self.decision.applied.push(source.to_string());
            }
        }
        self.decision.status = self.plan.response.status;
    }

    fn unusable(&mut self, why: impl Into<String>) {
        self.decision.unusable.get_or_insert(why.into());
    }

    /// The protocol's content behaviours, on the answer's JSON value.
    fn content(&mut self, kind: &Kind, value: &mut Value) -> bool {
        let Kind::Content(content) = kind else {
            return false;
        };
        let mut at = Mutating {
            endpoint: self.endpoint,
            request: self.request.bytes,
            agent: self.agent.name(),
            seed: self.agent.seed,
            n: self.n,
            injected: &mut self.decision.injected,
        };
        content.mutation.apply(value, &mut at)
    }

    fn encoding(&mut self, kind: &Kind) -> bool {
        let body = self.plan.response.body.clone();
        let (new, why): (Vec<u8>, String) = match kind {
            Kind::MalformedJson(v) => {
                let (bytes, content_type) =
                    encoding::malformed(*v, &body, self.agent.protocol.answer_fields());
                set_content_type(&mut self.plan.response, content_type);
                // Duplicate keys still parse (the last one wins): usable, if ambiguous.
                if *v != Malformed::DuplicateKeys {
                    self.unusable(format!("malformed JSON ({})", v.name()));
                }
                (bytes, String::new())
            }
            Kind::InvalidUtf8 => (
                encoding::invalid_utf8(&body, self.agent.protocol.answer_fields()),
                "invalid UTF-8 in the body".into(),
            ),
            Kind::OversizedBody { endless: true, .. } => {
                self.plan.endless = true;
                self.plan.framing = Framing::Chunked;
                (
                    endless_chunk(self.agent.protocol.answer_fields(), self.agent.name()),
                    "an endless body".into(),
                )
            }
            Kind::OversizedBody { bytes, .. } => (
                encoding::padded_body(&body, *bytes),
                format!("a body of {bytes} bytes (over 5 MB)"),
            ),
            _ => return false,
        };
        if !why.is_empty() {
            // A body over the platform's 5 MB is truncated or rejected: unusable either way.
            if !matches!(kind, Kind::OversizedBody { bytes, endless: false } if *bytes <= 5_000_000)
            {
                self.unusable(why);
            }
        }
        self.plan.response.body = Bytes::from(new);
        true
    }

    fn status(&mut self, kind: &Kind) -> bool {
        match kind {
            Kind::HttpError {
                status,
                retry_after,
            } => {
                let r = &mut self.plan.response;
                *r = Response::json_error(
                    *status,
                    &format!("{} (agent-tck mock: http-error)", reason(*status)),
                );
                if let Some(s) = retry_after {
                    r.headers.push(("retry-after".into(), s.to_string().into()));
                }
                self.unusable(format!("answered {status}"));
                true
            }
            Kind::WrongContentType(ct) => {
                set_content_type(&mut self.plan.response, ct);
                true
            }
            _ => false,
        }
    }

    fn wire(&mut self, kind: &Kind) -> bool {
        let body_len = self.plan.response.body.len() as u64;
        match kind {
            Kind::Slow { ttfb, body } => {
                self.plan.ttfb = ttfb.sample(&mut self.rng);
                self.plan.body_delay = body.sample(&mut self.rng);
                self.decision.ttfb_ms = self.plan.ttfb.as_millis() as u64;
                self.decision.body_ms += self.plan.body_delay.as_millis() as u64;
            }
            Kind::Hang => {
                self.plan.fault = Fault::Hang;
                self.unusable("never answers");
            }
            Kind::Blackhole => {
                self.plan.fault = Fault::Blackhole;
                self.unusable("never reads nor answers");
            }
            Kind::Reset(point) => {
                self.plan.fault = match point {
                    ResetPoint::BeforeHeaders => Fault::ResetBeforeHead,
                    ResetPoint::AfterHeaders => Fault::ResetAfterHead,
                    ResetPoint::MidBody(n) => Fault::ResetAt((*n).min(body_len.saturating_sub(1))),
                };
                self.unusable("connection reset");
            }
            Kind::CloseMidBody(at) => {
                let at = at.unwrap_or(body_len / 2).min(body_len.saturating_sub(1));
                self.plan.fault = Fault::CloseAt(at);
                self.unusable("connection closed mid-body");
            }
            Kind::GarbageThenClose => {
                self.plan.fault = Fault::Garbage(Bytes::from_static(
                    b"SSH-2.0-agent-tck\r\n\x00\xff\xfe garbage, not HTTP \x1b[0m\r\n",
                ));
                self.unusable("not HTTP");
            }
            Kind::Dribble { bytes_per_sec } => {
                self.plan.dribble = Some(*bytes_per_sec);
                let total = body_len + 128;
                self.decision.body_ms += total * 1000 / u64::from(*bytes_per_sec);
            }
            Kind::ContentLengthMismatch(lie) => {
                let declared = match lie {
                    LengthLie::More => body_len + 100,
                    LengthLie::Less => body_len / 2,
                };
                self.plan.framing = Framing::Lie { declared };
                self.unusable(format!(
                    "Content-Length {declared} for a body of {body_len} bytes"
                ));
            }
            _ => return false,
        }
        true
    }
}

fn set_content_type(response: &mut Response, content_type: &str) {
    response
        .headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
    response
        .headers
        .push(("content-type".into(), content_type.to_string().into()));
}

fn reason(status: u16) -> &'static str {
    super::http1::canonical_reason(status).unwrap_or("error")
}

/// The repeated chunk of an endless body: an object that never closes.
fn endless_chunk(fields: &AnswerFields, agent: &str) -> Vec<u8> {
    let mut chunk = format!(
        "{{{}:{agent:?},\"{}\":\"",
        Value::String(fields.identity.into()),
        encoding::PADDING_FIELD
    )
    .into_bytes();
    chunk.resize(64 * 1024, b'x');
    chunk
}
