//! HAR recordings written and read back through [`super::record`]: lossless, cut files,
//! other tools' files, errors named by place.
use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::*;
use crate::judge::record::{read_entries, read_recording, Recorder};
use crate::judge::{Answer, Entry, Event, Exchange, Message, Party};
use serde_json::json;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tck-har-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn exchange(seq: u64, answer: Answer) -> Exchange {
    Exchange {
        seq,
        from: Party::Platform,
        to: Party::Agent("alpha".into()),
        method: Some("POST".into()),
        endpoint: "/analyze?round=2".into(),
        case: Some("analyze.schema".into()),
        request: Message::masked(
            [
                ("Authorization", "Bearer sk-live-secret"),
                ("Content-Type", "application/json"),
            ],
            b"{\"a\":1}",
        ),
        answer,
        sent_ms: 1.5 + seq as f64,
        answered_ms: Some(3.25 + seq as f64),
        context: json!({"decision": {"behaviour": "slow"}}),
    }
}

fn event(name: &str) -> Event {
    Event {
        event: name.into(),
        at_ms: 0.5,
        context: json!({"why": name}),
    }
}

/// Every shape of an exchange: a binary answer, an empty body, no method and no status
/// (over lines), each way a wait ends with no answer.
fn all() -> Vec<Exchange> {
    let mut lines = exchange(
        4,
        Answer::Delivered {
            status: None,
            message: Message::masked([], b""),
        },
    );
    lines.method = None;
    lines.request = Message::masked([], b"\xff\x00binary");
    lines.case = None;
    lines.to = Party::Server;
    lines.from = Party::Client("c1".into());
    lines.context = Value::Null;
    let mut timed_out = exchange(5, Answer::TimedOut);
    timed_out.answered_ms = None;
    timed_out.request = Message::default();
    vec![
        exchange(
            1,
            Answer::Delivered {
                status: Some(200),
                message: Message::masked([("content-type", "image/png")], b"\x89PNG\xff\x00"),
            },
        ),
        exchange(
            2,
            Answer::Delivered {
                status: Some(503),
                message: Message::masked([], b"{\"error\":\"busy\"}"),
            },
        ),
        exchange(
            3,
            Answer::Failed {
                what: "connection reset".into(),
            },
        ),
        lines,
        timed_out,
        exchange(6, Answer::Cut),
    ]
}

