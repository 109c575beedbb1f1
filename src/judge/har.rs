//! A recording as HAR 1.2 (<http://www.softwareishard.com/blog/har-12-spec/>), the format
//! browsers, mitmproxy and Redocly read and write: `--record FILE.har`.
//!
//! **Written as a stream.** The file opens with the `log` head, then holds one entry a line,
//! each written and flushed as its exchange ends, so that a run killed midway leaves every
//! finished exchange on disk; [`HarWriter::finish`] closes the `entries` array and the objects.
//! The head is written with the first exchange (or at the close), so that the events told
//! before any exchange (a proxy's settings, written as it starts) are in it and survive a kill:
//!
//! ```text
//! {"log":{"version":"1.2","creator":{…},"_agentTck_eventsFirst":[…],"pages":[],"entries":[
//! {…first entry…}
//! ,{…second entry…}
//! ],"_agentTck_events":[…]}}
//! ```
//!
//! **Lossless.** What HAR has no field for is in each entry's `_agentTck` object (the
//! exchange's number, parties, case, endpoint, how a missing answer ended, the exact instants,
//! the context), so that an [`Exchange`] read back is the one written. HAR has no place for a
//! run's [`Event`]s either: each is kept with the number of entries written before it, the
//! first ones in the head and the rest at the close (`_agentTck_events`), so that reading
//! restores the interleaving. A file cut by a kill loses the events told after its first
//! exchange (a proxy's end of run, which a kill never writes anyway).
//!
//! **Times.** `startedDateTime` is the wall clock read as the recorder was created plus the
//! exchange's `sent_ms`. HAR wants `time` to be the sum of the `timings` and allows none of
//! `send`, `wait`, `receive` to be -1, so `time` is the answer's instant minus the request's,
//! all of it counted as `wait`; an exchange with no answer has `time` 0, `response.status` 0
//! (what browsers write for a request that got no response) and `response._error` saying how
//! the wait ended.
//!
//! **URLs.** HAR wants a URL where an exchange has a party and an endpoint: the caller gives
//! each party's base ([`HarWriter::create`], e.g. `http://127.0.0.1:8700/agents/alpha`), the
//! entry's URL is the asked party's base plus the endpoint. Without one, [`default_url`]
//! names the party under the reserved host `agent-tck.invalid`.
//!
//! **Reading.** Our own file is read line by line; a file cut before its close gives every
//! whole entry and says it was cut. Any other HAR (a browser's, mitmproxy's) is read whole:
//! an entry with no `_agentTck` is a request from the platform to the agent its URL's path
//! names (`/agents/NAME/…`, the endpoint what follows), else to an agent called `agent`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::read::{Read, RecordError};
use super::{Answer, Entry, Event, Exchange, Message, Party};

/// Each party's base URL, as the caller says it.
pub type Urls = Box<dyn Fn(&Party) -> String + Send>;

/// A party's URL when the caller gives none: under `http://agent-tck.invalid` (a name reserved
/// never to resolve), at `/platform`, `/agents/NAME`, `/server` or `/clients/NAME`.
pub fn default_url(party: &Party) -> String {
    let at = match party {
        Party::Platform => "platform".to_string(),
        Party::Agent(name) => format!("agents/{name}"),
        Party::Server => "server".to_string(),
        Party::Client(name) => format!("clients/{name}"),
    };
    format!("http://agent-tck.invalid/{at}")
}

