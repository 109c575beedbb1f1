//! `agent-tck lint agents PATH…`: every definition file under the paths against the standard's
//! frontmatter rules (MUST: errors; SHOULD: warnings), each finding at the line and column of
//! the key or item it is about. Two dialects: the standard's letter (default), and what Claude
//! Code loads (`--dialect claude-code`: tools and model optional, a comma-separated tools
//! string, Claude Code's other frontmatter keys). In the standard dialect a finding Claude Code
//! would accept says so in one clause. The lists judged by are data (`lint/lists.yaml`).

pub mod lists;
mod prose;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde_json::Value;

use super::definition::{self, Definition, DefinitionError, Front};
use crate::report::lint::{Finding, Lint, Rule};
use crate::report::Level;
use lists::{KeyType, LISTS};
use prose::{opening_problem, sentences};

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
    Rule { id: "description-action-verb", level: Level::Should, title: "description starts with what the agent does or when to use it (`Scan…`, `Use this agent when…`), not with a role (`Expert…`) or an article", help: "Begin with a verb: what the agent does, or `Use this agent when…`; --verb WORD accepts an opening the kit takes for a role.", of: "descriptions", unexercised: "no definition has a description: a definition with `description:` would exercise this" },
    Rule { id: "description-sentences", level: Level::May, title: "description is one or two sentences (the kit's own convention: the standard says only \"When to use, starts with action verb\")", help: "Keep the description to when to use the agent; put the rest in the body. Advisory: a note, never a failure, even with --strict.", of: "descriptions", unexercised: "no definition has a description: a definition with `description:` would exercise this" },
    Rule { id: "tools-known", level: Level::Should, title: "each tool is a known tool name", help: "Check the spelling; accept your own tools with --tool NAME.", of: "tool names", unexercised: "no definition lists a tool by name: a definition with `tools:` items would exercise this" },
    Rule { id: "model-recognisable", level: Level::Should, title: "model is a recognisable model id", help: "Use a model id such as claude-opus-4-5-20251101, an alias (opus, sonnet, haiku, opusplan, default, sonnet[1m], inherit), a Bedrock or Vertex id, or a Bedrock ARN.", of: "models", unexercised: "no definition names a model: a definition with `model:` would exercise this" },
    Rule { id: "body-present", level: Level::Should, title: "a Markdown body follows the frontmatter", help: "Write the agent's instructions after the frontmatter.", of: "definitions with a frontmatter", unexercised: "no definition has a parsed frontmatter: a definition with one would exercise this" },
    Rule { id: "plan-instructions", level: Level::Should, title: "with supports_plan_mode: true, the body says what to do in plan mode and in execute mode", help: "Describe plan mode (scope, no file changes) and execute mode in the body.", of: "bodies of plan-mode definitions", unexercised: "no definition with supports_plan_mode: true and a body: one that opts into plan mode would exercise this" },
];

/// Which world the rules are of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Dialect {
    /// The agent protocol standard's letter: name, description, tools (a YAML list) and model.
    #[default]
    Standard,
    /// What Claude Code loads: name and description; tools (a list or a comma-separated
    /// string; omitted: every tool) and model (an alias, `inherit`; omitted: the main
    /// conversation's) optional; its other frontmatter keys known.
    ClaudeCode,
}

impl Dialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Standard => "standard",
            Dialect::ClaudeCode => "claude-code",
        }
    }

    /// The dialect's rules (what the report and the SARIF name).
    pub fn rules(self) -> &'static [Rule] {
        match self {
            Dialect::Standard => RULES,
            Dialect::ClaudeCode => &CLAUDE_CODE_RULES,
        }
    }
}

