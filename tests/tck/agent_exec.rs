//! `probe agent-standard --exec`: the agent command run per mode (placeholders and JSON on
//! stdin), a plan run that writes caught by name, hostile agents bounded; `mock agents` and
//! `probe orchestration`: a careful orchestrator over a generated set passes, a careless one
//! fails exactly what it skipped.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use agent_tck::protocols::agent_standard::result::last_object;
use serde_json::Value;

use crate::support::{run_within, tck, text, TempDir, EXE, RUN_DEADLINE};

/// The mock agent as a command: `extra` flags after the common ones.
fn mock(extra: &str) -> String {
    format!(
        "'{EXE}' mock agent --protocol agent-standard --name security-scanner --next reviewer --seed 9 {extra}"
    )
}

fn failed_ids(report: &Value) -> Vec<String> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

fn project(dir: &TempDir) -> String {
    let tree = dir.path("project");
    std::fs::create_dir_all(format!("{tree}/src")).unwrap();
    std::fs::write(format!("{tree}/src/main.rs"), "fn main() {}\n").unwrap();
    tree
}

#[test]
fn the_probe_runs_an_agent_in_both_modes_by_placeholders_and_by_stdin() {
    let dir = TempDir::new("agent-exec-modes");
    let tree = project(&dir);
    for command in [
        mock("--mode {mode} --task {task}"),
        mock(""),
        mock("--behavior fenced-json --behavior needs-approval"),
    ] {
        let json = dir.path("report.json");
        let out = tck(&[
            "probe",
            "agent-standard",
            "--exec",
            &command,
            "--agents",
            "suites/agent-standard/agents",
            "--agent",
            "security-scanner",
            "--workdir",
            &tree,
            "--json",
            &json,
        ]);
        assert_eq!(out.status.code(), Some(0), "{command}\n{}", text(&out));
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(failed_ids(&report), Vec::<String>::new());
        let passed: Vec<&str> = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "pass")
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        for id in [
            "plan.ran",
            "plan.plan-scope",
            "plan.no-writes",
            "execute.ran",
            "execute.execute-findings",
            "execute.metrics",
            "execute.next-agents",
            "execute.agent-name",
        ] {
            assert!(passed.contains(&id), "{id} in {passed:?}");
        }
        // What the agent got, and how to run it again, are in the report.
        let ran = &report["cases"][0];
        assert!(ran["exchange"]["request"]
            .as_str()
            .unwrap()
            .contains("\"execution_mode\":\"plan\""));
        assert!(ran["exchange"]["reproduce"]
            .as_str()
            .unwrap()
            .contains("printf"));
        assert_eq!(
            agent_tck::schema::schemas().validate("report", &report),
            vec![]
        );
    }
}

#[test]
fn a_plan_run_that_writes_fails_naming_the_file_and_the_tree_given_is_untouched() {
    let dir = TempDir::new("agent-exec-writes");
    let tree = project(&dir);
    let out = tck(&[
        "probe",
        "agent-standard",
        "--exec",
        &mock("--behavior writes-in-plan-mode"),
        "--workdir",
        &tree,
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("FAIL must   plan.no-writes"), "{shown}");
    assert!(
        shown.contains("the plan run changed the working directory: added agent-tck-plan-notes.md"),
        "{shown}"
    );
    let entries: Vec<_> = std::fs::read_dir(&tree)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        entries,
        ["src"],
        "the user's tree is never handed to the agent"
    );
    // Without --workdir the case says how to have it judged.
    let out = tck(&[
        "probe",
        "agent-standard",
        "--exec",
        &mock(""),
        "--only",
        "plan.no-writes",
    ]);
    let shown = text(&out);
    assert!(shown.contains("SKIP must   plan.no-writes"), "{shown}");
    assert!(
        shown.contains("no --workdir: give one (a project directory; the run works in a scratch copy) to check that a plan run writes nothing"),
        "{shown}"
    );
    // Its only MUST case skipped: the run judged nothing, and is not green.
    assert!(
        shown.contains("· nothing judged: the one MUST case skipped"),
        "{shown}"
    );
    assert_eq!(out.status.code(), Some(1), "{shown}");
}

