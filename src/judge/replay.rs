//! What a judging offline says of a recording it cannot judge: which exchange or event, and
//! what of it is wrong. A recording is data: nothing in it makes the kit panic.

/// A recording that cannot be judged again.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("recorded exchange {seq}: {what}")]
    Exchange { seq: u64, what: String },
    #[error("recorded event {event:?}: {what}")]
    Event { event: String, what: String },
    /// Something the rules need is not in the recording at all.
    #[error("the recording holds no {0}")]
    Missing(String),
}
