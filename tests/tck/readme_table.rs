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

/// The `agent-tck …` commands of a cell (the code spans that begin with the binary's name).
fn commands(cell: &str) -> Vec<&str> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("agent-tck "))
        .collect()
}

/// Parses `command` as the shell would split it; an agent-tck command given to `--exec` or
/// `--stdio` is parsed too, its `{mode}` and `{task}` filled in as the probe fills them.
fn parse(command: &str) -> Result<(), String> {
    let words = split_command(command).map_err(|e| e.to_string())?;
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
