//! The JSON report: [`Report`] as it is, described by `schemas/report.schema.json`.

use super::Report;

pub fn to_string(report: &Report) -> String {
    // A Report holds only strings, numbers and enums: serialization cannot fail.
    serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