#[test]
fn a_har_reads_back_lossless_with_its_events_in_place_and_no_key_in_it() {
    let dir = dir("round");
    let path = dir.join("run.HAR");
    let mut recorder = Recorder::create(&path).unwrap();
    recorder.write_event(&event("settings")).unwrap();
    let mut written = vec![Entry::Event(event("settings"))];
    for (i, e) in all().into_iter().enumerate() {
        recorder.write(&e).unwrap();
        written.push(Entry::Exchange(e));
        if i == 1 || i == 5 {
            let ev = event(&format!("after-{i}"));
            recorder.write_event(&ev).unwrap();
            written.push(Entry::Event(ev));
        }
    }
    recorder.finish().unwrap();
    recorder.finish().unwrap();
    drop(recorder);
    let read = read_recording(&path).unwrap();
    assert!(!read.cut);
    assert_eq!(read.entries, written);

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("sk-live-secret"), "{text}");
    assert!(text.contains("Bearer ***"), "{text}");
    let har: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(har["log"]["version"], "1.2");
    assert_eq!(har["log"]["creator"]["name"], "agent-tck");
    let entries = har["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 6);
    let first = &entries[0];
    assert_eq!(
        first["request"]["url"],
        "http://agent-tck.invalid/agents/alpha/analyze?round=2"
    );
    assert_eq!(first["request"]["queryString"][0]["name"], "round");
    assert_eq!(first["response"]["content"]["encoding"], "base64");
    assert_eq!(first["response"]["content"]["size"], 6);
    assert_eq!(first["time"], 1.75);
    assert_eq!(first["timings"]["wait"], 1.75);
    assert_eq!(entries[2]["response"]["status"], 0);
    assert_eq!(entries[2]["response"]["_error"], "connection reset");
    let at = OffsetDateTime::parse(first["startedDateTime"].as_str().unwrap(), &Rfc3339);
    assert!(at.is_ok(), "{first}");
    // A tool that reads it whole (a pretty-printer, then us) finds the same.
    std::fs::write(&path, serde_json::to_string_pretty(&har).unwrap()).unwrap();
    let again = read_recording(&path).unwrap();
    assert_eq!(again.entries, written);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_caller_names_each_partys_url() {
    let dir = dir("urls");
    let path = dir.join("run.har");
    let urls: Urls = Box::new(|party| match party {
        Party::Agent(name) => format!("http://127.0.0.1:8700/agents/{name}"),
        _ => "http://127.0.0.1:8700".into(),
    });
    let mut recorder = Recorder::create_with_urls(&path, urls).unwrap();
    recorder.write(&exchange(1, Answer::Cut)).unwrap();
    let mut bare = exchange(2, Answer::Cut);
    bare.endpoint = "vote".into();
    recorder.write(&bare).unwrap();
    recorder.finish().unwrap();
    let har: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let urls: Vec<_> = har["log"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["request"]["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "http://127.0.0.1:8700/agents/alpha/analyze?round=2",
            "http://127.0.0.1:8700/agents/alpha/vote"
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_har_cut_by_a_kill_gives_every_finished_exchange_and_says_cut() {
    let dir = dir("cut");
    let path = dir.join("run.har");
    let mut recorder = Recorder::create(&path).unwrap();
    recorder.write_event(&event("settings")).unwrap();
    for seq in 1..=3 {
        recorder
            .write(&exchange(seq, Answer::Failed { what: "x".into() }))
            .unwrap();
    }
    recorder.write_event(&event("lost")).unwrap();
    drop(recorder);
    // The kill came while the fourth entry was being written.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b",{\"startedDateTime\":\"2026-").unwrap();
    let read = read_recording(&path).unwrap();
    assert!(read.cut);
    let seqs: Vec<_> = read
        .entries
        .iter()
        .map(|e| match e {
            Entry::Exchange(e) => e.seq.to_string(),
            Entry::Event(e) => e.event.clone(),
        })
        .collect();
    assert_eq!(seqs, ["settings", "1", "2", "3"]);
    assert_eq!(read_entries(&path).unwrap().len(), 4);

    // Killed before any exchange: the head and its events, cut.
    let mut recorder = Recorder::create(&path).unwrap();
    recorder.write_event(&event("settings")).unwrap();
    drop(recorder);
    let read = read_recording(&path).unwrap();
    assert!(read.cut);
    assert_eq!(read.entries, vec![Entry::Event(event("settings"))]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_har_from_another_tool_reads_as_the_platform_asking_agents() {
    let dir = dir("foreign");
    let path = dir.join("browser.har");
    std::fs::write(
        &path,
        r#"{
  "log": {
"version": "1.2",
"creator": {"name": "mitmproxy", "version": "10"},
"entries": [
  {
    "startedDateTime": "2026-01-02T03:04:05.000Z",
    "time": 12.5,
    "request": {"method": "POST", "url": "http://staging:9000/agents/beta/vote?x=1",
      "httpVersion": "HTTP/1.1", "headers": [{"name": "content-type", "value": "application/json"}],
      "postData": {"mimeType": "application/json", "text": "{\"v\":1}"}},
    "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
      "headers": [], "content": {"size": 2, "mimeType": "application/json", "text": "{}"}}
  },
  {
    "startedDateTime": "2026-01-02T03:04:06.250Z",
    "time": 0,
    "request": {"method": "GET", "url": "http://staging:9000/health", "headers": []},
    "response": {"status": 0, "content": {"size": 0, "mimeType": ""}, "_error": "net::ERR_CONNECTION_RESET"}
  }
]
  }
}
"#,
    )
    .unwrap();
    let read = read_recording(&path).unwrap();
    assert!(!read.cut);
    let [Entry::Exchange(vote), Entry::Exchange(health)] = &read.entries[..] else {
        panic!("{:?}", read.entries);
    };
    assert_eq!(vote.to, Party::Agent("beta".into()));
    assert_eq!(vote.from, Party::Platform);
    assert_eq!(vote.endpoint, "/vote");
    assert_eq!(vote.method.as_deref(), Some("POST"));
    assert_eq!(vote.request.text.as_deref(), Some("{\"v\":1}"));
    assert_eq!((vote.sent_ms, vote.answered_ms), (0.0, Some(12.5)));
    assert!(matches!(
        &vote.answer,
        Answer::Delivered { status: Some(200), message } if message.text.as_deref() == Some("{}")
    ));
    assert_eq!(health.to, Party::Agent("agent".into()));
    assert_eq!(health.endpoint, "/health");
    assert_eq!(health.seq, 2);
    assert_eq!(health.sent_ms, 1250.0);
    assert_eq!(
        health.answer,
        Answer::Failed {
            what: "net::ERR_CONNECTION_RESET".into()
        }
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_entry_is_named_by_file_and_line() {
    let dir = dir("bad");
    let path = dir.join("run.har");
    let mut recorder = Recorder::create(&path).unwrap();
    recorder.write(&exchange(1, Answer::Cut)).unwrap();
    recorder.write(&exchange(2, Answer::Cut)).unwrap();
    recorder.finish().unwrap();
    drop(recorder);
    // The second entry (line 3) loses its request: a whole line, not a cut.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[2] = lines[2].replace("\"request\"", "\"requested\"");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = read_recording(&path).unwrap_err().to_string();
    assert!(e.contains("run.har:3: not a recorded exchange"), "{e}");
    assert!(e.contains("request"), "{e}");

    // A pretty-printed HAR: the line the bad value is on.
    std::fs::write(
        &path,
        "{\n  \"log\": {\n    \"entries\": [\n      {\"startedDateTime\": 5}\n    ]\n  }\n}\n",
    )
    .unwrap();
    let e = read_recording(&path).unwrap_err().to_string();
    assert!(e.contains("run.har:4: not a recorded exchange"), "{e}");

    // An entry that parses but whose instant is none: its place in `entries`.
    let entry = r#"{"startedDateTime": "yesterday", "request": {"method": "GET", "url": "/"},
        "response": {"status": 200}}"#;
    std::fs::write(&path, format!("{{\"log\": {{\"entries\": [{entry}]}}}}")).unwrap();
    let e = read_recording(&path).unwrap_err().to_string();
    assert!(
        e.contains("run.har: entry 1 of the HAR: startedDateTime \"yesterday\""),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
