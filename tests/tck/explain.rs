//! `agent-tck explain` and the catalogue of cases: every case of every protocol and role has a
//! text and every text a case; each quoted clause is in its spec file; each behaviour or preset
//! a text names exists; every id the code reports is in the catalogue; a typo gets the nearest
//! id; the reports point to the text of a failing case.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_tck::explain::{self, texts, Entry};
use agent_tck::protocols;
use agent_tck::selftest::matrix::Matrix;

use crate::support::*;

fn all_texts() -> Vec<(&'static texts::TextFile, &'static texts::Text)> {
    texts::embedded()
        .unwrap()
        .iter()
        .flat_map(|f| f.cases.iter().map(move |t| (f, t)))
        .collect()
}

/// The catalogue's ids of `whose` (a protocol's name, or `common`) that no text matches.
fn missing(catalogue: &[Entry], whose: &str) -> Vec<String> {
    let texts = all_texts();
    let ids: BTreeSet<&str> = catalogue
        .iter()
        .filter(|e| e.protocol == whose)
        .map(|e| e.case.id.as_str())
        .collect();
    ids.into_iter()
        .filter(|id| !texts.iter().any(|(_, t)| texts::matches(&t.id, id)))
        .map(String::from)
        .collect()
}

#[test]
fn every_case_any_protocol_can_report_has_its_text_in_common_yaml() {
    let catalogue = explain::catalogue().unwrap();
    let lacking = missing(&catalogue, explain::COMMON);
    assert!(
        lacking.is_empty(),
        "explain/common.yaml lacks: {}",
        lacking.join(", ")
    );
    // The common cases' texts are common.yaml's, not a protocol file's.
    for id in explain::common_cases().iter().map(|c| &c.id) {
        let files: Vec<&str> = all_texts()
            .iter()
            .filter(|(_, t)| texts::matches(&t.id, id))
            .map(|(f, _)| f.source.as_str())
            .collect();
        assert_eq!(files, ["explain/common.yaml"], "{id}");
    }
}

/// Fails, naming the missing ids per protocol, while a protocol's texts are not written.
#[test]
fn every_case_of_every_protocol_has_a_text() {
    let catalogue = explain::catalogue().unwrap();
    let mut report = Vec::new();
    for p in protocols::REGISTRY {
        let lacking = missing(&catalogue, p.name());
        if !lacking.is_empty() {
            report.push(format!(
                "explain/{}.yaml (or common.yaml) lacks {} of {}'s cases: {}",
                p.name(),
                lacking.len(),
                p.name(),
                lacking.join(", ")
            ));
        }
    }
    assert!(report.is_empty(), "\n{}", report.join("\n"));
}

#[test]
fn every_text_explains_a_case_and_each_case_has_one_text() {
    let catalogue = explain::catalogue().unwrap();
    let ids: BTreeSet<&str> = catalogue.iter().map(|e| e.case.id.as_str()).collect();
    let mut orphans = Vec::new();
    let mut by_id: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (file, text) in all_texts() {
        let matched: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| texts::matches(&text.id, id))
            .collect();
        if matched.is_empty() {
            orphans.push(format!("{}: {}", file.source, text.id));
        }
        for id in matched {
            by_id
                .entry(id)
                .or_default()
                .push(format!("{} ({})", file.source, text.id));
        }
        // Its role is the case's (every case the text matches).
        for e in catalogue
            .iter()
            .filter(|e| texts::matches(&text.id, &e.case.id))
        {
            assert_eq!(
                text.role,
                e.case.role.as_str(),
                "{}: {}: role of {} ({})",
                file.source,
                text.id,
                e.case.id,
                e.protocol
            );
        }
    }
    assert!(
        orphans.is_empty(),
        "texts of no case: {}",
        orphans.join(", ")
    );
    let twice: Vec<String> = by_id
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(id, files)| format!("{id}: {}", files.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "cases with two texts:\n{}",
        twice.join("\n")
    );
}

/// Runs of white space as one space: a quote may be wrapped otherwise than the spec.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `section` is (in) one of the headings of `spec` (`## 💻 Local Subprocess Protocol`).
/// A heading is a `#` line, or a line that is the section's words alone: one spec is a copy of
/// a web page whose headings lost their `#` ("Multi-turn Flow"), at the line's start (an
/// indented line is a code block's: `  auth: Bearer token (agent-specific)` is no heading).
fn is_heading(spec: &str, section: &str) -> bool {
    let section = squeezed(section);
    !section.is_empty()
        && spec.lines().any(|l| {
            (l.starts_with('#') && squeezed(l.trim_start_matches('#')).contains(&section))
                || (!l.starts_with(char::is_whitespace) && squeezed(l) == section)
        })
}

