//! The specs the kit judges by, carried in the binary (`specs/*.md`, embedded by build.rs), and
//! what a report records of the one it judged by ([`JudgedBy`]): the document's title and file,
//! its version or date as the document gives it (most give none, and a report says so), the
//! SHA-256 of the text carried, and the suite's own version. A protocol names its document
//! ([`SpecDoc`], through its plug-in); the command line stamps each report with it.

use serde::{Deserialize, Serialize};

/// Every spec carried: (file under `specs/`, text), sorted by file.
pub static EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/specs.rs"));

/// A protocol's spec as the protocol names it: the file under `specs/`, its title as the
/// document gives it, and its version or date as the document gives it (None: it gives none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecDoc {
    pub file: &'static str,
    pub title: &'static str,
    pub version: Option<&'static str>,
}

impl SpecDoc {
    /// The text carried (None: no such file under `specs/`, which a test rules out).
    pub fn text(&self) -> Option<&'static str> {
        EMBEDDED
            .iter()
            .find(|(file, _)| *file == self.file)
            .map(|(_, text)| *text)
    }

    /// The SHA-256 of the text carried (computed once per run: a mock that rewrites its report
    /// after every answer stamps it each time); empty when the file is not carried.
    pub fn sha256(&self) -> &'static str {
        static DIGESTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let digests = DIGESTS.get_or_init(|| EMBEDDED.iter().map(|(_, t)| sha256_hex(t)).collect());
        EMBEDDED
            .iter()
            .position(|(file, _)| *file == self.file)
            .map_or("", |i| digests[i].as_str())
    }

    /// What a report records of it, for `protocol`, with the built-in suite of this kit (see
    /// [`JudgedBy::with_suite_file`] for a user's suite).
    pub fn judged_by(&self, protocol: &str) -> JudgedBy {
        JudgedBy {
            protocol: protocol.to_string(),
            title: self.title.to_string(),
            file: format!("specs/{}", self.file),
            version: self.version.map(str::to_string),
            // A file that is not carried (ruled out by a test) gets no digest rather than the
            // digest of nothing.
            sha256: self.sha256().to_string(),
            suite: SuiteId {
                kit: crate::VERSION.to_string(),
                file: None,
                sha256: None,
            },
        }
    }
}

/// The SHA-256 of `text`, in lowercase hex.
pub fn sha256_hex(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// How many hex digits of a digest the console shows (as a short commit id is shown): enough to
/// tell two texts apart; `agent-tck --version` and the files give it whole.
pub const SHORT_DIGEST: usize = 12;

/// What a report records of the spec one protocol was judged by, and of its suite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgedBy {
    pub protocol: String,
    /// The document's title, as it gives it.
    pub title: String,
    /// The file carried (`specs/NAME.md`).
    pub file: String,
    /// Its version or date as the document gives it; absent when it gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The SHA-256 of the text the kit carries, lowercase hex.
    pub sha256: String,
    pub suite: SuiteId,
}

/// The suite the cases came from: the kit's built-in one (its version is the kit's), or a
/// user's file (`--suite FILE`), with its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteId {
    /// The kit's version (the built-in suite's, and the engine that ran a user's).
    pub kit: String,
    /// A user's suite file, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its SHA-256, lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// A user's suite file (`--suite FILE`) and the SHA-256 of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteFile {
    pub file: String,
    pub sha256: String,
}

impl JudgedBy {
    /// The same, with the cases from a user's suite file.
    pub fn with_suite_file(mut self, file: &SuiteFile) -> JudgedBy {
        self.suite.file = Some(file.file.clone());
        self.suite.sha256 = Some(file.sha256.clone());
        self
    }

    /// The version as a reader sees it: the document's, or `no version given`.
    pub fn version_text(&self) -> &str {
        self.version.as_deref().unwrap_or("no version given")
    }

    /// The spec in one line (no protocol): `"External Agent Protocol" (specs/x.md, no version
    /// given, sha256 0123456789ab)`, the digest cut to `digits`.
    pub fn spec_text(&self, digits: usize) -> String {
        format!(
            "\"{}\" ({}, {}, sha256 {})",
            self.title,
            self.file,
            self.version_text(),
            short(&self.sha256, digits)
        )
    }

    /// The suite in a few words: `built-in suite of agent-tck 0.1.0`, or `suite my.yaml (sha256
    /// …) run by agent-tck 0.1.0`.
    pub fn suite_text(&self, digits: usize) -> String {
        match (&self.suite.file, &self.suite.sha256) {
            (Some(file), sha) => format!(
                "suite {file} (sha256 {}) run by agent-tck {}",
                short(sha.as_deref().unwrap_or("unknown"), digits),
                self.suite.kit
            ),
            (None, _) => format!("built-in suite of agent-tck {}", self.suite.kit),
        }
    }

    /// The whole line a report shows for one protocol: `roundtable: judged by "…" (…); built-in
    /// suite of agent-tck 0.1.0`.
    pub fn line(&self, digits: usize) -> String {
        format!(
            "{}: judged by {}; {}",
            self.protocol,
            self.spec_text(digits),
            self.suite_text(digits)
        )
    }
}

fn short(digest: &str, digits: usize) -> &str {
    digest.get(..digits).unwrap_or(digest)
}

/// What a report read back says when it records no spec (written before reports named one).
pub const NOT_RECORDED: &str = "not recorded (a report written before reports named their spec)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_sha256_of_the_text() {
        // The digest of "abc" (FIPS 180-2, appendix B.1).
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_line_names_the_spec_its_version_or_none_and_the_suite() {
        let doc = SpecDoc {
            file: EMBEDDED[0].0,
            title: "T",
            version: None,
        };
        let by = doc.judged_by("p");
        assert_eq!(by.sha256, sha256_hex(EMBEDDED[0].1));
        assert_eq!(
            by.line(SHORT_DIGEST),
            format!(
                "p: judged by \"T\" (specs/{}, no version given, sha256 {}); built-in suite of \
                 agent-tck {}",
                EMBEDDED[0].0,
                &by.sha256[..12],
                crate::VERSION
            )
        );
        let dated = SpecDoc {
            version: Some("2025-12-12"),
            ..doc
        }
        .judged_by("p")
        .with_suite_file(&SuiteFile {
            file: "mine.yaml".into(),
            sha256: "ab".repeat(32),
        });
        assert!(
            dated.line(64).contains(", 2025-12-12, sha256 "),
            "{dated:?}"
        );
        assert!(
            dated.line(64).ends_with(&format!(
                "suite mine.yaml (sha256 {}) run by agent-tck {}",
                "ab".repeat(32),
                crate::VERSION
            )),
            "{}",
            dated.line(64)
        );
        // A spec that is not carried gets no digest, not the digest of nothing.
        let missing = SpecDoc {
            file: "nope.md",
            title: "N",
            version: None,
        };
        assert_eq!(missing.judged_by("p").sha256, "");
    }
}
