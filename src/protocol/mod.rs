//! One module per protocol: message types, semantic rules no schema can say, and generated
//! content. Both roles use them: the probe judges agents with the rules, the reference agent
//! answers with the generator, and a test proves the two agree.

pub mod content;
pub mod evidence;
pub mod execute_task;
pub mod roundtable;

use crate::schema::Finding;

/// A finding at `path` (already in dotted form).
pub fn finding(path: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding {
        path: path.into(),
        message: message.into(),
    }
}
