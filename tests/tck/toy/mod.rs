//! A toy protocol, added the way docs/design.md ("How to add a protocol") says, to prove the
//! seam: two endpoints (POST /hello and POST /bye), a suite (`suite.yaml` beside this file)
//! with one rule of its own and one template generator, a conforming reference agent, one
//! content behaviour (`rude`: a greeting that forgets the visitor's name), and its command line,
//! self-test and matrix (`commands.rs`, `matrix.yaml`). Nothing outside this folder knows it;
//! the engines run it as they run the round table.

pub mod commands;

use std::collections::BTreeMap;

use agent_tck::content::Content;
use agent_tck::mock::protocol::{
    AgentProtocol, AnswerFields, ContentBehavior, Endpoint, Mutating, Mutation,
};
use agent_tck::mock::{Body, Reply, Responder};
use agent_tck::probe::checks::verdict;
use agent_tck::probe::exchange::ExchangeSpec;
use agent_tck::probe::plugin::{Ctx, InvalidArgs, Rule, SuiteProtocol, Verdict};
use agent_tck::probe::template::FillError;
use agent_tck::schema::finding;
use serde_json::{json, Value};

/// The registry key.
pub const NAME: &str = "toy";

/// The built-in suite.
pub const SUITE: (&str, &str) = ("tests/tck/toy/suite.yaml", include_str!("suite.yaml"));

const ENDPOINTS: &[Endpoint] = &[Endpoint::post("hello", None), Endpoint::post("bye", None)];

/// The toy's agents, as the mock engine plays them.
pub struct Agents;

impl AgentProtocol for Agents {
    fn name(&self) -> &'static str {
        NAME
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        ENDPOINTS
    }

    /// Who greets, and the greeting (the toy's answers have no number: `nan` adds one).
    fn answer_fields(&self) -> &'static AnswerFields {
        &AnswerFields {
            identity: "agent_name",
            text: &["greeting"],
            number: "warmth",
        }
    }

    fn reference(&self, name: &str, _seed: u64) -> Box<dyn Responder> {
        Box::new(Reference(name.to_string()))
    }

    fn behaviors(&self) -> &'static [ContentBehavior] {
        &[ContentBehavior {
            name: "rude",
            what: "toy: a greeting without the visitor's name",
            rule: "Greetings: by name",
            expects: "",
            plays: agent_tck::mock::behavior::Plays::Content(|_| Ok(Box::new(Rude))),
        }]
    }
}

/// The conforming agent: greets and bids farewell by name.
struct Reference(String);

impl Responder for Reference {
    fn respond_body(&self, endpoint: &str, body: &Body<'_>) -> Reply {
        let Some(request) = body.value() else {
            return Reply::error(400, "the body is not JSON");
        };
        let Some(visitor) = request.get("name").and_then(Value::as_str) else {
            return Reply::error(400, "name (a string) is required");
        };
        match endpoint {
            "hello" => Reply::json(
                200,
                &json!({"agent_name": self.0, "greeting": format!("Hello, {visitor}!")}),
            ),
            "bye" => Reply::json(
                200,
                &json!({"agent_name": self.0, "farewell": format!("Goodbye, {visitor}.")}),
            ),
            other => Reply::error(404, format!("no endpoint /{other}")),
        }
    }
}

/// `rude`: the greeting no longer names the visitor.
#[derive(Debug)]
struct Rude;

impl Mutation for Rude {
    fn apply(&self, answer: &mut Value, at: &mut Mutating<'_>) -> bool {
        if at.endpoint != "hello" {
            return false;
        }
        answer["greeting"] = json!("Hello.");
        true
    }
}

/// The toy as the suite engine sees it: the rule `by_name` and the generator `visitor`.
pub struct Suite;

impl SuiteProtocol for Suite {
    fn rule(&self, name: &str) -> Option<&dyn Rule> {
        (name == "by_name").then_some(&ByName as &dyn Rule)
    }

    fn rules(&self) -> Vec<&'static str> {
        vec!["by_name"]
    }

    fn generate(
        &self,
        name: &str,
        args: &str,
        c: &mut Content,
    ) -> Option<Result<Value, FillError>> {
        (name == "visitor").then(|| {
            if args.trim().is_empty() {
                Ok(Value::String(format!("{} {}", c.word(), c.word())))
            } else {
                Err(FillError::TakesNoArguments {
                    name: "visitor".into(),
                })
            }
        })
    }

    fn generators(&self) -> &'static str {
        "visitor"
    }
}

/// `by_name: FIELD`: the answer's FIELD names the visitor the request named.
struct ByName;

impl Rule for ByName {
    fn validate(
        &self,
        args: &Value,
        _: &BTreeMap<String, ExchangeSpec>,
    ) -> Result<(), InvalidArgs> {
        match args {
            Value::String(_) => Ok(()),
            _ => Err("by_name takes the field to read, e.g. {by_name: greeting}".into()),
        }
    }

    fn evaluate(&self, args: &Value, ctx: &Ctx<'_>) -> Verdict {
        Verdict::of(|| {
            let outcome = ctx.outcome.ok_or("the case has no exchange")?;
            let field = args.as_str().unwrap_or_default();
            let visitor = outcome
                .body_sent()
                .and_then(|b| b.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let said = outcome
                .json(ctx.max_body)?
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default();
            let findings = if said.contains(visitor) {
                Vec::new()
            } else {
                vec![finding(
                    field,
                    format!("{said:?} does not name {visitor:?}"),
                )]
            };
            Ok(verdict(findings, 1, "greeting", String::new))
        })
    }
}