/// The claude-code dialect's rules: the standard's, with what Claude Code requires instead
/// where it differs, and its frontmatter keys.
static CLAUDE_CODE_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let mut rules: Vec<Rule> = RULES
        .iter()
        .map(|r| match r.id {
            "required-field" => Rule {
                title: "name and description are present (Claude Code: tools and model are optional)",
                help: "Add the missing field; Claude Code requires name and description.",
                ..*r
            },
            // Claude Code loads `tools: []` (an agent with no tool): worth a look, not an error.
            "tools-non-empty" => Rule {
                level: Level::Should,
                title: "tools, when present, lists at least one tool (an empty list leaves the agent none)",
                help: "List the tools the agent may use, or leave `tools` out to give it every tool.",
                ..*r
            },
            "field-type" => Rule {
                title: "name, description and model are strings; tools is a list of strings or a comma-separated string",
                help: "Write tools as a YAML list or as `Read, Grep`, and the others as text.",
                ..*r
            },
            _ => *r,
        })
        .collect();
    rules.push(Rule {
        id: "frontmatter-strict-yaml",
        level: Level::Should,
        title: "the frontmatter is strict YAML (Claude Code reads an unquoted value holding `: ` with a fallback; strict YAML tools refuse it)",
        help: "Put the value in quotes, e.g. `description: \"…\"`: strict YAML tools, and Claude Code itself on a file with CRLF line endings, then read it too.",
        of: "frontmatters Claude Code reads",
        unexercised: "no file has a frontmatter Claude Code reads: a definition with one would exercise this",
    });
    rules.push(Rule {
        id: "claude-code-keys",
        level: Level::Should,
        title: "every other frontmatter key is one Claude Code reads, with a value of its type",
        help: "Check the key's spelling and value against Claude Code's sub-agent fields (https://code.claude.com/docs/en/sub-agents); Claude Code ignores keys it does not know.",
        of: "frontmatter keys beside name, description, tools and model",
        unexercised: "no frontmatter has a key beside name, description, tools and model: one with permissionMode, color… would exercise this",
    });
    rules
});

/// What a finding the standard makes and Claude Code would accept adds (one clause).
mod clause {
    pub const TOOLS_OMITTED: &str =
        "the standard requires it; Claude Code gives the agent every tool when `tools` is left out";
    pub const MODEL_OMITTED: &str = "the standard requires it; Claude Code uses the main conversation's model when `model` is left out";
    pub const COMMA_STRING: &str =
        "the standard requires a YAML list; Claude Code also reads a comma-separated string";
    pub const LENIENT_COLON: &str = "the standard's frontmatter is YAML; Claude Code reads an unquoted value holding `: ` with a fallback";
    pub const PROACTIVE: &str = "the standard asks for an action verb; Claude Code documents `MUST BE USED` and `use PROACTIVELY` as the wording that makes it delegate to the agent on its own";
    pub const RESTRICTED_TOOL: &str =
        "the standard lists tool names; Claude Code also reads `Tool(argument)` as that tool, restricted";
}

/// What the user chose: the dialect, and what they added to the lists.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    pub dialect: Dialect,
    /// Openings a description may have although the kit takes them for a role (`--verb`).
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
    let rules = extra.dialect.rules();
    for d in defs {
        judged.saw("frontmatter-present", 1);
        let mut found = |rule: &'static str, (line, column): (usize, usize), message: String| {
            let level = rules
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
                let rule = if message.starts_with("no frontmatter")
                    || message.starts_with("the frontmatter is never closed")
                {
                    "frontmatter-present"
                } else {
                    judged.saw("frontmatter-yaml", 1);
                    "frontmatter-yaml"
                };
                found(rule, *at, message.clone());
                continue;
            }
        };
        if let Some((at, message)) = &front.lenient {
            // Strict YAML refuses it; Claude Code reads it with a fallback.
            if extra.dialect == Dialect::Standard {
                judged.saw("frontmatter-yaml", 1);
                found(
                    "frontmatter-yaml",
                    *at,
                    format!("{message} ({})", clause::LENIENT_COLON),
                );
                continue;
            }
            found(
                "frontmatter-strict-yaml",
                *at,
                format!(
                    "{message}: Claude Code reads it with a fallback, but not every version nor every file (2.1.1 did not register such an agent, anthropics/claude-code#16916; 2.1.251 drops it when the file has CRLF line endings), and strict YAML tools refuse it"
                ),
            );
        }
        if extra.dialect == Dialect::ClaudeCode {
            judged.saw("frontmatter-strict-yaml", 1);
        }
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
        rules,
        dialect: Some(extra.dialect.as_str()),
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
    let claude = extra.dialect == Dialect::ClaudeCode;
    count_judged(d, front, claude, judged);
    check_present(front, claude, found);
    check_tools_field(front, extra, claude, found);
    check_values(d, front, extra, found);
    if claude {
        check_claude_keys(front, judged, found);
    }
    check_body(d, front, found);
}

