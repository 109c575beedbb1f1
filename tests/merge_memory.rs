//! The memory bound of a streaming merge (`report merge`, the merged report of a run over
//! targets): it holds one part at a time, so its peak of live heap stays far below the reports'
//! total — and the merge that holds every report, on the same files, goes past the bound (the
//! test can fail). A binary of its own: its global allocator counts the live heap bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agent_tck::report::merge_stream::{Ids, Outputs, Part, Survey};
use agent_tck::report::{CaseResult, Evidence, Level, RunInfo, Status};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The peak of live heap bytes while `f` runs, above what was live when it started.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

const PARTS: usize = 300;
const CASES: usize = 30;
/// Bytes of message and exchange per case: ~300 KB per report.
const CASE_TEXT: usize = 10_000;
const MB: usize = 1024 * 1024;
/// The bound the streaming merge stays under: the reports total ~90 MB.
const BOUND: usize = 24 * MB;

fn target_report(i: usize) -> agent_tck::report::Report {
    let text = |what: &str, n: usize| format!("{what} {i}/{n} ").repeat(CASE_TEXT / 40);
    let cases = (0..CASES)
        .map(|n| {
            let mut c = CaseResult::new(
                &format!("rt.case-{n}"),
                &format!("endpoint-{}", n % 5),
                if n % 3 == 0 {
                    Level::Should
                } else {
                    Level::Must
                },
                "a rule",
                "Spec §1",
            );
            if (i + n).is_multiple_of(17) {
                c.status = Status::Fail;
                c.message = text("failed", n);
            } else {
                c.pass_noting(Evidence::new(1, "answer"), text("passed", n), String::new);
            }
            c.exchange.request = Some(text("request", n));
            c.exchange.response = Some(text("response", n));
            c
        })
        .collect();
    RunInfo::start("probe", "roundtable", format!("http://agent-{i}"), 7, false)
        .report(cases, &agent_tck::text::Redactor::new(Vec::new()))
}

#[test]
fn a_streaming_merge_holds_one_report_at_a_time() {
    let dir = std::env::temp_dir().join(format!("agent-tck-merge-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut total = 0;
    let parts: Vec<Part> = (0..PARTS)
        .map(|i| {
            let path = dir.join(format!("agent-{i}.json"));
            let text = agent_tck::report::json::to_string(&target_report(i));
            total += text.len();
            std::fs::write(&path, text).unwrap();
            Part {
                name: format!("agent-{i}"),
                path,
            }
        })
        .collect();
    assert!(total > 80 * MB, "the reports total {total} bytes");

    let out: Vec<PathBuf> = ["all.json", "all.xml", "all.html"]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    let outputs = Outputs {
        json: Some(&out[0]),
        junit: Some(&out[1]),
        ctrf: None,
        html: Some(&out[2]),
        baseline: None,
    };
    let (merged, streamed) = peak_of(|| {
        Survey::read(parts.clone(), Ids::ByName, false)
            .unwrap()
            .write(&outputs, &AtomicBool::new(false))
            .unwrap()
    });
    assert_eq!(
        merged.head.summary.passed + merged.head.summary.failed,
        PARTS * CASES
    );
    let written = std::fs::metadata(&out[0]).unwrap().len() as usize;
    assert!(
        written > total,
        "the merged JSON holds every case: {written} bytes"
    );
    assert!(
        streamed < BOUND,
        "the streaming merge peaked at {} MB of live heap (bound {} MB; the reports total {} MB)",
        streamed / MB,
        BOUND / MB,
        total / MB
    );

    // The merge that holds every report goes past the bound on the same files.
    let (whole, held) = peak_of(|| {
        Survey::read(parts.clone(), Ids::ByName, false)
            .unwrap()
            .whole()
            .unwrap()
    });
    assert_eq!(whole.cases.len(), PARTS * CASES);
    assert_eq!(whole.summary, merged.head.summary);
    assert!(
        held > BOUND,
        "the merge held whole peaked at only {} MB",
        held / MB
    );
    drop(whole);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "streamed: {} MB peak; held whole: {} MB peak; reports: {} MB",
        streamed / MB,
        held / MB,
        total / MB
    );
}
