//! The cases judged across the whole run, once every other case has run: answer times, 5xx
//! answers, the fields of every LibrarianResponse, refusals that name the missing field.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::protocols::librarian::model::{
    self, check_response, judge_answer, names_field, Judged, LIMITS,
};
use crate::protocols::librarian::rules::Across;
use crate::report::{CaseResult, Evidence};
use crate::schema::schemas;
use crate::text::excerpt;

use super::client::{Client, Seen};

/// What a case judged across the run found: its problems, how many things it judged, and
/// what they were.
type Findings = (Vec<String>, usize, &'static str);

pub(super) fn judge_across(c: &Client<'_>, a: Across, case: &mut CaseResult) {
    let (problems, n, of) = match a {
        Across::WithinTimeout => within_timeout(c),
        Across::No5xx => no_5xx(c),
        Across::ResponseFields => response_fields(c),
        Across::Expectations => expectations(c),
        Across::NamesMissingField => names_missing_field(c),
    };
    if problems.is_empty() {
        case.pass_noting(
            Evidence::new(n as u64, of),
            format!("{n} {of} checked"),
            || format!("not judged: no {of} in the run; {}", exercised_by(a)),
        );
    } else {
        let shown: Vec<&str> = problems.iter().take(5).map(String::as_str).collect();
        case.fail_on(
            Evidence::new(n as u64, of),
            format!("{} of {n} {of}: {}", problems.len(), shown.join("; ")),
        );
    }
}

/// The endpoints that answered a request 2xx. Only those exist as far as the run can tell: a
/// 404 from a server without the route is no answer to time or to judge.
fn live_endpoints(c: &Client<'_>) -> BTreeSet<&'static str> {
    c.seen
        .iter()
        .filter(|s| (200..300).contains(&s.status))
        .map(|s| s.endpoint)
        .collect()
}

/// `Across::WithinTimeout`: the answers of live endpoints that took too long.
fn within_timeout(c: &Client<'_>) -> Findings {
    let live = live_endpoints(c);
    let from_live = || c.seen.iter().filter(|s| live.contains(s.endpoint));
    (
        from_live()
            .filter(|s| s.elapsed > LIMITS.response)
            .map(|s| format!("{} took {} ms", s.what, s.elapsed.as_millis()))
            .collect(),
        from_live().count(),
        "answers from endpoints that answered 2xx",
    )
}

/// `Across::No5xx`: the 5xx answers no case judged already.
fn no_5xx(c: &Client<'_>) -> Findings {
    let live = live_endpoints(c);
    // A 5xx breaks the rule wherever it comes from; the rest count from live endpoints.
    let errors: Vec<String> = c
        .seen
        .iter()
        .filter(|s| s.status >= 500 && !s.judged)
        .map(|s| format!("{}: {}", s.what, s.status))
        .collect();
    let dead_5xx = c
        .seen
        .iter()
        .filter(|s| s.status >= 500 && !s.judged && !live.contains(s.endpoint))
        .count();
    let from_live = c.seen.iter().filter(|s| live.contains(s.endpoint)).count();
    (
        errors,
        from_live + dead_5xx,
        "answers from endpoints that answered 2xx",
    )
}

/// `Across::ResponseFields`: the fields missing from 2xx answers to valid requests.
fn response_fields(c: &Client<'_>) -> Findings {
    let answers: Vec<(&Value, &Value)> = c
        .seen
        .iter()
        .filter(|s| (200..300).contains(&s.status))
        .filter_map(|s| Some((s.request.as_ref()?, s.answer.as_ref()?)))
        .filter(|(r, _)| schemas().validate(model::REQUEST_SCHEMA, r).is_empty())
        .collect();
    (
        answers
            .iter()
            .flat_map(|(r, v)| {
                let (_, should) = check_response(r, v);
                should
                    .into_iter()
                    .filter(|f| f.message.contains("fields missing"))
                    .map(|f| format!("{} {}: {}", asked(Some(r)), f.path, f.message))
                    .collect::<Vec<_>>()
            })
            .collect(),
        answers.len(),
        "2xx answers to valid requests",
    )
}

/// `Across::Expectations`: every answer the shared judge judges: a 2xx to a valid request by
/// every expectation, and any rejection (to a request over a limit, in strict mode, with a
/// secret…) by whether it names its violations.
fn expectations(c: &Client<'_>) -> Findings {
    let judged: Vec<(&Seen, Judged)> = c
        .seen
        .iter()
        // An answer that is not JSON has no expectation to meet (valid_request fails it).
        .filter(|s| s.endpoint == "request" && s.answer.is_some())
        .filter_map(|s| {
            let j = judge_answer(s.request.as_ref(), s.status, s.answer.as_ref())?;
            Some((s, j))
        })
        .collect();
    (
        judged
            .iter()
            .flat_map(|(s, j)| {
                j.should
                    .iter()
                    .filter(|f| !f.message.contains("fields missing"))
                    .map(|f| {
                        format!(
                            "{} ({}) {}: {}",
                            asked(s.request.as_ref()),
                            s.what,
                            f.path,
                            f.message
                        )
                    })
            })
            .collect(),
        judged.len(),
        "answers to /agent/request (2xx answers to valid requests, and every rejection)",
    )
}

/// `Across::NamesMissingField`: the refusals for a missing field that do not name it.
fn names_missing_field(c: &Client<'_>) -> Findings {
    (
        c.missing
            .iter()
            .filter(|(field, answer)| !names_field(answer, field))
            .map(|(field, answer)| {
                format!(
                    "without {field}: {}",
                    excerpt(answer.to_string().as_bytes(), 160)
                )
            })
            .collect(),
        c.missing.len(),
        "refusals for a missing field",
    )
}

/// The request type of a request, as a problem line starts (`?`: none, or not JSON).
fn asked(request: Option<&Value>) -> &str {
    request
        .and_then(|r| r["request_type"].as_str())
        .unwrap_or("?")
}

/// What would give a case judged across the run something to judge.
pub(super) fn exercised_by(a: Across) -> &'static str {
    match a {
        Across::WithinTimeout | Across::No5xx => {
            "the request.* cases exercise it against a Librarian whose endpoints answer them"
        }
        Across::ResponseFields | Across::Expectations => {
            "the request.* cases exercise it against a Librarian that answers them 2xx with a \
             LibrarianResponse"
        }
        Across::NamesMissingField => {
            "the fields.* cases exercise it against a Librarian that refuses a request without \
             a required field with a JSON answer"
        }
    }
}