/// What each rule of the frontmatter judges in `d`, whatever it finds.
fn count_judged(d: &Definition, front: &Front, claude: bool, judged: &mut Counts) {
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
    // The tools as listed: a YAML list, or (Claude Code) a comma-separated string.
    let tools: Option<Vec<&Value>> = match v.get("tools") {
        Some(Value::Array(items)) => Some(items.iter().collect()),
        Some(Value::String(_)) if claude => Some(Vec::new()),
        _ => None,
    };
    if let Some(items) = &tools {
        judged.saw("tools-non-empty", 1);
        let named = if items.is_empty() {
            v["tools"].as_str().map_or(0, |s| {
                definition::comma_names(&s.replace('\n', " "), 0, 0).len()
            })
        } else {
            items.iter().filter(|t| t.is_string()).count()
        };
        judged.saw("tools-known", named as u64);
    }
    let plans = v["supports_plan_mode"] == Value::Bool(true);
    judged.saw(
        "plan-instructions",
        u64::from(plans && !d.body.trim().is_empty()),
    );
}

/// `required-field` for each field the dialect requires, and `field-type` for the fields that
/// must be strings.
fn check_present(
    front: &Front,
    claude: bool,
    found: &mut impl FnMut(&'static str, (usize, usize), String),
) {
    let v = &front.value;
    for key in ["name", "description", "tools", "model"] {
        if v.get(key).is_none_or(Value::is_null) {
            let message = match (key, claude) {
                ("tools" | "model", true) => continue,
                ("tools", false) => {
                    format!("no `tools` in the frontmatter ({})", clause::TOOLS_OMITTED)
                }
                ("model", false) => {
                    format!("no `model` in the frontmatter ({})", clause::MODEL_OMITTED)
                }
                _ => format!("no `{key}` in the frontmatter"),
            };
            found("required-field", (1, 1), message);
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
}

/// `tools` as listed: a YAML list (or, for Claude Code, a comma-separated string) of known tools.
fn check_tools_field(
    front: &Front,
    extra: &Extra,
    claude: bool,
    found: &mut impl FnMut(&'static str, (usize, usize), String),
) {
    match front.value.get("tools") {
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
                    Some(tool) => check_tool(tool, at, extra, found),
                }
            }
        }
        Some(Value::String(s)) if claude => {
            // Placed name by name when written on the key's line; else (a block scalar) at the key.
            let names = if front.tools.is_empty() {
                let at = front.at("tools");
                definition::comma_names(&s.replace('\n', " "), at.0, at.1)
                    .into_iter()
                    .map(|(name, _)| (name, at))
                    .collect()
            } else {
                front.tools.clone()
            };
            if names.is_empty() {
                found(
                    "tools-non-empty",
                    front.at("tools"),
                    format!("`tools` names no tool ({:?})", crate::text::shorten(s, 60)),
                );
            }
            for (tool, at) in &names {
                check_tool(tool, *at, extra, found);
            }
        }
        Some(Value::String(s)) => found(
            "field-type",
            front.at("tools"),
            format!(
                "`tools` is a string ({:?}), not a list: write one tool per `- ` line ({})",
                crate::text::shorten(s, 60),
                clause::COMMA_STRING
            ),
        ),
        Some(Value::Null) | None => {}
        Some(other) => found(
            "field-type",
            front.at("tools"),
            format!("`tools` is {}, not a list", definition::kind(other)),
        ),
    }
}

/// The values of `supports_plan_mode`, `name`, `description` and `model`.
fn check_values(
    d: &Definition,
    front: &Front,
    extra: &Extra,
    found: &mut impl FnMut(&'static str, (usize, usize), String),
) {
    let v = &front.value;
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
        if let Some(problem) = opening_problem(desc, extra) {
            found("description-action-verb", front.at("description"), problem);
        }
        let n = sentences(desc);
        if n > 2 {
            found(
                "description-sentences",
                front.at("description"),
                format!(
                    "the description is {n} sentences (the kit's convention, not the standard's: \
                     one or two, when to use the agent)"
                ),
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
}

/// `body-present`, and `plan-instructions` when the agent supports plan mode.
fn check_body(
    d: &Definition,
    front: &Front,
    found: &mut impl FnMut(&'static str, (usize, usize), String),
) {
    let v = &front.value;
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

/// `tools-known` for one tool name: a known name, an `mcp__…` tool, one of the user's, or
/// (Claude Code) a known tool restricted by an argument (`Bash(git *)`, `Agent(reviewer)`).
fn check_tool(
    tool: &str,
    at: (usize, usize),
    extra: &Extra,
    found: &mut impl FnMut(&'static str, (usize, usize), String),
) {
    if known_tool(tool, extra) {
        return;
    }
    let restricted = restricted_base(tool).is_some_and(|base| known_tool(base, extra));
    match (restricted, extra.dialect) {
        (true, Dialect::ClaudeCode) => {}
        (true, Dialect::Standard) => found(
            "tools-known",
            at,
            format!(
                "tool {tool:?} is not a tool name ({})",
                clause::RESTRICTED_TOOL
            ),
        ),
        (false, _) => found(
            "tools-known",
            at,
            format!(
                "unknown tool {tool:?} (known: {}…; add yours with --tool)",
                LISTS.tools[..6]
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

/// `Bash` of `Bash(git *)`.
fn restricted_base(tool: &str) -> Option<&str> {
    let (base, rest) = tool.split_once('(')?;
    rest.ends_with(')').then_some(base.trim())
}

/// `claude-code-keys`: each key beside name, description, tools and model is one Claude Code
/// reads, with a value of its type.
fn check_claude_keys(
    front: &Front,
    judged: &mut Counts,
    found: &mut impl FnMut(&'static str, (usize, usize), String),
) {
    let Some(map) = front.value.as_object() else {
        return;
    };
    for (key, value) in map {
        if matches!(key.as_str(), "name" | "description" | "tools" | "model") {
            continue;
        }
        judged.saw("claude-code-keys", 1);
        let at = front.at(key);
        let Some(spec) = LISTS.key(key) else {
            let plain = |k: &str| k.replace(['_', '-'], "").to_lowercase();
            let near = LISTS
                .claude_code_keys
                .iter()
                .find(|k| plain(&k.key) == plain(key))
                .map(|k| format!(" (did you mean `{}`?)", k.key))
                .unwrap_or_default();
            found(
                "claude-code-keys",
                at,
                format!("Claude Code does not read `{key}`: it ignores it{near}"),
            );
            continue;
        };
        if value.is_null() {
            continue;
        }
        let fits = match spec.kind {
            KeyType::String => value.is_string(),
            KeyType::Integer => value.is_i64() || value.is_u64(),
            KeyType::Boolean => value.is_boolean(),
            KeyType::Mapping => value.is_object(),
            KeyType::Tools => {
                value.is_string()
                    || value
                        .as_array()
                        .is_some_and(|items| items.iter().all(Value::is_string))
            }
            KeyType::Any => true,
        };
        let want = match spec.kind {
            KeyType::String => "a string",
            KeyType::Integer => "a whole number",
            KeyType::Boolean => "true or false",
            KeyType::Mapping => "a mapping",
            KeyType::Tools => "a list of names or a comma-separated string",
            KeyType::Any => "anything",
        };
        if !fits {
            found(
                "claude-code-keys",
                at,
                format!("`{key}` is {}, not {want}", definition::kind(value)),
            );
        } else if let Some(s) = value
            .as_str()
            .filter(|s| !spec.values.is_empty() && !spec.values.iter().any(|v| v == s))
        {
            found(
                "claude-code-keys",
                at,
                format!("`{key}` is {s:?}, not one of {}", spec.values.join(", ")),
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

fn known_tool(tool: &str, extra: &Extra) -> bool {
    LISTS.tools.iter().any(|t| t.name == tool)
        || tool.starts_with("mcp__")
        || extra.tools.iter().any(|t| t == tool)
}

fn recognisable_model(model: &str) -> bool {
    lists::MODELS.is_match(model.trim())
}

#[cfg(test)]
mod tests;
