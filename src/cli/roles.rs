//! The commands whose subcommands or flags come from the registry: a protocol's own
//! subcommands for a role ([`RoleCommand`]: `probe NAME`, `lint WHAT`, `mock NAME`) and the flags
//! it adds to the engine's mock commands ([`ProtocolFlags`]), each parsed by clap from what the
//! protocol declares and run or read back by the protocol.

use clap::{ArgMatches, Args, FromArgMatches, Subcommand};

use std::path::PathBuf;

use crate::error::Error;
use crate::protocols::plugin::{MockFlags, MockJob, ProtocolCommand};
use crate::protocols::{self, Capabilities, ProbeJob, Protocol};
use crate::report::Exit;

/// A command whose subcommands come from the registry: one per protocol that declares one for
/// the role `R` (`probe NAME …`, `lint WHAT …`), with the flags it declares.
#[derive(Debug, Clone)]
pub struct RoleCommand<R> {
    /// The protocol whose subcommand it is.
    pub protocol: &'static str,
    /// The subcommand's name (`probe NAME`: the protocol's, or one of its other probes).
    pub command: String,
    /// Its flags, as clap parsed them from the protocol's command.
    pub matches: ArgMatches,
    role: std::marker::PhantomData<R>,
}

impl<R: Role> RoleCommand<R> {
    /// Runs the protocol's subcommand with the flags clap parsed.
    pub fn run(&self) -> Result<R::Output, Error> {
        let subcommand = R::subcommands(protocol(self.protocol)?)
            .into_iter()
            .find(|s| s.command().get_name() == self.command)
            .ok_or_else(|| Error::usage(format!("no {} for {}", self.command, self.protocol)))?;
        subcommand.run(&self.matches)
    }
}

/// A role a protocol may declare subcommands for: the ones it declares.
pub trait Role: std::fmt::Debug + Clone + Send + Sync + 'static {
    /// What the subcommand's run gives.
    type Output;

    fn subcommands(protocol: &dyn Protocol) -> Vec<&'static dyn ProtocolCommand<Self::Output>>;

    /// The subcommands' flags, as the command line shows them.
    fn commands(protocol: &dyn Protocol) -> Vec<clap::Command> {
        Self::subcommands(protocol)
            .iter()
            .map(|s| s.command())
            .collect()
    }
}

/// `probe NAME`: named for the protocol (or for what it judges: `probe orchestration`).
#[derive(Debug, Clone)]
pub struct ProbeRole;

impl Role for ProbeRole {
    type Output = ProbeJob;

    fn subcommands(protocol: &dyn Protocol) -> Vec<&'static dyn ProtocolCommand<ProbeJob>> {
        protocol.capabilities().probes.to_vec()
    }

    fn commands(protocol: &dyn Protocol) -> Vec<clap::Command> {
        Self::subcommands(protocol)
            .iter()
            .map(|s| TargetsArgs::augment_args(s.command()))
            .collect()
    }
}

/// `lint WHAT`: named for what is linted (`agents`).
#[derive(Debug, Clone)]
pub struct LintRole;

impl Role for LintRole {
    type Output = Exit;

    fn subcommands(protocol: &dyn Protocol) -> Vec<&'static dyn ProtocolCommand<Exit>> {
        protocol.capabilities().lint.into_iter().collect()
    }
}

/// `mock NAME`: a protocol's own mock command.
#[derive(Debug, Clone)]
pub struct MockRole;

impl Role for MockRole {
    type Output = MockJob;

    fn subcommands(protocol: &dyn Protocol) -> Vec<&'static dyn ProtocolCommand<MockJob>> {
        protocol.capabilities().mocks.to_vec()
    }
}

pub type ProbeCommand = RoleCommand<ProbeRole>;
pub type LintCommand = RoleCommand<LintRole>;
pub type MockProtocolCommand = RoleCommand<MockRole>;

/// A role's subcommands beside the command's own (`mock NAME` beside `mock agent`).
impl<R: Role> Subcommand for RoleCommand<R> {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        protocols::REGISTRY
            .iter()
            .flat_map(|p| R::commands(*p))
            .fold(cmd, clap::Command::subcommand)
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        RoleCommand::<R>::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        protocols::REGISTRY
            .iter()
            .any(|p| R::commands(*p).iter().any(|c| c.get_name() == name))
    }
}

/// The flags protocols add to one of the engine's mock commands (`mock agent`, `mock fleet`;
/// `C` picks which): each protocol's, in the registry's order, kept as clap parsed them for the
/// protocol to read back.
#[derive(Debug, Clone)]
pub struct ProtocolFlags<C> {
    pub matches: ArgMatches,
    command: std::marker::PhantomData<C>,
}

/// Which mock command's flags of a protocol's [`Capabilities`].
pub trait FlagsOf: std::fmt::Debug + Clone + Send + Sync + 'static {
    fn of(offers: &Capabilities) -> Option<MockFlags>;
}

/// `mock agent`'s.
#[derive(Debug, Clone)]
pub struct AgentFlags;

impl FlagsOf for AgentFlags {
    fn of(offers: &Capabilities) -> Option<MockFlags> {
        offers.mock_agent_flags
    }
}

/// `mock fleet`'s.
#[derive(Debug, Clone)]
pub struct FleetFlagsOf;

impl FlagsOf for FleetFlagsOf {
    fn of(offers: &Capabilities) -> Option<MockFlags> {
        offers.mock_fleet_flags
    }
}

