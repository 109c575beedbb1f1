//! The protocols, one folder each, plugged into the generic engines, and [`REGISTRY`]: the one
//! list that the command line (`probe`, `mock agent --protocol`, `mock fleet`, `mock
//! behaviors`, `suites list`, `schemas`) and the self-test read. Adding a protocol is a folder
//! here, its `pub mod` line and a line in [`REGISTRY`], its schemas under `schemas/<name>/` and its data (suite,
//! matrix); see docs/design.md, "How to add a protocol".
//!
//! A protocol implements [`Protocol`] for the command line and the self-test (its identity, and
//! its [`Capabilities`]: probes, lint, command agents, client fleets, self-test), and the
//! engines' traits for what it does in each role: [`AgentProtocol`] (the mock engine plays its agents),
//! [`crate::probe::plugin::SuiteProtocol`] (its rules and generators in suites).

pub mod agent_standard;
pub mod connector;
pub mod execute_task;
pub mod librarian;
pub mod roundtable;

pub mod plugin;

pub use plugin::{Capabilities, MatrixRow, OnCase, ProbeJob, Protocol, SelftestRun};

use crate::mock::protocol::AgentProtocol;

/// Every protocol the kit knows, in the order commands list them. (Each folder also has its
/// `pub mod` line above: a module declared by a macro would hide its files from rustfmt.)
pub static REGISTRY: &[&dyn Protocol] = &[
    &roundtable::Roundtable,
    &execute_task::ExecuteTask,
    &librarian::LibrarianProtocol,
    &connector::Connector,
    &agent_standard::AgentStandard,
];

/// The protocol registered as `name`.
pub fn find(name: &str) -> Option<&'static dyn Protocol> {
    REGISTRY.iter().copied().find(|p| p.name() == name)
}

/// The registered names, for flags' possible values and messages.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|p| p.name()).collect()
}

/// The embedded schemas, each with the protocol whose folder holds it (None: the kit's own, such
/// as the report's).
pub fn schemas() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
)> {
    crate::schema::EMBEDDED
        .iter()
        .map(|(id, file, text)| {
            let owner = REGISTRY
                .iter()
                .find(|p| {
                    p.schema_dir()
                        .is_some_and(|dir| file.starts_with(&format!("{dir}/")))
                })
                .map(|p| p.name());
            (*id, *file, *text, owner)
        })
        .collect()
}

/// What a report of the protocols `names` (`a+b` for several, as a merged report names them)
/// records of the specs each was judged by; a name that is no protocol's (a test's) gets none.
pub fn judged_by(names: &str) -> Vec<crate::specs::JudgedBy> {
    crate::report::tools::protocol_names(names)
        .filter_map(find)
        .map(|p| p.spec().judged_by(p.name()))
        .collect()
}

/// Names in `report` the spec each of its protocols was judged by, and the suite (a user's
/// suite file, as the probe recorded it), unless it names them already (a merge keeps its
/// parts'). Every command that reports calls it before printing or writing the report.
pub fn stamp(report: &mut crate::report::Report) {
    if !report.judged_by.is_empty() {
        return;
    }
    report.judged_by = judged_by(&report.protocol);
    if let Some(file) = report.suite_file.take() {
        for by in &mut report.judged_by {
            *by = by.clone().with_suite_file(&file);
        }
    }
}

/// Every protocol whose agents the mock engine plays.
pub fn agent_protocols() -> Vec<&'static dyn AgentProtocol> {
    REGISTRY
        .iter()
        .filter_map(|p| p.capabilities().agents)
        .map(|served| served.agents)
        .collect()
}

/// Every protocol that writes sets of mock agents (`mock agents --protocol NAME`).
pub fn agent_set_protocols() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|p| p.capabilities().command_agent.is_some())
        .map(|p| p.name())
        .collect()
}

/// The built-in fleets' names, of every protocol.
pub fn preset_names() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .flat_map(|p| p.capabilities().fleet_presets)
        .map(|(name, _, _)| *name)
        .collect()
}

/// A built-in fleet by name, from any protocol: (file, YAML); the error lists the names.
/// `--preset NAME` names no fleet preset of any protocol: a usage error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--preset {name:?}: no such preset ({}known: {})",
    crate::text::nearest(name, known.iter().copied())
        .map(|n| format!("did you mean {n:?}? "))
        .unwrap_or_default(),
    known.join(", ")
)]
pub struct PresetError {
    pub name: String,
    pub known: Vec<&'static str>,
}

impl crate::error::LayerError for PresetError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

pub fn fleet_preset(name: &str) -> Result<(&'static str, &'static str), PresetError> {
    let all: Vec<_> = REGISTRY
        .iter()
        .flat_map(|p| p.capabilities().fleet_presets)
        .collect();
    all.iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, file, text)| (*file, *text))
        .ok_or_else(|| PresetError {
            name: name.to_string(),
            known: all.iter().map(|(n, _, _)| *n).collect(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let names = names();
        for name in &names {
            assert_eq!(find(name).map(|p| p.name()), Some(*name));
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name}");
        }
        assert!(find("nope").is_none());
    }

    #[test]
    fn every_schema_folder_is_a_registered_protocols() {
        for (id, file, _, owner) in schemas() {
            assert!(
                owner.is_some() || !file.contains('/'),
                "{id}: schemas/{file} is in no registered protocol's folder"
            );
        }
        for p in REGISTRY {
            if p.schema_dir().is_some() {
                assert!(
                    schemas().iter().any(|s| s.3 == Some(p.name())),
                    "{} names a schema folder with no schema",
                    p.name()
                );
            }
        }
    }

    /// Each protocol's spec is carried, its title is a line of the document (as a heading or
    /// not) and its version, when it names one, is in the text; every spec carried is one's.
    #[test]
    fn every_protocol_names_a_spec_carried_and_its_title_as_given() {
        for p in REGISTRY {
            let doc = p.spec();
            let text = doc
                .text()
                .unwrap_or_else(|| panic!("{}: specs/{} is not carried", p.name(), doc.file));
            assert!(
                text.lines()
                    .any(|l| l.trim_start_matches('#').trim() == doc.title),
                "{}: no line of specs/{} reads {:?}",
                p.name(),
                doc.file,
                doc.title
            );
            if let Some(version) = doc.version {
                assert!(text.contains(version), "{}: {version}", p.name());
            }
            assert_eq!(p.spec().sha256().len(), 64);
        }
        for (file, _) in crate::specs::EMBEDDED {
            assert!(
                REGISTRY.iter().any(|p| p.spec().file == *file),
                "specs/{file} is no protocol's spec"
            );
        }
        let both = judged_by("roundtable+execute-task+nope");
        assert_eq!(
            both.iter().map(|b| b.protocol.as_str()).collect::<Vec<_>>(),
            ["roundtable", "execute-task"]
        );
    }

    #[test]
    fn a_protocol_that_plays_agents_is_named_alike_in_both_places() {
        for p in REGISTRY {
            if let Some(served) = p.capabilities().agents {
                assert_eq!(served.agents.name(), p.name());
            }
        }
    }
}
