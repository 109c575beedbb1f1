//! The README's "Pick your protocol" table: a row per registered protocol, a command in each
//! role's cell, and every command in it one the command line accepts (so that the table cannot
//! drift from the flags).

use agent_tck::cli::Cli;
use agent_tck::protocols::REGISTRY;
use agent_tck::transport::stdio::split_command;
use clap::Parser;

const README: &str = include_str!("../../README.md");

/// The roles, in the table's column order.
const ROLES: [&str; 3] = [
    "certify my agent",
    "stress my platform",
    "try it with no agent of my own",
];

/// The table's rows, each as (protocol, its three role cells).
fn rows() -> Vec<(String, Vec<String>)> {
    let section = README
        .split("\n## Pick your protocol\n")
        .nth(1)
        .expect("a \"Pick your protocol\" section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut lines = section.lines().filter(|l| l.starts_with('|'));
    let header: Vec<&str> = cells(lines.next().expect("a header row"));
    assert_eq!(header, [&["protocol"][..], &ROLES].concat(), "the columns");
    lines
        .skip(1) // |---|---|
        .map(|line| {
            let cells = cells(line);
            assert_eq!(cells.len(), 4, "four cells: {line}");
            // `[name](#anchor)` or a bare name.
            let protocol = cells[0]
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap()
                .to_string();
            (protocol, cells[1..].iter().map(|c| c.to_string()).collect())
        })
        .collect()
}

fn cells(line: &str) -> Vec<&str> {
    line.trim()
        .trim_matches('|')
        .split(" | ")
        .map(str::trim)
        .collect()
}

/// The `agent-tck …` commands of a cell (the code spans that begin with the binary's name, after
/// any `NAME=value` environment assignments).
fn commands(cell: &str) -> Vec<&str> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| without_env(span).starts_with("agent-tck "))
        .collect()
}

/// A command without its leading `NAME=value` environment assignments.
fn without_env(command: &str) -> &str {
    let mut rest = command;
    while let Some((word, tail)) = rest.split_once(' ') {
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
        });
        if !is_assignment {
            break;
        }
        rest = tail;
    }
    rest
}

/// Parses `command` as the shell would split it; an agent-tck command given to `--exec` or
/// `--stdio` is parsed too, its `{mode}` and `{task}` filled in as the probe fills them.
fn parse(command: &str) -> Result<(), String> {
    let words = split_command(without_env(command)).map_err(|e| e.to_string())?;
    Cli::try_parse_from(&words).map_err(|e| e.to_string())?;
    for pair in words.windows(2) {
        if matches!(pair[0].as_str(), "--exec" | "--stdio") && pair[1].starts_with("agent-tck ") {
            let inner = pair[1]
                .replace("{mode}", "plan")
                .replace("{task}", "Review");
            parse(&inner).map_err(|e| format!("{}: {e}", pair[0]))?;
        }
    }
    Ok(())
}

#[test]
fn the_readme_table_has_a_row_per_protocol_and_a_command_per_role() {
    let rows = rows();
    let protocols: Vec<&str> = rows.iter().map(|(p, _)| p.as_str()).collect();
    let registered: Vec<&str> = REGISTRY.iter().map(|p| p.name()).collect();
    assert_eq!(protocols, registered);
    for (protocol, cells) in &rows {
        for (role, cell) in ROLES.iter().zip(cells) {
            assert!(
                !commands(cell).is_empty(),
                "{protocol}, {role}: no agent-tck command in {cell:?}"
            );
        }
        // The try-it cell starts a peer the kit serves or names, then a probe of the protocol.
        assert!(
            commands(&cells[2])
                .iter()
                .any(|c| c.starts_with(&format!("agent-tck probe {protocol} "))
                    || c.starts_with("agent-tck lint ")),
            "{protocol}: the try-it cell probes nothing: {}",
            cells[2]
        );
    }
}

#[test]
fn every_command_of_the_readme_table_parses() {
    let mut seen = 0;
    for (protocol, cells) in rows() {
        for (role, cell) in ROLES.iter().zip(&cells) {
            for command in commands(cell) {
                parse(command).unwrap_or_else(|e| panic!("{protocol}, {role}: {command}\n{e}"));
                seen += 1;
            }
        }
    }
    // 5 protocols × 3 roles, some cells with two commands.
    assert!(seen >= 20, "only {seen} commands found");
}

