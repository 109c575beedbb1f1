//! Shell completion, tried in real shells: the script `agent-tck completions SHELL` prints is
//! loaded into bash, zsh and fish, and a line is completed as a TAB would complete it — words
//! past the first (subcommands, flags), behaviour and preset names (from the catalogue and the
//! registry), and never the internal `mock linger`.
//!
//! Bash: the completion function `complete -p` names is called with COMP_WORDS and COMP_CWORD
//! set, and COMPREPLY printed. Fish: `complete -C LINE`. Zsh: its completion runs only inside its
//! line editor, so an interactive `zsh -f` is started in a pseudo-terminal (zsh's own zpty
//! module), the line is typed with a TAB, and `compadd` (through which every completion function
//! offers its matches) is wrapped to print what it was given.
//!
//! A shell missing on this machine is skipped saying so loudly; under CI (CI=true) it fails:
//! `.ci/run` installs all three.

use std::path::Path;
use std::time::Duration;

use agent_tck::protocols::REGISTRY;

use crate::support::{run_within, tck, text, TempDir};

/// A busy 2-core machine starts a shell and loads a 2,000-line script in well under this.
const WITHIN: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Drives bash's completion function for the words given ($2 on): prints COMPREPLY, a word a
/// line.
const BASH_DRIVER: &str = r#"
source "$1" || exit 3
shift
complete=$(complete -p agent-tck) || exit 4
function=$(sed -E 's/.* -F ([^ ]+) .*/\1/' <<<"$complete")
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
"$function" agent-tck "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"#;

