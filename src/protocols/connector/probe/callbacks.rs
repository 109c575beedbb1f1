//! The callbacks on tape: recorded, with the forward each followed and how long after; played
//! again to the kit's own callback endpoint when replaying, at those delays.

use super::*;

impl Run<'_> {
    /// Replaying: the callbacks the agent made after forward `i`, played to the callback
    /// endpoint as long after this forward as they came after the recorded one.
    pub(super) fn play_callbacks(&self, i: usize) {
        let Some(tape) = self.tape.as_deref().filter(|t| t.replaying()) else {
            return;
        };
        let session = &self.forwards[i].session;
        let k = self.forwards[..i]
            .iter()
            .filter(|f| &f.session == session)
            .count();
        let heard = tape.heard_recorded();
        let mine = heard.iter().filter(|e| {
            e.case.as_ref() == Some(session) && e.context["forward"].as_u64() == Some(k as u64)
        });
        for exchange in mine {
            let after = Duration::from_nanos(exchange.context["after_ns"].as_u64().unwrap_or(0));
            self.play(exchange, after);
        }
    }

    /// Plays one recorded callback to the callback endpoint, `after` from now.
    pub(super) fn play(&self, exchange: &crate::judge::Exchange, after: Duration) {
        let (base, request) = (self.listening.clone(), replayed_callback(exchange));
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            // Its answer is the callback endpoint's own, judged by nothing.
            let _ = http::send(&base, &request, Limits::default()).await;
        });
    }

    /// Replaying: the callbacks to sessions never given, played now one after the other (in
    /// the order they came: the first is the one a failure quotes).
    pub(super) async fn play_strays(&self) {
        let Some(tape) = self.tape.as_deref().filter(|t| t.replaying()) else {
            return;
        };
        for exchange in tape.heard_recorded().iter().filter(|e| e.case.is_none()) {
            let request = replayed_callback(exchange);
            let _ = http::send(&self.listening, &request, Limits::default()).await;
        }
    }

    /// Recording: every callback the agent made, with the forward it followed (the last of its
    /// session to have ended before it came) and how long after; then those to no session.
    pub(super) fn record_callbacks(&self) {
        let Some(tape) = self.tape.as_deref().filter(|t| !t.replaying()) else {
            return;
        };
        let mut sessions: Vec<&str> = Vec::new();
        for f in &self.forwards {
            if !sessions.contains(&f.session.as_str()) {
                sessions.push(&f.session);
            }
        }
        let heard = |case: Option<&str>, method: &str, endpoint: &str, request, context| {
            tape.heard(crate::judge::Exchange {
                seq: 0,
                from: Party::Agent(super::super::NAME.to_string()),
                to: Party::Platform,
                method: Some(method.to_string()),
                endpoint: endpoint.to_string(),
                case: case.map(str::to_string),
                request,
                answer: crate::judge::Answer::Delivered {
                    status: None,
                    message: Message::default(),
                },
                sent_ms: 0.0,
                answered_ms: None,
                context,
            })
        };
        for session in sessions {
            let ends: Vec<Duration> = self
                .forwards
                .iter()
                .filter(|f| f.session == session)
                .map(|f| f.ended_at)
                .collect();
            for cb in self.listener.callbacks(session) {
                let at = self.watch.since_start(cb.at);
                let k = ends.iter().rposition(|e| *e <= at).unwrap_or(0);
                let after = at.saturating_sub(ends[k]);
                let headers = cb.content_type.iter().map(|t| ("content-type", t.as_str()));
                let context = json!({
                    "forward": k,
                    "after_ns": u64::try_from(after.as_nanos()).unwrap_or(u64::MAX),
                });
                let request = Message::masked(headers, &cb.body);
                heard(Some(session), &cb.method, &cb.path, request, context);
            }
        }
        for stray in self.listener.stray() {
            let (method, target) = stray.split_once(' ').unwrap_or(("POST", &stray));
            heard(None, method, target, Message::default(), Value::Null);
        }
    }
}

/// A recorded callback, to be made again.
pub(super) fn replayed_callback(exchange: &crate::judge::Exchange) -> Request {
    Request {
        method: exchange.method.clone().unwrap_or_else(|| "POST".into()),
        path: exchange.endpoint.clone(),
        headers: exchange.request.headers.clone(),
        body: exchange.request.body().into(),
    }
}
