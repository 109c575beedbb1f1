//! The protocols' mock commands and behaviours as the command line offers them, tested over
//! the registry: what the kit offers instead of an agent it does not serve, the presets, and
//! the behaviour listing.

use crate::cli::behaviors::{catalogue, list_behaviors};
use crate::error::Error;
use crate::mock::behavior::For;
use crate::mock::command::FleetText;
use crate::mock::fleet::FleetFile;
use crate::protocols;

/// The `protocol:` a fleet file names.
fn fleet_protocol(text: &str) -> Option<String> {
    FleetText {
        source: "preset".into(),
        text: text.into(),
    }
    .protocol()
}

#[test]
fn a_protocol_with_nothing_to_serve_is_told_what_the_kit_offers_instead() {
    let mut offers = protocols::find("connector").unwrap().capabilities();
    offers.agents = None;
    assert_eq!(
        offers.nothing_to_serve("connector").to_string(),
        "--protocol connector: the kit serves no connector agent; for connector it offers \
             probe connector, mock fleet (a file with `protocol: connector`), selftest \
             --protocol connector"
    );
    let offers = protocols::find("agent-standard").unwrap().capabilities();
    let Err(e) = offers.served("agent-standard") else {
        panic!("agent-standard's agents are commands, not served")
    };
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        offers.nothing_to_serve("agent-standard").to_string()
    );
    assert!(
        e.to_string().contains(
            "probe agent-standard, probe orchestration, lint agents, \
             mock agent --protocol agent-standard --mode plan|execute"
        ),
        "{e}"
    );
}

#[test]
fn every_preset_parses_and_builds_its_agents() {
    for p in protocols::REGISTRY {
        let offers = p.capabilities();
        for (name, source, text) in offers.fleet_presets {
            // A protocol whose fleets are clients parses its own (tested with it).
            let Some(served) = offers.agents else {
                assert_eq!(fleet_protocol(text).as_deref(), Some(p.name()), "{name}");
                continue;
            };
            let file = FleetFile::parse(source, text).unwrap();
            let others = protocols::agent_protocols();
            let at = For {
                protocol: served.agents,
                others: &others,
            };
            let agents = file.agents(source, 1, at).unwrap_or_else(|e| panic!("{e}"));
            assert!(agents.len() >= 10, "{name}: {} agents", agents.len());
        }
    }
    assert!(protocols::fleet_preset("calm")
        .unwrap_err()
        .to_string()
        .contains("chaos, slow"));
}

#[test]
fn every_client_fleets_behaviours_are_listed_under_their_protocol() {
    let listing = list_behaviors();
    let mut fleets = 0;
    for p in protocols::REGISTRY {
        let Some(fleet) = p.capabilities().client_fleet else {
            continue;
        };
        fleets += 1;
        let heading = format!("Behaviours of {} fleet clients", p.name());
        let at = listing
            .find(&heading)
            .unwrap_or_else(|| panic!("{heading}"));
        let section = &listing[at..];
        assert!(!fleet.behaviors().is_empty(), "{}", p.name());
        for b in fleet.behaviors() {
            assert!(
                section.contains(&format!("  {}\n      {}\n", b.name, b.what)),
                "{}: {}",
                p.name(),
                b.name
            );
            if !b.expects.is_empty() {
                assert!(
                    section.contains(&format!("      expected: {}\n", b.expects)),
                    "{}: {}",
                    p.name(),
                    b.name
                );
            }
        }
    }
    assert_eq!(
        fleets, 2,
        "the Librarian's and the connector's client fleets"
    );
}

#[test]
fn the_readme_documents_every_behaviour() {
    let readme = include_str!("../../README.md");
    for row in catalogue() {
        let (name, what) = (row.behavior.name, row.behavior.what);
        assert!(
            readme.contains(&format!("| `{name}` | {}", what.replace('|', "\\|"))),
            "{name}"
        );
    }
}

/// The Librarian's and the connector's flaws and the agent standard's behaviours are in the
/// one listing, each under its protocol, and each is a name its matrix check takes over
/// its transports, and a row of its matrix plays it.
#[test]
fn every_protocols_own_behaviours_are_listed_checked_and_played() {
    let listing = list_behaviors();
    let matrices = crate::selftest::matrix::Matrix::builtin().unwrap();
    let mut protocols_with_own = Vec::new();
    for p in protocols::REGISTRY {
        let offers = p.capabilities();
        if offers.behaviors.is_empty() {
            continue;
        }
        protocols_with_own.push(p.name());
        let heading = format!("Behaviours of the {} ", p.name());
        let section = &listing[listing.find(&heading).expect(&heading)..];
        let matrix = matrices
            .iter()
            .find(|m| m.protocol.name() == p.name())
            .expect("a matrix");
        for b in offers.behaviors {
            assert!(section.contains(&format!("\n  {}\n      {}\n", b.name, b.what)));
            for transport in b.transports() {
                offers
                    .selftest
                    .check_behavior(b.bare_name(), transport)
                    .unwrap_or_else(|e| panic!("{} over {transport}: {e}", b.name));
            }
            assert!(
                matrix.file.rows.iter().any(|row| {
                    let played = &row.behavior.value;
                    played.split([',', ':']).next() == Some(b.bare_name())
                }),
                "{}: no row of {} plays {}",
                p.name(),
                matrix.source,
                b.name
            );
        }
        assert!(offers
            .selftest
            .check_behavior("no-such-flaw", offers.behaviors[0].transports()[0])
            .is_err());
    }
    assert_eq!(
        protocols_with_own,
        ["librarian", "connector", "agent-standard"]
    );
}

/// A flag a protocol adds to `mock agent` is refused under another protocol, named as typed;
/// the protocol it belongs to takes it, and a command line without it has nothing to refuse.
#[test]
fn a_protocols_mock_flag_is_refused_under_another_and_read_back_by_its_own() {
    use crate::cli::{Cli, Command, MockCommand};
    let parsed = |argv: &[&str]| match Cli::parse_args(argv).expect("parses").command {
        Command::Mock(mock) => match *mock {
            MockCommand::Agent(args) => args,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let with = parsed(&["agent-tck", "mock", "agent", "--approved", "--task", "t"]);
    let served = protocols::find("roundtable").unwrap();
    let e = with.protocol_flags.refuse_foreign(served).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "--task: for agents run as a command (--protocol agent-standard), not roundtable"
    );
    let own = protocols::find("agent-standard").unwrap();
    with.protocol_flags.refuse_foreign(own).unwrap();
    let without = parsed(&["agent-tck", "mock", "agent", "--port", "0"]);
    without.protocol_flags.refuse_foreign(served).unwrap();
}
