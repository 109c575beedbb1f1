//! One deliberation: /analyze to every participant at once, /challenge to those whose analysis
//! was usable, /vote on a synthesis; every agent failure an exclusion with a reason.

use super::api::{reply, Task};
use super::*;

/// Why an agent's answer is not used. Invalid JSON is told apart because
/// [`Variant::CrashOnInvalidJson`] crashes on it.
pub(super) enum Failure {
    InvalidJson(String),
    Unusable(String),
}

impl Failure {
    fn reason(&self) -> &str {
        match self {
            Failure::InvalidJson(r) | Failure::Unusable(r) => r,
        }
    }
}

/// The task endpoint gave up: what [`Variant::CrashOnInvalidJson`] does on invalid JSON.
pub(super) struct Crash;

/// What one phase produced: the usable (sanitized) answers and the failures, by agent.
pub(super) struct Phase<'a> {
    answers: Vec<(&'a Agent, Value)>,
    failures: Vec<(&'a Agent, Failure)>,
}

impl<'a> Phase<'a> {
    /// The agents whose answer was usable.
    fn usable(&self) -> Vec<&'a Agent> {
        self.answers.iter().map(|(agent, _)| *agent).collect()
    }

    /// `[{agent, reason}]`, for the task answer.
    fn exclusions(&self) -> Value {
        self.failures
            .iter()
            .map(|(agent, failure)| json!({"agent": agent.name, "reason": failure.reason()}))
            .collect()
    }
}

/// The fields (and their JSON types) an answer needs to be usable, per endpoint.
pub(super) fn required(endpoint: &str) -> &'static [(&'static str, &'static str)] {
    match endpoint {
        "analyze" => &[
            ("agent_name", "string"),
            ("domain", "string"),
            ("observations", "array"),
        ],
        "vote" => &[("agent_name", "string"), ("approve", "boolean")],
        _ => &[("agent_name", "string")],
    }
}

pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn check_fields(
    answer: &Map<String, Value>,
    fields: &[(&str, &str)],
) -> Result<(), Failure> {
    for (field, kind) in fields {
        match answer.get(*field).map(type_name) {
            None => return Err(Failure::Unusable(format!("the answer lacks {field}"))),
            Some(got) if got != *kind => {
                return Err(Failure::Unusable(format!(
                    "{field} is {got}, expected {kind}"
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A string field of an item, or "" (the synthesis reads answers of any shape).
pub(super) fn text<'v>(item: &'v Value, field: &str) -> &'v str {
    item.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// One task's deliberation, under the platform's rules (or its variant's one deviation).
pub(super) struct Deliberation<'s> {
    pub(super) shared: &'s Shared,
    pub(super) task_id: String,
    pub(super) task: Task,
}

impl Deliberation<'_> {
    /// Runs the three phases. 200 with the outcome, 422 when no analysis was usable.
    pub(super) async fn run(&self, participants: &[Agent]) -> Result<Response, Crash> {
        let everyone: Vec<&Agent> = participants.iter().collect();
        let names: Vec<&str> = participants.iter().map(|a| a.name.as_str()).collect();
        let analyze = self
            .phase("analyze", &everyone, |_| self.analyze_body())
            .await?;
        if analyze.answers.is_empty() {
            return Ok(reply(
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({
                    "error": "no agent produced a usable analysis",
                    "task_id": self.task_id,
                    "status": "failed",
                    "participants": names,
                    "excluded": {"analyze": analyze.exclusions(), "challenge": [], "vote": []},
                }),
            ));
        }
        let seated = analyze.usable();
        let variant = self.shared.variant();
        if variant == Variant::NeverChallenges {
            return Ok(reply(
                StatusCode::OK,
                json!({"task_id": self.task_id, "status": "completed", "participants": names}),
            ));
        }
        let challenged: &[&Agent] =
            if variant == Variant::DropsChallengeAfterFailure && !analyze.failures.is_empty() {
                &[]
            } else {
                &seated
            };
        let challenge = self
            .phase("challenge", challenged, |me| {
                self.challenge_body(me, &analyze)
            })
            .await?;
        if variant == Variant::DiesAfterChallenge {
            // Dead: the relay drops this request's connection; the task never answers.
            self.shared.die.notify_one();
            std::future::pending::<()>().await;
        }
        let synthesis = synthesis(&analyze, &challenge);
        let vote = self
            .phase("vote", &seated, |_| self.vote_body(&synthesis))
            .await?;
        let votes: Vec<Value> = vote
            .answers
            .iter()
            .map(|(agent, v)| json!({"agent_name": agent.name, "approve": v["approve"]}))
            .collect();
        Ok(reply(
            StatusCode::OK,
            json!({
                "task_id": self.task_id,
                "status": "completed",
                "participants": names,
                "excluded": {
                    "analyze": analyze.exclusions(),
                    "challenge": challenge.exclusions(),
                    "vote": vote.exclusions(),
                },
                "synthesis": synthesis,
                "votes": votes,
            }),
        ))
    }

    /// Posts `body_for(agent)` to `endpoint` of every agent at once (or one after another); splits usable answers from
    /// failures.
    async fn phase<'a>(
        &self,
        endpoint: &'static str,
        agents: &[&'a Agent],
        body_for: impl Fn(&Agent) -> Value,
    ) -> Result<Phase<'a>, Crash> {
        let calls = agents.iter().map(|&agent| {
            let body = body_for(agent);
            async move { (agent, self.exchange(agent, endpoint, &body).await) }
        });
        let outcomes = if self.shared.config.one_at_a_time {
            let mut outcomes = Vec::new();
            for call in calls {
                outcomes.push(call.await);
            }
            outcomes
        } else {
            join_all(calls).await
        };
        let mut phase = Phase {
            answers: Vec::new(),
            failures: Vec::new(),
        };
        for (agent, outcome) in outcomes {
            match outcome {
                Ok(answer) => phase.answers.push((agent, answer)),
                Err(Failure::InvalidJson(_))
                    if self.shared.variant() == Variant::CrashOnInvalidJson =>
                {
                    return Err(Crash)
                }
                Err(failure) => phase.failures.push((agent, failure)),
            }
        }
        Ok(phase)
    }

    /// One exchange with one agent: its usable, sanitized answer, or why there is none.
    async fn exchange(
        &self,
        agent: &Agent,
        endpoint: &str,
        body: &Value,
    ) -> Result<Value, Failure> {
        let tries = match self.shared.variant() {
            Variant::RetriesTimeouts => 3,
            _ => 1,
        };
        let mut answer = self.post(agent, endpoint, body).await;
        for _ in 1..tries {
            match &answer {
                Err(Failure::Unusable(why)) if why.starts_with("no complete answer within") => {
                    answer = self.post(agent, endpoint, body).await;
                }
                _ => break,
            }
        }
        let answer = answer?;
        check_fields(&answer, required(endpoint))?;
        Ok(self
            .shared
            .sanitize(&agent.name, endpoint, Value::Object(answer)))
    }

    /// Posts a JSON body within the platform's limits; the answer must be a 200 JSON object.
    async fn post(
        &self,
        agent: &Agent,
        endpoint: &str,
        body: &Value,
    ) -> Result<Map<String, Value>, Failure> {
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(key) = self.shared.bearer(agent) {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        let body = serde_json::to_vec(body).unwrap_or_default();
        if self.shared.variant() == Variant::NanBreaksItsClient && carries_nan(&body) {
            // httpx's json= serialises with allow_nan=False: the request is never sent.
            return Err(Failure::Unusable(
                "ValueError: Out of range float values are not JSON compliant".into(),
            ));
        }
        let request = Request {
            method: "POST".into(),
            path: format!("/{endpoint}"),
            headers,
            body: Bytes::from(body),
        };
        let response = send(&agent.base, &request, self.shared.limits())
            .await
            .map_err(|e| Failure::Unusable(e.to_string()))?;
        if response.status != 200 {
            return Err(Failure::Unusable(format!(
                "answered HTTP {}",
                response.status
            )));
        }
        if response.body_exceeded {
            return Err(Failure::Unusable(format!(
                "the answer is larger than {MAX_BODY} bytes"
            )));
        }
        let parsed = match serde_json::from_slice::<Value>(&response.body) {
            Err(_) if self.shared.variant() == Variant::NanBreaksItsClient => {
                parse_with_nan(&response.body)
                    .ok_or_else(|| serde_json::from_slice::<Value>(&response.body).unwrap_err())
            }
            other => other,
        };
        match parsed {
            Ok(Value::Object(answer)) => Ok(answer),
            Ok(other) => Err(Failure::Unusable(format!(
                "the answer is a JSON {}, not an object",
                type_name(&other)
            ))),
            Err(e) => Err(Failure::InvalidJson(format!(
                "answered 200 with invalid JSON: {e}"
            ))),
        }
    }

    fn analyze_body(&self) -> Value {
        let request = AnalyzeRequest {
            task_id: self.task_id.clone(),
            content: self.task.content.clone(),
            context: self.task.context.clone(),
            constraints: self.task.constraints.clone(),
        };
        serde_json::to_value(request).unwrap_or_default()
    }

    /// `other_analyses` holds the usable analyses of the *other* agents (never the receiver's own,
    /// never a failed agent's).
    fn challenge_body(&self, me: &Agent, analyze: &Phase) -> Value {
        let variant = self.shared.variant();
        let mut others: Vec<Value> = analyze
            .answers
            .iter()
            .filter(|(agent, _)| {
                // aiscaffold sends every analysis, the receiver's own too.
                agent.name != me.name
                    || matches!(
                        variant,
                        Variant::OwnAnalysisInChallenge | Variant::NanBreaksItsClient
                    )
            })
            .map(|(_, analysis)| analysis.clone())
            .collect();
        if variant == Variant::KeepsFailedAgents {
            others.extend(analyze.failures.iter().map(|(agent, _)| {
                json!({"agent_name": agent.name, "domain": agent.domain, "observations": []})
            }));
        }
        let mut body = json!({
            "task_id": self.task_id,
            "content": self.task.content,
            "other_analyses": others,
        });
        if variant == Variant::NoTaskId {
            if let Some(body) = body.as_object_mut() {
                body.remove("task_id");
            }
        }
        body
    }

    fn vote_body(&self, synthesis: &Value) -> Value {
        json!({
            "task_id": self.task_id,
            "content": self.task.content,
            "synthesis": synthesis,
        })
    }
}

/// Where [`Variant::NanBreaksItsClient`] keeps a `NaN` it parsed: a member the platform adds to
/// the object that held it (serde_json has no NaN), found again when a request would carry it.
const NAN_MARK: &str = "__platform_parsed_nan__";

/// Python's `json.loads`, which takes the bare token `NaN` as a number: `None` when the text is
/// invalid JSON for another reason.
fn parse_with_nan(body: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(body).ok()?;
    let mut marked = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("NaN") {
        let before = rest[..at].trim_end();
        if !(before.ends_with(':') || before.ends_with(',') || before.ends_with('[')) {
            return None;
        }
        marked.push_str(&rest[..at]);
        marked.push_str("null");
        rest = &rest[at + 3..];
    }
    marked.push_str(rest);
    let mut value: Value = serde_json::from_str(&marked).ok()?;
    if let Some(object) = value.as_object_mut() {
        object.insert(NAN_MARK.into(), Value::Bool(true));
    }
    Some(value)
}

/// Whether a serialised request carries a `NaN` the platform parsed.
fn carries_nan(body: &[u8]) -> bool {
    let mark = format!("\"{NAN_MARK}\"");
    body.windows(mark.len()).any(|w| w == mark.as_bytes())
}

/// The synthesis put to the vote, from sanitized answers only: each agent's first observation
/// is a key finding (and together they make the recommended direction), each challenger's first
/// challenge a minority view. One item per agent keeps the /vote body bounded.
pub(super) fn synthesis(analyze: &Phase, challenge: &Phase) -> Value {
    let firsts: Vec<(&str, &Value)> = analyze
        .answers
        .iter()
        .filter_map(|(_, analysis)| {
            Some((
                text(analysis, "agent_name"),
                analysis["observations"].get(0)?,
            ))
        })
        .collect();
    let key_findings: Vec<Value> = firsts
        .iter()
        .map(|(agent, first)| {
            json!({
                "agent_name": agent,
                "finding": text(first, "finding"),
                "evidence": text(first, "evidence"),
            })
        })
        .collect();
    let findings: Vec<&str> = firsts
        .iter()
        .map(|(_, first)| text(first, "finding"))
        .filter(|f| !f.is_empty())
        .collect();
    let mut direction = if findings.is_empty() {
        "No agent reported a finding; no change is recommended.".to_string()
    } else {
        format!("Address first: {}", findings.join("; "))
    };
    truncate_chars(&mut direction, MAX_CHARS);
    let minority_views: Vec<Value> = challenge
        .answers
        .iter()
        .filter_map(|(_, answer)| {
            let first = answer["challenges"].get(0)?;
            Some(json!({
                "agent_name": text(answer, "agent_name"),
                "target_agent": text(first, "target_agent"),
                "finding_challenged": text(first, "finding_challenged"),
                "counter_evidence": text(first, "counter_evidence"),
            }))
        })
        .collect();
    json!({
        "recommended_direction": direction,
        "key_findings": key_findings,
        "trade_offs": [],
        "minority_views": minority_views,
    })
}
