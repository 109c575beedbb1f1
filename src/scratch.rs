//! A thread's reusable buffers, for work done on every answer the proxy judges: a buffer grown
//! from nothing for each answer (and each phrase list) was a measurable share of the judge.

use std::cell::Cell;
use std::thread::LocalKey;

/// A buffer that can be emptied and says how much it holds on to.
pub trait Reusable: Default {
    fn clear(&mut self);
    fn room(&self) -> usize;
}

impl Reusable for String {
    fn clear(&mut self) {
        String::clear(self);
    }
    fn room(&self) -> usize {
        self.capacity()
    }
}

impl Reusable for Vec<u8> {
    fn clear(&mut self) {
        Vec::clear(self);
    }
    fn room(&self) -> usize {
        self.capacity()
    }
}

/// Past this many bytes a buffer is let go after use: a thread holds no large answer's room.
pub const KEPT: usize = 64 * 1024;

/// Runs `f` with the thread's buffer in `cell`, emptied. The buffer is taken out for the call,
/// so a call nested in `f` gets a new one rather than a borrow that fails.
pub fn with<B: Reusable, T>(cell: &'static LocalKey<Cell<B>>, f: impl FnOnce(&mut B) -> T) -> T {
    let mut buffer = cell.with(Cell::take);
    buffer.clear();
    let out = f(&mut buffer);
    if buffer.room() <= KEPT {
        cell.with(|c| c.set(buffer));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static BUFFER: Cell<String> = const { Cell::new(String::new()) };
    }

    /// The room is kept between calls and each call starts empty; a nested call gets a buffer
    /// of its own; a buffer grown past KEPT is not kept.
    #[test]
    fn a_buffer_is_reused_emptied_and_let_go_when_large() {
        let room = with(&BUFFER, |b| {
            b.push_str("first");
            b.capacity()
        });
        with(&BUFFER, |b| {
            assert_eq!(b.as_str(), "");
            assert_eq!(b.capacity(), room, "the room of the last call is reused");
            b.push_str("outer");
            with(&BUFFER, |inner| {
                assert_eq!(inner.as_str(), "");
                inner.push_str("inner");
            });
            assert_eq!(b.as_str(), "outer");
        });
        with(&BUFFER, |b| b.push_str(&"x".repeat(KEPT + 1)));
        with(&BUFFER, |b| {
            assert!(b.capacity() <= KEPT, "{}", b.capacity())
        });
    }
}
