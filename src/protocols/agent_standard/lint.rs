//! `agent-tck lint agents PATH…`: every definition file under the paths against the standard's
//! frontmatter rules (MUST: errors; SHOULD: warnings), each finding at the line and column of
//! the key or item it is about.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::definition::{self, Definition, DefinitionError, Front};
use crate::report::lint::{Finding, Lint, Rule};
use crate::report::Level;

pub const SPEC: &str = "agent-protocol-standard.md";

pub const RULES: &[Rule] = &[
    Rule { id: "frontmatter-present", level: Level::Must, title: "the file begins with a YAML frontmatter between `---` lines", help: "Begin the file with a `---` line, the frontmatter's YAML, and a closing `---` line.", of: "definition files", unexercised: "no definition file to read: give files or directories of `*.md` definitions" },
    Rule { id: "frontmatter-yaml", level: Level::Must, title: "the frontmatter is valid YAML: a mapping of fields", help: "Fix the YAML at the line given; the frontmatter is `key: value` lines.", of: "frontmatters", unexercised: "no file begins with a closed `---` frontmatter: a definition with one would exercise this" },
    Rule { id: "required-field", level: Level::Must, title: "name, description, tools and model are present", help: "Add the missing field; the standard requires name, description, tools and model.", of: "frontmatters", unexercised: "no frontmatter parsed as a mapping: a definition with valid YAML frontmatter would exercise this" },
    Rule { id: "field-type", level: Level::Must, title: "name, description and model are strings; tools is a list of strings", help: "Write tools as a YAML list (`tools:` then `  - Read` lines, or `[Read, Grep]`), and the others as text.", of: "fields (name, description, model, tools)", unexercised: "no frontmatter holds name, description, model or tools: a definition with them would exercise this" },
    Rule { id: "name-kebab-case", level: Level::Must, title: "name is kebab-case (`security-scanner`)", help: "Use lower-case words joined by single hyphens.", of: "names", unexercised: "no definition has a name: a definition with `name:` would exercise this" },
    Rule { id: "tools-non-empty", level: Level::Must, title: "tools lists at least one tool", help: "List the tools the agent may use.", of: "tools lists", unexercised: "no definition has a tools list: a definition with `tools:` would exercise this" },
    Rule { id: "plan-mode-boolean", level: Level::Must, title: "supports_plan_mode, when present, is a boolean", help: "Write `supports_plan_mode: true` or `false`, unquoted.", of: "supports_plan_mode values", unexercised: "no definition says supports_plan_mode: a definition that opts into plan mode (`supports_plan_mode: true`) would exercise this" },
    Rule { id: "name-unique", level: Level::Must, title: "names are unique across the set", help: "Rename one of the agents: an orchestrator finds agents by name.", of: "names across the set", unexercised: "fewer than two named definitions: lint the whole set (its directory) to check that names are unique" },
    Rule { id: "name-matches-file", level: Level::Should, title: "name equals the file's name without `.md`", help: "Rename the file or the agent so that they agree.", of: "names", unexercised: "no definition has a name: a definition with `name:` would exercise this" },
    Rule { id: "description-action-verb", level: Level::Should, title: "description starts with an action verb (`Scan…`, `Use this agent when…`)", help: "Begin with what the agent does or when to use it; extend the word list with --verb WORD.", of: "descriptions", unexercised: "no definition has a description: a definition with `description:` would exercise this" },
    Rule { id: "description-sentences", level: Level::Should, title: "description is one or two sentences", help: "Keep the description to when to use the agent; put the rest in the body.", of: "descriptions", unexercised: "no definition has a description: a definition with `description:` would exercise this" },
    Rule { id: "tools-known", level: Level::Should, title: "each tool is a known tool name", help: "Check the spelling; accept your own tools with --tool NAME.", of: "tool names", unexercised: "no definition lists a tool by name: a definition with `tools:` items would exercise this" },
    Rule { id: "model-recognisable", level: Level::Should, title: "model is a recognisable model id", help: "Use a model id such as claude-opus-4-5-20251101 (or opus, sonnet, haiku, inherit).", of: "models", unexercised: "no definition names a model: a definition with `model:` would exercise this" },
    Rule { id: "body-present", level: Level::Should, title: "a Markdown body follows the frontmatter", help: "Write the agent's instructions after the frontmatter.", of: "definitions with a frontmatter", unexercised: "no definition has a parsed frontmatter: a definition with one would exercise this" },
    Rule { id: "plan-instructions", level: Level::Should, title: "with supports_plan_mode: true, the body says what to do in plan mode and in execute mode", help: "Describe plan mode (scope, no file changes) and execute mode in the body.", of: "bodies of plan-mode definitions", unexercised: "no definition with supports_plan_mode: true and a body: one that opts into plan mode would exercise this" },
];

