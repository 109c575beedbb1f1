//! The targets file (`targets.yaml`), `--shard K/N`, and the run-wide flags taken out of a
//! probe's command line.

use std::ffi::OsString;
use std::path::Path;

use serde::Deserialize;
use serde_saphyr::Spanned;

/// The flags that make a probe a run over many targets (taken out of each target's command).
pub const FLAGS: [&str; 4] = ["--targets", "--shard", "--target-concurrency", "--out-dir"];
/// The run-wide flags without a value: `--resume` (skip the targets whose report in --out-dir
/// is complete and of this version and flags) and `--full-reports` (each target's report keeps
/// every case whole, and its JUnit and HTML files are written too).
pub const SWITCHES: [&str; 2] = ["--resume", "--full-reports"];
/// The report flags: each target gets its own files, these name the merged report.
pub(super) const REPORT_FLAGS: [&str; 4] = ["--json", "--junit", "--ctrf", "--html"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetsFile {
    targets: Vec<TargetEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetEntry {
    name: Spanned<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
}

/// Why a targets file or `--shard` does not read: usage errors (a file or a flag to fix).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetsError {
    #[error("{path}: {cause}")]
    Unreadable { path: String, cause: String },
    /// `FILE:LINE: what is wrong`.
    #[error("{0}")]
    Invalid(String),
    /// `--shard K/N` that is not one: what is wrong with it.
    #[error("--shard {text:?}: {what}")]
    Shard { text: String, what: &'static str },
}

impl crate::error::LayerError for TargetsError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// One target of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    /// The flags it adds to the probe's command line.
    pub args: Vec<String>,
}

/// Reads a targets file (`${ENV}` substituted); errors name the file and line.
pub fn read(path: &Path) -> Result<Vec<Target>, TargetsError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TargetsError::Unreadable {
        path: source.clone(),
        cause: e.to_string(),
    })?;
    parse(&source, &text)
}

/// Parses a targets file's `text`, read from `source`.
pub fn parse(source: &str, text: &str) -> Result<Vec<Target>, TargetsError> {
    targets(source, text).map_err(TargetsError::Invalid)
}

fn targets(source: &str, text: &str) -> Result<Vec<Target>, String> {
    let file: TargetsFile = crate::text::read_yaml_with_env(source, text)?;
    let mut targets: Vec<Target> = Vec::new();
    for e in file.targets {
        let at = format!("{source}:{}", e.name.referenced.line());
        if !crate::mock::fleet::valid_name(&e.name.value) {
            return Err(format!(
                "{at}: name {:?} must match ^[A-Za-z][A-Za-z0-9_-]*$ (it names the target's report files)",
                e.name.value
            ));
        }
        if targets.iter().any(|t| t.name == e.name.value) {
            return Err(format!("{at}: the name {} is used twice", e.name.value));
        }
        let mut args = Vec::new();
        if let Some(url) = e.url {
            args.extend(["--url".to_string(), url]);
        }
        if let Some(key) = e.key {
            args.extend(["--api-key".to_string(), key]);
        }
        if let Some(bad) = e
            .flags
            .iter()
            .find(|f| run_wide(f.split_once('=').map_or(f.as_str(), |(flag, _)| flag)))
        {
            return Err(format!(
                "{at}: {bad} belongs to the whole run, not to one target's flags"
            ));
        }
        args.extend(e.flags);
        targets.push(Target {
            name: e.name.value,
            args,
        });
    }
    if targets.is_empty() {
        return Err(format!("{source}: no targets"));
    }
    Ok(targets)
}

/// `K/N` (1 ≤ K ≤ N).
pub fn parse_shard(text: &str) -> Result<(u64, u64), TargetsError> {
    let wrong = |what| TargetsError::Shard {
        text: text.to_string(),
        what,
    };
    let (k, n) = text.split_once('/').ok_or(wrong("K/N, e.g. 2/8"))?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| wrong("K is not a number"))?,
        n.trim().parse().map_err(|_| wrong("N is not a number"))?,
    );
    if n == 0 || k == 0 || k > n {
        return Err(wrong("K from 1 to N, and N at least 1"));
    }
    Ok((k, n))
}

/// Whether the shard `k` of `n` holds `name`.
pub fn in_shard(name: &str, (k, n): (u64, u64)) -> bool {
    crate::text::fnv1a(name) % n == k - 1
}

/// Whether `args` (after the program name) are a probe over a targets list.
pub fn wanted(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == "probe")
        && args
            .iter()
            .any(|a| a == "--targets" || a.to_string_lossy().starts_with("--targets="))
}

/// Whether `flag` belongs to the whole run, not to one target's command line.
fn run_wide(flag: &str) -> bool {
    FLAGS.contains(&flag) || REPORT_FLAGS.contains(&flag) || SWITCHES.contains(&flag)
}

/// A flag and its value (empty for a switch).
pub(super) type Flag = (String, String);

/// The run-wide flags taken out of `args`: (the flags, the rest).
pub(super) fn split(args: &[OsString]) -> Result<(Vec<Flag>, Vec<OsString>), String> {
    let mut taken = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_string_lossy().into_owned();
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if a.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if SWITCHES.contains(&flag.as_str()) {
            if inline.is_some() {
                return Err(format!("{flag} takes no value"));
            }
            taken.push((flag, String::new()));
        } else if run_wide(&flag) {
            let value = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i)
                        .map(|v| v.to_string_lossy().into_owned())
                        .ok_or_else(|| format!("{flag} needs a value"))?
                }
            };
            taken.push((flag, value));
        } else {
            rest.push(args[i].clone());
        }
        i += 1;
    }
    Ok((taken, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_list_once() {
        let names: Vec<String> = (0..200).map(|i| format!("agent-{i}")).collect();
        for n in [1, 3, 8] {
            let mut seen = 0;
            for k in 1..=n {
                let share = names.iter().filter(|x| in_shard(x, (k, n))).count();
                assert!(n == 1 || share < names.len(), "{k}/{n}");
                seen += share;
            }
            assert_eq!(seen, names.len(), "{n} shards");
        }
        assert!(parse_shard("0/3").is_err());
        assert!(parse_shard("4/3").is_err());
        assert_eq!(
            parse_shard("2").unwrap_err().to_string(),
            "--shard \"2\": K/N, e.g. 2/8"
        );
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
    }

    #[test]
    fn run_wide_flags_are_taken_out_of_the_command() {
        let args: Vec<OsString> = [
            "agent-tck",
            "probe",
            "roundtable",
            "--targets",
            "t.yaml",
            "--shard=1/2",
            "--timeout",
            "3s",
            "--json",
            "all.json",
            "--resume",
        ]
        .map(OsString::from)
        .to_vec();
        assert!(wanted(&args));
        let (taken, rest) = split(&args).unwrap();
        assert_eq!(
            taken,
            [
                ("--targets".into(), "t.yaml".into()),
                ("--shard".into(), "1/2".into()),
                ("--json".into(), "all.json".into()),
                ("--resume".into(), String::new()),
            ]
        );
        assert_eq!(
            rest,
            ["agent-tck", "probe", "roundtable", "--timeout", "3s"].map(OsString::from)
        );
        let switch_with_a_value = ["agent-tck", "probe", "x", "--resume=yes"].map(OsString::from);
        assert_eq!(
            split(&switch_with_a_value).unwrap_err(),
            "--resume takes no value"
        );
    }
}
