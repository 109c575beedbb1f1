//! `agent-tck probe orchestration --journal FILE…`: an orchestrator judged from the journal its
//! mock agents wrote ([`super::journal`]) — the order and overlap of their runs.
//!
//! What it can see: every run of a mock agent (its start, and its end when it printed a result),
//! the mode and task it was given, whether it was told the plan was approved, and the result's
//! status and next_agents. What it cannot see: the orchestrator's own steps (an approval asked of
//! a person and not passed on to the agent looks like no approval: pass `"approved": true` on
//! stdin, or `--approved`), agents that are not these mocks, runs killed before they wrote their
//! start line, and the order of runs on machines whose clocks disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::journal::{self, Event, JournalError, Line};
use crate::probe::args::Common;
use crate::report::{CaseResult, Evidence, Level, Report};
use crate::text::Redactor;

/// The cases: (id, level, title); each is reported as `orchestration.ID`.
pub const RULES: &[(&str, Level, &str)] = &[
    (
        "journal",
        Level::Must,
        "every line of the journal is a journal line (the start or end of a mock agent's run)",
    ),
    (
        "plan-before-execute",
        Level::Must,
        "an agent that supports plan mode ran in plan mode, to its end, before each execute run",
    ),
    (
        "approval-before-execute",
        Level::Must,
        "an execute run after a needs_approval plan was approved (\"approved\": true, or --approved)",
    ),
    (
        "sequential-handoff",
        Level::Must,
        "an agent named next with can_parallel: false did not execute while the agent naming it did",
    ),
    (
        "bounded-runs",
        Level::Should,
        "no agent executed more than --max-runs times (a cycle of next_agents is cut)",
    ),
];

/// What `probe orchestration` runs on.
#[derive(Debug, Clone)]
pub struct Settings {
    pub journals: Vec<PathBuf>,
    /// From --agents: each definition's name and whether it supports plan mode. None: every
    /// agent of the journal is taken to (the mock agents do).
    pub plan_mode: Option<BTreeMap<String, bool>>,
    pub max_runs: usize,
    pub common: Common,
}

impl Settings {
    pub fn wants(&self, id: &str) -> bool {
        self.common.wants(id)
    }
}

/// The case ids.
pub fn case_ids() -> Vec<String> {
    RULES
        .iter()
        .map(|(id, _, _)| format!("orchestration.{id}"))
        .collect()
}

/// One run of an agent, from its start line and (when it finished) its end line.
#[derive(Debug, Clone)]
struct Run {
    /// Where its start line is (`FILE:LINE`).
    at: String,
    agent: String,
    mode: String,
    start: u64,
    end: Option<u64>,
    approved: bool,
    status: Option<String>,
    /// (agent, can_parallel) of its result's next_agents.
    next: Vec<(String, bool)>,
}

fn runs(lines: &[(String, Line)]) -> (Vec<Run>, Vec<String>) {
    let mut runs: Vec<Run> = Vec::new();
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (at, line) in lines {
        match line.event {
            Event::Start => {
                by_id.insert(line.run.clone(), runs.len());
                runs.push(Run {
                    at: at.clone(),
                    agent: line.agent.clone(),
                    mode: line.mode.clone(),
                    start: line.at_us,
                    end: None,
                    approved: line.approved,
                    status: None,
                    next: Vec::new(),
                });
            }
            Event::End => match by_id.get(&line.run) {
                Some(&i) => {
                    let run = &mut runs[i];
                    run.end = Some(line.at_us);
                    run.status = line.status.clone();
                    run.next = line
                        .next_agents
                        .iter()
                        .map(|n| (n.agent.clone(), n.can_parallel))
                        .collect();
                }
                None => problems.push(format!(
                    "{at}: the end of run {} that never started",
                    line.run
                )),
            },
        }
    }
    runs.sort_by_key(|r| r.start);
    (runs, problems)
}

/// Seconds since `zero`, as `+1.234s`.
fn offset(t: u64, zero: u64) -> String {
    format!("+{:.3}s", t.saturating_sub(zero) as f64 / 1e6)
}

