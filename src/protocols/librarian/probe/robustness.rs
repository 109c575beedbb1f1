//! The `robustness.unicode` and `robustness.concurrent` cases.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::protocols::librarian::model::check_response;
use crate::schema::findings_message;
use crate::text::excerpt;
use crate::transport::http::{Limits, Request};
use crate::transport::liveness;

use super::client::{Client, Gate, NoAnswer};
use super::verdict::{a_librarian_response, unauthorized_unknown, Verdict};

pub(super) async fn unicode(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    let i = match c.asker("APPROVAL").await {
        Ok(i) => i,
        Err(why) => return Ok(Verdict::unjudged(why)),
    };
    let mut body = c.build(i, "APPROVAL");
    body["content"] = json!(
        "# Überprüfung 认证模块 🔐

راجع الفاتورة — סקור את החשבון. Ünïcödé ✅"
    );
    body["rationale"] = json!("Nutzergeschichte US-123 — 用户故事 — قصة المستخدم");
    let got = c.request("unicode", i, &body).await?;
    if let Some(skip) = unauthorized_unknown(c, "an APPROVAL with unicode", &got) {
        return Ok(skip);
    }
    Ok(match a_librarian_response(&body, &got) {
        Ok(()) => Verdict::held(
            1,
            "APPROVALs with unicode in content and rationale",
            got.decision(),
        ),
        Err(failed) => failed,
    })
}

pub(super) async fn concurrent(c: &mut Client<'_>) -> Result<Verdict, NoAnswer> {
    if let Err(why) = c.opened(Gate::Request("QUERY")).await {
        return Ok(Verdict::unjudged(why));
    }
    let agents = c.s.tokens.len().min(2);
    let bodies: Vec<(usize, Value)> = (0..10)
        .map(|k| (k % agents, c.build(k % agents, "QUERY")))
        .collect();
    let (s, watch) = (c.s, &c.watch);
    let sends = bodies.iter().map(|(i, body)| async move {
        let token = &s.tokens[*i].1;
        let request = Request {
            method: "POST".into(),
            path: "/agent/request".into(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("authorization".into(), format!("Bearer {token}")),
            ],
            body: Bytes::from(body.to_string()),
        };
        let limits = Limits {
            deadline: s.timeout,
            max_body: s.max_body,
            ..Limits::default()
        };
        (body, liveness::send(watch, &s.base, &request, limits).await)
    });
    let results: Vec<_> = futures::future::join_all(sends).await;
    c.broke
        .extend(results.iter().filter_map(|(_, (_, broke))| *broke));
    let results: Vec<_> = results.into_iter().map(|(b, (r, _))| (b, r)).collect();
    let mut ids = std::collections::HashSet::new();
    for (body, result) in &results {
        let r = result.as_ref().map_err(|e| NoAnswer::from(e.clone()))?;
        let answer: Option<Value> = serde_json::from_slice(&r.body).ok();
        let Some(answer) = answer.filter(|_| (200..300).contains(&r.status)) else {
            return Ok(Verdict::broken(format!(
                "one of ten requests at once was answered {}: {}",
                r.status,
                excerpt(&r.body, 200)
            )));
        };
        let (must, _) = check_response(body, &answer);
        if !must.is_empty() {
            return Ok(Verdict::broken(findings_message(&must)));
        }
        ids.insert(answer["request_id"].as_str().unwrap_or("").to_string());
    }
    Ok(if ids.len() == results.len() {
        Verdict::held(
            results.len(),
            "requests sent at once",
            format!("{} answers, {} request_ids", results.len(), ids.len()),
        )
    } else {
        Verdict::broken(format!(
            "{} answers to ten different requests share request_ids: {} distinct",
            results.len(),
            ids.len()
        ))
    })
}