impl<C: FlagsOf> Args for ProtocolFlags<C> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        protocols::REGISTRY
            .iter()
            .filter_map(|p| C::of(&p.capabilities()))
            .fold(cmd, |cmd, flags| (flags.augment)(cmd))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        ProtocolFlags::<C>::augment_args(cmd)
    }
}

impl<C: FlagsOf> FromArgMatches for ProtocolFlags<C> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(ProtocolFlags {
            matches: matches.clone(),
            command: std::marker::PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = ProtocolFlags::from_arg_matches(matches)?;
        Ok(())
    }
}

impl<C: FlagsOf> ProtocolFlags<C> {
    /// Refuses a flag another protocol than `protocol` added (see [`MockFlags::refuse_foreign`]).
    pub fn refuse_foreign(&self, protocol: &dyn Protocol) -> Result<(), Error> {
        MockFlags::refuse_foreign(protocol, &self.matches, C::of)
    }
}

impl<R: Role> FromArgMatches for RoleCommand<R> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let (name, sub) = matches
            .subcommand()
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        let protocol = protocols::REGISTRY
            .iter()
            .find(|p| R::commands(**p).iter().any(|c| c.get_name() == name))
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(RoleCommand {
            protocol: protocol.name(),
            command: name.to_string(),
            matches: sub.clone(),
            role: std::marker::PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = RoleCommand::from_arg_matches(matches)?;
        Ok(())
    }
}

impl<R: Role> Args for RoleCommand<R> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        protocols::REGISTRY
            .iter()
            .flat_map(|p| R::commands(*p))
            .fold(cmd, clap::Command::subcommand)
            .subcommand_required(true)
            // `agent-tck probe` alone: the list of probes, as `agent-tck mock` gives its own.
            .arg_required_else_help(true)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        RoleCommand::<R>::augment_args(cmd)
    }
}

// `probe NAME --targets FILE …`: the flags of a run over many targets, in every probe's help.
// Such a run is taken apart before clap parses it (`crate::targets`); these declarations
// document the flags and complete them. (A plain comment: clap would make a doc comment every
// probe command's description, replacing the protocol's own.)
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Many targets")]
pub struct TargetsArgs {
    /// Probe every target of a YAML list (name, url, key, flags): a report per target in
    /// --out-dir, a summary matrix, and --json/--junit/--html for all of them merged.
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// With --targets: only the share K of N of the list (by a hash of each name).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// With --targets: how many targets are probed at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub target_concurrency: usize,
    /// With --targets: where each target's report goes (NAME.json; .xml/.html too with
    /// --full-reports when --junit/--html are asked). A run without --resume first removes the
    /// reports its targets left there.
    #[arg(long, value_name = "DIR", default_value = "agent-tck-targets")]
    pub out_dir: PathBuf,
    /// With --targets: skip the targets whose report in --out-dir is complete and of this
    /// version and flags (an interrupted run finishes where it stopped); they count in the
    /// matrix, the exit status and the merged report.
    #[arg(long)]
    pub resume: bool,
    /// With --targets: keep each target's report whole (by default a passing or skipped case
    /// keeps its verdict, evidence and a short message, not its exchange), and write its
    /// JUnit/HTML files in --out-dir when --junit/--html are asked.
    #[arg(long)]
    pub full_reports: bool,
}

/// The registered protocol `name` (clap has checked it).
pub(super) fn protocol(name: &str) -> Result<&'static dyn Protocol, Error> {
    protocols::find(name).ok_or_else(|| {
        Error::usage(format!(
            "--protocol {name:?}: no such protocol (known: {})",
            protocols::names().join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line's code names no protocol, nor a flag a protocol adds to a mock command:
    /// what a protocol offers comes from the registry. (Help texts, in doc comments, may name
    /// them.)
    #[test]
    fn the_command_line_names_no_protocol() {
        let files = [
            ("args.rs", include_str!("args.rs")),
            ("behaviors.rs", include_str!("behaviors.rs")),
            ("completions.rs", include_str!("completions.rs")),
            ("dispatch.rs", include_str!("dispatch.rs")),
            ("exit.rs", include_str!("exit.rs")),
            ("mock.rs", include_str!("mock.rs")),
            ("mod.rs", include_str!("mod.rs")),
            ("roles.rs", include_str!("roles.rs")),
            ("signal.rs", include_str!("signal.rs")),
        ];
        let mut words: Vec<String> = Vec::new();
        for p in protocols::REGISTRY {
            words.push(p.name().to_string());
            words.push(p.name().replace('-', "_"));
            let offers = p.capabilities();
            for flags in [offers.mock_agent_flags, offers.mock_fleet_flags]
                .into_iter()
                .flatten()
            {
                let declared = (flags.augment)(clap::Command::new("flags"));
                for arg in declared.get_arguments() {
                    let long = arg.get_long().unwrap_or(arg.get_id().as_str());
                    words.push(format!("--{long}"));
                    words.push(format!("\"{long}\""));
                    // A field of that name (`args.mode`), not a method (`.next()`).
                    words.push(format!(".{long} "));
                    words.push(format!(".{long},"));
                    words.push(format!(".{long})"));
                    words.push(format!(".{long};"));
                    words.push(format!(".{long}."));
                }
            }
        }
        // The agent standard's `--mode` and the Librarian's `--registry` at least.
        assert!(
            words.iter().filter(|w| w.starts_with("--")).count() >= 2,
            "{words:?}"
        );
        let mut found = Vec::new();
        for (file, text) in files {
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for word in &words {
                    if code.contains(word.as_str()) {
                        found.push(format!("src/cli/{file}:{}: {word}", n + 1));
                    }
                }
            }
        }
        assert!(found.is_empty(), "{found:#?}");
    }
}