/// Verbs a description may start with (beside the user's --verb words); a third-person form
/// (`Scans`) counts too.
const VERBS: &[&str] = &[
    "use",
    "analyze",
    "analyse",
    "assess",
    "audit",
    "build",
    "catch",
    "check",
    "classify",
    "coordinate",
    "create",
    "debug",
    "delegate",
    "design",
    "detect",
    "develop",
    "diagnose",
    "document",
    "draft",
    "enforce",
    "ensure",
    "evaluate",
    "examine",
    "execute",
    "explain",
    "explore",
    "extract",
    "find",
    "fix",
    "gather",
    "generate",
    "guide",
    "handle",
    "help",
    "identify",
    "implement",
    "improve",
    "inspect",
    "investigate",
    "invoke",
    "manage",
    "map",
    "measure",
    "migrate",
    "monitor",
    "optimize",
    "optimise",
    "orchestrate",
    "plan",
    "prepare",
    "prioritize",
    "profile",
    "propose",
    "refactor",
    "refine",
    "report",
    "research",
    "review",
    "run",
    "scan",
    "search",
    "suggest",
    "summarize",
    "summarise",
    "synthesize",
    "synthesise",
    "test",
    "trace",
    "track",
    "translate",
    "triage",
    "update",
    "validate",
    "verify",
    "write",
    "call",
    "convert",
    "compare",
    "collect",
    "clean",
    "configure",
    "deploy",
    "format",
    "lint",
    "recommend",
    "route",
    "secure",
    "simplify",
    "spot",
    "produce",
];

/// Tool names the standard's agents use (beside the user's --tool names; `mcp__…` tools too).
const TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Grep",
    "Glob",
    "Bash",
    "Task",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "NotebookEdit",
    "NotebookRead",
    "LS",
    "BashOutput",
    "KillShell",
    "KillBash",
    "SlashCommand",
    "ExitPlanMode",
    "Skill",
    "AskUserQuestion",
];

/// What the user added to the lists.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    pub verbs: Vec<String>,
    pub tools: Vec<String>,
}

/// The definition files under `paths`: files as given, directories walked (sorted) for `*.md`
/// files that begin with a frontmatter. A path that is not there is an error naming it.
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, DefinitionError> {
    let mut out = Vec::new();
    for p in paths {
        let find = |cause| DefinitionError::Find {
            path: p.clone(),
            cause,
        };
        let meta = std::fs::metadata(p).map_err(find)?;
        if meta.is_dir() {
            walk(p, &mut out).map_err(find)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let name = name.to_string_lossy();
        // Symbolic links to directories are not followed (no loops); tool folders are skipped.
        let kind = e.file_type()?;
        if kind.is_dir() {
            if !name.starts_with('.') && name != "node_modules" && name != "target" {
                walk(&e.path(), out)?;
            }
        } else if name.ends_with(".md") {
            let text = std::fs::read(e.path())?;
            if definition::has_frontmatter(&String::from_utf8_lossy(&text[..text.len().min(16)])) {
                out.push(e.path());
            }
        }
    }
    Ok(())
}

/// Lints the files (read as UTF-8, lossily: a bad byte is shown, not fatal).
pub fn lint_files(files: &[PathBuf], extra: &Extra, strict: bool) -> Result<Lint, DefinitionError> {
    Ok(lint(&definition::read_all(files)?, extra, strict))
}

/// Lints definitions already read.
pub fn lint(defs: &[Definition], extra: &Extra, strict: bool) -> Lint {
    let mut findings = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut judged = Counts::default();
    for d in defs {
        judged.saw("frontmatter-present", 1);
        let mut found = |rule: &'static str, (line, column): (usize, usize), message: String| {
            let level = RULES
                .iter()
                .find(|r| r.id == rule)
                .map_or(Level::Must, |r| r.level);
            findings.push(Finding {
                rule,
                level,
                file: d.path.clone(),
                line,
                column,
                message,
            });
        };
        let front = match &d.front {
            Ok(front) => front,
            Err((at, message)) => {
                let rule =
                    if message.starts_with("no frontmatter") || message.contains("never closed") {
                        "frontmatter-present"
                    } else {
                        judged.saw("frontmatter-yaml", 1);
                        "frontmatter-yaml"
                    };
                found(rule, *at, message.clone());
                continue;
            }
        };
        judged.saw("frontmatter-yaml", 1);
        check_fields(d, front, extra, &mut judged, &mut found);
        if let Some(name) = front.value["name"].as_str() {
            if let Some(first) = names.get(name) {
                found(
                    "name-unique",
                    front.at("name"),
                    format!("name {name:?} is also the name of {first}"),
                );
            } else {
                names.insert(name.to_string(), d.path.clone());
            }
        }
    }
    // Uniqueness is a question about two names or more.
    let named = judged.0.remove("name-unique").unwrap_or(0);
    judged.saw("name-unique", if named >= 2 { named } else { 0 });
    Lint {
        protocol: super::NAME.into(),
        spec: SPEC,
        rules: RULES,
        files: defs.iter().map(|d| d.path.clone()).collect(),
        findings,
        judged: judged.0,
        strict,
    }
}

