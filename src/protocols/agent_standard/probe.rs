//! `agent-tck probe agent-standard --output FILE…`: saved agent responses judged by the
//! standard's result rules ([`super::result`]), a group of cases per response.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::result::{self, Context, RULES};
use crate::report::{CaseResult, Report, RunInfo};
use crate::text::Redactor;

/// What `probe agent-standard` runs on.
#[derive(Debug, Clone)]
pub struct Settings {
    pub outputs: Vec<PathBuf>,
    /// The mode the responses were asked for (None: each result's own).
    pub mode: Option<String>,
    /// The definitions' names (`--agents DIR`).
    pub agents: Option<BTreeSet<String>>,
    /// The agent that was run (`--agent NAME`).
    pub agent: Option<String>,
    pub max_body: usize,
    pub seed: u64,
    pub only: Vec<String>,
    pub strict: bool,
}

impl Settings {
    pub fn wants(&self, id: &str) -> bool {
        crate::probe::args::selected(&self.only, id)
    }
}

/// A response's label: its file's name without the extension.
fn label(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "response".into())
}

/// The case ids of a run over `outputs`.
pub fn case_ids(outputs: &[PathBuf]) -> Vec<String> {
    outputs
        .iter()
        .flat_map(|p| {
            let l = label(p);
            RULES.iter().map(move |(id, _, _)| format!("{l}.{id}"))
        })
        .collect()
}

/// The definitions' names under `dir` (each file's frontmatter `name`).
pub fn agent_names(dir: &std::path::Path) -> Result<BTreeSet<String>, String> {
    let files = super::lint::files(&[dir.to_path_buf()])?;
    let mut names = BTreeSet::new();
    for f in files {
        let text = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let d = super::definition::read(&f.display().to_string(), &String::from_utf8_lossy(&text));
        if let Some(name) = d
            .front
            .ok()
            .and_then(|fr| fr.value["name"].as_str().map(str::to_string))
        {
            names.insert(name);
        }
    }
    if names.is_empty() {
        return Err(format!(
            "--agents {}: no agent definition with a name there",
            dir.display()
        ));
    }
    Ok(names)
}

pub async fn run(
    settings: &Settings,
    on_case: &(dyn Fn(&CaseResult) + Send + Sync),
) -> Result<Report, String> {
    let target = settings
        .outputs
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let info = RunInfo::start("probe", super::NAME, target, settings.seed, settings.strict);
    let cx = Context {
        mode: settings.mode.clone(),
        agents: settings.agents.clone(),
        agent: settings.agent.clone(),
    };
    let mut cases = Vec::new();
    for path in &settings.outputs {
        let bytes = std::fs::read(path).map_err(|e| format!("--output {}: {e}", path.display()))?;
        let l = label(path);
        let judged = if bytes.len() > settings.max_body {
            let mut c = result::judge(&l, "", &cx);
            c[0].fail(format!(
                "the response is {} bytes, over --max-body ({})",
                bytes.len(),
                settings.max_body
            ));
            c
        } else {
            result::judge(&l, &String::from_utf8_lossy(&bytes), &cx)
        };
        for c in judged.into_iter().filter(|c| settings.wants(&c.id)) {
            on_case(&c);
            cases.push(c);
        }
    }
    Ok(info.report(cases, &Redactor::new(Vec::new())))
}