#[test]
fn every_quoted_clause_is_found_in_its_spec_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    let mut quoted = 0;
    for (file, text) in all_texts() {
        let Some(clause) = &text.clause else { continue };
        let spec = text.spec_file(file).expect("the parse demands one");
        let Ok(body) = std::fs::read_to_string(root.join("specs").join(spec)) else {
            wrong.push(format!(
                "{}: {}: no file specs/{spec}",
                file.source, text.id
            ));
            continue;
        };
        quoted += 1;
        if !squeezed(&body).contains(&squeezed(&clause.quote)) {
            wrong.push(format!(
                "{}: {}: not in specs/{spec}: {:?}",
                file.source, text.id, clause.quote
            ));
        }
        if !is_heading(&body, &clause.section) {
            wrong.push(format!(
                "{}: {}: no heading {:?} in specs/{spec}",
                file.source, text.id, clause.section
            ));
        }
    }
    assert!(quoted > 0, "no text quotes a clause");
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// The form of a section that is the kit's own rule, not the spec's: `agent-tck (what it is)`.
use agent_tck::explain::OWN_SECTION as OWN;

/// Every case's section, as `suites list`, the reports and `explain` show it, is true: each of
/// its parts (joined by "; ") is a heading of the spec the case is judged by (its protocol's;
/// for a common case, its text's), or says in the kit's own form (`agent-tck (…)`) that it is
/// the kit's rule. A case whose text quotes a clause names that clause's section; a case whose
/// text gives only a basis (the kit's own rule) is in the kit's own form.
#[test]
fn every_case_section_is_a_heading_of_its_spec_or_the_kits_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let texts = all_texts();
    let mut wrong = Vec::new();
    for e in explain::catalogue().unwrap() {
        let (id, section) = (&e.case.id, &e.case.section);
        let text = texts.iter().find(|(_, t)| texts::matches(&t.id, id));
        let spec = match protocols::find(e.protocol) {
            Some(p) => Some(p.spec().file.to_string()),
            None => text.and_then(|(f, t)| t.spec_file(f)).map(String::from),
        };
        let body = spec
            .as_ref()
            .map(|s| std::fs::read_to_string(root.join("specs").join(s)).unwrap());
        let parts: Vec<&str> = section.split("; ").collect();
        for part in &parts {
            let own = part.starts_with(OWN) && part.ends_with(')') && part.len() > OWN.len() + 1;
            if !own && !body.as_deref().is_some_and(|b| is_heading(b, part)) {
                wrong.push(format!(
                    "{} {id}: {part:?} is no heading of specs/{} nor in the kit's own form (`agent-tck (…)`)",
                    e.protocol,
                    spec.as_deref().unwrap_or("(none)")
                ));
            }
        }
        // Every case has a text (another test holds it); the section agrees with it.
        let Some((_, t)) = text else { continue };
        match &t.clause {
            Some(c) if !parts.iter().any(|p| squeezed(p) == squeezed(&c.section)) => {
                wrong.push(format!(
                    "{} {id}: {section:?} does not name its text's section {:?}",
                    e.protocol, c.section
                ))
            }
            None if parts.iter().any(|p| !p.starts_with(OWN)) => wrong.push(format!(
                "{} {id}: {section:?} cites the spec, while its text gives the kit's own basis",
                e.protocol
            )),
            _ => {}
        }
    }
    // What a protocol's reports name (its cases and the common ones), against its own spec:
    // a common case quoting another protocol's spec says so in the kit's own form.
    for p in protocols::REGISTRY {
        let body = p.spec().text().unwrap();
        for (id, section) in explain::sections(p.name()) {
            for part in section.split("; ") {
                if !part.starts_with(OWN) && !is_heading(body, part) {
                    wrong.push(format!(
                        "{}'s reports: {id}: {part:?} is no heading of specs/{}",
                        p.name(),
                        p.spec().file
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// `--protocol P`, `--behavior X`, `--preset N` of a `shown_by` command.
fn flag<'a>(command: &'a str, name: &str) -> Option<&'a str> {
    let at = command.find(&format!("{name} "))? + name.len() + 1;
    command[at..]
        .split_whitespace()
        .next()
        .map(|v| v.trim_matches(|c| c == '"' || c == '`' || c == '\'' || c == ')' || c == ','))
}

#[test]
fn every_behaviour_and_preset_a_text_names_exists() {
    let mut wrong = Vec::new();
    for (file, text) in all_texts() {
        let Some(shown) = &text.shown_by else {
            continue;
        };
        let protocol = flag(shown, "--protocol").unwrap_or(protocols::names()[0]);
        let Some(p) = protocols::find(protocol) else {
            wrong.push(format!(
                "{}: {}: no protocol {protocol}",
                file.source, text.id
            ));
            continue;
        };
        if let Some(behavior) = flag(shown, "--behavior") {
            let selftest = p.capabilities().selftest;
            let plays = ["http", "stdio", "exec", "tcp"]
                .iter()
                .any(|t| selftest.check_behavior(behavior, t).is_ok());
            let fleet_plays = p
                .capabilities()
                .client_fleet
                .is_some_and(|f| f.behaviors().iter().any(|b| b.name == behavior));
            if !plays && !fleet_plays {
                wrong.push(format!(
                    "{}: {}: no behaviour {behavior} of {protocol}",
                    file.source, text.id
                ));
            }
        }
        if let Some(preset) = flag(shown, "--preset") {
            if protocols::fleet_preset(preset).is_err() {
                wrong.push(format!("{}: {}: no preset {preset}", file.source, text.id));
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    // What the matrices add: the rows that break a case (Matrix::builtin checks that each
    // row's behaviour is one the mock plays).
    let rows = explain::shown_by_matrix("vote.dissent-reason").unwrap();
    assert!(
        !rows.is_empty()
            && rows
                .iter()
                .all(|r| r.starts_with("agent-tck mock agent --protocol roundtable --behavior ")),
        "{rows:?}"
    );
}

/// The ids the code reports, read from its sources: a literal id given to a case's constructor
/// (followed, within the call, by its `Level::`), a constant naming a case, a table's `id:`.
fn ids_in_sources() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let id = r#""([a-z][a-z0-9_]*\.[a-z0-9][a-z0-9_-]*)""#;
    let patterns = [
        format!(r#"{id},\s*(?:[^,()]{{1,40}},\s*)?(?:crate::report::)?Level::"#),
        format!(r#"const [A-Z_]*(?:CASE|ALIVE|FLEET)[A-Z_]*: &str = {id};"#),
        format!(r#"\bid: {id},"#),
    ]
    .map(|p| regex::Regex::new(&p).unwrap());
    let mut out = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // Not the tests' own made-up cases (inline, or a `tests.rs` of their own).
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        if file.ends_with("tests.rs") {
            continue;
        }
        // Nor the explain module's own tables (what is checked here).
        if file.ends_with("explain/mod.rs") || file.to_string_lossy().contains("catalogue.rs") {
            continue;
        }
        for re in &patterns {
            for c in re.captures_iter(code) {
                out.entry(c[1].to_string()).or_insert_with(|| file.clone());
            }
        }
    }
    out
}

#[test]
fn every_id_the_code_reports_is_in_the_catalogue() {
    let catalogue = explain::catalogue().unwrap();
    let known: BTreeSet<&str> = catalogue.iter().map(|e| e.case.id.as_str()).collect();
    let found = ids_in_sources();
    assert!(found.len() > 60, "the scan found too few ids: {found:?}");
    let unknown: Vec<String> = found
        .iter()
        .filter(|(id, _)| !known.contains(id.as_str()))
        .map(|(id, file)| format!("{id} ({})", file.display()))
        .collect();
    assert!(
        unknown.is_empty(),
        "reported but not in the catalogue: {}",
        unknown.join(", ")
    );
    // And every id a matrix expects to fail, and each protocol's case_ids.
    for m in Matrix::builtin().unwrap() {
        for row in &m.file.rows {
            for id in &row.fails {
                assert!(known.contains(id.as_str()), "{}: {id}", m.source);
            }
        }
    }
    for p in protocols::REGISTRY {
        for id in p.case_ids().unwrap() {
            assert!(known.contains(id.as_str()), "{}: {id}", p.name());
        }
    }
}

#[test]
fn explain_prints_the_text_and_a_typo_gets_the_nearest_id() {
    let out = tck(&["explain", "run.judged"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = text(&out);
    for part in [
        "run.judged  [must, run; common]",
        "Rule: ",
        "Why: ",
        "Fails:",
        "Passes:",
        "Fix: ",
        "(text: explain/common.yaml)",
    ] {
        assert!(printed.contains(part), "{part}: {printed}");
    }
    let out = tck(&["explain", "platform.no-stray-bearer"]);
    let printed = text(&out);
    assert!(
        printed.contains("The spec (roundtable-external-agent-protocol.md, section \"Authentication\"):\n  > If you didn't set an API key during registration, no Authorization header is sent."),
        "{printed}"
    );
    let out = tck(&["explain", "platform.no-stray-berer"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("explain platform.no-stray-berer: no case has this id: did you mean platform.no-stray-bearer?"),
        "{}",
        text(&out)
    );
    // A lint rule, and an id far from any: no guess, the way to every id.
    let out = tck(&["explain", "frontmater-present"]);
    assert!(
        text(&out).contains("did you mean frontmatter-present?"),
        "{}",
        text(&out)
    );
    let out = tck(&["explain", "zzzz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!text(&out).contains("did you mean"), "{}", text(&out));
    assert!(
        text(&out).contains("every case: agent-tck suites list"),
        "{}",
        text(&out)
    );
}

#[test]
fn explain_shows_the_matrix_rows_that_break_a_probe_case() {
    let out = tck(&["explain", "vote.dissent-reason"]);
    let printed = text(&out);
    let rows = explain::shown_by_matrix("vote.dissent-reason").unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        assert!(printed.contains(&row), "{row}: {printed}");
    }
}

#[test]
fn suites_list_lists_every_protocol_filtered_by_protocol_level_and_role() {
    let out = tck(&["suites", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = text(&out);
    for e in explain::catalogue().unwrap() {
        assert!(
            all.contains(&format!("  {}  ", e.case.id))
                || all.contains(&format!("  {} ", e.case.id)),
            "{}",
            e.case.id
        );
    }
    for p in protocols::names() {
        assert!(
            all.contains(&format!("\n{p}: ")) || all.starts_with(&format!("{p}: ")),
            "{p}"
        );
    }
    let fleet = text(&tck(&[
        "suites",
        "list",
        "--protocol",
        "librarian",
        "--role",
        "mock",
    ]));
    assert!(
        fleet.contains("fleet.no-5xx") && !fleet.contains("request.approval"),
        "{fleet}"
    );
    let may = text(&tck(&["suites", "list", "--level", "may", "--role", "run"]));
    assert!(may.contains("no case matches"), "{may}");
    let lint = text(&tck(&["suites", "list", "--role", "lint"]));
    assert!(lint.starts_with("agent-standard: lint rules"), "{lint}");
    assert!(
        lint.contains("frontmatter-present") && !lint.contains("plan.json-last"),
        "{lint}"
    );
}

/// The binary tells its reporters which ids have a text: a failing case gets `see: agent-tck
/// explain ID` under its FAIL line, in JUnit's failure text and in the HTML case.
#[test]
fn a_failing_case_points_to_its_text_in_every_format() {
    // A port the OS gave and took back: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = TempDir::new("explain-pointer");
    let (xml, page) = (dir.path("out.xml"), dir.path("out.html"));
    let url = format!("http://127.0.0.1:{port}");
    let out = tck(&[
        "probe",
        "roundtable",
        "--url",
        &url,
        "--junit",
        &xml,
        "--html",
        &page,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let see = "see: agent-tck explain agent.reachable";
    let console = text(&out);
    assert!(console.contains("agent.reachable"), "{console}");
    let under_fail = console
        .lines()
        .skip_while(|l| !(l.contains("FAIL") && l.contains("agent.reachable")))
        .take(6)
        .any(|l| l.trim() == see);
    assert!(under_fail, "{console}");
    // Only the failing case points: the skipped ones after it do not.
    assert_eq!(
        console.matches("see: agent-tck explain").count(),
        1,
        "{console}"
    );
    let junit = std::fs::read_to_string(&xml).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    assert_eq!(failure.text(), Some(see), "{junit}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("see: <code>agent-tck explain agent.reachable</code>"),
        "{html}"
    );
}
