//! Misbehaviours as mutations of a conforming answer (DESIGN.md: "misbehaviours are mutations of
//! a conforming response"). The mock fleet takes what [`super::reference::ReferenceAgent`]
//! answers and breaks exactly one thing, so that a platform's reaction can be pinned on that one
//! thing: a schema rule, the body's syntax, a size limit, sanitization, the evidence pipeline.
//!
//! Everything here is pure: no I/O, no clock, no randomness (the reference answer already carries
//! the seed). No function panics on any input: when a mutation cannot apply to an answer (not an
//! object, an endpoint it does not concern, nothing of the kind to break), it leaves the answer as
//! it was and says so (`false`, or an empty list).
//!
//! Each mutation is chosen so that, applied to a conforming answer, exactly the probe case that
//! enforces the broken rule fails (the unit tests below run the built-in suite's checks to prove
//! it): a mock agent must be a precise instrument, not a generally broken one.
//!
//! By section: `wrong_schema`, `limits` (field length, list caps), `forwarded` (the strings a
//! platform passes on: NUL bytes, ANSI escapes, injection), `speculation`, and the `catalogue`
//! of content behaviours the engine applies by name.

mod catalogue;
mod forwarded;
mod limits;
mod speculation;
mod wrong_schema;

#[cfg(test)]
mod tests;

pub use catalogue::BEHAVIORS;
pub use forwarded::{ansi_escapes, inject, null_bytes};
pub use limits::{oversized_field, too_many_items};
pub use speculation::speculative;
pub use wrong_schema::{wrong_schema, WrongSchema};

/// An extra top-level field, for text that has nowhere else to go. The schemas allow unknown
/// fields and no rule reads this one, so only the check that reads *every* string sees it.
const EXTRA_FIELD: &str = "notes";

/// The character padding is made of: one byte, one character, no phrase of any rule.
const FILLER: char = 'x';