/// How many things each rule judged, by rule id.
#[derive(Default)]
struct Counts(BTreeMap<&'static str, u64>);

impl Counts {
    fn saw(&mut self, rule: &'static str, n: u64) {
        if n > 0 {
            *self.0.entry(rule).or_default() += n;
        }
    }
}

fn check_fields(
    d: &Definition,
    front: &Front,
    extra: &Extra,
    judged: &mut Counts,
    found: &mut impl FnMut(&'static str, (usize, usize), String),
) {
    let v = &front.value;
    judged.saw("required-field", 1);
    judged.saw("body-present", 1);
    let present = |key: &str| v.get(key).is_some_and(|x| !x.is_null());
    let fields = ["name", "description", "model", "tools"];
    judged.saw(
        "field-type",
        fields.iter().filter(|k| present(k)).count() as u64,
    );
    for (rule, key) in [
        ("name-kebab-case", "name"),
        ("name-matches-file", "name"),
        ("name-unique", "name"),
        ("description-action-verb", "description"),
        ("description-sentences", "description"),
        ("model-recognisable", "model"),
    ] {
        judged.saw(rule, u64::from(v[key].is_string()));
    }
    // A null there is a finding too (not true or false): judged.
    judged.saw(
        "plan-mode-boolean",
        u64::from(v.get("supports_plan_mode").is_some()),
    );
    if let Some(items) = v["tools"].as_array() {
        judged.saw("tools-non-empty", 1);
        judged.saw(
            "tools-known",
            items.iter().filter(|t| t.is_string()).count() as u64,
        );
    }
    let plans = v["supports_plan_mode"] == Value::Bool(true);
    judged.saw(
        "plan-instructions",
        u64::from(plans && !d.body.trim().is_empty()),
    );
    for key in ["name", "description", "tools", "model"] {
        if v.get(key).is_none_or(Value::is_null) {
            found(
                "required-field",
                (1, 1),
                format!("no `{key}` in the frontmatter"),
            );
        }
    }
    for key in ["name", "description", "model"] {
        if let Some(x) = v.get(key).filter(|x| !x.is_null() && !x.is_string()) {
            found(
                "field-type",
                front.at(key),
                format!("`{key}` is {}, not a string", definition::kind(x)),
            );
        }
    }
    match v.get("tools") {
        Some(Value::Array(items)) => {
            if items.is_empty() {
                found(
                    "tools-non-empty",
                    front.at("tools"),
                    "`tools` is an empty list".into(),
                );
            }
            for (i, item) in items.iter().enumerate() {
                let at = front.tools.get(i).map_or(front.at("tools"), |t| t.1);
                match item.as_str() {
                    None => found(
                        "field-type",
                        at,
                        format!("tool #{} is {}, not a name", i + 1, definition::kind(item)),
                    ),
                    Some(tool) if !known_tool(tool, extra) => found(
                        "tools-known",
                        at,
                        format!(
                            "unknown tool {tool:?} (known: {}…; add yours with --tool)",
                            TOOLS[..6].join(", ")
                        ),
                    ),
                    Some(_) => {}
                }
            }
        }
        Some(Value::String(s)) => found(
            "field-type",
            front.at("tools"),
            format!(
                "`tools` is a string ({:?}), not a list: write one tool per `- ` line",
                crate::text::shorten(s, 60)
            ),
        ),
        Some(Value::Null) | None => {}
        Some(other) => found(
            "field-type",
            front.at("tools"),
            format!("`tools` is {}, not a list", definition::kind(other)),
        ),
    }
    if let Some(x) = v.get("supports_plan_mode").filter(|x| !x.is_boolean()) {
        found(
            "plan-mode-boolean",
            front.at("supports_plan_mode"),
            format!(
                "`supports_plan_mode` is {} ({x}), not true or false",
                definition::kind(x)
            ),
        );
    }
    if let Some(name) = v["name"].as_str() {
        if !kebab(name) {
            found(
                "name-kebab-case",
                front.at("name"),
                format!("name {name:?} is not kebab-case (lower-case words joined by hyphens)"),
            );
        }
        if name != d.stem {
            found(
                "name-matches-file",
                front.at("name"),
                format!("name {name:?} but the file is {}.md", d.stem),
            );
        }
    }
    if let Some(desc) = v["description"].as_str() {
        let first = desc.split_whitespace().next().unwrap_or("");
        if !action_verb(first, extra) {
            found("description-action-verb", front.at("description"), format!("the description begins with {first:?}, not an action verb (add it with --verb if it is one)"));
        }
        let n = sentences(desc);
        if n > 2 {
            found(
                "description-sentences",
                front.at("description"),
                format!("the description is {n} sentences (one or two: when to use the agent)"),
            );
        }
    }
    if let Some(model) = v["model"].as_str() {
        if !recognisable_model(model) {
            found(
                "model-recognisable",
                front.at("model"),
                format!("model {model:?} is not a recognisable model id"),
            );
        }
    }
    if d.body.trim().is_empty() {
        found(
            "body-present",
            (d.body_line, 1),
            "no Markdown body after the frontmatter".into(),
        );
    } else if v["supports_plan_mode"] == Value::Bool(true) {
        let body = d.body.to_ascii_lowercase();
        let missing: Vec<&str> = [("plan", "plan mode"), ("execute", "execute mode")]
            .into_iter()
            .filter(|(word, _)| {
                !body.contains(&format!("{word} mode"))
                    && !body.contains(&format!("execution_mode: {word}"))
            })
            .map(|(_, what)| what)
            .collect();
        if !missing.is_empty() {
            found(
                "plan-instructions",
                front.at("supports_plan_mode"),
                format!(
                    "supports_plan_mode is true but the body never describes {}",
                    missing.join(" or ")
                ),
            );
        }
    }
}

/// Whether `name` is kebab-case: lower-case words of letters and digits, joined by single `-`.
pub fn kebab(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

fn action_verb(word: &str, extra: &Extra) -> bool {
    let w = word
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_ascii_lowercase();
    let known =
        |v: &str| VERBS.contains(&v) || extra.verbs.iter().any(|e| e.eq_ignore_ascii_case(v));
    !w.is_empty()
        && (known(&w)
            || w.strip_suffix("es").is_some_and(known)
            || w.strip_suffix('s').is_some_and(known)
            || w.strip_suffix("ies")
                .is_some_and(|s| known(&format!("{s}y"))))
}

fn known_tool(tool: &str, extra: &Extra) -> bool {
    TOOLS.contains(&tool) || tool.starts_with("mcp__") || extra.tools.iter().any(|t| t == tool)
}

/// Sentences: ends of `.`, `!` or `?` followed by a space or the end, not counting common
/// abbreviations; at least one.
fn sentences(text: &str) -> usize {
    let mut t = text.to_string();
    for abbr in ["e.g.", "i.e.", "etc.", "vs.", "Mr.", "Dr."] {
        t = t.replace(abbr, "");
    }
    let chars: Vec<char> = t.trim().chars().collect();
    let ends = chars
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            matches!(c, '.' | '!' | '?') && chars.get(i + 1).is_none_or(|n| n.is_whitespace())
        })
        .count();
    ends.max(1)
}

fn recognisable_model(model: &str) -> bool {
    static MODEL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)^(claude-[a-z0-9.-]+|(opus|sonnet|haiku)(-[0-9.]+)?|inherit|gpt-[a-z0-9.-]+|o[1-9](-[a-z0-9-]+)?|gemini-[a-z0-9.-]+|[a-z0-9._-]+/[a-z0-9._:-]+)$",
        )
        .expect("a valid regex")
    });
    MODEL.is_match(model.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_models_and_sentences() {
        let extra = Extra {
            verbs: vec!["Shepherd".into()],
            tools: vec![],
        };
        for ok in [
            "Use", "Scans", "analyzes", "Verifies", "shepherd", "Review:",
        ] {
            assert!(action_verb(ok, &extra), "{ok}");
        }
        for bad in ["This", "A", "", "Agent"] {
            assert!(!action_verb(bad, &extra), "{bad}");
        }
        for ok in [
            "claude-opus-4-5-20251101",
            "opus",
            "sonnet",
            "inherit",
            "gpt-4o",
            "o3-mini",
            "anthropic/claude-3",
        ] {
            assert!(recognisable_model(ok), "{ok}");
        }
        for bad in ["the best one", "", "claude opus"] {
            assert!(!recognisable_model(bad), "{bad}");
        }
        assert_eq!(sentences("Scan code, e.g. Rust. Report findings."), 2);
        assert_eq!(sentences("Scan code for issues"), 1);
        assert_eq!(sentences("One. Two! Three? Four."), 4);
        assert!(kebab("security-scanner") && kebab("a1-b2"));
        assert!(!kebab("Security") && !kebab("a--b") && !kebab("-a") && !kebab("a_b"));
    }
}
