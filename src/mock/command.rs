//! What the mock commands (`mock agent`, `mock fleet`) do with their flags once the command
//! line has checked them: the fleet file read (a built-in one checked for the variables it
//! reads), its protocol peeked at, its platform pointed elsewhere; the first
//! words of an agent served over stdio. Generic over protocols: the command line resolves them
//! in the registry.

use std::path::Path;

use super::driver::PlatformSpec;
use crate::error::Error;
use crate::report::output::OutputArgs;
use crate::transport::http::BaseUrl;

/// The fleet file `mock fleet` runs: its name (a path, or a built-in fleet's file) and its text.
pub struct FleetText {
    pub source: String,
    pub text: String,
}

impl FleetText {
    /// The file at `path` (`--config`).
    pub fn read(path: &Path) -> Result<FleetText, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::usage(format!("{}: cannot read: {e}", path.display())))?;
        Ok(FleetText {
            source: path.display().to_string(),
            text,
        })
    }

    /// The built-in fleet `name` (`--preset`), its file `source`. Unless it is only to be
    /// printed (`as_written`), a variable it reads that the environment lacks is refused here:
    /// the file's usual tip (give a default) cannot be followed in a file built into the binary,
    /// so this one says to set it or to write the preset out (--print-file) and edit it. (The
    /// fleet substitutes again when it parses: same result.)
    pub fn preset(
        name: &str,
        source: &str,
        text: &str,
        as_written: bool,
    ) -> Result<FleetText, Error> {
        if !as_written {
            if let Err(crate::text::DataFileError::UnsetVariable {
                file,
                line,
                name: var,
            }) = crate::text::substitute_env(source, text)
            {
                return Err(Error::usage(format!(
                    "{file}:{line}: ${{{var}}}: the environment variable {var} is not set (the \
                     built-in preset {name} reads it: set it, as in `{var}=… agent-tck mock \
                     fleet --preset {name} …`, or write the preset out, `agent-tck mock fleet \
                     --preset {name} --print-file > fleet.yaml`, edit it and give it with \
                     --config fleet.yaml)"
                )));
            }
            // Any other fault of a built-in file is the fleet's parse to report.
        }
        Ok(FleetText {
            source: source.to_string(),
            text: text.to_string(),
        })
    }

    /// The `protocol:` it names, if it parses that far.
    pub fn protocol(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Peek {
            protocol: Option<String>,
        }
        serde_saphyr::from_str::<Peek>(&self.text).ok()?.protocol
    }
}

/// The fleet's platform (of the file `source`) as the flags override it: `--platform-url`,
/// `--deliberation-deadline`; a flag with nothing in the file to override is a usage error.
pub fn override_platform(
    platform: &mut Option<PlatformSpec>,
    url: Option<&str>,
    deliberation_deadline: Option<&str>,
    source: &str,
) -> Result<(), Error> {
    if let Some(url) = url {
        let spec = platform.as_mut().ok_or_else(|| {
            Error::usage(format!(
                "--platform-url: {source} has no platform: section to point at it (add one \
                 with register: and trigger:)"
            ))
        })?;
        BaseUrl::parse(url).map_err(|e| Error::usage(format!("--platform-url: {e}")))?;
        spec.url = url.to_string();
    }
    if let Some(deadline) = deliberation_deadline {
        crate::units::parse_duration(deadline)
            .map_err(|e| Error::usage(format!("--deliberation-deadline: {e}")))?;
        let trigger = platform
            .as_mut()
            .and_then(|p| p.trigger.as_mut())
            .ok_or_else(|| {
                Error::usage(format!(
                    "--deliberation-deadline: {source} has no platform.trigger section, so no \
                     deliberation to wait for"
                ))
            })?;
        trigger.deadline = Some(deadline.to_string());
    }
    Ok(())
}

/// What a stdio mock says first on stderr: where its report goes. Harnesses often discard an
/// agent's stderr, where the readable report goes when stdin ends; a report file survives that.
pub fn stdio_report_notice(output: &OutputArgs) -> Vec<String> {
    let files: Vec<String> = [
        ("--json", &output.json),
        ("--junit", &output.junit),
        ("--html", &output.html),
    ]
    .into_iter()
    .filter_map(|(flag, path)| {
        let path = path.as_ref()?;
        let shown = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        Some(format!("{flag} {}", shown.display()))
    })
    .collect();
    let first = "agent-tck mock agent (stdio): the readable report goes to stderr when stdin ends";
    if files.is_empty() {
        vec![
            first.to_string(),
            "warning: no report file asked for: the harness may discard stderr; add --json FILE"
                .to_string(),
        ]
    } else {
        vec![format!(
            "{first}; the report files, rewritten after each answer: {}",
            files.join(", ")
        )]
    }
}