/// The parser above fails on what the command line refuses (else the test above proves nothing).
#[test]
fn a_command_the_cli_refuses_fails_the_table_test() {
    assert!(parse("agent-tck probe roundtable --url http://127.0.0.1:3001").is_ok());
    assert!(parse("agent-tck probe roundtable --ulr http://127.0.0.1:3001").is_err());
    assert!(parse("agent-tck probe rountable --url http://127.0.0.1:3001").is_err());
    let nested = "agent-tck probe agent-standard --exec \"agent-tck mock agent --protocol \
                  agent-standard --mode {mode} --nmae x\" --agent x";
    assert!(parse(nested).unwrap_err().starts_with("--exec: "));
}

/// The lint example points at the kit's own definitions, which exist and lint as the README
/// shows.
#[test]
fn the_readme_lint_example_lints_a_folder_that_exists() {
    let folder = "suites/agent-standard/agents";
    assert!(README.contains(&format!("    agent-tck lint agents {folder} ")));
    let out = crate::support::tck_within(
        &[
            "lint",
            "agents",
            &format!("{}/{folder}", env!("CARGO_MANIFEST_DIR")),
        ],
        crate::support::RUN_DEADLINE,
    );
    let printed = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    let last = printed.trim_end().lines().last().unwrap_or_default();
    assert_eq!(last, "3 files: 0 errors, 0 warnings");
    assert!(README.contains(&format!("```\n{last}\n```\n")));
}

/// The README's registry file is the reference Librarian's (`mocks/librarian-agents.yaml`), and
/// one the mock Librarian accepts (a token per agent).
#[test]
fn the_readme_registry_is_the_reference_one() {
    let shown = README
        .split("```yaml\nagents:\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .map(|s| format!("agents:\n{s}"))
        .expect("the README's registry file");
    let reference = include_str!("../../mocks/librarian-agents.yaml");
    let value = |text: &str| -> serde_json::Value { serde_saphyr::from_str(text).unwrap() };
    assert_eq!(value(&shown), value(reference));
    let agents =
        agent_tck::protocols::librarian::registry::parse_registry("README.md", &shown, true)
            .unwrap();
    assert_eq!(agents.len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Every command of the table, and of the README's try-it blocks, run as written: by `sh -c`,
// in a clone, with the binary under test as `agent-tck` first on PATH. The one rewrite: fixed
// ports become OS-picked ones — a server's `--port N` is run as `--port 0` (the chaos preset's
// fixed 9000 too, by `--port 0`; the connector fleet's 9400 by FLEET_LISTEN=127.0.0.1:0), and
// `127.0.0.1:N` in the command paired with it becomes the port the server printed. "My agent"
// and "my platform" are the kit's own reference peers on that port; a command that needs a
// real platform the kit has no reference for (the connector fleet's agent server) is run, its
// serving seen, and stopped with Ctrl-C.

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::Duration;

use crate::support::{text, Spawned, TempDir, EXE};

/// The deadline of one command, and of a server from its start to its stop. The longest is the
/// Quick start's `selftest` in a debug build: 81–83 s measured with the load average at 3.5 on
/// two cores, and over 150 s once under the whole suite beside two other builds.
pub(crate) const DEADLINE: Duration = Duration::from_secs(300);

/// How long a server may take to end after Ctrl-C (it writes its report first).
const STOP_GRACE: Duration = Duration::from_secs(30);

/// A clone of the repository: a scratch directory whose entries are links to the checkout's
/// (but `target/` and `.git`), so that the commands read the clone's files and what they write
/// (`chaos.jsonl`, `mock-agents/`) stays out of the checkout; and `.bin/agent-tck`, a link to
/// the binary under test, first on PATH.
pub(crate) struct Clone {
    dir: TempDir,
    bin: String,
}

impl Clone {
    pub(crate) fn new(name: &str) -> Clone {
        let dir = TempDir::new(name);
        for entry in std::fs::read_dir(env!("CARGO_MANIFEST_DIR")).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), dir.path(&name.to_string_lossy())).unwrap();
        }
        let bin = dir.path(".bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(EXE, format!("{bin}/agent-tck")).unwrap();
        Clone { dir, bin }
    }

    pub(crate) fn path(&self, file: &str) -> String {
        self.dir.path(file)
    }

    /// `command` as a user types it: run by `sh -c` in the clone.
    pub(crate) fn shell(&self, command: &str) -> Command {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .current_dir(&self.dir.0)
            .env("PATH", format!("{}:{path}", self.bin))
            .env("NO_COLOR", "1");
        shell
    }

    /// Runs `command` to its end (within the deadline).
    fn run(&self, command: &str) -> Output {
        crate::support::run_within(self.shell(command), DEADLINE)
    }

    /// Runs a probe or a lint: it must exit 0, its MUST cases (or lint errors) none failed.
    fn passes(&self, command: &str) -> String {
        let out = self.run(command);
        let printed = text(&out);
        assert_eq!(out.status.code(), Some(0), "{command}\n{printed}");
        assert!(
            printed.contains("0 MUST failed") || printed.contains(": 0 errors"),
            "{command}\n{printed}"
        );
        printed
    }

    /// Starts a server (the shell `exec`s it, so that Ctrl-C reaches it) and awaits the line
    /// that gives its address (never a fixed sleep).
    fn serve(&self, command: &str) -> Server {
        let program = without_env(command);
        let env = &command[..command.len() - program.len()];
        let mut process = Spawned::start(self.shell(&format!("{env}exec {program}")), DEADLINE);
        let port = loop {
            if let Some(port) = port_in(&process.line()) {
                break port;
            }
        };
        Server {
            process,
            port,
            command: command.to_string(),
        }
    }
}

/// A server started from a README command.
struct Server {
    process: Spawned,
    port: u16,
    command: String,
}

impl Server {
    /// `command` with the fixed `127.0.0.1:fixed` turned into this server's address.
    fn at(&self, command: &str, fixed: u16) -> String {
        let (from, to) = (
            format!("127.0.0.1:{fixed}"),
            format!("127.0.0.1:{}", self.port),
        );
        assert!(command.contains(&from), "{command}: no {from}");
        command.replace(&from, &to)
    }

    /// Ctrl-C: it must end by itself with `status`, saying so (`said`).
    fn stop(self, status: i32, said: &str) {
        let out = self.process.interrupt(STOP_GRACE);
        let printed = text(&out);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{}\n{printed}",
            self.command
        );
        assert!(
            printed.contains(said),
            "{}: no {said:?}\n{printed}",
            self.command
        );
    }
}

