//! `--resume`: a target whose report in --out-dir is complete and was made by this version of
//! the kit with the same command line is not run again; its report counts as if it had just
//! been made.
//!
//! What made a report is its `fingerprint` ([`fingerprint`]): a hash of the target's command
//! line — the protocol, every flag and value of the run's command line and of the target's
//! entry (`url:`, `flags:`), whether reports are compacted, which report files each target gets
//! — but not the run-wide flags (`--targets`, `--shard`, `--target-concurrency`, `--out-dir`,
//! `--resume`, the merged `--json`/`--junit`/`--html`: they change what is run or where, not a
//! target's verdict) nor the value of a secret (a flag named for a key, a token, a password, a
//! credential, a cookie or auth, and a header): a key never appears in a report, hashed or not.
//! Only whether one was given counts. The environment (`AGENT_TCK_API_KEY`) is not covered.
//!
//! A target's report carries a fingerprint only when it was written after its probe finished
//! (and written whole: a temporary file renamed), so a report cut short by Ctrl-C, by a crash or
//! by a kill is never resumed, nor one of an older kit that wrote none.

use std::ffi::OsString;
use std::path::Path;

use crate::report::Report;

/// The words that make a flag's value a secret, in its name (`--api-key`, `--platform-token`).
const SECRET_WORDS: [&str; 7] = [
    "key",
    "token",
    "secret",
    "password",
    "credential",
    "cookie",
    "auth",
];

/// Flags whose value may carry a secret whatever their name says (`-H 'Authorization: …'`).
const SECRET_FLAGS: [&str; 2] = ["--header", "-H"];

/// Put for a secret's value in what the fingerprint covers.
const SECRET: &str = "<secret>";

/// What a run's command line makes of every target, beside the target's own flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Made<'a> {
    /// `--full-reports`: every case whole (else compacted).
    pub full: bool,
    /// The per-target report files written besides the JSON one (`--junit`, `--html`).
    pub files: &'a [&'a str],
}

/// The fingerprint of a target's command line `argv` (the program name first, then the probe,
/// its flags and the target's, without the run-wide flags; see the module's doc for what it
/// covers): 16 hex digits.
pub(super) fn fingerprint(argv: &[OsString], made: Made) -> String {
    format!("{:016x}", crate::text::fnv1a(&covered(argv, made)))
}

/// The text the fingerprint hashes: every argument after the program name, NUL-separated, each
/// secret's value replaced by `<secret>` (wherever else it appears too).
fn covered(argv: &[OsString], made: Made) -> String {
    let args: Vec<String> = argv
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut secrets: Vec<&str> = Vec::new();
    let mut shown: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        match a.split_once('=').filter(|_| a.starts_with("--")) {
            Some((flag, value)) if secret_flag(flag) => {
                secrets.push(value);
                shown.push(format!("{flag}={SECRET}"));
            }
            // A value that is a flag is none (clap takes `--api-key=--x` only inline).
            _ if secret_flag(a) && args.get(i + 1).is_some_and(|v| !v.starts_with("--")) => {
                secrets.push(&args[i + 1]);
                shown.extend([a.clone(), SECRET.to_string()]);
                i += 1;
            }
            _ => shown.push(a.clone()),
        }
        i += 1;
    }
    // A secret given to one flag and repeated in another (an `--exec` command line that passes
    // the key on): hidden there too. Longest first, so that no part of one is left.
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for arg in &mut shown {
        for s in &secrets {
            if arg.contains(s) {
                *arg = arg.replace(s, SECRET);
            }
        }
    }
    shown.push(format!(
        "reports: {}, files: json {}",
        if made.full { "full" } else { "compact" },
        made.files.join(" ")
    ));
    shown.join("\0")
}

fn secret_flag(flag: &str) -> bool {
    let name = flag.trim_start_matches('-').to_ascii_lowercase();
    flag.starts_with('-')
        && (SECRET_FLAGS.contains(&flag) || SECRET_WORDS.iter().any(|w| name.contains(w)))
}

/// Why a target's report in --out-dir is not resumed and the target is run again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stale {
    /// No report: the target was not done (not a reason worth a line).
    Missing,
    /// It does not read back as a report (cut short, garbled, not schema-valid).
    Unreadable(String),
    /// Made by another version of the kit.
    Version(String),
    /// Written without a fingerprint: by an older kit, or outside a run over targets.
    Unmarked,
    /// Made with another command line.
    Flags,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stale::Missing => write!(f, "no report"),
            Stale::Unreadable(why) => write!(f, "its report does not read back ({why})"),
            Stale::Version(v) => write!(
                f,
                "its report is of agent-tck {v}, this is {}",
                crate::VERSION
            ),
            Stale::Unmarked => write!(
                f,
                "its report has no fingerprint (an older agent-tck, or not a run over --targets)"
            ),
            Stale::Flags => write!(f, "its report was made with other flags"),
        }
    }
}

/// The report at `path` when it may stand for the target's run: complete, of this version,
/// with `fingerprint`.
pub(super) fn resumable(path: &Path, fingerprint: &str) -> Result<Report, Stale> {
    if !path.exists() {
        return Err(Stale::Missing);
    }
    let report = crate::report::tools::read(path).map_err(|e| {
        // The error names the file; the console line names the target already.
        let shown = e.to_string();
        let prefix = format!("{}: ", path.display());
        Stale::Unreadable(shown.strip_prefix(&prefix).unwrap_or(&shown).to_string())
    })?;
    if report.version != crate::VERSION {
        return Err(Stale::Version(report.version));
    }
    match &report.fingerprint {
        None => Err(Stale::Unmarked),
        Some(f) if f != fingerprint => Err(Stale::Flags),
        Some(_) => Ok(report),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Made = Made {
        full: true,
        files: &[],
    };

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_secret_s_value_is_not_covered_only_that_one_was_given() {
        let key = "s3cret-key-0123";
        let args = argv(&[
            "agent-tck",
            "probe",
            "p",
            "--url",
            "http://a",
            "--api-key",
            key,
            "--platform-token=tok-999",
            "--exec",
            &format!("agent --api-key {key}"),
            "-H",
            "Authorization: Bearer zzz",
        ]);
        let text = covered(&args, FULL);
        for secret in [key, "tok-999", "zzz"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert_eq!(
            text.split('\0').collect::<Vec<_>>(),
            [
                "probe",
                "p",
                "--url",
                "http://a",
                "--api-key",
                "<secret>",
                "--platform-token=<secret>",
                "--exec",
                "agent --api-key <secret>",
                "-H",
                "<secret>",
                "reports: full, files: json ",
            ]
        );
        // Another key: the same fingerprint; another flag, another report form: not.
        let other_key: Vec<OsString> = args
            .iter()
            .map(|a| OsString::from(a.to_string_lossy().replace(key, "other-key-4567")))
            .collect();
        assert_eq!(fingerprint(&args, FULL), fingerprint(&other_key, FULL));
        let mut more = args.clone();
        more.extend(argv(&["--timeout", "3s"]));
        assert_ne!(fingerprint(&args, FULL), fingerprint(&more, FULL));
        let compact = Made {
            full: false,
            files: &[],
        };
        assert_ne!(fingerprint(&args, FULL), fingerprint(&args, compact));
        // The program's path is not covered (the version is, apart).
        let mut moved = args.clone();
        moved[0] = "/opt/bin/agent-tck".into();
        assert_eq!(fingerprint(&args, FULL), fingerprint(&moved, FULL));
        assert_eq!(fingerprint(&args, FULL).len(), 16);
    }
}
