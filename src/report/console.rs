//! The readable report: a line per case, the reason under each failure or skip, a summary, and a
//! last line `N passed, N failed, N skipped`. Colour only when asked (a terminal without NO_COLOR).

use std::io::{IsTerminal, Write};

use super::{CaseResult, Kind, Level, Report, Status};
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
pub fn verdict(report: &Report, case: &CaseResult) -> (&'static str, &'static str) {
    if case.kind == Kind::Evaluation {
        return match case.status {
            Status::Pass => ("MET", "32"),
            Status::Skip => ("SKIP", "90"),
            Status::Fail if report.is_blocking(case) => ("FAIL", "1;31"),
            Status::Fail => ("UNMET", "33"),
            Status::Xfail => ("XFAIL", "36"),
            Status::Stale if report.is_blocking(case) => ("STALE", "1;31"),
            Status::Stale => ("STALE", "33"),
        };
    }
    match case.status {
        Status::Pass => ("PASS", "32"),
        Status::Skip => ("SKIP", "90"),
        Status::Fail if report.is_blocking(case) => ("FAIL", "1;31"),
        Status::Fail if case.level == Level::Should => ("WARN", "33"),
        Status::Fail => ("INFO", "36"),
        Status::Xfail => ("XFAIL", "36"),
        Status::Stale if report.is_blocking(case) => ("STALE", "1;31"),
        Status::Stale => ("STALE", "33"),
    }
}

pub fn render(report: &Report, colour: bool) -> String {
    let p = Paint { on: colour };
    let mut out = String::new();
    out.push_str(&format!(
        "agent-tck {} · {} · {}{}\n",
        report.version,
        report.title(),
        report.target,
        report.seed_text()
    ));
    for line in report.judged_by_lines(crate::specs::SHORT_DIGEST) {
        out.push_str(&p.paint("90", &line));
        out.push('\n');
    }
    out.push('\n');
    let id_width = report.cases.iter().map(|c| c.id.len()).max().unwrap_or(0);
    // UNMET, XFAIL and STALE are the five-letter words.
    let word_width =
        if report.cases.iter().any(|c| {
            c.kind == Kind::Evaluation || matches!(c.status, Status::Xfail | Status::Stale)
        }) {
            5
        } else {
            4
        };
    let scores = group_scores(report);
    let mut group = "";
    for case in &report.cases {
        if case.group != group {
            group = &case.group;
            let score = match scores.get(group) {
                Some((met, total)) => format!(" · evaluation: met {met}/{total}"),
                None => String::new(),
            };
            out.push_str(&format!("{}{score}\n", p.paint("1", group)));
        }
        case_lines(&mut out, &p, report, case, id_width, word_width);
    }
    footer(&mut out, report);
    let code = if report.exit_code() == super::Exit::Passed {
        "1;32"
    } else {
        "1;31"
    };
    out.push_str(&p.paint(code, &last_line(report)));
    out.push('\n');
    out
}

/// One case's lines: its verdict, level, id, title, evidence and time, then (when it did not
/// pass, or is informational) its message, where to read more and how to reproduce it.
fn case_lines(
    out: &mut String,
    p: &Paint,
    report: &Report,
    case: &CaseResult,
    id_width: usize,
    word_width: usize,
) {
    let (word, code) = verdict(report, case);
    // An evaluation case that no one gated is scored, not levelled.
    let level = match (case.kind, case.level) {
        (Kind::Evaluation, Level::May) => "eval",
        (_, level) => level.as_str(),
    };
    // What the case judged, then how long it took (nothing when it did no work).
    let mut after = Vec::new();
    if let Some(e) = &case.evidence {
        after.push(format!("({e})"));
    }
    if case.duration_us > 0 || case.duration_ms > 0 {
        after.push(format!("({})", case.duration_text()));
    }
    out.push_str(&format!(
        "  {} {:<6} {:<id_width$}  {}",
        p.paint(code, &format!("{word:<word_width$}")),
        level,
        case.id,
        case.title,
    ));
    if !after.is_empty() {
        out.push_str(&format!(" {}", p.paint("90", &after.join(" "))));
    }
    out.push('\n');
    // MAY cases are informational: what they found is shown even when they pass.
    let informational = case.level == Level::May && case.kind == Kind::Conformance;
    if (case.status != Status::Pass || informational) && !case.message.is_empty() {
        for line in shorten(&case.message, 1_500).lines() {
            out.push_str(&format!("         {}\n", p.paint(code, line)));
        }
        if let Some(see) = super::explained::pointer(case) {
            out.push_str(&format!("         {} {see}\n", p.paint("90", "see:")));
        }
        if case.status == Status::Fail {
            if let Some(cmd) = &case.exchange.reproduce {
                out.push_str(&format!(
                    "         {} {}\n",
                    p.paint("90", "reproduce:"),
                    reproduce_line(&cmd.replace('\n', " "))
                ));
            }
        }
    }
}