/// Whether two runs were under way at once (a run with no end is taken to go on forever).
fn overlap(a: &Run, b: &Run) -> bool {
    a.start < b.end.unwrap_or(u64::MAX) && b.start < a.end.unwrap_or(u64::MAX)
}

/// At most this many examples in a message.
const EXAMPLES: usize = 5;

fn listed(mut items: Vec<String>) -> String {
    let more = items.len().saturating_sub(EXAMPLES);
    items.truncate(EXAMPLES);
    let mut text = items.join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

pub async fn run(
    settings: &Settings,
    on_case: &(dyn Fn(&CaseResult) + Send + Sync),
) -> Result<Report, JournalError> {
    let target = settings
        .journals
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let info = settings
        .common
        .run_info(super::NAME, target)
        .made_by("probe orchestration")
        // It reads a journal back: nothing is chosen by a seed.
        .seedless();
    let mut lines = Vec::new();
    let mut bad = Vec::new();
    for path in &settings.journals {
        let read = journal::read(path)?;
        lines.extend(read.lines);
        bad.extend(read.bad);
    }
    let cases: Vec<CaseResult> = judge(&lines, bad, settings)
        .into_iter()
        .filter(|c| settings.wants(&c.id))
        .inspect(|c| on_case(c))
        .collect();
    Ok(info.report(cases, &Redactor::new(Vec::new())))
}

/// The cases of a journal's lines (and the lines that were not journal lines).
fn judge(lines: &[(String, Line)], mut bad: Vec<String>, settings: &Settings) -> Vec<CaseResult> {
    let mut cases: Vec<CaseResult> = RULES
        .iter()
        .map(|(id, level, title)| {
            CaseResult::new(
                &format!("orchestration.{id}"),
                "orchestration",
                *level,
                title,
                super::lint::SPEC,
            )
        })
        .collect();
    let (runs, problems) = runs(lines);
    bad.extend(problems);
    judge_journal(&mut cases[0], lines.len(), bad, &runs);
    if runs.is_empty() {
        for c in &mut cases[1..] {
            c.skip(NO_RUNS);
        }
        return cases;
    }
    let timeline = Timeline::new(&runs);
    judge_plan_before_execute(&mut cases[1], &timeline, settings);
    judge_approval_before_execute(&mut cases[2], &timeline);
    judge_sequential_handoff(&mut cases[3], &timeline);
    judge_bounded_runs(&mut cases[4], &timeline, settings.max_runs);
    cases
}

const NO_RUNS: &str = "the journal holds no runs: have the orchestrator run the mock agents \
                       (`mock agent --protocol agent-standard --journal FILE`, or the \
                       commands `mock agents --dir OUT` writes) and pass that journal";

/// `orchestration.journal`: fails on the lines that were not journal lines (`bad`), skips with
/// no runs, else passes counting the runs and agents.
fn judge_journal(case: &mut CaseResult, lines: usize, bad: Vec<String>, runs: &[Run]) {
    if !bad.is_empty() {
        case.fail_on(Evidence::new(lines as u64, "journal lines"), listed(bad));
    } else if runs.is_empty() {
        case.skip(NO_RUNS);
    } else {
        let unfinished = runs.iter().filter(|r| r.end.is_none()).count();
        case.pass_noting(
            Evidence::new(lines as u64, "journal lines"),
            format!(
                "{} of {}{}",
                crate::text::count(runs.len() as u64, "runs"),
                crate::text::count(
                    runs.iter().map(|r| &r.agent).collect::<BTreeSet<_>>().len() as u64,
                    "agents"
                ),
                if unfinished > 0 {
                    format!("; {unfinished} without an end (killed, or still running)")
                } else {
                    String::new()
                }
            ),
            String::new,
        );
    }
}

/// The runs of a journal (at least one), as the rules after `journal` read them.
struct Timeline<'a> {
    runs: &'a [Run],
    executes: Vec<&'a Run>,
    /// The first run's start: times in messages are offsets from it.
    zero: u64,
}

impl<'a> Timeline<'a> {
    fn new(runs: &'a [Run]) -> Self {
        Timeline {
            runs,
            executes: runs.iter().filter(|r| r.mode == "execute").collect(),
            zero: runs[0].start,
        }
    }

