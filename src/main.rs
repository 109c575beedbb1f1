//! The `agent-tck` binary: parse, run, map errors to exit codes (all in `cli`; the statuses are
//! documented on `agent_tck::report::Exit`).

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned};
use libmimalloc_sys::{mi_zalloc, mi_zalloc_aligned};

// mimalloc: the mock fleet allocates a little per request on every worker thread (parsed
// request, generated answer); glibc's malloc spent ~15% of the fleet's CPU under load.
#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// mimalloc, asked for a plain block whenever a block's own alignment is enough. Every block
/// mimalloc hands out is aligned to a word (its size classes are whole words), so only a larger
/// alignment needs the aligned calls — whose fast path covers blocks up to 1 KiB only: above
/// that (a request's read buffer, an answer's body) they took a slower path on every request
/// (~600 of the fleet's ~20,800 instructions per request went to allocation).
struct Mimalloc;

/// The alignment every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: each call hands mimalloc's result straight back: a block of at least the size asked,
// aligned to the layout's alignment (a word by construction when it is at most a word, else by
// the aligned call), or null when out of memory; every block is freed by `mi_free`, which takes
// blocks from either kind of call.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi_malloc(layout.size()).cast()
        } else {
            mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi_zalloc(layout.size()).cast()
        } else {
            mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi_free(ptr.cast::<c_void>());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            mi_realloc(ptr.cast(), new_size).cast()
        } else {
            mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
        }
    }
}

fn main() -> std::process::ExitCode {
    agent_tck::cli::main(std::env::args_os())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size and alignment gets a block aligned as asked that keeps its bytes through a
    /// reallocation, from both the plain and the aligned calls.
    #[test]
    fn blocks_are_aligned_as_asked_and_keep_their_bytes() {
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 8, 24, 40, 100, 1000, 1025, 1500, 4096, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block is used within its size and freed once.
                unsafe {
                    let p = GLOBAL.alloc(layout);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size}/{align}"
                    );
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let grown = GLOBAL.realloc(p, layout, size * 3);
                    assert!(
                        (grown as usize).is_multiple_of(align),
                        "realloc {size}/{align}"
                    );
                    assert!(
                        (0..size).all(|i| *grown.add(i) == i as u8),
                        "{size}/{align}"
                    );
                    GLOBAL.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());

                    let z = GLOBAL.alloc_zeroed(layout);
                    assert!((z as usize).is_multiple_of(align), "zeroed {size}/{align}");
                    assert!((0..size).all(|i| *z.add(i) == 0), "zeroed {size}/{align}");
                    GLOBAL.dealloc(z, layout);
                }
            }
        }
    }
}