/// After the cases: the notes, the counts, the evaluation's score, the stale entries that fail
/// the run.
fn footer(out: &mut String, report: &Report) {
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
    if let Some(score) = s.evaluation {
        out.push_str(&format!("{}\n", evaluation_line(report, score)));
    }
    let stale = report.blocking_stale();
    if !stale.is_empty() {
        // The summary above counts failures only: say what else fails the run, by name.
        out.push_str(&format!(
            "--strict: {} stale baseline entr{} fail{} the run (passing now; remove {} from \
             the baseline): {}\n",
            stale.len(),
            if stale.len() == 1 { "y" } else { "ies" },
            if stale.len() == 1 { "s" } else { "" },
            if stale.len() == 1 { "it" } else { "them" },
            stale.join(", ")
        ));
    }
}

/// `evaluation: met 3/4 …`: the score, and what gates it.
fn evaluation_line(report: &Report, score: super::Score) -> String {
    let gated = report
        .cases
        .iter()
        .filter(|c| c.kind == Kind::Evaluation && report.is_blocking(c))
        .count();
    let mut line = format!("evaluation: {score}");
    if let Some(min) = report.min_score {
        let verdict = if report.below_min_score() {
            "below it: fails the run"
        } else {
            "met"
        };
        line.push_str(&format!(" · --min-score {min}: {verdict}"));
    }
    if gated > 0 {
        line.push_str(&format!(
            " · {} unmet: fail the run",
            crate::text::count(gated as u64, "gated expectations")
        ));
    }
    if report.min_score.is_none() && gated == 0 {
        line.push_str(" (scored, not failed: gate with `level: must` or --min-score)");
    }
    line
}

/// `14 passed, 0 failed, 1 warning, 3 skipped`: `failed` counts what fails the run; a SHOULD
/// failure that does not (no `--strict`) is a warning, a MAY one is noted.
pub fn counts(s: &super::Summary) -> String {
    let mut line = format!("{} passed, {} failed", s.passed, s.failing());
    if s.warnings > 0 {
        line.push_str(&format!(
            ", {}",
            crate::text::count(s.warnings as u64, "warnings")
        ));
    }
    if s.failed_may > 0 {
        line.push_str(&format!(", {} noted (MAY)", s.failed_may));
    }
    line.push_str(&format!(", {} skipped", s.skipped));
    line
}

fn last_line(report: &Report) -> String {
    let s = &report.summary;
    let mut last = counts(s);
    if s.xfailed + s.stale > 0 {
        last.push_str(&format!(
            ", {} (--baseline), {}",
            crate::text::count(s.xfailed as u64, "expected failures"),
            crate::text::count(s.stale as u64, "stale baseline entries")
        ));
    }
    if let Some(cut) = &report.interrupted {
        last.push_str(&format!(" · {}", cut.headline()));
    } else if let Some(why) = report.nothing_judged_reason() {
        last.push_str(&format!(" · {why}"));
    }
    last
}

/// ` · evaluation: met 3/5` after a group's name when it holds evaluation cases.
/// Each group's evaluation score (met, total), for the groups that have evaluation cases: one
/// pass over the cases (a report of thousands of groups is not scanned once per group).
/// Longest `reproduce:` command the console shows whole (in characters).
const REPRODUCE_WHOLE: usize = 1_000;
/// Characters of a longer one shown from its start, and from its end.
const REPRODUCE_HEAD: usize = 300;
const REPRODUCE_TAIL: usize = 200;

/// A reproduce command as the console shows it: whole when it is short enough to paste from a
/// terminal; else its start and its end (where the program to run is named), with how much was
/// left out and where the whole command is: a request of a long history makes a command of tens
/// of kilobytes, a screenful per failing case.
fn reproduce_line(cmd: &str) -> String {
    let total = cmd.chars().count();
    if total <= REPRODUCE_WHOLE {
        return cmd.to_string();
    }
    let (head, tail) = (REPRODUCE_HEAD, REPRODUCE_TAIL);
    let start: String = cmd.chars().take(head).collect();
    let end: String = cmd.chars().skip(total - tail).collect();
    format!(
        "{start} … [{} characters left out; the whole command is in the JSON report (--json \
         FILE), at the case's exchange.reproduce] … {end}",
        total - head - tail
    )
}

fn group_scores(report: &Report) -> std::collections::HashMap<&str, (usize, usize)> {
    let mut scores = std::collections::HashMap::new();
    for c in report.cases.iter().filter(|c| c.kind == Kind::Evaluation) {
        let (met, total) = scores.entry(c.group.as_str()).or_insert((0, 0));
        *total += 1;
        *met += usize::from(c.status == Status::Pass);
    }
    scores
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

#[cfg(test)]
mod tests {
    use super::reproduce_line;

    /// A short command is shown whole; a long one by its start and its end, saying how much was
    /// left out and where the whole one is.
    #[test]
    fn a_long_reproduce_command_is_shortened() {
        let short = "echo '{\"turn\":1}' | python3 agent.py";
        assert_eq!(reproduce_line(short), short);
        let body = "é".repeat(40_000);
        let long = format!("echo '{body}' | python3 agent.py");
        let shown = reproduce_line(&long);
        assert!(shown.starts_with("echo 'éé"), "{shown}");
        assert!(shown.ends_with("é' | python3 agent.py"), "{shown}");
        assert!(
            shown.contains(
                " … [39526 characters left out; the whole command is in the JSON report \
                 (--json FILE), at the case's exchange.reproduce] … "
            ),
            "{shown}"
        );
        assert!(shown.chars().count() < 650, "{}", shown.chars().count());
    }
}
