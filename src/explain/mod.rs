//! `agent-tck explain CASE` and `suites list`: every case the kit can report, in every role
//! ([`catalogue`]: each protocol's own, asked of the registry, and the ones every protocol can
//! report, [`COMMON`]), and the texts that explain them (`explain/*.yaml`, embedded: the rule,
//! the spec's clause, why, a failing and a passing exchange, what shows it, what to fix).

pub mod texts;

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Error;
use crate::protocols;
use crate::protocols::plugin::{CaseInfo, Role};
use crate::report::Level;
use crate::selftest::matrix::Matrix;

pub use texts::{Text, TextFile};

/// The name `suites list` and the catalogue give the cases of no one protocol.
pub const COMMON: &str = "common";

/// The cases any protocol can report: the run's own, liveness, and the mock engine's (every
/// fleet the engine plays judges these of the platform beside its protocol's own). A test holds
/// that every id the engine's code reports is here.
const COMMON_CASES: &[(&str, Role, Level, &str, &str)] = &[
    ("run.judged", Role::Run, Level::Must, "the run judged something (a run that judged nothing fails)", "agent-tck (the run)"),
    ("run.completed", Role::Run, Level::Must, "the run was not cut short (Ctrl-C, SIGTERM): the cases not done are marked not run", "agent-tck (the run)"),
    ("evaluation.min-score", Role::Run, Level::Must, "the evaluation score is at least --min-score (JUnit's testcase for the gate)", "agent-tck (the --min-score gate)"),
    ("agent.alive", Role::Run, Level::Must, "the agent stays up for the whole run", "agent-tck (liveness)"),
    ("librarian.alive", Role::Run, Level::Must, "the Librarian stays up for the whole run", "agent-tck (liveness)"),
    ("platform.alive", Role::Run, Level::Must, "the platform stays up for the whole run", "agent-tck (liveness)"),
    ("peer.alive", Role::Run, Level::Must, "the peer stays up for the whole run (a suite with no reachability case)", "agent-tck (liveness)"),
    ("platform.probe-requests", Role::Mock, Level::May, "requests agent-tck's probe marked as its own deliberate tests, not judged as the platform's", "agent-tck (a probe's negative cases)"),
    ("platform.whole-requests", Role::Mock, Level::Must, "every request the platform began arrived whole", "agent-tck (HTTP/1.1, RFC 9112)"),
    ("platform.request-schema", Role::Mock, Level::Must, "every request the platform sent is valid against its request schema", "agent-tck (the request schema)"),
    ("platform.bearer", Role::Mock, Level::Must, "agents registered with a key receive `Authorization: Bearer KEY`, with the right key", "Authentication"),
    ("platform.no-stray-bearer", Role::Mock, Level::Should, "agents registered without a key receive no Authorization header", "Authentication"),
    ("platform.register", Role::Mock, Level::Must, "every agent of the fleet registers with the platform", "Registration"),
    ("platform.deregister", Role::Mock, Level::Should, "every registered agent deregisters on exit", "agent-tck (cleanup)"),
    ("platform.trigger", Role::Mock, Level::Must, "each trigger reaches the platform and gets an HTTP answer", "agent-tck (the fleet file)"),
    ("platform.deliberation-deadline", Role::Mock, Level::Must, "each triggered deliberation is answered within 3 × the platform's timeout plus a margin", "Timeouts"),
    ("platform.no-5xx", Role::Mock, Level::Must, "each triggered deliberation is answered without a 5xx, despite malformed or hostile agents", "Error Handling"),
    ("platform.trigger-expect", Role::Mock, Level::Must, "each deliberation's answer meets the fleet file's expectations", "agent-tck (the fleet file)"),
    ("platform.reached-fleet", Role::Mock, Level::Must, "the platform calls the fleet's agents", "agent-tck (precondition)"),
    ("platform.reached-proxy", Role::Mock, Level::Must, "the platform calls its agents through the proxy", "agent-tck (precondition)"),
    ("agent.behaviors-applied", Role::Mock, Level::May, "each content behaviour the agents were given took effect", "agent-tck (a check on itself)"),
    ("proxy.clients-reached", Role::Mock, Level::Must, "the clients call the server through the proxy", "agent-tck (precondition)"),
    ("proxy.faults-applied", Role::Mock, Level::May, "the --fault faults bent the server's real answers (the server is judged on its own answers, each client on what it got)", "agent-tck (--fault)"),
    ("stdio.drains-stderr", Role::Mock, Level::Must, "the harness drains the agent's stderr as it comes (a flood does not block the agent)", "Local Subprocess Protocol"),
    ("stdio.kills-process-group", Role::Mock, Level::Must, "the harness ends the agent's whole process group, not the agent alone", "agent-tck (robustness)"),
];