#[test]
fn hostile_agents_are_bounded_by_the_deadline_and_the_cap() {
    let _heavy = crate::support::heavy_blocking();
    let dir = TempDir::new("agent-exec-hostile");
    // (behaviour, the cases that fail in plan mode, a word of the message)
    let rows = [
        ("hang", vec!["plan.ran"], "no complete answer within 2s"),
        ("endless", vec!["plan.ran"], "longer than 5000000 bytes"),
        ("huge-output", vec!["plan.ran"], "longer than 5000000 bytes"),
        ("deep-nesting", vec!["plan.json-last"], "recursion limit"),
        ("no-json", vec!["plan.json-last"], "no JSON object"),
        ("forks-and-exits", vec![], "ended"),
    ];
    for (behavior, fails, word) in rows {
        // The hang waits out its deadline; the others have one no busy machine reaches.
        let timeout = if behavior == "hang" { "2s" } else { "30s" };
        let json = dir.path("report.json");
        let started = Instant::now();
        let out = tck(&[
            "probe",
            "agent-standard",
            "--exec",
            &mock(&format!("--behavior {behavior}")),
            "--mode",
            "plan",
            "--timeout",
            timeout,
            "--json",
            &json,
        ]);
        // Bounded: the deadline, the group's end, a process start; never the hour a hang
        // sleeps, nor the 30 s the forked child lives.
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "{behavior}: {:?}",
            started.elapsed()
        );
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(failed_ids(&report), fails, "{behavior}: {}", text(&out));
        let messages: String = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["message"].as_str().unwrap_or(""))
            .collect();
        assert!(messages.contains(word), "{behavior}: {messages}");
    }
}

#[test]
fn usage_errors_name_the_flag() {
    let out = tck(&[
        "probe",
        "agent-standard",
        "--output",
        "x.txt",
        "--mode",
        "both",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--mode both"), "{}", text(&out));
    let out = tck(&["probe", "agent-standard", "--exec", "agent {agent}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--agent NAME"), "{}", text(&out));
    let out = tck(&[
        "probe",
        "agent-standard",
        "--exec",
        "agent",
        "--workdir",
        "/no/such/dir",
    ]);
    assert!(
        text(&out).contains("--workdir /no/such/dir: not a directory"),
        "{}",
        text(&out)
    );
    let out = tck(&[
        "mock",
        "agent",
        "--protocol",
        "roundtable",
        "--mode",
        "plan",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("--mode: for agents run as a command"),
        "{}",
        text(&out)
    );
}

/// An agent of a set: its name, its command, the agents it names next (with can_parallel).
type SetAgent = (String, String, Vec<(String, bool)>);

/// The set's graph, as agents.json has it.
pub(crate) struct Set {
    pub(crate) entry: String,
    agents: Vec<SetAgent>,
    journal: String,
}

pub(crate) fn read_set(dir: &str) -> Set {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(format!("{dir}/agents.json")).unwrap()).unwrap();
    Set {
        entry: manifest["entry"].as_str().unwrap().into(),
        journal: manifest["journal"].as_str().unwrap().into(),
        agents: manifest["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["name"].as_str().unwrap().into(),
                    a["command"].as_str().unwrap().into(),
                    a["next_agents"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|n| {
                            (
                                n["agent"].as_str().unwrap().into(),
                                n["can_parallel"].as_bool().unwrap(),
                            )
                        })
                        .collect(),
                )
            })
            .collect(),
    }
}

impl Set {
    fn command(&self, agent: &str) -> &str {
        &self.agents.iter().find(|a| a.0 == agent).unwrap().1
    }

    /// Runs `agent` in `mode` as an orchestrator would, giving its result.
    fn run(&self, agent: &str, mode: &str, extra: &[&str]) -> Value {
        let mut command = Command::new(self.command(agent));
        command
            .args(["--mode", mode, "--task", "Review the project"])
            .args(extra);
        let out = run_within(command, RUN_DEADLINE);
        assert!(out.status.success(), "{agent}: {}", text(&out));
        last_object(&String::from_utf8_lossy(&out.stdout)).unwrap()
    }