    /// The plan runs of `agent` that ended by `before`.
    fn plans_of(&self, agent: &str, before: u64) -> Vec<&'a Run> {
        self.runs
            .iter()
            .filter(|p| p.mode == "plan" && p.agent == agent && p.end.is_some_and(|e| e <= before))
            .collect()
    }

    /// `t` as an offset from the first run's start.
    fn offset(&self, t: u64) -> String {
        offset(t, self.zero)
    }
}

/// `orchestration.plan-before-execute`.
fn judge_plan_before_execute(case: &mut CaseResult, timeline: &Timeline, settings: &Settings) {
    let supports_plan = |agent: &str| {
        settings
            .plan_mode
            .as_ref()
            .is_none_or(|m| m.get(agent).copied().unwrap_or(false))
    };
    let mut unplanned = Vec::new();
    let mut judged: u64 = 0;
    for e in timeline.executes.iter().filter(|e| supports_plan(&e.agent)) {
        judged += 1;
        if timeline.plans_of(&e.agent, e.start).is_empty() {
            unplanned.push(format!(
                "{}: {} executed at {} with no plan run of it ended before",
                e.at,
                e.agent,
                timeline.offset(e.start)
            ));
        }
    }
    verdict(
        case,
        (judged, "execute runs of agents that plan"),
        unplanned,
        "no execute run of an agent that supports plan mode: an orchestrator that executes an \
         agent with supports_plan_mode: true (in --agents; every mock agent without --agents) \
         would exercise this",
    );
}

/// `orchestration.approval-before-execute`.
fn judge_approval_before_execute(case: &mut CaseResult, timeline: &Timeline) {
    let mut unapproved = Vec::new();
    let mut judged: u64 = 0;
    for e in &timeline.executes {
        let last_plan = timeline
            .plans_of(&e.agent, e.start)
            .into_iter()
            .max_by_key(|p| p.end);
        if let Some(p) = last_plan.filter(|p| p.status.as_deref() == Some("needs_approval")) {
            judged += 1;
            if !e.approved {
                unapproved.push(format!(
                    "{}: {} executed at {} without approval; its plan ({}) ended with \
                     needs_approval at {}",
                    e.at,
                    e.agent,
                    timeline.offset(e.start),
                    p.at,
                    timeline.offset(p.end.unwrap_or(0))
                ));
            }
        }
    }
    verdict(
        case,
        (judged, "execute runs after a needs_approval plan"),
        unapproved,
        "no execute run followed a plan that ended needs_approval: a mock agent with the \
         needs-approval behaviour, planned and then executed, would exercise this",
    );
}

/// Each (agent, next agent it named) pair of the runs' results, and whether the hand-off was
/// parallel.
fn handoffs(runs: &[Run]) -> BTreeMap<(String, String), bool> {
    let mut pairs: BTreeMap<(String, String), bool> = BTreeMap::new();
    for r in runs {
        for (next, parallel) in &r.next {
            // Named both ways: sequential wins (the stricter word).
            let entry = pairs
                .entry((r.agent.clone(), next.clone()))
                .or_insert(*parallel);
            *entry &= *parallel;
        }
    }
    pairs
}

/// `orchestration.sequential-handoff`.
fn judge_sequential_handoff(case: &mut CaseResult, timeline: &Timeline) {
    let mut concurrent = Vec::new();
    let mut allowed = 0;
    let mut judged: u64 = 0;
    for ((from, to), parallel) in &handoffs(timeline.runs) {
        if from == to {
            continue;
        }
        for a in timeline
            .executes
            .iter()
            .filter(|r| &r.agent == from && r.end.is_some())
        {
            for b in timeline.executes.iter().filter(|r| &r.agent == to) {
                // Only a sequential hand-off can break the rule: a parallel one is counted
                // apart, as what it allowed.
                judged += u64::from(!*parallel);
                if !overlap(a, b) {
                    continue;
                }
                if *parallel {
                    allowed += 1;
                } else {
                    concurrent.push(format!(
                        "{}: {to} executed at {} while {from} (which named it with can_parallel: \
                         false, {}) ran until {}",
                        b.at,
                        timeline.offset(b.start),
                        a.at,
                        timeline.offset(a.end.unwrap_or(0))
                    ));
                }
            }
        }
    }
    verdict(
        case,
        (
            judged,
            "execute runs of sequential next agents beside the run that named them",
        ),
        concurrent,
        "no agent named in next_agents with can_parallel: false was executed after the run \
         that named it: mock agents handing off (`--next NAME`, sequential by default) to an agent the \
         orchestrator then executes would exercise this",
    );
    if allowed > 0 && case.passed() {
        case.message.push_str(&format!(
            "; {allowed} ran side by side where can_parallel: true allowed it"
        ));
    }
}

