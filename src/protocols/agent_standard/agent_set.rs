//! `agent-tck mock agents --protocol agent-standard --dir OUT --count N`: a set of mock agents
//! for an orchestrator to run — N definition files, a runnable command for each, and the graph
//! their results form through next_agents (parallel fan-out, sequential hand-off, a pipeline
//! with a data dependency), all journalling to one file that `probe orchestration` judges.
//!
//! ```text
//! OUT/agents/NAME.md     the definitions (lint clean)
//! OUT/bin/NAME           the commands: `OUT/bin/NAME --mode plan --task "…"`, or JSON on stdin
//! OUT/agents.json        the graph: each agent, its command, its next agents, its plan status
//! OUT/journal.jsonl      written by the runs
//! OUT/README.md          how to run them and judge the orchestration
//! ```

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::error::Error;
use crate::protocols::plugin::AgentSet;
use crate::text::shell_quote;

/// Names from the standard's agent categories, in the order they are given out; past them,
/// `agent-N`.
const NAMES: &[(&str, &str)] = &[
    (
        "brainstormer",
        "Refine the requirements of a task into a brief",
    ),
    ("architect", "Design the change and split it into steps"),
    (
        "security-scanner",
        "Scan the code for security vulnerabilities",
    ),
    (
        "performance-analyzer",
        "Measure and explain where the time goes",
    ),
    ("tester", "Write tests for the change"),
    (
        "reviewer",
        "Review a change for correctness, clarity and tests",
    ),
    (
        "codebase-analyzer",
        "Map the project's structure and entry points",
    ),
    (
        "dependency-auditor",
        "Audit the dependencies for health and licences",
    ),
    (
        "research-analyzer",
        "Synthesize the findings of the other agents",
    ),
    (
        "hallucination-checker",
        "Verify that named packages and APIs exist",
    ),
    (
        "honesty-evaluator",
        "Check the claims of a report against the evidence",
    ),
    (
        "test-coverage-enforcer",
        "Enforce the coverage requirements",
    ),
    (
        "laziness-destroyer",
        "Find incomplete code and placeholders",
    ),
    (
        "frontend-designer",
        "Design the user interface of a feature",
    ),
    ("ui-researcher", "Research the design conventions to follow"),
    (
        "protocol-generator",
        "Generate the protocol artifacts of a project",
    ),
];

/// Most agents in a set.
pub const MAX_COUNT: usize = 10_000;

/// One edge of the graph: `to` follows `from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub can_parallel: bool,
    pub data: Option<&'static str>,
}

/// The graph of a set of `count` agents for `seed`: agent 0 is the entry; 1 and 2 follow it in
/// parallel, 3 takes 1's findings (a pipeline), 4 follows 2 sequentially; each further agent
/// follows one of the three before it, in a way drawn from the seed.
pub fn graph(count: usize, seed: u64) -> Vec<Edge> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (1..count)
        .map(|to| {
            let (from, kind) = match to {
                1 | 2 => (0, 0),
                3 => (1, 2),
                4 => (2, 1),
                _ => (
                    rng.random_range(to.saturating_sub(3)..to),
                    rng.random_range(0..3),
                ),
            };
            Edge {
                from,
                to,
                can_parallel: kind == 0,
                data: (kind == 2).then_some("findings"),
            }
        })
        .collect()
}

/// Which agents ask for approval in plan mode: every third, from the second.
fn needs_approval(i: usize) -> bool {
    i % 3 == 1
}

fn name(i: usize) -> String {
    NAMES
        .get(i)
        .map_or_else(|| format!("agent-{i}"), |(n, _)| n.to_string())
}

fn definition(i: usize, follows: Option<&str>) -> String {
    let what = NAMES
        .get(i)
        .map_or("Review the part of the project it is given", |(_, d)| *d);
    let after = follows.map_or_else(
        || "Use it first.".to_string(),
        |p| format!("Use it after {p}."),
    );
    format!(
        "---\nname: {}\ndescription: {what}. {after}\ntools:\n  - Read\n  - Grep\n  - Glob\nmodel: inherit\nsupports_plan_mode: true\n---\n\n\
         # {}\n\nA mock agent of agent-tck: it answers as the agent protocol standard says, and \
         journals every run.\n\n## Plan mode\n\nAssess the scope and report it; change no file.\n\n\
         ## Execute mode\n\nDo the work, report the findings and the next agents.\n",
        name(i),
        name(i)
    )
}

