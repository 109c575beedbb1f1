//! `agent-tck completions SHELL`: clap_complete's script for the command tree ([`Cli::command`],
//! which lacks the internal `mock linger`), mended where clap_complete gets it wrong.

use clap::CommandFactory;
use clap_complete::Shell;

use super::args::Cli;

/// The name the scripts complete.
pub const BIN: &str = "agent-tck";

/// The completion script for `shell`.
pub fn script(shell: Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    match shell {
        Shell::Bash => mend_bash(&text, BIN),
        _ => text,
    }
}

/// clap_complete's bash script names the state it is in after each word (`agent__tck`, then
/// `agent__tck__subcmd__probe`, …): its loop over the words escapes the program name's hyphens
/// as `__`, but the case labels it then matches the state against escape them as the subcommand
/// separator (`agent__subcmd__tck__subcmd__probe)`), so that no label past the program itself
/// matches and nothing after the first word completes (clap issues 6421 and 6529, open up to
/// clap_complete 4.6.11, the newest there is). The labels are respelled as the loop spells
/// them; a script without the fault comes out unchanged.
pub fn mend_bash(script: &str, bin: &str) -> String {
    let wrong = bin.replace('-', "__subcmd__");
    let right = bin.replace('-', "__");
    if wrong == right {
        return script.to_string();
    }
    script
        .split_inclusive('\n')
        .map(|line| {
            let label = line.trim_start();
            let rest = label.strip_prefix(&wrong).filter(|rest| {
                (rest.starts_with("__subcmd__") || rest.starts_with(')'))
                    && rest.trim_end().ends_with(')')
            });
            match rest {
                Some(rest) => {
                    let indent = &line[..line.len() - label.len()];
                    format!("{indent}{right}{rest}")
                }
                None => line.to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_labels_are_spelled_as_the_loop_spells_the_state() {
        let script = script(Shell::Bash);
        assert!(
            !script.contains("agent__subcmd__tck"),
            "a label clap_complete misspells is left"
        );
        // Each label a state reaches has its arm, and the other way round.
        for state in [
            "agent__tck__subcmd__probe",
            "agent__tck__subcmd__mock__subcmd__agent",
        ] {
            assert!(script.contains(&format!("cmd=\"{state}\"")), "{state}");
            assert!(script.contains(&format!("        {state})\n")), "{state}");
        }
        // A name without a hyphen, or a line that is no label, is left alone.
        assert_eq!(
            mend_bash("    tool__subcmd__x)\n", "tool"),
            "    tool__subcmd__x)\n"
        );
        assert_eq!(
            mend_bash("  a__subcmd__b__subcmd__c)\n  echo a__subcmd__b\n", "a-b"),
            "  a__b__subcmd__c)\n  echo a__subcmd__b\n"
        );
    }
}
