//! The behaviour catalogue as the command line shows it: `mock behaviors`' listing, and the
//! names `--behavior` offers to completion. Its own file, so that the flags (args.rs) and the
//! mock commands (mock.rs) both read it without importing each other.

use crate::mock::behavior::{Behavior, Plays, ENGINE};
use crate::protocols;

/// One entry of the catalogue of agents' behaviours: the behaviour, and (for a content
/// behaviour) the protocols whose agents have it.
pub struct Listed {
    pub behavior: &'static Behavior,
    pub protocols: Vec<&'static str>,
}

/// The catalogue of agents' behaviours: the engine's, then the transports' quirks (of each
/// protocol's table, played by the engine), then each protocol's content behaviours (a name
/// several protocols share once, with the first one's description), then the modifiers.
pub fn catalogue() -> Vec<Listed> {
    let listed = |behavior| Listed {
        behavior,
        protocols: Vec::new(),
    };
    let mut rows: Vec<Listed> = ENGINE
        .iter()
        .filter(|b| matches!(b.plays, Plays::Engine(_)))
        .map(listed)
        .collect();
    let mut content: Vec<Listed> = Vec::new();
    for agents in protocols::agent_protocols() {
        for b in agents.behaviors() {
            if b.by_engine() {
                if !rows.iter().any(|row| row.behavior.name == b.name) {
                    rows.push(listed(b));
                }
                continue;
            }
            match content.iter_mut().find(|row| row.behavior.name == b.name) {
                Some(row) => row.protocols.push(agents.name()),
                None => content.push(Listed {
                    behavior: b,
                    protocols: vec![agents.name()],
                }),
            }
        }
    }
    rows.extend(content);
    rows.extend(
        ENGINE
            .iter()
            .filter(|b| matches!(b.plays, Plays::Modifier(_)))
            .map(listed),
    );
    rows
}

/// The behaviour catalogue as printed by `mock behaviors`.
pub fn list_behaviors() -> String {
    let mut out = String::from(
        "Behaviours (--behavior NAME[:ARGS][@ENDPOINT], comma-separated; fleet files: `behaviors:`)\n\n",
    );
    for Listed {
        behavior,
        protocols,
    } in catalogue()
    {
        out.push_str(&format!(
            "  {}\n      {}\n      exercises: {}\n",
            behavior.name, behavior.what, behavior.rule
        ));
        if !protocols.is_empty() {
            out.push_str(&format!("      protocols: {}\n", protocols.join(", ")));
        }
    }
    for p in protocols::REGISTRY {
        let offers = p.capabilities();
        if offers.behaviors.is_empty() {
            continue;
        }
        let name = p.name();
        let heading = match offers.command_agent {
            Some(_) => format!(
                "Behaviours of the {name} command agent (mock agent --protocol {name} --behavior \
                 NAME[:ARG], comma-separated or repeated; one run per call)"
            ),
            None => format!(
                "Behaviours of the {name} reference peer (one a row of its matrix, {}; the \
                 self-test plays them)",
                offers.selftest.matrix().0
            ),
        };
        out.push_str(&format!("\n{heading}\n\n"));
        list_misbehaviors(&mut out, offers.behaviors);
    }
    for p in protocols::REGISTRY {
        if let Some(fleet) = p.capabilities().client_fleet {
            out.push_str(&format!(
                "\nBehaviours of {} fleet clients (mock fleet with `protocol: {}`: each \
                 client's `behavior:`)\n\n",
                p.name(),
                p.name()
            ));
            list_misbehaviors(&mut out, fleet.behaviors());
        }
    }
    out
}

/// One protocol's own misbehaviours, as `mock behaviors` prints them.
fn list_misbehaviors(out: &mut String, behaviors: &[Behavior]) {
    for b in behaviors {
        out.push_str(&format!("  {}\n      {}\n", b.name, b.what));
        if !b.expects.is_empty() {
            out.push_str(&format!("      expected: {}\n", b.expects));
        }
        if let Plays::Own(transports) = b.plays {
            out.push_str(&format!("      over: {}\n", transports.join(", ")));
        }
    }
}

/// `--behavior`'s names for completion: the catalogue's (as `mock behaviors` lists it) and each
/// protocol's own flaws, once each, without their arguments.
pub(super) fn names() -> Vec<(&'static str, &'static str)> {
    let mut names: Vec<(&'static str, &'static str)> = Vec::new();
    let catalogue = catalogue()
        .into_iter()
        .map(|row| (row.behavior.name, row.behavior.what));
    let flaws = protocols::REGISTRY
        .iter()
        .flat_map(|p| p.capabilities().behaviors)
        .map(|b| (b.name, b.what));
    for (name, what) in catalogue.chain(flaws) {
        // `slow[:DUR]`, `at:N`: the name before its argument.
        let name = name.split([':', '[']).next().unwrap_or(name);
        if !names.iter().any(|(n, _)| *n == name) {
            names.push((name, what));
        }
    }
    names
}
