//! The help, walked through clap's command tree (every subcommand, every protocol's probe and
//! lint, at any depth): each command opens with what it does, every argument and subcommand is
//! described, no internal text leaks in (the man pages and completions are made from the same
//! tree), and every flag of a protocol's probe or lint, or of a mock command, is read by the code
//! that runs it. Then what a newcomer types by mistake: no command, a misspelt one, `--behaviour`,
//! `--host localhost`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_tck::cli::{Cli, Command, MockCommand, TargetsArgs};
use agent_tck::probe::args::{KeyArgs, RunArgs, SuiteArgs};
use agent_tck::protocols::{Protocol, REGISTRY};
use agent_tck::report::output::OutputArgs;
use clap::{Args, CommandFactory, Parser};

use crate::support::{tck_within, text};

/// Every command that `--help` can show, named as typed (`agent-tck probe roundtable`), hidden
/// ones left out (`mock linger`, which the mock runs itself, is not even in this tree: see
/// [`the_internal_subcommand_is_hidden_yet_runs`]).
fn commands() -> Vec<(String, clap::Command)> {
    let mut root = Cli::command();
    root.build();
    let mut out = Vec::new();
    let mut stack = vec![("agent-tck".to_string(), root)];
    while let Some((name, cmd)) = stack.pop() {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            stack.push((format!("{name} {}", sub.get_name()), sub.clone()));
        }
        out.push((name, cmd));
    }
    out
}

/// What only the code's readers should see: a path into the crate, an intra-doc link, the note
/// on how `--targets` is parsed.
fn internal_text(text: &str) -> Option<&'static str> {
    let found = [
        ("crate::", "a path into the crate"),
        ("taken apart before clap", "the --targets parse's note"),
        ("clap ", "a word about clap"),
    ]
    .into_iter()
    .find(|(needle, _)| text.contains(needle))
    .map(|(_, what)| what);
    found.or_else(|| intra_doc_link(text).then_some("an intra-doc link"))
}

/// Whether `text` holds an intra-doc link: [`Name`] or [`path::Name`] (an optional key written
/// [`until: YYYY-MM-DD`] is not one).
fn intra_doc_link(text: &str) -> bool {
    text.split("[`").skip(1).any(|rest| {
        rest.split_once("`]").is_some_and(|(inside, _)| {
            !inside.is_empty()
                && inside
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '(' | ')' | '!'))
                && !inside.contains(": ")
        })
    })
}

fn visible_args(cmd: &clap::Command) -> impl Iterator<Item = &clap::Arg> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
}