/// Why a set was not written: its flags (usage: nothing was written), or a file of it that
/// could not be (run).
#[derive(Debug, thiserror::Error)]
pub enum AgentSetError {
    #[error("--count {count}: between 1 and {MAX_COUNT}")]
    Count { count: usize },
    #[error("--dir {}: {cause}", dir.display())]
    Dir { dir: PathBuf, cause: std::io::Error },
    #[error(
        "--dir {}: not empty (the set is written into a new or empty directory)",
        dir.display()
    )]
    NotEmpty { dir: PathBuf },
    #[error("{}: {cause}", path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl crate::error::LayerError for AgentSetError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            AgentSetError::Count { .. }
            | AgentSetError::Dir { .. }
            | AgentSetError::NotEmpty { .. } => Class::Usage,
            AgentSetError::Write { .. } => Class::Run,
        }
    }
}

/// Writes the set; what to print (the graph, and how to run it).
pub fn write(at: AgentSet<'_>) -> Result<String, Error> {
    Ok(written(at)?)
}

fn written(at: AgentSet<'_>) -> Result<String, AgentSetError> {
    if at.count == 0 || at.count > MAX_COUNT {
        return Err(AgentSetError::Count { count: at.count });
    }
    let out = std::path::absolute(at.dir).map_err(|cause| AgentSetError::Dir {
        dir: at.dir.to_path_buf(),
        cause,
    })?;
    if out.exists()
        && std::fs::read_dir(&out)
            .map_err(|cause| AgentSetError::Dir {
                dir: out.clone(),
                cause,
            })?
            .next()
            .is_some()
    {
        return Err(AgentSetError::NotEmpty { dir: out });
    }
    for sub in ["agents", "bin"] {
        std::fs::create_dir_all(out.join(sub)).map_err(|e| io(&out.join(sub), e))?;
    }
    let edges = graph(at.count, at.seed);
    let journal = out.join("journal.jsonl");
    let exe = shell_quote(&at.exe.display().to_string());
    let mut agents = Vec::new();
    let mut lines = Vec::new();
    for i in 0..at.count {
        let next: Vec<&Edge> = edges.iter().filter(|e| e.from == i).collect();
        agents.push(write_agent(&out, &at, &exe, &journal, &edges, i)?);
        if let Some(line) = graph_line(i, &name(i), &next) {
            lines.push(line);
        }
    }
    let manifest = json!({
        "entry": name(0),
        "journal": journal.display().to_string(),
        "seed": at.seed,
        "agents": agents,
    });
    let path = out.join("agents.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n",
    )
    .map_err(|e| io(&path, e))?;
    let how = format!(
        "Run each agent in plan mode, then (approved when its plan says needs_approval) in execute \
         mode, then the agents its result names next:\n\n    {bin}/{entry} --mode plan --task \"Review the project\"\n    \
         {bin}/{entry} --mode execute --task \"Review the project\" --approved\n\nThen judge the order of the runs:\n\n    \
         agent-tck probe orchestration --journal {journal} --agents {agents}\n",
        bin = out.join("bin").display(),
        entry = name(0),
        journal = journal.display(),
        agents = out.join("agents").display(),
    );
    let readme = out.join("README.md");
    std::fs::write(
        &readme,
        format!(
            "# Mock agents (agent protocol standard)\n\n{} agents, seed {}; the graph is in agents.json.\n\n```\n{}\n```\n\n{how}",
            at.count,
            at.seed,
            lines.join("\n")
        ),
    )
    .map_err(|e| io(&readme, e))?;
    Ok(format!(
        "wrote {} mock agents to {} (definitions in agents/, commands in bin/, the graph in agents.json)\n\n{}\n\n{how}",
        at.count,
        out.display(),
        lines.join("\n")
    ))
}