/// The case a party-scoped id reports (`beta/vote.response`: the proxy judges each agent by
/// the suite's cases, under the agent's name), else the id as it is.
pub fn case_of(id: &str) -> &str {
    match id.split_once('/') {
        Some((party, case)) if crate::mock::fleet::valid_name(party) && !case.is_empty() => case,
        _ => id,
    }
}

/// One case of the catalogue and whose it is.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The protocol's registry name, or [`COMMON`].
    pub protocol: &'static str,
    pub case: CaseInfo,
}

/// The cases every protocol can report.
pub fn common_cases() -> Vec<CaseInfo> {
    COMMON_CASES
        .iter()
        .map(|(id, role, level, title, section)| CaseInfo::new(id, *role, *level, title, section))
        .collect()
}

/// Every case of every protocol, in the registry's order, then the common ones.
pub fn catalogue() -> Result<Vec<Entry>, Error> {
    let mut out = Vec::new();
    for p in protocols::REGISTRY {
        for case in p.catalogue()? {
            out.push(Entry {
                protocol: p.name(),
                case,
            });
        }
    }
    out.extend(common_cases().into_iter().map(|case| Entry {
        protocol: COMMON,
        case,
    }));
    Ok(out)
}

/// The form of a section that is the kit's own rule, not a clause of the spec.
pub const OWN_SECTION: &str = "agent-tck (";

/// Tells the report engine what only this layer knows: which ids have a text (the `see:`
/// pointer) and each case's section. The binary calls it at start; a library user that wants
/// either calls it too.
pub fn install() {
    crate::report::explained::set(has_text);
    crate::report::explained::set_sections(sections);
}

/// The sections cases of `protocol`'s reports name, by id: each catalogue entry's, the
/// protocol's own before a common one. A common case whose section cites another protocol's
/// spec (the round table's `Authentication`, judged of an execute_task harness too) says whose
/// it is, in the kit's own form: the protocol's spec has no such heading. Empty for a name of
/// no protocol (a merged report's).
pub fn sections(protocol: &str) -> BTreeMap<String, String> {
    let Some(p) = protocols::find(protocol) else {
        return BTreeMap::new();
    };
    let texts = texts::embedded().unwrap_or_default();
    let quoted = |id: &str| {
        texts.iter().find_map(|f| {
            f.cases
                .iter()
                .find(|t| texts::matches(&t.id, id))
                .and_then(|t| t.spec_file(f))
        })
    };
    let mut out: BTreeMap<String, String> = common_cases()
        .into_iter()
        .map(|c| {
            let section = match quoted(&c.id) {
                Some(spec) if !c.section.starts_with(OWN_SECTION) && spec != p.spec().file => {
                    format!("{OWN_SECTION}as {spec} says in {})", c.section)
                }
                _ => c.section,
            };
            (c.id, section)
        })
        .collect();
    for c in p.catalogue().unwrap_or_default() {
        out.insert(c.id, c.section);
    }
    out
}

/// What `suites list` keeps.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub protocol: Option<String>,
    pub level: Option<String>,
    pub role: Option<Role>,
}

impl Filter {
    fn keeps(&self, e: &Entry) -> bool {
        self.protocol.as_deref().is_none_or(|p| p == e.protocol)
            && self.level.as_deref().is_none_or(|l| l == e.case.level)
            && self.role.is_none_or(|r| r == e.case.role)
    }
}

/// `suites list`: the catalogue's cases `filter` keeps, grouped by protocol then role, each
/// with its level, title and spec section, and a closing line on `explain`.
pub fn list(filter: &Filter) -> Result<String, Error> {
    let kept: Vec<Entry> = catalogue()?
        .into_iter()
        .filter(|e| filter.keeps(e))
        .collect();
    if kept.is_empty() {
        return Err(Error::usage(
            "no case matches --protocol, --level and --role",
        ));
    }
    let mut out = String::new();
    let mut groups: Vec<(&str, Role)> = Vec::new();
    for e in &kept {
        if !groups.contains(&(e.protocol, e.case.role)) {
            groups.push((e.protocol, e.case.role));
        }
    }
    for (protocol, role) in groups {
        let of: Vec<&Entry> = kept
            .iter()
            .filter(|e| e.protocol == protocol && e.case.role == role)
            .collect();
        let w = of.iter().map(|e| e.case.id.len()).max().unwrap_or(0);
        out.push_str(&format!(
            "{protocol}: {} ({} {})\n",
            role_words(role),
            of.len(),
            if of.len() == 1 { "case" } else { "cases" }
        ));
        for e in of {
            out.push_str(&format!(
                "  {:<w$}  {:<6}  {}\n",
                e.case.id, e.case.level, e.case.title
            ));
            if !e.case.section.is_empty() {
                out.push_str(&format!(
                    "  {:<w$}  {:<6}  spec: {}\n",
                    "", "", e.case.section
                ));
            }
        }
        out.push('\n');
    }
    out.push_str("Each case explained (the rule, the spec's words, examples, what to fix): agent-tck explain ID\n");
    Ok(out)
}