#[test]
fn every_command_opens_with_what_it_does_and_describes_every_argument() {
    let mut problems = Vec::new();
    let all = commands();
    // The tree reaches every probe of every protocol (and each has its own line).
    for protocol in REGISTRY {
        for probe in protocol.capabilities().probes {
            let name = format!("agent-tck probe {}", probe.command().get_name());
            assert!(all.iter().any(|(n, _)| *n == name), "{name} is not walked");
        }
    }
    assert!(all.len() >= 25, "{} commands walked", all.len());
    for (name, cmd) in &all {
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
        if about.trim().is_empty() {
            problems.push(format!("{name}: no description"));
        }
        for text in [
            Some(about.clone()),
            cmd.get_long_about().map(|a| a.to_string()),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(what) = internal_text(&text) {
                problems.push(format!("{name}: its description holds {what}: {text:?}"));
            }
        }
        // What --help prints first is the command's own line.
        let help = cmd.clone().render_help().to_string();
        let first = help.lines().next().unwrap_or_default();
        let about_first = about.lines().next().unwrap_or_default();
        if first.trim() != about_first.trim()
            && !about_first.starts_with(first.trim_end_matches(['.', ' ']))
        {
            problems.push(format!(
                "{name}: --help opens with {first:?}, not {about_first:?}"
            ));
        }
        for arg in visible_args(cmd) {
            let flag = arg
                .get_long()
                .map(|l| format!("--{l}"))
                .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            if help.trim().is_empty() {
                problems.push(format!("{name} {flag}: no description"));
            } else if let Some(what) = internal_text(&help) {
                problems.push(format!(
                    "{name} {flag}: its description holds {what}: {help:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The man pages are made from the same tree: none holds the internal text either.
#[test]
fn man_pages_hold_no_internal_text() {
    for (name, cmd) in commands() {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page).unwrap();
        let page = String::from_utf8_lossy(&page);
        assert_eq!(internal_text(&page), None, "man page of {name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Flags the code reads.

/// The ids of a flags struct's arguments (the field names, as clap derives them).
fn ids_of(augment: fn(clap::Command) -> clap::Command) -> Vec<String> {
    augment(clap::Command::new("x"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The text of every .rs file under `dir` (or of the file `dir`).
fn source(dir: &Path) -> String {
    if dir.is_file() {
        return std::fs::read_to_string(dir).unwrap();
    }
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() || path.extension().is_some_and(|e| e == "rs") {
            text.push_str(&source(&path));
        }
    }
    text
}

/// Whether `code` reads the field `id`: `.id` not followed by more of a name.
fn reads(code: &str, id: &str) -> bool {
    let needle = format!(".{id}");
    code.match_indices(&needle).any(|(at, _)| {
        !code[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The folder of a protocol's code.
fn folder(protocol: &dyn Protocol) -> PathBuf {
    root()
        .join("src/protocols")
        .join(protocol.name().replace('-', "_"))
}

/// The flags of `cmd` that no code in `code` reads. The flags of the shared structs (`RunArgs`,
/// `KeyArgs`, `SuiteArgs`, `OutputArgs`) count as read when their own module or `code` reads
/// them; those of a run over many targets when `src/targets.rs` names them.
fn unread(name: &str, cmd: &clap::Command, code: &str) -> Vec<String> {
    let shared: Vec<String> = [
        ids_of(RunArgs::augment_args),
        ids_of(KeyArgs::augment_args),
        ids_of(SuiteArgs::augment_args),
        ids_of(OutputArgs::augment_args),
    ]
    .concat();
    let shared_code = [
        "src/probe/args.rs",
        "src/report/output.rs",
        "src/cli/exit.rs",
        "src/protocols/plugin.rs",
    ]
    .iter()
    .map(|f| source(&root().join(f)))
    .collect::<String>();
    let targets = ids_of(TargetsArgs::augment_args);
    let targets_code = source(&root().join("src/targets"));
    visible_args(cmd)
        .filter(|arg| {
            let id = arg.get_id().as_str();
            if targets.iter().any(|t| t == id) {
                let long = format!("\"--{}\"", arg.get_long().unwrap_or(id));
                return !targets_code.contains(&long);
            }
            if shared.iter().any(|s| s == id) {
                return !reads(code, id) && !reads(&shared_code, id);
            }
            !reads(code, id)
        })
        .map(|arg| format!("{name} --{}", arg.get_long().unwrap_or_default()))
        .collect()
}

#[test]
fn every_flag_of_a_probe_a_lint_or_a_mock_is_read_by_its_code() {
    let tree = commands();
    let command = |name: &str| -> &clap::Command {
        &tree
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name}"))
            .1
    };
    let mut ignored = Vec::new();
    let mut checked = 0;
    for protocol in REGISTRY {
        // A protocol's probe and lint run in its own folder (the round table's suite probe in
        // the plugin's `SuiteProbe`).
        let code = source(&folder(*protocol)) + &source(&root().join("src/protocols/plugin.rs"));
        let caps = protocol.capabilities();
        let probes = caps
            .probes
            .iter()
            .map(|p| format!("agent-tck probe {}", p.command().get_name()));
        let lint = caps
            .lint
            .iter()
            .map(|l| format!("agent-tck lint {}", l.command().get_name()));
        for name in probes.chain(lint) {
            let cmd = command(&name);
            checked += visible_args(cmd).count();
            ignored.extend(unread(&name, cmd, &code));
        }
    }
    // The mock commands run in the command line's code, the mock engine and the protocols'
    // (`mock librarian`, and whatever a protocol's mock agent takes).
    let mock_code = ["src/cli", "src/mock", "src/protocols"]
        .iter()
        .map(|d| source(&root().join(d)))
        .collect::<String>();
    for name in [
        "agent-tck mock agent",
        "agent-tck mock fleet",
        "agent-tck mock agents",
        "agent-tck mock librarian",
    ] {
        let cmd = command(name);
        checked += visible_args(cmd).count();
        ignored.extend(unread(name, cmd, &mock_code));
    }
    assert!(checked > 100, "only {checked} flags checked");
    assert!(
        ignored.is_empty(),
        "declared, never read:\n{}",
        ignored.join("\n")
    );
}

#[test]
fn internal_text_is_recognised() {
    for leak in [
        "`probe NAME --targets FILE …`: … taken apart before clap parses it ([`crate::targets`])",
        "see [`RunArgs`]",
        "see [`crate::probe::args::RunArgs::only`]",
    ] {
        assert!(internal_text(leak).is_some(), "{leak}");
    }
    for fine in [
        "Expected failures (YAML: `- id: CASE` `reason: …` [`until: YYYY-MM-DD`])",
        "NAME[:ARGS][@ENDPOINT] (see `agent-tck mock behaviors`)",
    ] {
        assert_eq!(internal_text(fine), None, "{fine}");
    }
}

/// The check can fail: a flag nobody reads is named.
#[test]
fn a_flag_nobody_reads_is_named() {
    let cmd = clap::Command::new("x")
        .arg(clap::Arg::new("frobnicate").long("frobnicate").help("x"))
        .arg(clap::Arg::new("timeout").long("timeout").help("x"));
    let code = "let t = args.run.timeout; let f = args.frobnicates;";
    assert_eq!(
        unread("agent-tck x", &cmd, code),
        ["agent-tck x --frobnicate"]
    );
}

// ---------------------------------------------------------------------------------------------
// What each command's help says.

fn help_of(name: &str) -> String {
    let (_, mut cmd) = commands()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name}"));
    cmd.render_long_help().to_string()
}

#[test]
fn mock_fleet_lists_every_built_in_fleet() {
    let help = help_of("agent-tck mock fleet");
    let presets: Vec<&str> = REGISTRY
        .iter()
        .flat_map(|p| p.capabilities().fleet_presets)
        .map(|(name, _, _)| *name)
        .collect();
    assert!(presets.contains(&"librarian-chaos"), "{presets:?}");
    let line = help
        .split("\n      --preset <NAME>")
        .nth(1)
        .expect("--preset in the help");
    let line: String = line
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        line.contains(&presets.join(", ")),
        "--preset's help: {line:?}, presets: {presets:?}"
    );
}

/// What `--timeout` bounds, as each probe's help says it.
fn timeout_help(probe: &str) -> String {
    let (_, cmd) = commands()
        .into_iter()
        .find(|(n, _)| *n == format!("agent-tck probe {probe}"))
        .unwrap_or_else(|| panic!("{probe}"));
    let help = cmd
        .get_arguments()
        .find(|a| a.get_id() == "timeout")
        .and_then(|a| a.get_help())
        .map(|h| h.to_string());
    help.unwrap_or_else(|| panic!("probe {probe} has no --timeout"))
}

#[test]
fn timeout_says_what_it_bounds_for_each_probe() {
    let said = [
        ("roundtable", "POST /analyze"),
        ("execute-task", "each turn"),
        ("librarian", "each request to the Librarian"),
        ("connector", "acknowledgement"),
        ("agent-standard", "each run of the agent command"),
    ];
    for (probe, words) in said {
        let help = timeout_help(probe);
        assert!(help.contains(words), "probe {probe} --timeout: {help:?}");
        // A turn is execute-task's word only.
        assert_eq!(
            help.contains("turn"),
            probe == "execute-task",
            "probe {probe} --timeout: {help:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// What a newcomer types.

const QUICK: Duration = Duration::from_secs(60);

#[test]
fn no_command_prints_the_help_and_exits_2() {
    let out = tck_within(&[], QUICK);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("Conformance test kit and mock agent simulator for agent protocols\n"),
        "{err}"
    );
    assert!(err.contains("Usage: agent-tck <COMMAND>"), "{err}");
    assert!(err.contains("\n  probe "), "{err}");
    assert!(!err.contains("error:"), "{err}");
    // A command with subcommands, without one: its own help.
    let out = tck_within(&["probe"], QUICK);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Usage: agent-tck probe <COMMAND>"), "{err}");
    assert!(err.contains("\n  roundtable "), "{err}");
}

#[test]
fn a_misspelt_command_or_flag_gets_clap_s_tip() {
    let out = tck_within(
        &["probe", "rountable", "--url", "http://127.0.0.1:3001"],
        QUICK,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = "agent-tck: error: unrecognized subcommand 'rountable'; tip: a similar subcommand \
                exists: 'roundtable' (see agent-tck probe --help)";
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), said);
    // The README shows it as it is.
    assert!(include_str!("../../README.md").contains(&format!("    {said}\n")));
    let out = tck_within(&["mock", "agent", "--behavor", "slow"], QUICK);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "agent-tck: error: unexpected argument '--behavor' found; tip: a similar argument \
         exists: '--behavior' (see agent-tck mock agent --help)"
    );
    // Through a run over many targets too: each target's command line is parsed the same way.
    let e = Cli::try_parse_from(["agent-tck", "probe", "roundtable", "--url", "x", "--timeot"])
        .unwrap_err();
    assert!(
        agent_tck::cli::clap_one_line(&e).contains("tip: a similar argument exists: '--timeout'"),
        "{}",
        agent_tck::cli::clap_one_line(&e)
    );
}

fn mock_agent(args: &[&str]) -> agent_tck::cli::MockAgentArgs {
    let argv = [&["agent-tck", "mock", "agent"], args].concat();
    match Cli::try_parse_from(argv)
        .unwrap_or_else(|e| panic!("{e}"))
        .command
    {
        Command::Mock(mock) => match *mock {
            MockCommand::Agent(a) => a,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn behaviour_is_an_alias_of_behavior() {
    assert_eq!(mock_agent(&["--behaviour", "slow"]).behavior, ["slow"]);
    assert_eq!(
        mock_agent(&["--behavior", "slow", "--behaviour", "hang"]).behavior,
        ["slow", "hang"]
    );
    let help = help_of("agent-tck mock agent");
    assert!(help.contains("[alias: --behaviour]"), "{help}");
    assert!(Cli::try_parse_from(["agent-tck", "mock", "behaviours"]).is_ok());
}

#[test]
fn host_takes_a_host_name() {
    assert_eq!(
        mock_agent(&["--host", "localhost"]).host,
        std::net::IpAddr::from([127, 0, 0, 1])
    );
    assert_eq!(
        mock_agent(&["--host", "::1"]).host,
        "::1".parse::<std::net::IpAddr>().unwrap()
    );
    for command in [
        &["mock", "fleet", "--preset", "chaos"][..],
        &["mock", "librarian"][..],
    ] {
        let argv = [&["agent-tck"], command, &["--host", "localhost"]].concat();
        Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{command:?}: {e}"));
    }
    // The connector's callback listener: HOST:PORT, the host a name too.
    let probe = |listen: &str| {
        let argv: Vec<std::ffi::OsString> = [
            "agent-tck",
            "probe",
            "connector",
            "--input-url",
            "http://127.0.0.1:9/v1/assistant/input",
            "--callback-listen",
            listen,
        ]
        .map(Into::into)
        .to_vec();
        Cli::try_parse_from(&argv)
            .map(|_| ())
            .map_err(|e| agent_tck::cli::clap_error_line(&e, &argv))
    };
    assert_eq!(probe("localhost:0"), Ok(()));
    assert_eq!(
        probe("localhost"),
        Err(
            "invalid value 'localhost' for '--callback-listen <ADDR>': expected HOST:PORT (e.g. \
             127.0.0.1:0, localhost:8000) (see agent-tck probe connector --help)"
                .into()
        )
    );
    // A name that does not resolve: the flag and the name, and the command whose help to read.
    let out = tck_within(&["mock", "agent", "--host", "no-such-host.invalid"], QUICK);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let err = err.trim_end();
    assert!(
        err.starts_with(
            "agent-tck: error: invalid value 'no-such-host.invalid' for '--host <HOST>': neither \
             an IP address nor a host name that resolves ("
        ) && err.ends_with(") (see agent-tck mock agent --help)")
            && !err.contains('\n'),
        "{err}"
    );
}

/// The README writes "behaviour": each fleet file takes the key in either spelling, to the same
/// effect (a wrong name under the British key is named as under the American one).
#[test]
fn fleet_files_take_behaviour_as_behavior() {
    use agent_tck::protocols::{connector, librarian};
    let both = |yaml: &str| (yaml.to_string(), yaml.replace("behavior", "behaviour"));

    let (us, uk) = both(
        "protocol: librarian\nlibrarian:\n  url: http://x:1\n  clients:\n    \
         - { name: a, agent: x, token: t, behavior: shout }\n",
    );
    let errors = [&us, &uk].map(|text| {
        librarian::fleet::Fleet::parse("f.yaml", text, None)
            .err()
            .expect("shout is no behaviour")
            .to_string()
    });
    assert!(
        errors[0].starts_with("f.yaml: client \"a\": behavior \"shout\" is not one of"),
        "{}",
        errors[0]
    );
    assert_eq!(errors[0], errors[1]);

    let (us, uk) = both(
        "protocol: connector\nconnector:\n  url: http://x:1\n  agents:\n    \
         - { name: md, agent-id: ext-md, behavior: markdown }\n",
    );
    let [a, b] = [&us, &uk].map(|text| {
        let fleet = connector::fleet::Fleet::parse("f.yaml", text, None)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        format!("{:?}", fleet.agents[0].behavior)
    });
    assert_eq!(a, b);
    assert!(a.to_lowercase().contains("markdown"), "{a}");

    let (us, uk) = both("agents:\n  - { name: s, behaviors: [\"slow:5s\"] }\n");
    let [a, b] = [&us, &uk].map(|text| {
        let file = agent_tck::mock::fleet::FleetFile::parse("f.yaml", text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        file.agents[0].behaviors.clone()
    });
    assert_eq!(a, ["slow:5s"]);
    assert_eq!(a, b);
}

/// `--help` beside `--targets` is the probe's help (a run over the list would parse each
/// target's command line and print the help's first line as an error); `--targets` without a
/// probe is a usage error about the command line.
#[test]
fn help_with_targets_is_the_probe_s_help() {
    let out = tck_within(
        &[
            "probe",
            "roundtable",
            "--targets",
            "no-such-list.yaml",
            "--help",
        ],
        QUICK,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "The round-table External Agent Protocol: POST /analyze, /challenge, /vote.\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("--targets <FILE>"), "{stdout}");
    assert!(out.stderr.is_empty(), "{}", text(&out));
    // No probe named: clap's word on the command line, not each target's (`--url` unexpected).
    let out = tck_within(&["probe", "--targets", "no-such-list.yaml"], QUICK);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "agent-tck: error: unexpected argument '--targets' found (see agent-tck probe --help)"
    );
}

/// `mock linger`, run by a stdio mock for the child it leaves behind, is in no help, completion
/// script or man page, yet parses and answers its own --help.
#[test]
fn the_internal_subcommand_is_hidden_yet_runs() {
    use crate::support::tck;
    for args in [&["mock", "--help"][..], &["help", "mock"]] {
        let out = tck(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        let help = text(&out);
        assert!(help.contains("behaviors"), "{args:?}: {help}");
        assert!(!help.contains("linger"), "{args:?} lists it: {help}");
    }
    let dir = crate::support::TempDir::new("help-hidden-man");
    let out = tck(&["manpages", &dir.path("man")]);
    assert!(out.status.success(), "{}", text(&out));
    for page in std::fs::read_dir(dir.0.join("man")).unwrap() {
        let page = page.unwrap().path();
        let body = std::fs::read_to_string(&page).unwrap();
        assert!(!body.contains("linger"), "{} names it", page.display());
    }
    let out = tck(&["mock", "linger", "--help"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("--json <FILE>"), "{}", text(&out));
    let parsed = Cli::parse_args(["agent-tck", "mock", "linger", "--json", "r.json"])
        .unwrap_or_else(|e| panic!("{e}"));
    match parsed.command {
        Command::Mock(mock) => match *mock {
            MockCommand::Linger(args) => {
                assert_eq!(args.json, Some(PathBuf::from("r.json")));
                assert_eq!(args.junit, None);
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // Another command parses as it did.
    assert!(Cli::parse_args(["agent-tck", "mock", "behaviors"]).is_ok());
}

/// `mock agents --protocol` offers the protocols that write sets of mock agents, and only them.
#[test]
fn mock_agents_lists_only_protocols_with_sets() {
    let with_sets: Vec<&str> = REGISTRY
        .iter()
        .filter(|p| p.capabilities().command_agent.is_some())
        .map(|p| p.name())
        .collect();
    assert!(!with_sets.is_empty() && with_sets.len() < REGISTRY.len());
    let (_, agents) = commands()
        .into_iter()
        .find(|(n, _)| n == "agent-tck mock agents")
        .expect("mock agents");
    let protocol = agents
        .get_arguments()
        .find(|a| a.get_id() == "protocol")
        .expect("--protocol");
    let offered: Vec<String> = protocol
        .get_possible_values()
        .iter()
        .map(|v| v.get_name().to_string())
        .collect();
    assert_eq!(offered, with_sets);
    let without = REGISTRY
        .iter()
        .find(|p| p.capabilities().command_agent.is_none())
        .unwrap()
        .name();
    let out = crate::support::tck(&["mock", "agents", "--protocol", without, "--dir", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("[possible values: {}]", with_sets.join(", "))),
        "{}",
        text(&out)
    );
}

/// `--quiet` says, on each command, what it silences there; the Librarian flags name the spec
/// whose config files they stand for.
#[test]
fn quiet_and_the_librarian_registry_say_what_they_mean_on_each_command() {
    let quiet = |name: &str| {
        let help = help_of(name)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        help.split_once("--quiet Print")
            .unwrap_or_else(|| panic!("{name}: no --quiet"))
            .1
            .split(" -h, --help")
            .next()
            .unwrap_or_default()
            .to_string()
    };
    for (_, cmd) in commands() {
        for arg in visible_args(&cmd).filter(|a| a.get_id() == "quiet") {
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(
                !help.contains("a mock serving"),
                "{}: {help}",
                cmd.get_name()
            );
        }
    }
    for probe in ["agent-tck probe roundtable", "agent-tck probe librarian"] {
        let text = quiet(probe);
        assert!(text.contains("no line per case"), "{probe}: {text}");
        assert!(!text.contains("request"), "{probe}: {text}");
    }
    let agent = quiet("agent-tck mock agent");
    assert!(agent.contains("no line per request"), "{agent}");
    let selftest = quiet("agent-tck selftest");
    assert!(selftest.contains("no table"), "{selftest}");
    assert!(!selftest.contains("request"), "{selftest}");
    for name in [
        "agent-tck probe librarian",
        "agent-tck mock librarian",
        "agent-tck mock fleet",
    ] {
        let help = help_of(name)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!help.contains("the document's"), "{name}: {help}");
        assert!(
            help.contains("config/agents.yaml in the Librarian protocol spec, specs/librarian-agent-communication-protocol.md"),
            "{name}: {help}"
        );
    }
}