/// `orchestration.bounded-runs`.
fn judge_bounded_runs(case: &mut CaseResult, timeline: &Timeline, max_runs: usize) {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &timeline.executes {
        *count.entry(e.agent.as_str()).or_default() += 1;
    }
    let over: Vec<String> = count
        .iter()
        .filter(|(_, n)| **n > max_runs)
        .map(|(a, n)| format!("{a} executed {n} times (--max-runs {max_runs})"))
        .collect();
    verdict(
        case,
        (count.len() as u64, "agents executed"),
        over,
        "no execute run in the journal: an orchestrator that executes the mock agents would \
         exercise this",
    );
}

/// Fails `case` with the `problems`, or passes it on what was judged (`(how many, of what)`);
/// with nothing judged, skips it saying `unexercised` (what would exercise the rule).
fn verdict(case: &mut CaseResult, judged: (u64, &str), problems: Vec<String>, unexercised: &str) {
    let evidence = Evidence::new(judged.0, judged.1);
    if problems.is_empty() {
        case.pass_noting(evidence, "in order", || unexercised.to_string());
    } else {
        case.fail_on(evidence, listed(problems));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    /// A journal line: `agent mode start end status approved next…` as a compact script.
    fn run(
        lines: &mut Vec<(String, Line)>,
        agent: &str,
        mode: &str,
        span: (u64, Option<u64>),
        status: &str,
        approved: bool,
        next: &[(&str, bool)],
    ) {
        let id = format!("{agent}-{mode}-{}", span.0);
        let at = format!("j:{}", lines.len() + 1);
        let base = Line {
            event: Event::Start,
            run: id,
            agent: agent.into(),
            mode: mode.into(),
            at_us: span.0 * 1000,
            approved,
            task: Some("t".into()),
            status: None,
            next_agents: Vec::new(),
        };
        lines.push((at.clone(), base.clone()));
        if let Some(end) = span.1 {
            lines.push((
                format!("{at}e"),
                Line {
                    event: Event::End,
                    at_us: end * 1000,
                    approved: false,
                    task: None,
                    status: Some(status.into()),
                    next_agents: next
                        .iter()
                        .map(|(a, p)| journal::Next {
                            agent: a.to_string(),
                            can_parallel: *p,
                        })
                        .collect(),
                    ..base
                },
            ));
        }
    }

    fn settings() -> Settings {
        Settings {
            journals: Vec::new(),
            plan_mode: None,
            max_runs: 3,
            common: Common::default(),
        }
    }

    fn failed(lines: &[(String, Line)]) -> Vec<String> {
        judge(lines, Vec::new(), &settings())
            .into_iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| c.id)
            .collect()
    }

    /// a plans (asks approval), is approved and executes naming b (sequential) and c (parallel);
    /// b and c plan, then execute one after the other / beside a.
    fn good() -> Vec<(String, Line)> {
        let mut l = Vec::new();
        run(
            &mut l,
            "a",
            "plan",
            (0, Some(10)),
            "needs_approval",
            false,
            &[],
        );
        run(
            &mut l,
            "a",
            "execute",
            (20, Some(30)),
            "complete",
            true,
            &[("b", false), ("c", true)],
        );
        run(&mut l, "b", "plan", (31, Some(35)), "complete", false, &[]);
        run(&mut l, "c", "plan", (31, Some(35)), "complete", false, &[]);
        run(
            &mut l,
            "b",
            "execute",
            (40, Some(50)),
            "complete",
            false,
            &[],
        );
        run(
            &mut l,
            "c",
            "execute",
            (40, Some(55)),
            "complete",
            false,
            &[],
        );
        l
    }

    #[test]
    fn a_good_orchestration_passes_and_each_slip_fails_its_case() {
        assert_eq!(failed(&good()), Vec::<String>::new());
        let cases = judge(&good(), Vec::new(), &settings());
        assert!(cases.iter().all(|c| c.status == Status::Pass), "{cases:#?}");
        let judged: Vec<u64> = cases
            .iter()
            .map(|c| c.evidence.as_ref().unwrap().judged)
            .collect();
        // 12 lines; b and c execute after a plan (a too); a's one approval; b executed once
        // after a, which named it sequential (c, parallel, is not counted); 3 agents executed.
        assert_eq!(judged, [12, 3, 1, 1, 3]);

        // b executed with no plan.
        let mut l = good();
        l.retain(|(_, x)| !(x.agent == "b" && x.mode == "plan"));
        assert_eq!(failed(&l), ["orchestration.plan-before-execute"]);

        // a executed without approval.
        let mut l = good();
        for (_, x) in &mut l {
            x.approved = false;
        }
        assert_eq!(failed(&l), ["orchestration.approval-before-execute"]);

        // b (sequential) executed while a still ran.
        let mut l = good();
        run(&mut l, "b", "plan", (21, Some(24)), "complete", false, &[]);
        run(
            &mut l,
            "b",
            "execute",
            (25, Some(28)),
            "complete",
            false,
            &[],
        );
        assert_eq!(failed(&l), ["orchestration.sequential-handoff"]);

        // c (parallel) beside a is fine.
        let mut l = good();
        run(&mut l, "c", "plan", (21, Some(24)), "complete", false, &[]);
        run(
            &mut l,
            "c",
            "execute",
            (25, Some(28)),
            "complete",
            false,
            &[],
        );
        assert_eq!(failed(&l), Vec::<String>::new());

        // A cycle not cut: b executed four times.
        let mut l = good();
        for t in [60, 70, 80] {
            run(
                &mut l,
                "b",
                "execute",
                (t, Some(t + 5)),
                "complete",
                false,
                &[],
            );
        }
        assert_eq!(failed(&l), ["orchestration.bounded-runs"]);

        // A bad line, and no runs at all.
        let bad = judge(&good(), vec!["j:9: not a journal line".into()], &settings());
        assert_eq!(bad[0].status, Status::Fail);
        assert!(bad[0].message.contains("j:9"));
        // An empty journal gives nothing to judge: every case a skip saying what would.
        let empty = judge(&[], Vec::new(), &settings());
        assert!(empty.iter().all(|c| c.status == Status::Skip
            && c.message
                .starts_with("the journal holds no runs: have the orchestrator run")));
    }

    #[test]
    fn rules_with_nothing_to_judge_say_what_would_exercise_them() {
        // a plans (complete, no approval asked) and executes, handing off to c in parallel only.
        let mut l = Vec::new();
        run(&mut l, "a", "plan", (0, Some(5)), "complete", false, &[]);
        run(
            &mut l,
            "a",
            "execute",
            (6, Some(9)),
            "complete",
            false,
            &[("c", true)],
        );
        run(&mut l, "c", "plan", (10, Some(11)), "complete", false, &[]);
        run(
            &mut l,
            "c",
            "execute",
            (12, Some(13)),
            "complete",
            false,
            &[],
        );
        let cases = judge(&l, Vec::new(), &settings());
        let status: Vec<Status> = cases.iter().map(|c| c.status).collect();
        use Status::{Pass, Skip};
        assert_eq!(status, [Pass, Pass, Skip, Skip, Pass], "{cases:#?}");
        assert!(cases[2].message.contains("needs-approval behaviour"));
        assert!(cases[3].message.contains("can_parallel: false"));
    }

    #[test]
    fn an_execute_only_agent_needs_no_plan() {
        let mut l = good();
        l.retain(|(_, x)| !(x.agent == "b" && x.mode == "plan"));
        let mut s = settings();
        s.plan_mode = Some(
            [("a", true), ("b", false), ("c", true)]
                .map(|(a, p)| (a.to_string(), p))
                .into(),
        );
        let failed: Vec<String> = judge(&l, Vec::new(), &s)
            .into_iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| c.id)
            .collect();
        assert_eq!(failed, Vec::<String>::new());
    }
}
