//! The agent's stderr as the kit keeps it: a ring of its last bytes, filled by a task of its own
//! so that a chatty agent neither blocks on a full pipe nor grows our memory.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

use super::{StderrLog, ERROR_TAIL_BYTES};

/// The last `keep` bytes of stderr, and how many came in total.
#[derive(Debug)]
pub(super) struct StderrRing {
    tail: VecDeque<u8>,
    pub(super) total: u64,
    keep: usize,
}

impl StderrRing {
    pub(super) fn new(keep: usize) -> StderrRing {
        StderrRing {
            tail: VecDeque::new(),
            total: 0,
            keep,
        }
    }

    pub(super) fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        if data.len() >= self.keep {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.keep..]);
        } else {
            self.tail.extend(data);
            let excess = self.tail.len().saturating_sub(self.keep);
            self.tail.drain(..excess);
        }
    }

    pub(super) fn log(&self) -> StderrLog {
        let (a, b) = self.tail.as_slices();
        let mut bytes = Vec::with_capacity(self.tail.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        StderrLog {
            tail: String::from_utf8_lossy(&bytes).into_owned(),
            total_bytes: self.total,
            truncated: self.total > self.tail.len() as u64,
        }
    }

    /// What came after the total was `from` (as much of it as is kept, at most
    /// `ERROR_TAIL_BYTES`), escaped for a message.
    pub(super) fn quote_since(&self, from: u64) -> String {
        let since = usize::try_from(self.total.saturating_sub(from)).unwrap_or(usize::MAX);
        let n = since.min(self.tail.len()).min(ERROR_TAIL_BYTES);
        let bytes: Vec<u8> = self.tail.range(self.tail.len() - n..).copied().collect();
        let text = crate::text::excerpt(&bytes, usize::MAX);
        let text = text.trim_end();
        if n < since {
            format!("…{text}")
        } else {
            text.to_string()
        }
    }
}

pub(super) fn lock(ring: &Mutex<StderrRing>) -> std::sync::MutexGuard<'_, StderrRing> {
    ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) async fn drain_stderr(mut stderr: ChildStderr, ring: Arc<Mutex<StderrRing>>) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(&ring).push(&chunk[..n]),
        }
    }
}