    /// The careful way: plan, approve when asked, execute; then the agents named next — those
    /// that may run in parallel side by side, then the others one after another.
    pub(crate) fn orchestrate(&self, agent: &str) {
        let plan = self.run(agent, "plan", &[]);
        let approval: &[&str] = if plan["status"] == "needs_approval" {
            &["--approved"]
        } else {
            &[]
        };
        let result = self.run(agent, "execute", approval);
        let next: Vec<(String, bool)> = result["next_agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["agent"].as_str().unwrap().to_string(),
                    n["can_parallel"] == true,
                )
            })
            .collect();
        std::thread::scope(|s| {
            for (n, _) in next.iter().filter(|n| n.1) {
                s.spawn(move || self.orchestrate(n));
            }
        });
        for (n, _) in next.iter().filter(|n| !n.1) {
            self.orchestrate(n);
        }
    }
}

fn judge(set: &Set, agents: &str) -> (Output, Value) {
    let json = format!("{}.report.json", set.journal);
    let out = tck(&[
        "probe",
        "orchestration",
        "--journal",
        &set.journal,
        "--agents",
        agents,
        "--json",
        &json,
    ]);
    let report = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (out, report)
}

#[test]
fn an_orchestrator_over_a_generated_set_is_judged_from_the_journal() {
    let dir = TempDir::new("agent-set");
    let careful = dir.path("careful");
    let out = tck(&[
        "mock", "agents", "--dir", &careful, "--count", "7", "--seed", "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("(parallel)") && text(&out).contains("(pipeline"));
    // The definitions lint clean, warnings included.
    let lint = tck(&["lint", "agents", &format!("{careful}/agents"), "--strict"]);
    assert_eq!(lint.status.code(), Some(0), "{}", text(&lint));
    // A lint has no seed: its report names none, and is titled by its command.
    let lint = tck(&[
        "lint",
        "agents",
        &format!("{careful}/agents"),
        "--format",
        "json",
    ]);
    let linted: Value = serde_json::from_slice(&lint.stdout).unwrap();
    assert_eq!(linted.get("seed"), None, "{linted}");
    assert_eq!(linted["command"], "lint agents");
    let lint = tck(&[
        "lint",
        "agents",
        &format!("{careful}/agents"),
        "--format",
        "junit",
    ]);
    assert!(!text(&lint).contains("name=\"seed\""), "{}", text(&lint));
    // A second set is refused where the first one is.
    let again = tck(&["mock", "agents", "--dir", &careful]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again).contains("not empty"));

    let set = read_set(&careful);
    set.orchestrate(&set.entry);
    let (out, report) = judge(&set, &format!("{careful}/agents"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Titled by the command that made it, not by the protocol's probe.
    assert_eq!(report["command"], "probe orchestration");
    assert_eq!(report.get("seed"), None, "a journal read back has no seed");
    assert!(
        text(&out).contains(" · probe orchestration · "),
        "{}",
        text(&out)
    );
    assert_eq!(failed_ids(&report), Vec::<String>::new());
    let runs = std::fs::read_to_string(&set.journal)
        .unwrap()
        .lines()
        .count();
    assert_eq!(
        runs,
        7 * 2 * 2,
        "a start and an end line per run, two runs per agent"
    );

    // Careless: every plan, then every agent executed at once (each taking 3 s, so that they
    // overlap however slowly the machine starts them), no approval passed on.
    let careless = dir.path("careless");
    let out = tck(&[
        "mock", "agents", "--dir", &careless, "--count", "7", "--seed", "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let set = read_set(&careless);
    for (name, _, _) in &set.agents {
        set.run(name, "plan", &[]);
    }
    std::thread::scope(|s| {
        for (name, _, _) in &set.agents {
            let set = &set;
            s.spawn(move || set.run(name, "execute", &["--behavior", "slow:3s"]));
        }
    });
    let (out, report) = judge(&set, &format!("{careless}/agents"));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        failed_ids(&report),
        [
            "orchestration.approval-before-execute",
            "orchestration.sequential-handoff"
        ]
    );
    let shown = text(&out);
    assert!(shown.contains("without approval"), "{shown}");
    assert!(shown.contains("can_parallel: false"), "{shown}");
}

// Issue #31 points 5 and 6: a sign-off and findings without summary from a running agent; the
// probe's runs of the kit's own mock agents stay out of their journal.

#[test]
fn a_running_agents_sign_off_and_summaryless_findings_are_named() {
    let dir = TempDir::new("agent-exec-sign-off");
    let probe = |behavior: &str| {
        let json = dir.path("report.json");
        let out = tck(&[
            "probe",
            "agent-standard",
            "--exec",
            &mock(&format!("--behavior {behavior}")),
            "--agent",
            "security-scanner",
            "--json",
            &json,
        ]);
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        (out, report)
    };
    let (out, report) = probe("fenced-sign-off");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(failed_ids(&report), ["plan.json-last", "execute.json-last"]);
    let message = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "execute.json-last")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.ends_with("(a sign-off line after the fenced result: the standard wants the result last, though the consumers of its home repository, z3r0-c001/Claude_Protocol, accept this)"),
        "{message}"
    );
    let (out, report) = probe("findings-without-summary");
    // A SHOULD: the run passes, the cases fail.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        failed_ids(&report),
        ["plan.findings-summary", "execute.findings-summary"]
    );
    let (_, report) = probe("conforming");
    assert_eq!(failed_ids(&report), Vec::<String>::new());
}

#[test]
fn probing_the_kits_own_mock_agents_leaves_their_journal_alone() {
    let dir = TempDir::new("agent-exec-journal");
    let set = dir.path("set");
    let out = tck(&[
        "mock", "agents", "--dir", &set, "--count", "2", "--seed", "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let set = read_set(&set);
    let (name, command, _) = &set.agents[0];
    let json = dir.path("report.json");
    let out = tck(&[
        "probe",
        "agent-standard",
        "--exec",
        command,
        "--agent",
        name,
        "--json",
        &json,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(failed_ids(&report), Vec::<String>::new());
    let journal = std::fs::read_to_string(&set.journal).unwrap_or_default();
    assert_eq!(journal, "", "the probe's runs are not the orchestrator's");
    // An orchestrator's run, as before, is journalled.
    set.run(name, "plan", &[]);
    let journal = std::fs::read_to_string(&set.journal).unwrap();
    assert_eq!(journal.lines().count(), 2, "{journal}");
}

/// The kit names itself: `agent-tck` as the program of `--exec` is the kit's own executable,
/// with no `agent-tck` on PATH (a clone's `cargo run -- probe …`). An agent that could not
/// start (it exits failing before a byte on stdout: a mistyped script path) fails `plan.ran`
/// once, saying so with its stderr; the execute run, which would end the same way, is skipped
/// naming it. One that starts and fails later is judged mode by mode.
#[test]
fn the_kit_names_itself_and_an_agent_that_cannot_start_is_said_once() {
    let dir = TempDir::new("agent-exec-self");
    let probe = |command: &str, path: &str| {
        let json = dir.path("report.json");
        let mut run = crate::support::tck_command(&[
            "probe",
            "agent-standard",
            "--exec",
            command,
            "--agents",
            "suites/agent-standard/agents",
            "--agent",
            "security-scanner",
            "--json",
            &json,
        ]);
        run.env("PATH", path);
        let out = run_within(run, RUN_DEADLINE);
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
            .unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out, report)
    };
    // No agent-tck on this PATH: only the system's programs.
    let system = "/usr/bin:/bin";
    let (out, report) = probe(
        "agent-tck mock agent --protocol agent-standard --name security-scanner --mode {mode} --task {task}",
        system,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(failed_ids(&report), Vec::<String>::new());

    let (out, report) = probe(
        "sh -c 'echo \"sh: 0: cannot open agnt.py: No such file\" >&2; exit 2'",
        system,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(failed_ids(&report), ["plan.ran"]);
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(
        cases[0]["message"],
        "the agent could not start: the agent exited (status 2, with 0 bytes on stdout); \
         stderr: sh: 0: cannot open agnt.py: No such file"
    );
    let execute: Vec<&Value> = cases
        .iter()
        .filter(|c| c["id"].as_str().unwrap().starts_with("execute."))
        .collect();
    assert!(!execute.is_empty());
    for c in execute {
        assert_eq!(c["status"], "skip", "{c}");
        assert_eq!(
            c["message"],
            "skipped: the agent could not start (see plan.ran): its execute-mode run would end the \
             same way (an agent that starts exercises this)"
        );
    }

    // Prints something, then fails: it started; each mode is judged on its own.
    let (_, report) = probe("sh -c 'echo partial; exit 2'", system);
    assert_eq!(failed_ids(&report), ["plan.ran", "execute.ran"]);
}