/// The head's first line, up to where the head's events go.
fn head_start() -> String {
    format!(
        r#"{{"log":{{"version":"1.2","creator":{{"name":"agent-tck","version":"{}"}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

/// How the head's line ends: what tells our own file from another HAR.
const HEAD_END: &str = r#""pages":[],"entries":["#;
/// The events told before the first entry, in the head.
const EVENTS_FIRST: &str = "_agentTck_eventsFirst";
/// The events told after it, at the close.
const EVENTS: &str = "_agentTck_events";

/// An event of the run and how many entries were written before it.
#[derive(Debug, Serialize, Deserialize)]
struct Placed {
    #[serde(rename = "entriesBefore")]
    entries_before: u64,
    #[serde(flatten)]
    event: Event,
}

/// Writes a HAR file as the exchanges end.
pub struct HarWriter {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    urls: Urls,
    /// The wall clock as the recorder was created: the run's start, near enough.
    started: OffsetDateTime,
    head_written: bool,
    finished: bool,
    entries: u64,
    /// Events told after the first entry, written at the close.
    events: Vec<Placed>,
    /// Events told before it, written with the head.
    first_events: Vec<Placed>,
}

impl HarWriter {
    pub fn create(path: &Path, urls: Urls) -> Result<HarWriter, RecordError> {
        let file = std::fs::File::create(path).map_err(|source| io(path, source))?;
        Ok(HarWriter {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            urls,
            started: OffsetDateTime::now_utc(),
            head_written: false,
            finished: false,
            entries: 0,
            events: Vec::new(),
            first_events: Vec::new(),
        })
    }

    /// Writes the exchange as one entry on its own line, and flushes it.
    pub fn write(&mut self, exchange: &Exchange) -> Result<(), RecordError> {
        if self.finished {
            return Err(self.closed());
        }
        self.head()?;
        let entry = to_entry(exchange, &self.urls, self.started);
        let sep = if self.entries == 0 { "" } else { "," };
        let path = &self.path;
        let out = &mut self.out;
        (|| {
            out.write_all(sep.as_bytes())?;
            serde_json::to_writer(&mut *out, &entry)?;
            out.write_all(b"\n")?;
            out.flush()
        })()
        .map_err(|source| io(path, source))?;
        self.entries += 1;
        Ok(())
    }

    /// Keeps the event, with its place among the entries, for the head or the close.
    pub fn write_event(&mut self, event: &Event) -> Result<(), RecordError> {
        if self.finished {
            return Err(self.closed());
        }
        let placed = Placed {
            entries_before: self.entries,
            event: event.clone(),
        };
        if self.head_written {
            self.events.push(placed);
        } else {
            self.first_events.push(placed);
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), RecordError> {
        self.out.flush().map_err(|source| io(&self.path, source))
    }

    /// Closes the entries and the log, with the events told after the first entry: the file
    /// is a whole HAR after it. Closing twice writes nothing more.
    pub fn finish(&mut self) -> Result<(), RecordError> {
        if self.finished {
            return Ok(());
        }
        self.head()?;
        self.finished = true;
        let events = std::mem::take(&mut self.events);
        let path = &self.path;
        let out = &mut self.out;
        (|| {
            write!(out, "],\"{EVENTS}\":")?;
            serde_json::to_writer(&mut *out, &events)?;
            out.write_all(b"}}\n")?;
            out.flush()
        })()
        .map_err(|source| io(path, source))
    }

    /// Writes the head, with the events told so far, unless it is written.
    fn head(&mut self) -> Result<(), RecordError> {
        if self.head_written {
            return Ok(());
        }
        self.head_written = true;
        let events = std::mem::take(&mut self.first_events);
        let path = &self.path;
        let out = &mut self.out;
        (|| {
            out.write_all(head_start().as_bytes())?;
            write!(out, ",\"{EVENTS_FIRST}\":")?;
            serde_json::to_writer(&mut *out, &events)?;
            writeln!(out, ",{HEAD_END}")?;
            out.flush()
        })()
        .map_err(|source| io(path, source))
    }

    fn closed(&self) -> RecordError {
        io(
            &self.path,
            std::io::Error::other("the recording was already closed"),
        )
    }
}

impl Drop for HarWriter {
    /// Dropped unclosed (a run that ended in an error): the head is written if no exchange
    /// wrote it, so that the file holds the events told so far and reads as cut. The tail is
    /// not written: a file that says it was cut tells the truth about the run.
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.head();
        }
    }
}

fn io(path: &Path, source: impl Into<std::io::Error>) -> RecordError {
    RecordError::Io {
        path: path.to_path_buf(),
        source: source.into(),
    }
}

// ---- The entry as HAR has it ----

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarEntry {
    started_date_time: String,
    #[serde(default)]
    time: f64,
    request: HarRequest,
    response: HarResponse,
    #[serde(default)]
    cache: Value,
    #[serde(default)]
    timings: Value,
    #[serde(rename = "_agentTck", default, skip_serializing_if = "Option::is_none")]
    agent_tck: Option<Ours>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarRequest {
    method: String,
    url: String,
    #[serde(default)]
    http_version: String,
    #[serde(default)]
    cookies: Vec<Value>,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    query_string: Vec<Header>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    post_data: Option<PostData>,
    #[serde(default = "unknown")]
    headers_size: i64,
    #[serde(default = "unknown")]
    body_size: i64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarResponse {
    status: u16,
    #[serde(default)]
    status_text: String,
    #[serde(default)]
    http_version: String,
    #[serde(default)]
    cookies: Vec<Value>,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    content: Content,
    #[serde(rename = "redirectURL", default)]
    redirect_url: String,
    #[serde(default = "unknown")]
    headers_size: i64,
    #[serde(default = "unknown")]
    body_size: i64,
    /// How a request with no response ended (as browsers write it).
    #[serde(rename = "_error", default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn unknown() -> i64 {
    -1
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostData {
    #[serde(default)]
    mime_type: String,
    #[serde(default)]
    text: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Content {
    #[serde(default)]
    size: i64,
    #[serde(default)]
    mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    encoding: Option<String>,
}

/// What an exchange holds that HAR has no field for.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ours {
    seq: u64,
    from: Party,
    to: Party,
    endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    case: Option<String>,
    /// The exchange had no method (a line, not HTTP): the request's `method` is a stand-in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    no_method: bool,
    /// The answer came with no status (over lines): the response's 200 is a stand-in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    no_status: bool,
    /// The request's `postData.text` is base64 (its body is not UTF-8; HAR's `postData` has
    /// no `encoding`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    request_base64: bool,
    /// How the wait ended when no answer came (`timed-out`, `failed`, `cut`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Answer>,
    sent_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answered_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    context: Value,
}

fn headers(message: &Message) -> Vec<Header> {
    message
        .headers
        .iter()
        .map(|(name, value)| Header {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

fn mime_type(message: &Message) -> String {
    message.header("content-type").unwrap_or("").to_string()
}

/// The query string's pairs, as they are in the URL (not decoded).
fn query(url: &str) -> Vec<Header> {
    let Some((_, q)) = url.split_once('?') else {
        return Vec::new();
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (name, value) = p.split_once('=').unwrap_or((p, ""));
            Header {
                name: name.to_string(),
                value: value.to_string(),
            }
        })
        .collect()
}

/// The base and the endpoint joined by one `/` (an endpoint over lines has none: `analyze`).
fn url(base: &str, endpoint: &str) -> String {
    let base = base.trim_end_matches('/');
    if endpoint.is_empty() || endpoint.starts_with(['/', '?']) {
        format!("{base}{endpoint}")
    } else {
        format!("{base}/{endpoint}")
    }
}

fn to_entry(exchange: &Exchange, urls: &Urls, started: OffsetDateTime) -> HarEntry {
    let at = time::Duration::nanoseconds((exchange.sent_ms * 1e6) as i64);
    let started_date_time = started
        .checked_add(at)
        .unwrap_or(started)
        .format(&Rfc3339)
        .unwrap_or_default();
    let elapsed = match exchange.answered_ms {
        Some(answered) if answered >= exchange.sent_ms => answered - exchange.sent_ms,
        _ => 0.0,
    };
    let request = &exchange.request;
    let url = url(&urls(&exchange.to), &exchange.endpoint);
    let body = request.body();
    let post_data = match (&request.text, &request.base64) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(b64)) => Some(b64.clone()),
        (None, None) => None,
    }
    .map(|text| PostData {
        mime_type: mime_type(request),
        text,
    });
    let request = HarRequest {
        method: exchange.method.clone().unwrap_or_else(|| "POST".into()),
        query_string: query(&url),
        url,
        http_version: "HTTP/1.1".into(),
        cookies: Vec::new(),
        headers: headers(request),
        post_data,
        headers_size: -1,
        body_size: body.len() as i64,
    };
    let (response, answer, no_status) = match &exchange.answer {
        Answer::Delivered { status, message } => {
            let size = message.body().len() as i64;
            let response = HarResponse {
                status: status.unwrap_or(200),
                status_text: status
                    .and_then(crate::mock::http1::canonical_reason)
                    .unwrap_or("")
                    .to_string(),
                http_version: "HTTP/1.1".into(),
                cookies: Vec::new(),
                headers: headers(message),
                content: Content {
                    size,
                    mime_type: mime_type(message),
                    text: message.text.clone().or_else(|| message.base64.clone()),
                    encoding: message.base64.as_ref().map(|_| "base64".into()),
                },
                redirect_url: String::new(),
                headers_size: -1,
                body_size: size,
                error: None,
            };
            (response, None, status.is_none())
        }
        other => {
            let error = match other {
                Answer::TimedOut => "no answer within the deadline".to_string(),
                Answer::Failed { what } => what.clone(),
                _ => "the run ended before the answer came".to_string(),
            };
            let response = HarResponse {
                status: 0,
                status_text: String::new(),
                http_version: "HTTP/1.1".into(),
                cookies: Vec::new(),
                headers: Vec::new(),
                content: Content::default(),
                redirect_url: String::new(),
                headers_size: -1,
                body_size: -1,
                error: Some(error),
            };
            (response, Some(other.clone()), false)
        }
    };
    HarEntry {
        started_date_time,
        time: elapsed,
        request,
        response,
        cache: serde_json::json!({}),
        timings: serde_json::json!({"send": 0, "wait": elapsed, "receive": 0}),
        agent_tck: Some(Ours {
            seq: exchange.seq,
            from: exchange.from.clone(),
            to: exchange.to.clone(),
            endpoint: exchange.endpoint.clone(),
            case: exchange.case.clone(),
            no_method: exchange.method.is_none(),
            no_status,
            request_base64: exchange.request.text.is_none() && exchange.request.base64.is_some(),
            answer,
            sent_ms: exchange.sent_ms,
            answered_ms: exchange.answered_ms,
            context: exchange.context.clone(),
        }),
    }
}

fn message(headers: Vec<Header>, text: Option<String>, base64: bool) -> Message {
    let (text, base64) = if base64 { (None, text) } else { (text, None) };
    Message {
        headers: headers.into_iter().map(|h| (h.name, h.value)).collect(),
        text,
        base64,
    }
}

/// Turns a file's entries into exchanges, in order.
#[derive(Default)]
struct Entries {
    /// How many so far.
    n: u64,
    /// The first entry's start: a foreign entry's instants count from it.
    first: Option<String>,
}

impl Entries {
    fn next(&mut self, entry: HarEntry) -> Result<Exchange, String> {
        self.n += 1;
        let first = self
            .first
            .get_or_insert_with(|| entry.started_date_time.clone());
        to_exchange(entry, self.n, first)
    }
}

/// The exchange an entry holds; `n` is its place (from 1), `first` the first entry's start.
fn to_exchange(entry: HarEntry, n: u64, first: &str) -> Result<Exchange, String> {
    let request = message(
        entry.request.headers,
        entry.request.post_data.map(|p| p.text),
        entry.agent_tck.as_ref().is_some_and(|o| o.request_base64),
    );
    let delivered = || Answer::Delivered {
        status: Some(entry.response.status),
        message: message(
            entry.response.headers,
            entry.response.content.text,
            entry.response.content.encoding.as_deref() == Some("base64"),
        ),
    };
    let Some(ours) = entry.agent_tck else {
        let sent_ms = (started_ns(&entry.started_date_time)? - started_ns(first)?) as f64 / 1e6;
        let (to, endpoint) = party_of(&entry.request.url);
        let answer = if entry.response.status > 0 {
            delivered()
        } else {
            Answer::Failed {
                what: entry
                    .response
                    .error
                    .unwrap_or_else(|| "no response recorded".into()),
            }
        };
        return Ok(Exchange {
            seq: n,
            from: Party::Platform,
            to,
            method: Some(entry.request.method),
            endpoint,
            case: None,
            request,
            answered_ms: (entry.time >= 0.0 && entry.response.status > 0)
                .then_some(sent_ms + entry.time),
            answer,
            sent_ms,
            context: Value::Null,
        });
    };
    let answer = match ours.answer {
        Some(answer) => answer,
        None => match delivered() {
            Answer::Delivered { message, .. } if ours.no_status => Answer::Delivered {
                status: None,
                message,
            },
            answer => answer,
        },
    };
    Ok(Exchange {
        seq: ours.seq,
        from: ours.from,
        to: ours.to,
        method: (!ours.no_method).then_some(entry.request.method),
        endpoint: ours.endpoint,
        case: ours.case,
        request,
        answer,
        sent_ms: ours.sent_ms,
        answered_ms: ours.answered_ms,
        context: ours.context,
    })
}

/// The instant a HAR entry started, in nanoseconds since the Unix epoch (as an integer: a
/// float that large would lose the microseconds).
fn started_ns(at: &str) -> Result<i128, String> {
    OffsetDateTime::parse(at, &Rfc3339)
        .map(|at| at.unix_timestamp_nanos())
        .map_err(|e| format!("startedDateTime {at:?} is not an ISO 8601 instant: {e}"))
}

/// The agent a foreign entry's URL names (`…/agents/NAME/rest`: NAME, endpoint `/rest`), else
/// an agent called `agent` and the URL's whole path.
fn party_of(url: &str) -> (Party, String) {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme
        .find('/')
        .map_or("/", |i| &after_scheme[i..])
        .split(['?', '#'])
        .next()
        .unwrap_or("/");
    if let Some(i) = path.find("/agents/") {
        let rest = &path[i + "/agents/".len()..];
        let (name, endpoint) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if !name.is_empty() {
            let endpoint = if endpoint.is_empty() { "/" } else { endpoint };
            return (Party::Agent(name.to_string()), endpoint.to_string());
        }
    }
    (Party::Agent("agent".into()), path.to_string())
}

// ---- Reading ----

/// What a file's first line says it is.
pub(super) enum Kind {
    /// A HAR of our own, read line by line.
    Ours,
    /// Another HAR (or ours, pretty-printed by a tool), read whole.
    Whole,
    /// JSON lines.
    Lines,
}

/// What `first` (the file's first line) and `peek` (its first bytes) say the file is.
pub(super) fn kind(first: &str, peek: &[u8]) -> Kind {
    if first.starts_with(&head_start()) && first.trim_end().ends_with(HEAD_END) {
        return Kind::Ours;
    }
    if let Ok(value) = serde_json::from_str::<Value>(first) {
        // One line that is a whole JSON value: a HAR written on one line, or a line of JSON
        // lines (an exchange or an event, which have no `log`).
        return if value.get("log").is_some() {
            Kind::Whole
        } else {
            Kind::Lines
        };
    }
    // A pretty-printed HAR opens with `{` and `"log":` before anything else.
    let text = String::from_utf8_lossy(peek);
    let rest = text.trim_start();
    match rest.strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with("\"log\"") => Kind::Whole,
        _ => Kind::Lines,
    }
}

fn line_error(path: &Path, line: usize, why: impl std::fmt::Display) -> RecordError {
    RecordError::Line {
        path: path.to_path_buf(),
        line,
        source: serde::de::Error::custom(why),
    }
}

/// Puts the events among the exchanges, each after as many entries as were written before it.
fn interleave(exchanges: Vec<Exchange>, mut events: Vec<Placed>) -> Vec<Entry> {
    events.sort_by_key(|p| p.entries_before);
    let mut events = events.into_iter().peekable();
    let mut out = Vec::with_capacity(exchanges.len() + events.len());
    for (i, exchange) in exchanges.into_iter().enumerate() {
        while let Some(placed) = events.next_if(|p| p.entries_before <= i as u64) {
            out.push(Entry::Event(placed.event));
        }
        out.push(Entry::Exchange(exchange));
    }
    out.extend(events.map(|p| Entry::Event(p.event)));
    out
}

/// Our own HAR, line by line from its head (`first`, line 1): every whole entry, and whether
/// the file was cut before its close. A line that is not whole is the cut when it is the
/// file's last and was left unended by a kill, else an error naming it.
pub(super) fn read_ours(
    path: &Path,
    first: &str,
    mut lines: impl BufRead,
) -> Result<Read, RecordError> {
    let head = first
        .trim_end()
        .strip_suffix(HEAD_END)
        .and_then(|h| h.strip_suffix(','))
        .map(|h| format!("{h}}}}}"));
    let head: Value = head
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .ok()
        .flatten()
        .ok_or_else(|| line_error(path, 1, "the HAR's head does not parse"))?;
    let mut events: Vec<Placed> = match head["log"].get(EVENTS_FIRST) {
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| line_error(path, 1, format!("its events do not parse: {e}")))?,
        None => Vec::new(),
    };
    let mut exchanges = Vec::new();
    let mut numbered = Entries::default();
    let mut line = String::new();
    let mut number = 1;
    loop {
        line.clear();
        let read = lines
            .read_line(&mut line)
            .map_err(|source| io(path, source))?;
        if read == 0 {
            // The end came before the close: a run cut by a kill.
            return Ok(Read {
                entries: interleave(exchanges, events),
                cut: true,
            });
        }
        number += 1;
        let ended = line.ends_with('\n');
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(tail) = text.strip_prefix(']') {
            let tail = tail
                .strip_prefix(',')
                .and_then(|t| t.strip_suffix("}}"))
                .map(|t| format!("{{{t}}}"));
            let tail: Value = tail
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok())
                .ok_or_else(|| line_error(path, number, "the HAR's close does not parse"))?;
            if let Some(v) = tail.get(EVENTS) {
                let rest: Vec<Placed> = serde_json::from_value(v.clone()).map_err(|e| {
                    line_error(path, number, format!("its events do not parse: {e}"))
                })?;
                events.extend(rest);
            }
            return Ok(Read {
                entries: interleave(exchanges, events),
                cut: false,
            });
        }
        let json = text.strip_prefix(',').unwrap_or(text);
        let entry = match serde_json::from_str::<HarEntry>(json) {
            Ok(entry) => entry,
            // Half a line at the very end: where the kill came.
            Err(_) if !ended => {
                return Ok(Read {
                    entries: interleave(exchanges, events),
                    cut: true,
                })
            }
            Err(source) => {
                return Err(RecordError::Line {
                    path: path.to_path_buf(),
                    line: number,
                    source,
                })
            }
        };
        exchanges.push(
            numbered
                .next(entry)
                .map_err(|e| line_error(path, number, e))?,
        );
    }
}

/// A whole HAR's `log`, as far as reading needs it.
#[derive(Deserialize)]
struct Whole {
    log: WholeLog,
}

#[derive(Deserialize)]
struct WholeLog {
    #[serde(default)]
    entries: Vec<HarEntry>,
    #[serde(rename = "_agentTck_eventsFirst", default)]
    events_first: Vec<Placed>,
    #[serde(rename = "_agentTck_events", default)]
    events: Vec<Placed>,
}

/// Any whole HAR, read at once (a foreign one has no line per entry to read it by): an entry
/// that does not parse is an error naming the line it is on, one that parses but says
/// nothing usable (an instant that is not one) an error naming its place in `entries`.
pub(super) fn read_whole(path: &Path, file: std::fs::File) -> Result<Read, RecordError> {
    let whole: Whole =
        serde_json::from_reader(std::io::BufReader::new(file)).map_err(|source| {
            RecordError::Line {
                path: path.to_path_buf(),
                line: source.line(),
                source,
            }
        })?;
    let mut entries = Vec::with_capacity(whole.log.entries.len());
    let mut numbered = Entries::default();
    for (i, entry) in whole.log.entries.into_iter().enumerate() {
        let bad = |why: String| RecordError::Entry {
            path: path.to_path_buf(),
            entry: i + 1,
            why,
        };
        entries.push(numbered.next(entry).map_err(bad)?);
    }
    let mut events = whole.log.events_first;
    events.extend(whole.log.events);
    Ok(Read {
        entries: interleave(entries, events),
        cut: false,
    })
}

#[cfg(test)]
mod tests;
