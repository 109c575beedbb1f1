//! The agent standard's cases in every role: its lint rules (with the Claude Code dialect's
//! own), the result and run cases of `probe agent-standard --exec` in both modes, and the
//! cases of `probe orchestration`. Their tables keep no spec section: each case's is its explain
//! text's (`explain/agent-standard.yaml`).

use crate::error::Error;
use crate::explain::texts::section_of;
use crate::protocols::plugin::{CaseInfo, Role};
use crate::report::Level;

/// The lint rules (both dialects), then the probe's cases of an --exec run in plan and execute
/// mode, then the orchestration cases: each from the table its code judges by.
pub fn catalogue() -> Result<Vec<CaseInfo>, Error> {
    let mut cases: Vec<CaseInfo> = Vec::new();
    for rule in super::lint::RULES
        .iter()
        .chain(super::lint::Dialect::ClaudeCode.rules())
    {
        if cases.iter().all(|c| c.id != rule.id) {
            cases.push(CaseInfo::new(
                rule.id,
                Role::Lint,
                rule.level,
                rule.title,
                &section_of(rule.id),
            ));
        }
    }
    let per_response = super::result::RULES
        .iter()
        .chain(super::probe::RUN_RULES)
        .copied();
    let levels: Vec<(&str, Level, &str)> = per_response.collect();
    for id in super::probe::exec_ids(&["plan", "execute"]) {
        let rule = id.split_once('.').map_or(id.as_str(), |(_, rule)| rule);
        if let Some((_, level, title)) = levels.iter().find(|(r, _, _)| *r == rule) {
            cases.push(CaseInfo::new(
                &id,
                Role::Probe,
                *level,
                title,
                &section_of(&id),
            ));
        }
    }
    for (id, level, title) in super::orchestration::RULES {
        let id = format!("orchestration.{id}");
        cases.push(CaseInfo::new(
            &id,
            Role::Orchestration,
            *level,
            title,
            &section_of(&id),
        ));
    }
    Ok(cases)
}
