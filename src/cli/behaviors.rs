//! The behaviour catalogue as the command line shows it: `mock behaviors`' listing, and the
//! names `--behavior` offers to completion. Its own file, so that the flags (args.rs) and the
//! mock commands (mock.rs) both read it without importing each other.

use crate::mock::behavior;
use crate::protocols;

/// One row of the catalogue: name, what it does, the rule it exercises, and (for a content
/// behaviour) the protocols that have it.
pub type CatalogueRow = (&'static str, &'static str, &'static str, Vec<&'static str>);

/// The behaviour catalogue: the engine's behaviours, then each protocol's content behaviours
/// (a name several protocols share once, with the first one's description), then the modifiers.
pub fn catalogue() -> Vec<CatalogueRow> {
    let modifier = |name: &str| matches!(name, "flaky" | "fail-first");
    let mut rows: Vec<CatalogueRow> = behavior::CATALOGUE
        .iter()
        .filter(|(name, _, _)| !modifier(name))
        .map(|(n, w, r)| (*n, *w, *r, Vec::new()))
        .collect();
    let mut content: Vec<CatalogueRow> = Vec::new();
    for agents in protocols::agent_protocols() {
        for b in agents.behaviors() {
            match content.iter_mut().find(|row| row.0 == b.name) {
                Some(row) => row.3.push(agents.name()),
                None => content.push((b.name, b.what, b.rule, vec![agents.name()])),
            }
        }
    }
    rows.extend(content);
    rows.extend(
        behavior::CATALOGUE
            .iter()
            .filter(|(name, _, _)| modifier(name))
            .map(|(n, w, r)| (*n, *w, *r, Vec::new())),
    );
    rows
}

/// The behaviour catalogue as printed by `mock behaviors`.
pub fn list_behaviors() -> String {
    let mut out = String::from(
        "Behaviours (--behavior NAME[:ARGS][@ENDPOINT], comma-separated; fleet files: `behaviors:`)\n\n",
    );
    for (name, what, rule, protocols) in catalogue() {
        out.push_str(&format!(
            "  {name}\n      {what}\n      exercises: {rule}\n"
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
fn list_misbehaviors(out: &mut String, behaviors: &[crate::mock::behavior::Misbehavior]) {
    for b in behaviors {
        out.push_str(&format!("  {}\n      {}\n", b.name, b.what));
        if !b.expects.is_empty() {
            out.push_str(&format!("      expected: {}\n", b.expects));
        }
        if b.transports != crate::mock::behavior::Misbehavior::FLEET {
            out.push_str(&format!("      over: {}\n", b.transports.join(", ")));
        }
    }
}

/// `--behavior`'s names for completion: the catalogue's (as `mock behaviors` lists it) and each
/// protocol's own flaws, once each, without their arguments.
pub(super) fn names() -> Vec<(&'static str, &'static str)> {
    let mut names: Vec<(&'static str, &'static str)> = Vec::new();
    let catalogue = catalogue()
        .into_iter()
        .map(|(name, what, _, _)| (name, what));
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
