//! The readable report: a line per case, the reason under each failure or skip, a summary, and a
//! last line `N passed, N failed, N skipped`. Colour only when asked (a terminal without NO_COLOR).

use std::io::{IsTerminal, Write};

use super::{CaseResult, Level, Report, Status};
use crate::text::shorten;

/// Whether to colour output written to stdout: a terminal, and NO_COLOR unset or empty.
pub fn want_colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

struct Paint {
    on: bool,
}

impl Paint {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The verdict word for a case: FAIL only where the failure fails the run.
fn verdict(report: &Report, case: &CaseResult) -> (&'static str, &'static str) {
    match case.status {
        Status::Pass => ("PASS", "32"),
        Status::Skip => ("SKIP", "90"),
        Status::Fail if report.is_blocking(case) => ("FAIL", "1;31"),
        Status::Fail if case.level == Level::Should => ("WARN", "33"),
        Status::Fail => ("INFO", "36"),
    }
}

pub fn render(report: &Report, colour: bool) -> String {
    let p = Paint { on: colour };
    let mut out = String::new();
    out.push_str(&format!(
        "agent-tck {} · {} {} · {} · seed {}\n\n",
        report.version, report.role, report.protocol, report.target, report.seed
    ));
    let id_width = report.cases.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut group = "";
    for case in &report.cases {
        if case.group != group {
            group = &case.group;
            out.push_str(&format!("{}\n", p.paint("1", group)));
        }
        let (word, code) = verdict(report, case);
        out.push_str(&format!(
            "  {} {:<6} {:<id_width$}  {} {}\n",
            p.paint(code, word),
            case.level.as_str(),
            case.id,
            case.title,
            p.paint("90", &format!("({} ms)", case.duration_ms)),
        ));
        // MAY cases are informational: what they found is shown even when they pass.
        if (case.status != Status::Pass || case.level == Level::May) && !case.message.is_empty() {
            for line in shorten(&case.message, 1_500).lines() {
                out.push_str(&format!("         {}\n", p.paint(code, line)));
            }
            if case.status == Status::Fail {
                if let Some(cmd) = &case.exchange.reproduce {
                    // Whole, so that it can be pasted (it is bounded where it is made: a body
                    // over 256 KiB is referred to, not inlined).
                    out.push_str(&format!(
                        "         {} {}\n",
                        p.paint("90", "reproduce:"),
                        cmd.replace('\n', " ")
                    ));
                }
            }
        }
    }
    for note in &report.notes {
        out.push_str(&format!("\nnote: {note}"));
    }
    let s = &report.summary;
    out.push_str(&format!(
        "\n{} MUST failed, {} SHOULD failed{}, {} MAY noted · {} ms\n",
        s.failed_must,
        s.failed_should,
        if report.strict {
            " (--strict: they fail the run)"
        } else {
            " (warnings)"
        },
        s.failed_may,
        report.duration_ms
    ));
    let last = format!(
        "{} passed, {} failed, {} skipped",
        s.passed, s.failed, s.skipped
    );
    let code = if report.exit_code() == 0 {
        "1;32"
    } else {
        "1;31"
    };
    out.push_str(&p.paint(code, &last));
    out.push('\n');
    out
}

/// A one-line progress indicator on stderr, shown only when stderr is a terminal.
pub struct Progress {
    on: bool,
    total: usize,
    done: usize,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
            total,
            done: 0,
        }
    }

    pub fn case_done(&mut self, id: &str) {
        self.done += 1;
        if self.on {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K[{:>3}/{}] {}", self.done, self.total, id);
            let _ = err.flush();
        }
    }

    pub fn finish(&mut self) {
        if self.on {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