/// The port of the first `http://127.0.0.1:PORT` in `line`.
fn port_in(line: &str) -> Option<u16> {
    let (_, after) = line.split_once("http://127.0.0.1:")?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A server command with its fixed `--port N` made `--port 0` (the OS picks).
fn any_port(command: &str) -> String {
    let (head, tail) = command.split_once("--port ").expect("a --port");
    let rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
    format!("{head}--port 0{rest}")
}

/// The commands of one protocol's row, each to be run: taken by its start, and at the end none
/// left untaken.
struct Row {
    protocol: &'static str,
    all: Vec<String>,
    left: BTreeSet<String>,
}

impl Row {
    fn of(protocol: &'static str) -> Row {
        let cells = rows()
            .into_iter()
            .find(|(p, _)| p == protocol)
            .unwrap_or_else(|| panic!("no row {protocol}"))
            .1;
        // A command in two cells (certify and try it) is one command.
        let mut all: Vec<String> = Vec::new();
        for command in cells.iter().flat_map(|c| commands(c)) {
            if !all.iter().any(|c| c == command) {
                all.push(command.to_string());
            }
        }
        let left = all.iter().cloned().collect();
        Row {
            protocol,
            all,
            left,
        }
    }

    /// The row's one command that starts with `start` (after its environment assignments).
    fn take(&mut self, start: &str) -> String {
        let found: Vec<&String> = self
            .all
            .iter()
            .filter(|c| without_env(c).starts_with(start))
            .collect();
        assert_eq!(found.len(), 1, "{}: {start}: {found:?}", self.protocol);
        self.left.remove(found[0]);
        found[0].clone()
    }

    /// The row's command that is `command`, exactly.
    fn take_exact(&mut self, command: &str) -> String {
        assert!(self.all.iter().any(|c| c == command), "{command}");
        self.left.remove(command);
        command.to_string()
    }

    fn all_run(self) {
        assert!(
            self.left.is_empty(),
            "{}: commands of the README's row no test runs: {:?}",
            self.protocol,
            self.left
        );
    }
}

/// The indented command block that follows the README's paragraph beginning `paragraph`: its
/// commands, a `\\`-continued one as one (kept as written: the shell joins it).
pub(crate) fn block_after(paragraph: &str) -> Vec<String> {
    let after = README
        .split_once(paragraph)
        .unwrap_or_else(|| panic!("no paragraph {paragraph:?}"))
        .1;
    let mut commands: Vec<String> = Vec::new();
    let mut continued = false;
    for line in after
        .lines()
        .skip_while(|l| !l.starts_with("    "))
        .take_while(|l| l.starts_with("    "))
    {
        let line = line.trim_start();
        match commands.last_mut() {
            Some(last) if continued => {
                last.push('\n');
                last.push_str(line);
            }
            _ => commands.push(line.to_string()),
        }
        continued = line.ends_with('\\');
    }
    assert!(!commands.is_empty(), "no commands after {paragraph:?}");
    commands
}

/// Python 3 on PATH, for the commands that run a Python agent; None (said) without it.
fn python3() -> bool {
    let found = crate::support::python().is_some();
    if !found {
        eprintln!("python3 not found: the README's Python commands are not run");
    }
    found
}

#[test]
fn the_roundtable_commands_of_the_readme_run_as_written() {
    let clone = Clone::new("readme-roundtable");
    let mut row = Row::of("roundtable");
    let probe = row.take("agent-tck probe roundtable --url ");
    let server = clone.serve(&any_port(&row.take("agent-tck mock agent --port 3001")));
    clone.passes(&server.at(&probe, 3001));
    server.stop(0, "platform.");
    // The try-it block, with its API key.
    let block = block_after("To try it without an agent of your own, start the reference agent");
    assert_eq!(block.len(), 2, "{block:?}");
    let server = clone.serve(&any_port(&block[0]));
    clone.passes(&server.at(&block[1], 3001));
    server.stop(0, "platform.");
    // Stress my platform: the chaos fleet serves its agents, and its journal is written.
    let fleet = row.take("agent-tck mock fleet --preset chaos");
    let server = clone.serve(&format!("{fleet} --port 0"));
    server.stop(1, "no request reached the fleet");
    assert!(std::path::Path::new(&clone.path("chaos.jsonl")).exists());
    row.all_run();
}

#[test]
fn the_execute_task_commands_of_the_readme_run_as_written() {
    let clone = Clone::new("readme-execute-task");
    let mut row = Row::of("execute-task");
    let server = clone.serve(&any_port(
        &row.take("agent-tck mock agent --protocol execute-task --port 5002"),
    ));
    clone.passes(&server.at(&row.take("agent-tck probe execute-task --url "), 5002));
    server.stop(0, "harness.");
    let mine = row.take("agent-tck probe execute-task --stdio \"python3 my_agent.py\"");
    let ten_lines = row.take("agent-tck probe execute-task --stdio \"python3 examples/");
    // The Ten-line agents section shows the same command.
    assert!(README.contains(&format!("\n    {ten_lines}\n")));
    if python3() {
        // My agent: the kit's own ten-line agent, as my_agent.py.
        std::fs::copy(
            clone.path("examples/minimal-agents/execute_task.py"),
            clone.path("my_agent.py"),
        )
        .unwrap();
        clone.passes(&mine);
        clone.passes(&ten_lines);
    }
    row.all_run();
}

#[test]
fn the_librarian_commands_of_the_readme_run_as_written() {
    let clone = Clone::new("readme-librarian");
    let mut row = Row::of("librarian");
    // An agent client's Librarian: it serves, and judges the client it saw (none) on Ctrl-C.
    let server = clone.serve(&any_port(&row.take("agent-tck mock librarian --port 8000")));
    server.stop(1, "no request reached the mock Librarian");
    // Each probe and the fleet on a Librarian of its own: a probe's burst spends the rate limit.
    let reference = any_port(&row.take("agent-tck mock agent --protocol librarian --port 8000"));
    let certify = "agent-tck probe librarian --url http://127.0.0.1:8000 --token \
                   claude-3=tck-token-claude-3 --token gemini-pro=tck-token-gemini-pro \
                   --registry mocks/librarian-agents.yaml";
    let probes = [
        row.take_exact(certify),
        row.take_exact(&format!("{certify} --allow-deviations false")),
    ];
    let block = block_after("To try it without a Librarian of your own, serve the reference");
    assert_eq!(block.len(), 2, "{block:?}");
    assert_eq!(any_port(&block[0]), reference);
    for probe in probes.iter().chain([&block[1]]) {
        let server = clone.serve(&reference);
        clone.passes(&server.at(probe, 8000));
        server.stop(0, "client.");
    }
    let fleet = row.take("agent-tck mock fleet --preset librarian-chaos");
    let server = clone.serve(&reference);
    let out = clone.run(&server.at(&fleet, 8000));
    let printed = text(&out);
    assert_eq!(out.status.code(), Some(0), "{fleet}\n{printed}");
    assert!(printed.contains("0 MUST failed"), "{printed}");
    // The reference judges its clients too: the chaos fleet's floods and broken bodies fail.
    server.stop(1, "FAIL must   client.rate");
    row.all_run();
}

#[test]
fn the_connector_commands_of_the_readme_run_as_written() {
    let clone = Clone::new("readme-connector");
    let mut row = Row::of("connector");
    let probe = row.take("agent-tck probe connector --input-url ");
    let server = clone.serve(&any_port(
        &row.take("agent-tck mock agent --protocol connector --port 7000"),
    ));
    clone.passes(&server.at(&probe, 7000));
    server.stop(130, "interrupted");
    let block = block_after("To try it without an agent of your own, serve the reference external");
    assert_eq!(
        block,
        [
            any_port(&block[0]).replace("--port 0", "--port 7000"),
            probe.clone()
        ]
    );
    // The ten-line agent (not an agent-tck command: not in the row's list), probed the same way.
    let ten_lines = "python3 examples/minimal-agents/connector.py 7000";
    assert!(README.contains(&format!("`{ten_lines}`")));
    if python3() {
        let server = clone.serve(&ten_lines.replace(" 7000", " 0"));
        clone.passes(&server.at(&probe, 7000));
        drop(server.process); // A Python server: Ctrl-C is no part of its contract.
    }
    // Stress my platform: the fleet needs an agent server the kit has none of. It serves its
    // inputUrls, waits for the server, and ends on Ctrl-C.
    let fleet = row.take("agent-tck mock fleet --config mocks/connector-fleet.yaml");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let fleet = fleet.replace("127.0.0.1:3000", &format!("127.0.0.1:{closed}"));
    let mut server = clone.serve(&format!("FLEET_LISTEN=127.0.0.1:0 {fleet}"));
    while !server.process.line().starts_with("waiting up to") {}
    server.stop(130, "interrupted (Ctrl-C) before the fleet's verdict");
    row.all_run();
}

#[test]
fn the_agent_standard_commands_of_the_readme_run_as_written() {
    let clone = Clone::new("readme-agent-standard");
    let mut row = Row::of("agent-standard");
    // Try it: the kit's definitions, and its mock agent named by `agent-tck` inside --exec.
    clone.passes(&row.take("agent-tck lint agents suites/agent-standard/agents"));
    clone.passes(&row.take("agent-tck probe agent-standard --exec \"agent-tck mock agent"));
    // Certify my agent: .claude/agents holds the kit's definitions and my-agent (the
    // security scanner's, renamed); agent.py runs the kit's mock agent as my-agent.
    std::fs::create_dir_all(clone.path(".claude/agents")).unwrap();
    for name in ["architect", "reviewer", "security-scanner"] {
        std::fs::copy(
            clone.path(&format!("suites/agent-standard/agents/{name}.md")),
            clone.path(&format!(".claude/agents/{name}.md")),
        )
        .unwrap();
    }
    let scanner =
        std::fs::read_to_string(clone.path("suites/agent-standard/agents/security-scanner.md"))
            .unwrap();
    std::fs::write(
        clone.path(".claude/agents/my-agent.md"),
        scanner.replace("name: security-scanner", "name: my-agent"),
    )
    .unwrap();
    clone.passes(&row.take("agent-tck lint agents .claude/agents"));
    let mine = row.take("agent-tck probe agent-standard --exec \"python3 agent.py");
    if python3() {
        std::fs::write(
            clone.path("agent.py"),
            "import os, sys\nos.execvp(\"agent-tck\", [\"agent-tck\", \"mock\", \"agent\", \
             \"--protocol\", \"agent-standard\", \"--name\", \"my-agent\"] + sys.argv[1:])\n",
        )
        .unwrap();
        clone.passes(&mine);
    }
    // An orchestrator: the set written, run over as an orchestrator would, then judged.
    let out = clone.run(&row.take("agent-tck mock agents --protocol agent-standard --dir"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let set = crate::agent_exec::read_set(&clone.path("mock-agents"));
    set.orchestrate(&set.entry);
    clone.passes(&row.take("agent-tck probe orchestration --journal ./mock-agents/journal.jsonl"));
    row.all_run();
}

/// The README's connector fleet file is the one shipped (`mocks/connector-fleet.yaml`), which
/// the connector row's "stress my platform" command runs (above).
#[test]
fn the_readme_connector_fleet_is_the_shipped_one() {
    let shown = README
        .split("```yaml\n# mocks/connector-fleet.yaml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the README's connector fleet file");
    let shipped = include_str!("../../mocks/connector-fleet.yaml");
    let value = |text: &str| -> serde_json::Value { serde_saphyr::from_str(text).unwrap() };
    assert_eq!(value(shown), value(shipped));
    assert!(
        shipped.ends_with(shown),
        "the file's text after its header comment is the README's"
    );
}

/// The complete CI files the README names: each exists and is YAML; every agent-tck command in
/// them is one the command line accepts; each report file a publishing step reads (JUnit, CTRF)
/// is one the command writes, and the GitHub file writes CTRF beside JUnit for its CTRF action.
#[test]
fn the_ci_files_the_readme_names_parse_and_publish_what_they_write() {
    let named = README
        .split_once("Complete CI files: ")
        .expect("the README names its CI files")
        .1
        .split_once('\n')
        .unwrap()
        .0;
    let files: Vec<&str> = named.split('`').skip(1).step_by(2).collect();
    assert_eq!(
        files,
        ["docs/ci/github-actions.yml", "docs/ci/gitlab-ci.yml"]
    );
    for file in files {
        let text = std::fs::read_to_string(format!("{}/{file}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let yaml: serde_json::Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        // Every string of the file, a folded `run: >` one joined as YAML joins it.
        let mut strings = Vec::new();
        all_strings(&yaml, &mut strings);
        let commands: Vec<&String> = strings
            .iter()
            .filter(|s| s.trim_start().starts_with("agent-tck "))
            .collect();
        assert!(!commands.is_empty(), "{file}: no agent-tck command");
        let mut written = Vec::new();
        for command in &commands {
            parse(command.trim()).unwrap_or_else(|e| panic!("{file}: {command}: {e}"));
            let words = split_command(command.trim()).unwrap();
            for pair in words.windows(2) {
                if matches!(pair[0].as_str(), "--junit" | "--ctrf") {
                    written.push((pair[0].clone(), pair[1].clone()));
                }
            }
        }
        // What each publishing step reads: `report_paths` (the JUnit action), `report-path`
        // (the CTRF action), `reports: junit` (GitLab).
        let mut read = Vec::new();
        reads(&yaml, &mut read);
        assert!(!read.is_empty(), "{file}: no report is published");
        for (kind, path) in &read {
            assert!(
                written.iter().any(|(flag, p)| flag == kind && p == path),
                "{file}: {path} is read as {kind} but no command writes it: {written:?}"
            );
        }
        if file.contains("github") {
            assert!(
                read.iter().any(|(kind, _)| kind == "--ctrf"),
                "{file}: no CTRF action reads the --ctrf report"
            );
        }
    }
}

fn all_strings(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => into.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| all_strings(v, into)),
        serde_json::Value::Object(map) => map.values().for_each(|v| all_strings(v, into)),
        _ => {}
    }
}

/// The report files publishing steps read, each with the flag that writes its format.
fn reads(value: &serde_json::Value, into: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Array(items) => items.iter().for_each(|v| reads(v, into)),
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                let flag = match key.as_str() {
                    "report_paths" => Some("--junit"),
                    "report-path" => Some("--ctrf"),
                    "junit" => Some("--junit"),
                    _ => None,
                };
                match (flag, v.as_str()) {
                    (Some(flag), Some(path)) => into.push((flag.into(), path.into())),
                    _ => reads(v, into),
                }
            }
        }
        _ => {}
    }
}