/// What a write of the set fails with, naming the file.
fn io(what: &Path, cause: std::io::Error) -> AgentSetError {
    AgentSetError::Write {
        path: what.to_path_buf(),
        cause,
    }
}

/// Writes agent `i`'s definition and its command; its entry in agents.json.
fn write_agent(
    out: &Path,
    at: &AgentSet<'_>,
    exe: &str,
    journal: &Path,
    edges: &[Edge],
    i: usize,
) -> Result<Value, AgentSetError> {
    let me = name(i);
    let follows = edges.iter().find(|e| e.to == i).map(|e| name(e.from));
    let def = out.join("agents").join(format!("{me}.md"));
    std::fs::write(&def, definition(i, follows.as_deref())).map_err(|e| io(&def, e))?;
    let next: Vec<&Edge> = edges.iter().filter(|e| e.from == i).collect();
    let mut flags: Vec<String> = next
        .iter()
        .map(|e| {
            let how = match (e.can_parallel, e.data) {
                (true, _) => ":parallel".to_string(),
                (false, Some(d)) => format!(":data={d}"),
                (false, None) => String::new(),
            };
            format!("--next {}", shell_quote(&format!("{}{how}", name(e.to))))
        })
        .collect();
    if needs_approval(i) {
        flags.push("--behavior needs-approval".into());
    }
    let bin = out.join("bin").join(&me);
    let script = format!(
        "#!/bin/sh\n# {me}: a mock agent of the agent protocol standard (agent-tck).\n\
         # Run: {me} --mode plan|execute --task TEXT [--approved], or give it\n\
         # {{\"execution_mode\": \"plan\", \"task\": \"…\", \"approved\": false}} on stdin.\n\
         exec {exe} mock agent --protocol agent-standard --name {me} --seed {} {} --journal {} \"$@\"\n",
        at.seed,
        flags.join(" "),
        shell_quote(&journal.display().to_string())
    );
    std::fs::write(&bin, script).map_err(|e| io(&bin, e))?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| io(&bin, e))?;
    let entry = json!({
        "name": me,
        "definition": def.display().to_string(),
        "command": bin.display().to_string(),
        "plan_status": if needs_approval(i) { "needs_approval" } else { "complete" },
        "next_agents": next.iter().map(|e| {
            let mut n = json!({"agent": name(e.to), "can_parallel": e.can_parallel});
            if let Some(d) = e.data { n["data_dependency"] = json!(d); }
            n
        }).collect::<Vec<Value>>(),
    });
    Ok(entry)
}

/// Agent `i`'s line of the printed graph (`reviewer → tester (parallel)`), when it leads
/// somewhere or is the entry.
fn graph_line(i: usize, me: &str, next: &[&Edge]) -> Option<String> {
    let arrows: Vec<String> = next
        .iter()
        .map(|e| {
            format!(
                "{}{}",
                name(e.to),
                match (e.can_parallel, e.data) {
                    (true, _) => " (parallel)",
                    (false, Some(_)) => " (pipeline: takes the findings)",
                    _ => " (sequential)",
                }
            )
        })
        .collect();
    (!arrows.is_empty() || i == 0).then(|| {
        format!(
            "  {me}{} → {}",
            if needs_approval(i) {
                " [asks approval]"
            } else {
                ""
            },
            if arrows.is_empty() {
                "(none)".to_string()
            } else {
                arrows.join(", ")
            }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_has_each_pattern_and_is_the_same_for_a_seed() {
        let g = graph(12, 7);
        assert_eq!(g, graph(12, 7));
        assert_eq!(g.len(), 11);
        assert!(g.iter().all(|e| e.from < e.to), "a DAG from the entry");
        assert!(g.iter().any(|e| e.can_parallel));
        assert!(g.iter().any(|e| !e.can_parallel && e.data.is_none()));
        assert!(g.iter().any(|e| e.data.is_some()));
        assert_eq!(graph(1, 7), Vec::new());
    }
}
