//! The HTML report (`--html PATH`): one self-contained file — CSS, the filter script and the
//! plots (SVG, drawn with plotters) inline, nothing fetched — that opens from a CI artifact store
//! offline. The summary first (verdict, exit status and why, counts by level and status, seed,
//! target, duration), the plots, then the cases grouped as the console groups them, with filters
//! (failed / warnings / all, level, text). Every string from the run is escaped: answers are
//! hostile input, and a `<script>` in one is shown as text.

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::{console, CaseResult, Count, Level, Report, Span, Status};

/// Most characters of an answer excerpt shown per case.
pub(crate) const EXCERPT: usize = 4_000;
/// Most spans drawn on the timeline (an even sample of them past this).
const MAX_SPANS: usize = 5_000;

/// `&`, `<`, `>`, `"`, `'` as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{padding:18px 28px;color:#fff}
header.pass{background:#1f7a3d} header.fail{background:#b3261e}
header h1{margin:0;font-size:22px} header p{margin:4px 0 0}
main{padding:16px 28px;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 16px} td,th{padding:3px 10px;border-bottom:1px solid #dde1e7;text-align:right}
th:first-child,td:first-child{text-align:left}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0 16px}
.facts dt{color:#5b6474} .facts dd{margin:0;word-break:break-all}
.plots{display:flex;flex-wrap:wrap;gap:12px} .plots figure{margin:0;background:#fff;border:1px solid #dde1e7;padding:6px}
.plots figcaption{font-size:12px;color:#5b6474}
.filters{position:sticky;top:0;background:#f6f7f9;padding:8px 0;border-bottom:1px solid #dde1e7;display:flex;gap:14px;align-items:center}
.group h3{margin:18px 0 6px;font-size:15px}
details.case{background:#fff;border:1px solid #dde1e7;border-radius:4px;margin:3px 0}
details.case summary{cursor:pointer;padding:4px 8px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
details.case .body{padding:4px 12px 10px}
pre{white-space:pre-wrap;word-break:break-all;background:#f1f3f6;padding:6px 8px;margin:4px 0;font-size:12px;max-height:340px;overflow:auto}
.w{display:inline-block;min-width:46px;font-weight:600}
.PASS,.MET{color:#1f7a3d} .FAIL,.STALE-f{color:#b3261e} .WARN,.UNMET,.STALE{color:#a15c00} .INFO,.XFAIL{color:#006a80} .SKIP{color:#7a808c}
.label{color:#5b6474;font-size:12px}
"#;

const SCRIPT: &str = r#"
(function(){
  var show=document.getElementsByName('show'),level=document.getElementById('level'),text=document.getElementById('text');
  function apply(){
    var mode='all';for(var i=0;i<show.length;i++){if(show[i].checked){mode=show[i].value;}}
    var lv=level.value,q=text.value.toLowerCase();
    var groups=document.querySelectorAll('.group');
    for(var g=0;g<groups.length;g++){
      var cases=groups[g].querySelectorAll('details.case'),shown=0;
      for(var c=0;c<cases.length;c++){
        var d=cases[c].dataset,ok=true;
        if(mode==='failed'&&d.blocking!=='1'){ok=false;}
        if(mode==='warn'&&d.problem!=='1'){ok=false;}
        if(lv!=='all'&&d.level!==lv){ok=false;}
        if(q&&cases[c].textContent.toLowerCase().indexOf(q)<0){ok=false;}
        cases[c].style.display=ok?'':'none';if(ok){shown++;}
      }
      groups[g].style.display=shown?'':'none';
    }
  }
  for(var i=0;i<show.length;i++){show[i].addEventListener('change',apply);}
  level.addEventListener('change',apply);text.addEventListener('input',apply);apply();
  document.documentElement.setAttribute('data-filters','ready');
})();
"#;

/// The report as one HTML page.
pub fn to_string(report: &Report) -> String {
    let exit = report.exit_code();
    let word = verdict_word(exit);
    let mut out = String::with_capacity(64 * 1024 + report.cases.len() * 600);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str(&format!(
        "<title>agent-tck {} · {word}</title><style>{STYLE}</style></head><body>",
        escape(&report.title()),
    ));
    out.push_str(&format!(
        "<header class=\"{}\"><h1>{word} · {}</h1><p>{}</p></header><main>",
        if exit == super::Exit::Passed {
            "pass"
        } else {
            "fail"
        },
        escape(&report.title()),
        escape(&exit_why(report)),
    ));
    summary(&mut out, report);
    plots(&mut out, report);
    out.push_str(
        "<div class=\"filters\"><span><label><input type=\"radio\" name=\"show\" value=\"failed\">failed</label> \
         <label><input type=\"radio\" name=\"show\" value=\"warn\">failed and warnings</label> \
         <label><input type=\"radio\" name=\"show\" value=\"all\" checked>all</label></span>\
         <label>level <select id=\"level\"><option>all</option><option>must</option><option>should</option><option>may</option></select></label>\
         <label>search <input id=\"text\" type=\"search\" placeholder=\"id, title, message\"></label></div>",
    );
    cases(&mut out, report);
    out.push_str(&format!("</main><script>{SCRIPT}</script></body></html>\n"));
    out
}

/// The word a page's title and header give a run that exits with `exit`: PASS, FAIL, or
/// INTERRUPTED (no verdict).
pub(crate) fn verdict_word(exit: super::Exit) -> &'static str {
    match exit {
        super::Exit::Passed => "PASS",
        super::Exit::Interrupted => "INTERRUPTED",
        _ => "FAIL",
    }
}

/// Why the run exits as it does: an interrupted run first says it was (exit 130, no verdict),
/// then what had failed before the cut.
pub(crate) fn exit_why(report: &Report) -> String {
    let blocking: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| report.is_blocking(c) && c.status != Status::Stale)
        .map(|c| c.id.as_str())
        .collect();
    let stale = report.blocking_stale();
    let mut reasons = Vec::new();
    if !blocking.is_empty() {
        let more = blocking.len().saturating_sub(8);
        reasons.push(format!(
            "{} the run: {}{}",
            match blocking.len() {
                1 => "1 case fails".to_string(),
                n => format!("{n} cases fail"),
            },
            blocking[..blocking.len().min(8)].join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if !stale.is_empty() {
        reasons.push(format!(
            "--strict: {} stale baseline entr{} (passing now; remove from the baseline): {}",
            stale.len(),
            if stale.len() == 1 { "y" } else { "ies" },
            stale.join(", ")
        ));
    }
    if report.below_min_score() {
        reasons.push("the evaluation score is below --min-score".into());
    }
    if let Some(cut) = &report.interrupted {
        // What had failed before the cut still failed; "nothing judged" is the cut's doing.
        return if reasons.is_empty() {
            format!("exit 130: {}", cut.headline())
        } else {
            format!(
                "exit 130: {} (before it: {})",
                cut.headline(),
                reasons.join("; ")
            )
        };
    }
    reasons.extend(report.nothing_judged_reason());
    if reasons.is_empty() {
        format!(
            "exit 0: no {}failure fails the run",
            if report.strict {
                "MUST or SHOULD "
            } else {
                "MUST "
            }
        )
    } else {
        format!("exit 1: {}", reasons.join("; "))
    }
}

fn summary(out: &mut String, report: &Report) {
    facts(out, report);
    LevelTable::of(&report.cases).write(out);
    notes(out, report);
}

/// The run's facts: counts, target, seed, start, duration, strict, tool, the specs judged by.
pub(crate) fn facts(out: &mut String, report: &Report) {
    let s = &report.summary;
    out.push_str("<dl class=\"facts\">");
    let mut facts = vec![
        ("counts", super::console::counts(s)),
        ("target", report.target.clone()),
    ];
    // A run without a seed (a lint, a merge of runs of different seeds) shows none.
    if let Some(seed) = report.seed {
        facts.push(("seed", seed.to_string()));
    }
    facts.extend([
        ("started", report.started_at.clone()),
        (
            "duration",
            crate::units::format_duration(std::time::Duration::from_millis(report.duration_ms)),
        ),
        ("strict", report.strict.to_string()),
        ("tool", format!("{} {}", report.tool, report.version)),
    ]);
    // The specs judged by, each digest whole (a reader compares it with `agent-tck --version`).
    facts.extend(report.judged_by_lines(64).into_iter().map(|l| ("spec", l)));
    for (k, v) in facts {
        out.push_str(&format!("<dt>{k}</dt><dd>{}</dd>", escape(&v)));
    }
    if let Some(score) = s.evaluation {
        out.push_str(&format!(
            "<dt>evaluation</dt><dd>{}</dd>",
            escape(&score.to_string())
        ));
    }
    out.push_str("</dl>");
}

/// What a reader should know about the run, as a list (nothing when there is nothing).
pub(crate) fn notes(out: &mut String, report: &Report) {
    if !report.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for n in &report.notes {
            out.push_str(&format!("<li>{}</li>", escape(n)));
        }
        out.push_str("</ul>");
    }
}

/// The statuses the summary's table counts, as its columns.
const STATUSES: [(Status, &str); 5] = [
    (Status::Pass, "pass"),
    (Status::Fail, "fail"),
    (Status::Skip, "skip"),
    (Status::Xfail, "xfail"),
    (Status::Stale, "stale"),
];

/// Cases counted by level (rows) and status (columns): the summary's table. Counted case by
/// case, so that a page of many reports adds each one's cases without keeping them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LevelTable([[usize; STATUSES.len()]; 3]);

impl LevelTable {
    pub(crate) fn of(cases: &[CaseResult]) -> LevelTable {
        let mut table = LevelTable::default();
        table.add(cases);
        table
    }

    pub(crate) fn add(&mut self, cases: &[CaseResult]) {
        for c in cases {
            let row = c.level as usize;
            if let Some(column) = STATUSES.iter().position(|(s, _)| *s == c.status) {
                self.0[row][column] += 1;
            }
        }
    }

    pub(crate) fn write(&self, out: &mut String) {
        out.push_str("<table><tr><th>level</th>");
        for (_, name) in STATUSES {
            out.push_str(&format!("<th>{name}</th>"));
        }
        out.push_str("</tr>");
        for level in [Level::Must, Level::Should, Level::May] {
            out.push_str(&format!("<tr><td>{}</td>", level.as_str()));
            for n in self.0[level as usize] {
                out.push_str(&format!("<td>{n}</td>"));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
    }
}

fn cases(out: &mut String, report: &Report) {
    let mut group: Option<&str> = None;
    for case in &report.cases {
        if group != Some(case.group.as_str()) {
            if group.is_some() {
                out.push_str("</section>");
            }
            group = Some(&case.group);
            out.push_str(&format!(
                "<section class=\"group\"><h3>{}</h3>",
                escape(&case.group)
            ));
        }
        one_case(out, report, case);
    }
    if group.is_some() {
        out.push_str("</section>");
    }
}

/// How a case is shown: its verdict word and CSS class, whether it fails the run (shown open),
/// whether it is a problem (a failure or a stale baseline entry: the "failed and warnings" filter).
pub(crate) struct Verdict {
    pub word: &'static str,
    pub class: &'static str,
    pub blocking: bool,
    pub problem: bool,
}

impl Verdict {
    pub(crate) fn of(report: &Report, case: &CaseResult) -> Verdict {
        let (word, _) = console::verdict(report, case);
        let blocking = report.is_blocking(case);
        Verdict {
            word,
            class: if word == "STALE" && blocking {
                "STALE-f"
            } else {
                word
            },
            blocking,
            problem: matches!(case.status, Status::Fail | Status::Stale),
        }
    }
}

/// What follows a case's title: `(judged 3 answers) (30 ms)`.
pub(crate) fn after_title(case: &CaseResult) -> String {
    format!(
        "{}({})",
        case.evidence
            .as_ref()
            .map(|e| format!("({e}) "))
            .unwrap_or_default(),
        case.duration_text()
    )
}

fn one_case(out: &mut String, report: &Report, case: &CaseResult) {
    let Verdict {
        word,
        class,
        blocking,
        problem,
    } = Verdict::of(report, case);
    out.push_str(&format!(
        "<details class=\"case\" data-level=\"{}\" data-blocking=\"{}\" data-problem=\"{}\"{}>\
         <summary><span class=\"w {class}\">{word}</span> {:<6} {} <span class=\"label\">— {} {}</span></summary><div class=\"body\">",
        case.level.as_str(),
        u8::from(blocking),
        u8::from(problem),
        if blocking { " open" } else { "" },
        case.level.as_str(),
        escape(&case.id),
        escape(&case.title),
        escape(&after_title(case)),
    ));
    if !case.message.is_empty() {
        out.push_str(&format!("<pre>{}</pre>", escape(&case.message)));
    }
    if let Some(see) = super::explained::pointer(case) {
        out.push_str(&format!(
            "<div class=\"label\">see: <code>{}</code></div>",
            escape(&see)
        ));
    }
    out.push_str(&format!(
        "<div class=\"label\">rule: {} · spec: {} · {}</div>",
        escape(&case.title),
        escape(&case.spec),
        case.kind.as_str()
    ));
    let e = &case.exchange;
    let parts = [
        ("request", e.request.as_deref()),
        ("answer (excerpt)", e.response.as_deref()),
        ("reproduce", e.reproduce.as_deref()),
    ];
    for (what, text) in parts {
        if let Some(text) = text {
            out.push_str(&format!(
                "<div class=\"label\">{what}</div><pre>{}</pre>",
                escape(&crate::text::shorten(text, EXCERPT))
            ));
        }
    }
    out.push_str("</div></details>");
}

fn plots(out: &mut String, report: &Report) {
    let mut figures = Vec::new();
    // Per group (an endpoint, a scenario), in microseconds: a fast agent answers in well under
    // a millisecond, and whole milliseconds would read every case as 0. The cases that carry an
    // exchange with the peer are its answer times (a probe's group is the endpoint); the others
    // are where the run spent its time.
    // Several cases judge one exchange (an endpoint's schema, field lengths, list caps… on one
    // answer): each exchange is one answer time, counted once.
    let mut exchanges = std::collections::BTreeSet::new();
    let mut answers: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut durations: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for c in &report.cases {
        // Older reports carry milliseconds only.
        let us = c.duration_us.max(c.duration_ms.saturating_mul(1000));
        if us == 0 {
            continue;
        }
        let e = &c.exchange;
        if e.request.is_some() || e.response.is_some() {
            if exchanges.insert((&c.group, &e.request, &e.response, us)) {
                answers.entry(&c.group).or_default().push(us);
            }
        } else {
            durations.entry(&c.group).or_default().push(us);
        }
    }
    // A group whose cases share one exchange (a scenario) has one duration: nothing to plot.
    let varied = |v: &Vec<u64>| v.iter().collect::<std::collections::BTreeSet<_>>().len() >= 3;
    if !report.counts.is_empty() {
        figures.push(bars(&report.counts));
    }
    for (group, values) in answers.iter().filter(|(_, v)| v.len() >= 2).take(12) {
        figures.push((
            histogram(&format!("{group}: answer time"), values),
            format!(
                "{} answers (the exchanges its cases judged, each once); p50, p90, p99 marked",
                values.len()
            ),
        ));
    }
    for (group, values) in durations.iter().filter(|(_, v)| varied(v)).take(12) {
        figures.push((
            histogram(&format!("{group}: case duration"), values),
            format!("{} cases; p50, p90, p99 marked", values.len()),
        ));
    }
    if !report.timeline.is_empty() {
        figures.push(timeline(&report.timeline));
        let mut by_endpoint: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for s in &report.timeline {
            by_endpoint
                .entry(&s.label)
                .or_default()
                .push(s.duration_ms.saturating_mul(1000));
        }
        for (endpoint, values) in by_endpoint.iter().take(12) {
            figures.push((
                histogram(&format!("/{endpoint}: answer time"), values),
                format!(
                    "{} requests the platform sent; p50, p90, p99 marked",
                    values.len()
                ),
            ));
        }
    }
    if figures.is_empty() {
        return;
    }
    out.push_str("<h2>Plots</h2><div class=\"plots\">");
    for (svg, caption) in figures {
        out.push_str(&format!(
            "<figure>{svg}<figcaption>{}</figcaption></figure>",
            escape(&caption)
        ));
    }
    out.push_str("</div>");
}

/// An SVG picture of `size` drawn by `draw` (on a white ground), or a note saying why there is
/// none.
fn draw_svg(
    size: (u32, u32),
    draw: impl FnOnce(
        &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>,
) -> String {
    let mut svg = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(Box::<dyn std::error::Error>::from)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(Into::into))
    };
    match drawn {
        Ok(()) => svg,
        Err(e) => format!(
            "<p>(the plot could not be drawn: {})</p>",
            escape(&e.to_string())
        ),
    }
}

/// A histogram of `values_us` (microseconds) with p50, p90 and p99 marked, as inline SVG: in
/// µs when the slowest is under 10 ms, else in ms.
fn histogram(title: &str, values_us: &[u64]) -> String {
    let mut sorted: Vec<std::time::Duration> = values_us
        .iter()
        .map(|us| std::time::Duration::from_micros(*us))
        .collect();
    sorted.sort();
    let slowest = sorted.last().copied().unwrap_or_default();
    let (unit, per_second) = if slowest < std::time::Duration::from_millis(10) {
        ("µs", 1e6)
    } else {
        ("ms", 1e3)
    };
    // The percentiles as the console and the benchmarks compute them, in `unit`.
    let q = |p: f64| crate::units::percentile(&sorted, p).as_secs_f64() * per_second;
    let max = q(1.0).max(1.0);
    const BINS: usize = 24;
    let width = max / BINS as f64;
    let mut counts = [0u32; BINS];
    for v in &sorted {
        counts[((v.as_secs_f64() * per_second / width) as usize).min(BINS - 1)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1) + 1;
    let svg = draw_svg((520, 230), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(40)
            .build_cartesian_2d(0f64..max * 1.02, 0u32..top)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(unit)
            .y_desc("count")
            .draw()?;
        chart.draw_series(counts.iter().enumerate().map(|(i, n)| {
            let x0 = i as f64 * width;
            Rectangle::new([(x0, 0), (x0 + width, *n)], RGBColor(70, 110, 180).filled())
        }))?;
        for (p, name, colour) in [
            (0.5, "p50", RGBColor(31, 122, 61)),
            (0.9, "p90", RGBColor(161, 92, 0)),
            (0.99, "p99", RGBColor(179, 38, 30)),
        ] {
            let v = q(p);
            chart
                .draw_series(LineSeries::new([(v, 0), (v, top)], colour.stroke_width(2)))?
                .label(format!("{name} {v:.1} {unit}"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 14, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        Ok(())
    });
    svg
}

/// A bar per label (turns per scenario).
fn bars(counts: &[Count]) -> (String, String) {
    let shown = &counts[..counts.len().min(40)];
    let unit = shown.first().map_or("", |c| c.unit.as_str());
    let top = shown.iter().map(|c| c.value).max().unwrap_or(1) + 1;
    let names: Vec<String> = shown
        .iter()
        .map(|c| crate::text::shorten(&c.label, 28))
        .collect();
    let height = (80 + 24 * shown.len()).min(1000) as u32;
    let svg = draw_svg((640, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(format!("{unit} per scenario"), ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(200)
            .build_cartesian_2d(0u64..top, -0.5f64..shown.len() as f64 - 0.5)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(unit)
            .y_labels((shown.len() + 1).min(41))
            .y_label_formatter(&|y| {
                if (y - y.round()).abs() > 0.01 || *y < 0.0 {
                    return String::new();
                }
                names.get(y.round() as usize).cloned().unwrap_or_default()
            })
            .draw()?;
        chart.draw_series(shown.iter().enumerate().map(|(i, c)| {
            let y = i as f64;
            Rectangle::new(
                [(0, y - 0.35), (c.value, y + 0.35)],
                RGBColor(70, 110, 180).filled(),
            )
        }))?;
        Ok(())
    });
    let caption = format!(
        "{} scenarios{}",
        counts.len(),
        if counts.len() > shown.len() {
            format!(" (the first {} drawn)", shown.len())
        } else {
            String::new()
        }
    );
    (svg, caption)
}

/// Requests over time, a lane per agent (and its behaviours), coloured by how each answer ended.
fn timeline(spans: &[Span]) -> (String, String) {
    let step = spans.len().div_ceil(MAX_SPANS).max(1);
    let drawn: Vec<&Span> = spans.iter().step_by(step).collect();
    let mut lanes: Vec<&str> = Vec::new();
    for s in &drawn {
        if !lanes.contains(&s.lane.as_str()) {
            lanes.push(&s.lane);
        }
    }
    let end = drawn
        .iter()
        .map(|s| (s.start_ms + s.duration_ms) as f64 / 1000.0)
        .fold(0.001, f64::max);
    let height = (80 + 22 * lanes.len()).min(900) as u32;
    let svg = draw_svg((1040, height), |root| {
        let lane_names: Vec<String> = lanes.iter().map(|l| l.to_string()).collect();
        let mut chart = ChartBuilder::on(root)
            .caption("requests over time, by agent", ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(260)
            .build_cartesian_2d(0f64..end * 1.02, -0.5f64..lanes.len() as f64 - 0.5)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("seconds since the fleet started")
            .y_labels((lanes.len() + 1).min(41))
            // A lane's name at its row's middle (a whole number); nothing between rows.
            .y_label_formatter(&|y| {
                if (y - y.round()).abs() > 0.01 || *y < 0.0 {
                    return String::new();
                }
                lane_names
                    .get(y.round() as usize)
                    .map(|l| crate::text::shorten(l, 40))
                    .unwrap_or_default()
            })
            .draw()?;
        chart.draw_series(drawn.iter().map(|s| {
            let lane = lanes.iter().position(|l| *l == s.lane).unwrap_or(0) as f64;
            let x0 = s.start_ms as f64 / 1000.0;
            // At least 0.2% of the run wide: a quick answer is still a visible tick.
            let x1 = x0 + (s.duration_ms as f64 / 1000.0).max(end * 0.002);
            let colour = match s.outcome.as_str() {
                "complete" => RGBColor(31, 122, 61),
                "hung" | "shutdown" => RGBColor(161, 92, 0),
                _ => RGBColor(179, 38, 30),
            };
            Rectangle::new([(x0, lane - 0.35), (x1, lane + 0.35)], colour.filled())
        }))?;
        Ok(())
    });
    let caption = format!(
        "{} requests{}; green: answered whole, orange: held (hang) or cut by the fleet's end, red: reset, closed or left by the platform",
        spans.len(),
        if step > 1 { format!(" (every {step}th drawn)") } else { String::new() }
    );
    (svg, caption)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Evidence, Exchange, RunInfo};

    #[test]
    fn hostile_answers_are_text_and_the_page_fetches_nothing() {
        let mut c = CaseResult::new(
            "analyze.schema",
            "analyze",
            Level::Must,
            "an <b>answer</b>",
            "§1",
        );
        c.fail("$.votes[0]: <img src=x onerror=alert(1)>");
        c.set_duration(std::time::Duration::from_millis(12));
        c.exchange = Exchange {
            request: Some("POST /analyze".into()),
            response: Some("<script>document.body.dataset.pwned='1'</script>".into()),
            reproduce: Some("curl -d '{\"a\":1}' http://127.0.0.1:1/analyze".into()),
        };
        let mut ok = CaseResult::new("analyze.status", "analyze", Level::Must, "200", "§1");
        ok.pass(Evidence::new(3, "answers"), String::new);
        ok.set_duration(std::time::Duration::from_millis(30));
        let mut late = CaseResult::new("analyze.time", "analyze", Level::Should, "soon", "§1");
        late.pass(Evidence::new(2, "answers"), String::new);
        late.set_duration(std::time::Duration::from_millis(80));
        let mut quick = CaseResult::new("analyze.size", "analyze", Level::Must, "small", "§1");
        quick.pass(Evidence::new(1, "answer"), String::new);
        quick.set_duration(std::time::Duration::from_micros(412));
        let report = RunInfo::start("probe", "roundtable", "http://127.0.0.1:1", 1, false).report(
            vec![c, ok, late, quick],
            &crate::text::Redactor::new(Vec::new()),
        );
        let html = to_string(&report);
        assert!(
            html.contains("&lt;script&gt;document.body.dataset.pwned=&#39;1&#39;&lt;/script&gt;")
        );
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert_eq!(html.matches("<script").count(), 1, "only our own script");
        assert!(!html.contains("<img"));
        for external in ["src=\"http", "href=\"http", "@import", "<link", "url("] {
            assert!(!html.contains(external), "{external}");
        }
        assert!(html.contains("exit 1: 1 case fails the run: analyze.schema"));
        assert!(html.contains("<svg"), "the duration histogram");
        assert!(html.contains(" open>"), "the failure is expanded");
        assert!(
            html.contains("— 200 (judged 3 answers) (30 ms)"),
            "evidence shown"
        );
        assert!(
            html.contains("(judged 1 answer) (412 µs)"),
            "microseconds shown"
        );
    }

    /// A fast run: every case under a millisecond (0 in whole milliseconds). The cases with an
    /// exchange are plotted as each endpoint's answer times, in µs, p50/p90/p99 marked; a group
    /// without exchanges as case durations.
    #[test]
    fn a_sub_millisecond_run_is_plotted_in_microseconds_per_endpoint() {
        let case = |id: &str, group: &str, us: u64, exchanged: bool| {
            let mut c = CaseResult::new(id, group, Level::Must, "t", "§1");
            c.pass(Evidence::new(1, "answer"), String::new);
            c.set_duration(std::time::Duration::from_micros(us));
            if exchanged {
                c.exchange.request = Some(format!("POST /{group} {id}"));
            }
            c
        };
        let mut cases = Vec::new();
        for (i, us) in [180, 240, 310, 420, 650, 990].into_iter().enumerate() {
            cases.push(case(&format!("analyze.c{i}"), "analyze", us, true));
            // A second case judging the same exchange: counted once.
            let mut twin = case(&format!("analyze.c{i}"), "analyze", us, true);
            twin.id = format!("analyze.twin{i}");
            cases.push(twin);
            cases.push(case(&format!("vote.c{i}"), "vote", us / 2, true));
            cases.push(case(&format!("lint.c{i}"), "lint", us + 3, false));
        }
        assert!(cases.iter().all(|c| c.duration_ms == 0));
        let report = RunInfo::start("probe", "roundtable", "http://127.0.0.1:1", 1, false)
            .report(cases, &crate::text::Redactor::new(Vec::new()));
        let html = to_string(&report);
        for figure in [
            "analyze: answer time",
            "vote: answer time",
            "lint: case duration",
        ] {
            assert!(html.contains(figure), "{figure}");
        }
        assert!(html.contains(
            "6 answers (the exchanges its cases judged, each once); p50, p90, p99 marked"
        ));
        // The axis and the marks in µs: p50 of the /analyze answers is 420 µs.
        assert!(
            html.contains("p50 420.0 µs"),
            "{}",
            &html[html.find("<svg").unwrap()..][..3000]
        );
        assert!(!html.contains("lint: answer time"));
    }
}
