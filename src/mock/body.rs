//! A request body as the engine hands it to a responder and an observer: its bytes, its JSON
//! value (parsed on first use, at most once), and — when the quick check admitted it — its
//! top-level members, known to meet the endpoint's request schema.
//!
//! Why: under load most requests are well-formed, and building a `serde_json::Value` of each
//! and running the JSON Schema validator on it cost more than everything else a conforming
//! agent does. A body the skim and the schema's [`Shape`](crate::schema::Shape) admit needs
//! neither; any other body is parsed and validated in full, as before.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::Value;

use crate::json_skim::{skim, Skim};
use crate::schema::{finding, schemas, Finding};

pub struct Body<'a> {
    pub bytes: &'a [u8],
    /// The request schema it was checked against (None: none, or not checked).
    schema: Option<&'a str>,
    admitted: Option<Skim<'a>>,
    value: OnceLock<Option<Value>>,
    channel: Option<u64>,
}

impl<'a> Body<'a> {
    /// A body nothing is known of yet.
    pub fn new(bytes: &'a [u8]) -> Body<'a> {
        Body {
            bytes,
            schema: None,
            admitted: None,
            value: OnceLock::new(),
            channel: None,
        }
    }

    /// A body checked against request schema `schema` (when there is one) by the quick check.
    pub fn checked(bytes: &'a [u8], schema: Option<&'a str>) -> Body<'a> {
        let admitted =
            schema.and_then(|id| skim(bytes).filter(|members| schemas().admits(id, members)));
        Body {
            bytes,
            schema,
            admitted,
            value: OnceLock::new(),
            channel: None,
        }
    }

    /// The same body, known to have come on channel `id`: one stdio process, one socket
    /// connection, one HTTP keep-alive connection. Requests of one channel come in order, so a
    /// responder may follow a conversation by it when the requests themselves don't say where
    /// it is. Ids are unique among the channels open at once, not over a whole run.
    pub fn on_channel(mut self, id: u64) -> Body<'a> {
        self.channel = Some(id);
        self
    }

    /// The channel it came on, when the transport gives one (see [`Body::on_channel`]).
    pub fn channel(&self) -> Option<u64> {
        self.channel
    }

    /// The body as JSON, if it is JSON (parsed now if no one asked before).
    pub fn value(&self) -> Option<&Value> {
        self.value
            .get_or_init(|| serde_json::from_slice(self.bytes).ok())
            .as_ref()
    }

    /// Its top-level members, when the quick check found it meets its request schema.
    pub fn admitted(&self) -> Option<&Skim<'a>> {
        self.admitted.as_ref()
    }

    /// The top-level member `key`, when it is a string.
    pub fn str_member(&self, key: &str) -> Option<Cow<'_, str>> {
        match &self.admitted {
            Some(members) => members.str(key),
            None => self.value()?.get(key)?.as_str().map(Cow::Borrowed),
        }
    }

    /// Where the body breaks the request schema it was checked against (`not_json`: the finding
    /// when it is not JSON at all). None when it was checked against none.
    pub fn findings(&self, not_json: &str) -> Option<Vec<Finding>> {
        let schema = self.schema?;
        if self.admitted.is_some() {
            return Some(Vec::new());
        }
        Some(match self.value() {
            Some(v) => schemas().validate(schema, v),
            None => vec![finding("$", not_json)],
        })
    }
}

impl std::fmt::Debug for Body<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("bytes", &String::from_utf8_lossy(self.bytes))
            .field("schema", &self.schema)
            .field("admitted", &self.admitted.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANALYZE: &str = "roundtable/analyze.request";

    /// The quick check admits a well-formed request, and only what the validator finds valid;
    /// whatever it declines gets the validator's findings.
    #[test]
    fn the_quick_check_admits_valid_bodies_and_leaves_the_rest_to_the_validator() {
        let admitted = [
            r#"{"task_id":"t","content":"c"}"#,
            r#"{"task_id":"t","content":"c","context":{"a":[1,{"b":null}]},"constraints":["x","y"],"extra":[1.5]}"#,
            r#"{"task_id":"t\n","content":"c","constraints":[]}"#,
        ];
        for text in admitted {
            let body = Body::checked(text.as_bytes(), Some(ANALYZE));
            assert!(body.admitted().is_some(), "{text} was not admitted");
            assert_eq!(body.findings("not JSON"), Some(Vec::new()));
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(schemas().validate(ANALYZE, &value).is_empty(), "{text}");
            assert_eq!(
                body.str_member("task_id").as_deref(),
                value["task_id"].as_str()
            );
        }
        let refused = [
            (r#"{"task_id":"t"}"#, "$"),
            (r#"{"task_id":1,"content":"c"}"#, "task_id"),
            (r#"{"task_id":"t","content":"c","context":null}"#, "context"),
            (
                r#"{"task_id":"t","content":"c","constraints":[1]}"#,
                "constraints[0]",
            ),
            (r#"["t","c"]"#, "$"),
            ("nope", "$"),
        ];
        for (text, path) in refused {
            let body = Body::checked(text.as_bytes(), Some(ANALYZE));
            assert!(body.admitted().is_none(), "{text} was admitted");
            let findings = body.findings("not JSON").unwrap();
            assert!(
                findings.iter().any(|f| f.path == path),
                "{text}: {findings:?}"
            );
        }
        // Valid, but with a \u escape: declined by the skim, found valid by the validator.
        let body = Body::checked(br#"{"task_id":"\u00e9","content":"c"}"#, Some(ANALYZE));
        assert!(body.admitted().is_none());
        assert_eq!(body.findings("not JSON"), Some(Vec::new()));
        assert_eq!(body.str_member("task_id").as_deref(), Some("é"));
        // No schema: nothing to find.
        assert_eq!(Body::checked(b"{}", None).findings("not JSON"), None);
    }

    /// Schemas with keywords the shape does not know are never admitted quickly.
    #[test]
    fn schemas_beyond_the_shape_are_validated_in_full() {
        let body = br#"{"task_description":"t","turn":0,"conversation_history":[]}"#;
        let body = Body::checked(body, Some("execute_task/request"));
        assert!(body.admitted().is_none());
        let findings = body.findings("not JSON").unwrap();
        assert!(findings.iter().any(|f| f.path == "turn"), "{findings:?}");
    }
}