/// Types `$2` and a TAB into an interactive zsh (in a pseudo-terminal) that loaded the script
/// `$1` with compinit; prints what `compadd` was given, a match a line. The markers are written
/// split (`"<""offered>"`) so that the terminal's echo of the setup never matches them.
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PROMPT=
autoload -Uz compinit; compinit -u -d '$3'
source '$1'
typeset -aU offered
compadd () {
  local -a got
  builtin compadd -O got \"\$@\"
  offered+=(\"\${got[@]}\")
  builtin compadd \"\$@\"
}
offered-print () { print -rl -- '<''offered>' \"\${offered[@]}\" '</''offered>' }
comppostfuncs=(offered-print exit)
zstyle ':completion:*' insert-tab false
bindkey '^I' complete-word
print -r -- '<''ready>'"
zpty -r z out '*<ready>*' || exit 4
zpty -w z "$2"$'\t'
zpty -r z out '*</offered>*' || exit 5
out=${out//$'\r'/}
print -r -- "${${out##*<offered>$'\n'}%%</offered>*}"
"#;

impl Shell {
    fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }

    /// Whether the shell (and for zsh its zpty module) is here to run.
    fn present(self) -> bool {
        let check = match self {
            Shell::Zsh => "zmodload zsh/zpty",
            _ => "true",
        };
        let name = self.name();
        crate::support::shell_succeeds(&format!(
            "command -v {name} >/dev/null && {name} -c '{check}' </dev/null"
        ))
    }

    /// What the shell offers at the end of `line` (a trailing space: a new word), once `script`
    /// is loaded.
    fn complete(self, script: &Path, dir: &TempDir, line: &str) -> Vec<String> {
        let mut command = std::process::Command::new(self.name());
        match self {
            Shell::Bash => {
                let mut words: Vec<&str> = line.split_whitespace().collect();
                if line.ends_with(' ') {
                    words.push("");
                }
                command
                    .args(["--norc", "--noprofile", "-c", BASH_DRIVER, "bash"])
                    .arg(script)
                    .args(words);
            }
            Shell::Zsh => {
                command
                    .args(["-f", "-c", ZSH_DRIVER, "zsh"])
                    .arg(script)
                    .arg(line)
                    .arg(dir.path("zcompdump"));
            }
            Shell::Fish => {
                command.args(["--no-config", "-c"]).arg(format!(
                    "source {}; complete -C {}",
                    fish_quote(&script.display().to_string()),
                    fish_quote(line)
                ));
            }
        }
        let out = run_within(command, WITHIN);
        assert!(
            out.status.success(),
            "{} completing {line:?}: {}",
            self.name(),
            text(&out)
        );
        // Fish prints `MATCH<TAB>DESCRIPTION`.
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    }
}

fn fish_quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The shells here; each one missing is named on stderr, and fails the test under CI.
fn shells() -> Vec<Shell> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    SHELLS
        .into_iter()
        .filter(|shell| {
            let present = shell.present();
            if !present {
                assert!(
                    !ci,
                    "{} is not installed: CI must test completions in it (.ci/run installs it)",
                    shell.name()
                );
                eprintln!(
                    "\n*** SKIPPED: completions in {} not tested: the shell (or zsh's zpty \
                     module) is not installed here ***\n",
                    shell.name()
                );
            }
            present
        })
        .collect()
}

/// Each shell here with its script written to `dir`.
fn loaded(dir: &TempDir) -> Vec<(Shell, std::path::PathBuf)> {
    shells()
        .into_iter()
        .map(|shell| {
            let out = tck(&["completions", shell.name()]);
            assert!(out.status.success(), "{}", text(&out));
            let path = dir.0.join(format!("agent-tck.{}", shell.name()));
            std::fs::write(&path, &out.stdout).unwrap();
            (shell, path)
        })
        .collect()
}

/// Asserts that `line` completes, in every shell, to exactly `expected` (in any order).
fn assert_offers(
    scripts: &[(Shell, std::path::PathBuf)],
    dir: &TempDir,
    line: &str,
    expected: &[&str],
) {
    for (shell, script) in scripts {
        let mut offered = shell.complete(script, dir, line);
        offered.sort();
        offered.dedup();
        let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(offered, want, "{} completing {line:?}", shell.name());
    }
}

#[test]
fn words_past_the_first_complete_in_bash_zsh_and_fish() {
    let dir = TempDir::new("completions-words");
    let scripts = loaded(&dir);
    // A subcommand of a subcommand, and a flag of a probe: bash once offered nothing past the
    // first word.
    assert_offers(&scripts, &dir, "agent-tck probe ro", &["roundtable"]);
    assert_offers(
        &scripts,
        &dir,
        "agent-tck probe roundtable --ur",
        &["--url"],
    );
    assert_offers(
        &scripts,
        &dir,
        "agent-tck mock agent --protocol exe",
        &["execute-task"],
    );
    // Every registered probe, none hard-coded here.
    for (shell, script) in &scripts {
        let offered = shell.complete(script, &dir, "agent-tck probe ");
        for protocol in REGISTRY {
            for probe in protocol.capabilities().probes {
                let name = probe.command().get_name().to_string();
                assert!(
                    offered.contains(&name),
                    "{} completing `agent-tck probe `: {offered:?} lacks {name}",
                    shell.name()
                );
            }
        }
    }
}

#[test]
fn behaviours_and_presets_complete_from_the_catalogue_and_the_registry() {
    let dir = TempDir::new("completions-values");
    let scripts = loaded(&dir);
    // Every catalogue name that starts so, whatever protocol plays it.
    let behaviours = agent_tck::cli::catalogue();
    let slow: Vec<&str> = behaviours
        .iter()
        .map(|row| row.behavior.name)
        .chain(
            REGISTRY
                .iter()
                .flat_map(|p| p.capabilities().behaviors)
                .map(|b| b.name),
        )
        .map(|name| name.split([':', '[']).next().unwrap_or(name))
        .filter(|name| name.starts_with("sl"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(slow.contains(&"slow"), "{slow:?}");
    assert_offers(&scripts, &dir, "agent-tck mock agent --behavior sl", &slow);
    let presets: Vec<&str> = REGISTRY
        .iter()
        .flat_map(|p| p.capabilities().fleet_presets)
        .map(|(name, _, _)| *name)
        .collect();
    assert!(presets.len() >= 2, "{presets:?}");
    assert_offers(&scripts, &dir, "agent-tck mock fleet --preset ", &presets);
    assert_offers(
        &scripts,
        &dir,
        "agent-tck mock fleet --preset librarian-c",
        &["librarian-chaos"],
    );
}

/// `mock linger`, which only the mock runs, is offered by no shell, nor named in any script.
#[test]
fn the_internal_subcommand_is_not_offered() {
    let dir = TempDir::new("completions-hidden");
    for shell in SHELLS {
        let out = tck(&["completions", shell.name()]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            !text(&out).contains("linger"),
            "the {} script names `mock linger`",
            shell.name()
        );
    }
    let scripts = loaded(&dir);
    for (shell, script) in &scripts {
        let offered = shell.complete(script, &dir, "agent-tck mock ");
        assert!(
            offered.contains(&"agent".to_string()),
            "{}: {offered:?}",
            shell.name()
        );
        assert!(
            !offered.contains(&"linger".to_string()),
            "{}: {offered:?}",
            shell.name()
        );
    }
}

/// Where to install each script: `completions --help` gives the README's per-user lines, word
/// for word (the README is the source; a system path in one and a user's in the other misled).
#[test]
fn the_help_installs_the_scripts_where_the_readme_does() {
    let readme = include_str!("../../README.md");
    let paragraph = readme
        .split_once("agent-tck completions bash|zsh|fish|elvish|powershell`, installed as")
        .expect("the README's paragraph on completions")
        .1;
    // The bullets, each joined with its continuation lines.
    let mut bullets: Vec<String> = Vec::new();
    for line in paragraph
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
    {
        match line.strip_prefix("- ") {
            Some(bullet) => bullets.push(bullet.to_string()),
            None => {
                let last = bullets.last_mut().expect("a bullet first");
                last.push(' ');
                last.push_str(line.trim());
            }
        }
    }
    let shells: Vec<&str> = bullets
        .iter()
        .map(|b| b.split_once(':').unwrap().0)
        .collect();
    assert_eq!(shells, ["bash", "zsh", "fish"]);
    let out = tck(&["completions", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    // Wrapped as the terminal's width asks: compared word by word.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = words(&text(&out));
    for bullet in &bullets {
        assert!(
            help.contains(&format!("- {}", words(bullet))),
            "{bullet}\n{help}"
        );
    }
    assert!(!help.contains("/etc/"), "{help}");
}