/// What a role means, in a heading.
fn role_words(role: Role) -> &'static str {
    match role {
        Role::Probe => {
            "probe cases (the kit judges the agent, playing its platform, harness or server)"
        }
        Role::Mock => "mock cases (the kit plays the agents or clients and judges the platform)",
        Role::Lint => "lint rules (the kit reads definition files)",
        Role::Orchestration => "orchestration cases (the kit reads an orchestrator's journal)",
        Role::Run => "run cases (the run itself and its peer's liveness)",
    }
}

/// The matrix rows that expect `id` to fail: the command that plays each row's behaviour.
pub fn shown_by_matrix(id: &str) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for m in Matrix::builtin()? {
        for row in &m.file.rows {
            if row.fails.iter().any(|f| f == id) {
                let over = match row.transport.as_str() {
                    "http" | "exec" => String::new(),
                    t => format!(" (over {t})"),
                };
                out.push(format!(
                    "agent-tck mock agent --protocol {} --behavior {:?} breaks it{over} ({}, line {})",
                    m.protocol.name(),
                    row.behavior.value,
                    m.source,
                    row.behavior.referenced.line()
                ));
            }
        }
    }
    Ok(out)
}

/// `agent-tck explain ID`: the text of `id`, with what the catalogue and the matrices know of
/// it; an id of no case is a usage error naming the nearest ones.
pub fn explain(id: &str) -> Result<String, Error> {
    let id = case_of(id);
    let all = catalogue()?;
    let files = texts::embedded()?;
    let found: Vec<(&TextFile, &Text)> = files
        .iter()
        .flat_map(|f| f.cases.iter().map(move |t| (f, t)))
        .filter(|(_, t)| texts::matches(&t.id, id))
        .collect();
    let entries: Vec<&Entry> = all.iter().filter(|e| e.case.id == id).collect();
    if found.is_empty() && entries.is_empty() {
        let known: BTreeSet<&str> = all
            .iter()
            .map(|e| e.case.id.as_str())
            .chain(
                files
                    .iter()
                    .flat_map(|f| f.cases.iter().map(|t| t.id.as_str())),
            )
            .filter(|k| !k.contains('{'))
            .collect();
        let hint = match crate::text::nearest(id, known.iter().copied()) {
            Some(near) => format!(": did you mean {near}?"),
            None => String::new(),
        };
        return Err(Error::usage(format!(
            "explain {id}: no case has this id{hint} (every case: agent-tck suites list)"
        )));
    }
    let mut out = String::new();
    out.push_str(id);
    if let Some(e) = entries.first() {
        let whose: Vec<&str> = entries.iter().map(|e| e.protocol).collect();
        out.push_str(&format!(
            "  [{}, {}; {}]\n  {}\n",
            e.case.level,
            e.case.role.as_str(),
            whose.join(", "),
            e.case.title
        ));
    } else {
        out.push('\n');
    }
    let matrix = shown_by_matrix(id)?;
    match found.first() {
        Some((file, text)) => out.push_str(&text.render(file, &matrix)),
        None => {
            out.push_str(
                "\nNo explanation is written for this case yet: that is a gap in agent-tck's texts (explain/*.yaml).\n",
            );
            for line in matrix {
                out.push_str(&format!("Shown by: {line}\n"));
            }
        }
    }
    Ok(out)
}

/// Whether `id` has a text: the reports point to `explain` only for those.
pub fn has_text(id: &str) -> bool {
    let id = case_of(id);
    texts::embedded().is_ok_and(|files| {
        files
            .iter()
            .any(|f| f.cases.iter().any(|t| texts::matches(&t.id, id)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A common case keeps the section its text quotes where that spec is the protocol's, and
    /// says whose spec it is elsewhere: the execute_task spec has no `Authentication`.
    #[test]
    fn a_common_case_cites_another_protocols_spec_in_the_kits_own_form() {
        assert_eq!(sections("roundtable")["platform.bearer"], "Authentication");
        assert_eq!(
            sections("execute-task")["platform.bearer"],
            "agent-tck (as roundtable-external-agent-protocol.md says in Authentication)"
        );
        // A protocol's own entry wins over the common one; the kit's own form is kept as is.
        assert_eq!(
            sections("execute-task")["agent.reachable"],
            "agent-tck (precondition)"
        );
        assert_eq!(sections("librarian")["agent.alive"], "agent-tck (liveness)");
        assert!(sections("roundtable+execute-task").is_empty());
    }
}
