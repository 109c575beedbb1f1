//! `agent-tck lint agents PATH…`: every definition file under the paths against the standard's
//! frontmatter rules (MUST: errors; SHOULD: warnings), each finding at the line and column of
//! the key or item it is about. Two dialects: the standard's letter (default), and what Claude
//! Code loads (`--dialect claude-code`: tools and model optional, a comma-separated tools
//! string, Claude Code's other frontmatter keys). In the standard dialect a finding Claude Code
//! would accept says so in one clause. The lists judged by are data (`lint/lists.yaml`).

pub mod lists;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde_json::Value;

use super::definition::{self, Definition, DefinitionError, Front};
use crate::report::lint::{Finding, Lint, Rule};
use crate::report::Level;
use lists::{KeyType, LISTS};

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
    let v = &front.value;
    let claude = extra.dialect == Dialect::ClaudeCode;
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
    if claude {
        check_claude_keys(front, judged, found);
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

/// What is wrong with how a description opens, if anything: the standard's "starts with action
/// verb" read as what the agent does or when to use it. A fixed verb list keeps missing real
/// verbs (`Integrate`, `Pulls`, `Answer`…), so the rule flags what cannot be one — a role or a
/// rank (`Expert…`, `Senior…`), an article or a pronoun (`A…`, `This…`, `You…`), from
/// `lists.yaml` — and passes every other word. `--verb WORD` accepts a listed word.
fn opening_problem(desc: &str, extra: &Extra) -> Option<String> {
    let Some(first) = desc.split_whitespace().next() else {
        return Some("the description is empty: say what the agent does or when to use it".into());
    };
    // Claude Code's documented wording for proactive delegation: its dialect accepts it; the
    // standard's letter (an action verb) does not take "MUST" for one. ("Use PROACTIVELY…"
    // opens with the verb `use` and passes in both.)
    if proactive_opening(desc) {
        return (extra.dialect == Dialect::Standard).then(|| {
            format!(
                "the description begins with {:?}, not an action verb ({})",
                desc.split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" "),
                clause::PROACTIVE
            )
        });
    }
    let word = first
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '-')
        .to_lowercase();
    let accepted = extra.verbs.iter().any(|v| v.eq_ignore_ascii_case(&word));
    let role = LISTS.role_openings.iter().any(|o| o.word == word);
    (role && !accepted).then(|| {
        format!(
            "the description begins with {first:?}: it says who the agent is, not what it does or \
             when to use it (begin with a verb, `Review…` or `Use this agent when…`; --verb {word} \
             accepts it)"
        )
    })
}

/// Whether `desc` opens with "MUST BE USED" (any case, any spacing).
fn proactive_opening(desc: &str) -> bool {
    let words: Vec<String> = desc
        .split_whitespace()
        .take(3)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect();
    words == ["must", "be", "used"]
}

fn known_tool(tool: &str, extra: &Extra) -> bool {
    LISTS.tools.iter().any(|t| t.name == tool)
        || tool.starts_with("mcp__")
        || extra.tools.iter().any(|t| t == tool)
}

/// Abbreviations that never end a sentence (`etc.` can: see below).
const ABBREVIATIONS: &[&str] = &[
    "e.g.", "i.e.", "vs.", "cf.", "approx.", "incl.", "esp.", "mr.", "mrs.", "ms.", "dr.", "st.",
    "no.", "fig.", "eg.", "ie.",
];

/// Sentences in a description: words ending in `.`, `!`, `?` or `…` (before closing quotes,
/// brackets or emphasis), not counting abbreviations (`e.g.`, `vs.`), with `etc.` and initials
/// (`U.S.`) ending one only before a capital; a last sentence without a full stop counts too.
/// At least one.
fn sentences(text: &str) -> usize {
    let words: Vec<&str> = text.split_whitespace().collect();
    let capital_next = |i: usize| {
        words.get(i + 1).is_some_and(|w| {
            w.chars()
                .find(|c| c.is_alphanumeric())
                .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        })
    };
    let mut count = 0;
    let mut open = false;
    for (i, w) in words.iter().enumerate() {
        let core = w.trim_end_matches(['"', '\'', '”', '’', ')', ']', '*', '_', '`']);
        let lower = core.to_lowercase();
        let ends = if core.ends_with(['!', '?', '…']) {
            true
        } else if !core.ends_with('.') || ABBREVIATIONS.contains(&lower.as_str()) {
            false
        } else if lower == "etc." || initials(core) {
            capital_next(i) || i + 1 == words.len()
        } else {
            true
        };
        if ends {
            count += 1;
            open = false;
        } else {
            open = true;
        }
    }
    (count + usize::from(open)).max(1)
}

/// `U.S.`, `A.I.`: single letters each followed by a dot.
fn initials(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    chars.len() >= 4
        && chars.len().is_multiple_of(2)
        && chars.chunks(2).all(|p| p[0].is_alphabetic() && p[1] == '.')
}

fn recognisable_model(model: &str) -> bool {
    lists::MODELS.is_match(model.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(dialect: Dialect) -> Extra {
        Extra {
            dialect,
            ..Extra::default()
        }
    }

    /// The findings of one definition, as (rule, line, message).
    fn findings(text: &str, dialect: Dialect) -> Vec<(&'static str, usize, String)> {
        let l = lint(
            &[definition::read("agents/scanner.md", text)],
            &with(dialect),
            false,
        );
        l.findings
            .into_iter()
            .map(|f| (f.rule, f.line, f.message))
            .collect()
    }

    fn rules(text: &str, dialect: Dialect) -> Vec<&'static str> {
        findings(text, dialect).into_iter().map(|f| f.0).collect()
    }

    const CLAUDE: &str = "---\nname: scanner\ndescription: Scan code for security issues.\ntools: Read, Grep, Bash(git diff *), Agent(reviewer)\n---\n\nScan.\n";

    #[test]
    fn a_comma_string_and_omitted_fields_say_claude_code_accepts_them() {
        let standard = findings(CLAUDE, Dialect::Standard);
        let comma = standard.iter().find(|f| f.0 == "field-type").unwrap();
        assert_eq!(comma.1, 4);
        assert!(
            comma.2.ends_with("(the standard requires a YAML list; Claude Code also reads a comma-separated string)"),
            "{}",
            comma.2
        );
        let omitted: Vec<&String> = standard
            .iter()
            .filter(|f| f.0 == "required-field")
            .map(|f| &f.2)
            .collect();
        assert_eq!(
            omitted,
            [
                "no `model` in the frontmatter (the standard requires it; Claude Code uses the main conversation's model when `model` is left out)"
            ]
        );
        let no_tools = CLAUDE.replace("tools: Read, Grep, Bash(git diff *), Agent(reviewer)\n", "");
        let standard = findings(&no_tools, Dialect::Standard);
        assert!(standard.iter().any(|f| f.2 == "no `tools` in the frontmatter (the standard requires it; Claude Code gives the agent every tool when `tools` is left out)"), "{standard:?}");
        // Claude Code loads both: nothing to say.
        assert_eq!(rules(CLAUDE, Dialect::ClaudeCode), Vec::<&str>::new());
        assert_eq!(rules(&no_tools, Dialect::ClaudeCode), Vec::<&str>::new());
        // A restricted tool in a list: the standard names it, with the clause.
        let listed = CLAUDE.replace(
            "tools: Read, Grep, Bash(git diff *), Agent(reviewer)",
            "tools:\n  - Read\n  - Bash(git diff *)\nmodel: opus",
        );
        let restricted = findings(&listed, Dialect::Standard);
        assert_eq!(restricted.len(), 1, "{restricted:?}");
        assert_eq!(restricted[0].0, "tools-known");
        assert_eq!(restricted[0].1, 6);
        assert!(restricted[0]
            .2
            .contains("Claude Code also reads `Tool(argument)`"));
        assert_eq!(rules(&listed, Dialect::ClaudeCode), Vec::<&str>::new());
    }

    #[test]
    fn claude_code_still_finds_what_it_would_not_load_well() {
        // Each item of a comma string is placed and judged.
        let unknown = CLAUDE.replace("Grep,", "Teleport,");
        let f = findings(&unknown, Dialect::ClaudeCode);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].0, f[0].1), ("tools-known", 4));
        let l = lint(
            &[definition::read("agents/scanner.md", &unknown)],
            &with(Dialect::ClaudeCode),
            false,
        );
        assert_eq!(l.findings[0].column, 14);
        // A block scalar's names are judged too, at the key.
        let block = CLAUDE.replace(
            "tools: Read, Grep, Bash(git diff *), Agent(reviewer)",
            "tools: >\n  Read, Teleport",
        );
        let f = findings(&block, Dialect::ClaudeCode);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].0, f[0].1), ("tools-known", 4));
        assert!(f[0].2.contains("\"Teleport\""), "{f:?}");
        // Name and description stay required; a misspelt or mistyped key of Claude Code's.
        let bare = "---\ntools: Read\n---\nBody.\n";
        assert_eq!(
            rules(bare, Dialect::ClaudeCode),
            ["required-field", "required-field"]
        );
        let keys = CLAUDE.replace(
            "tools:",
            "permissionMode: sometimes\nmaxTurns: many\ncolour: blue\ncolor: cyan\nmax_turns: 3\ntools:",
        );
        let f = findings(&keys, Dialect::ClaudeCode);
        let messages: Vec<&str> = f.iter().map(|f| f.2.as_str()).collect();
        assert_eq!(
            messages,
            [
                "Claude Code does not read `colour`: it ignores it",
                "`maxTurns` is a string, not a whole number",
                "Claude Code does not read `max_turns`: it ignores it (did you mean `maxTurns`?)",
                "`permissionMode` is \"sometimes\", not one of default, acceptEdits, auto, dontAsk, bypassPermissions, plan",
            ]
        );
        assert!(f.iter().all(|f| f.0 == "claude-code-keys"));
        // The standard dialect has no such rule: the same keys are not judged there.
        assert!(!rules(&keys, Dialect::Standard).contains(&"claude-code-keys"));
        assert!(RULES.iter().all(|r| r.id != "claude-code-keys"));
        assert_eq!(Dialect::ClaudeCode.rules().len(), RULES.len() + 2);
        // An empty list loads (an agent with no tool): a warning there, an error in the standard.
        let empty = CLAUDE.replace(
            "tools: Read, Grep, Bash(git diff *), Agent(reviewer)",
            "tools: []",
        );
        for (dialect, level) in [
            (Dialect::ClaudeCode, Level::Should),
            (Dialect::Standard, Level::Must),
        ] {
            let l = lint(
                &[definition::read("agents/scanner.md", &empty)],
                &with(dialect),
                false,
            );
            let f = l
                .findings
                .iter()
                .find(|f| f.rule == "tools-non-empty")
                .unwrap();
            assert_eq!(f.level, level, "{dialect:?}");
        }
    }

    #[test]
    fn descriptions_open_with_what_the_agent_does_not_with_a_role() {
        let extra = Extra {
            verbs: vec!["Master".into()],
            ..Extra::default()
        };
        for ok in [
            "Integrate",
            "Pulls",
            "Performs",
            "Edit",
            "Apply",
            "Answer",
            "Process",
            "Fetch",
            "Use",
            "Scans",
            "Review:",
            "MUST",
            "Proactively",
        ] {
            let desc = format!("{ok} the thing.");
            assert_eq!(opening_problem(&desc, &Extra::default()), None, "{ok}");
        }
        for bad in [
            "Expert",
            "Master",
            "Elite",
            "Senior",
            "Specialist",
            "\"Expert",
            "This",
            "A",
            "You",
            "Agent",
        ] {
            let desc = format!("{bad} code reviewer.");
            let problem = opening_problem(&desc, &Extra::default());
            assert!(
                problem
                    .as_deref()
                    .is_some_and(|p| p.contains("says who the agent is")),
                "{bad}: {problem:?}"
            );
        }
        assert!(opening_problem("", &Extra::default()).is_some());
        // --verb accepts a listed word.
        assert_eq!(opening_problem("Master the build.", &extra), None);
        assert!(opening_problem("Elite reviewer.", &extra).is_some());
    }

    #[test]
    fn models_of_every_provider_and_alias_are_recognised() {
        for ok in [
            "claude-opus-4-5-20251101",
            "opus",
            "sonnet",
            "haiku",
            "inherit",
            "default",
            "opusplan",
            "sonnet[1m]",
            "fable",
            "claude-sonnet-4-5-20250929[1m]",
            "anthropic.claude-3-7-sonnet-20250219-v1:0",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "claude-sonnet-4-5@20250929",
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "gpt-4o",
            "o3-mini",
            "anthropic/claude-3",
        ] {
            assert!(recognisable_model(ok), "{ok}");
        }
        for bad in [
            "the best one",
            "",
            "claude opus",
            "opus-plan!",
            "sonnet[2m]",
        ] {
            assert!(!recognisable_model(bad), "{bad}");
        }
    }

    #[test]
    fn sentences_are_counted_as_a_reader_counts_them() {
        assert_eq!(sentences("Scan code, e.g. Rust. Report findings."), 2);
        assert_eq!(sentences("Scan code for issues"), 1);
        assert_eq!(sentences("One. Two! Three? Four."), 4);
        // A last sentence without a full stop was not counted: four read as three.
        assert_eq!(
            sentences(
                "Review pull requests. Check the tests. Flag risky changes. Use it before merging"
            ),
            4
        );
        // A full stop inside closing quotes or brackets ends a sentence.
        assert_eq!(
            sentences("Say \"done.\" Then stop (quietly.) Report. Leave."),
            4
        );
        // Decimals, versions, abbreviations and initials do not.
        assert_eq!(
            sentences("Upgrade to v2.5 or 3.0, i.e. the latest, vs. the old one. Cite U.S. law etc. when asked."),
            2
        );
        assert_eq!(sentences("Lint files, logs, etc. Then report."), 2);
        assert_eq!(sentences(""), 1);
        assert!(kebab("security-scanner") && kebab("a1-b2"));
        assert!(!kebab("Security") && !kebab("a--b") && !kebab("-a") && !kebab("a_b"));
    }

    #[test]
    fn the_example_definitions_lint_clean_in_both_dialects() {
        let defs: Vec<_> = super::super::EXAMPLES
            .iter()
            .map(|(path, text)| definition::read(path, text))
            .collect();
        for dialect in [Dialect::Standard, Dialect::ClaudeCode] {
            let l = lint(&defs, &with(dialect), true);
            assert_eq!(l.findings, vec![], "{dialect:?}");
            assert_eq!(l.dialect, Some(dialect.as_str()));
        }
    }

    #[test]
    fn must_be_used_passes_in_claude_code_and_is_a_finding_with_the_clause_in_the_standard() {
        let proactive = |desc: &str| {
            format!("---\nname: scanner\ndescription: {desc}\ntools: [Read]\nmodel: opus\n---\n\nScan.\n")
        };
        let must = proactive("MUST BE USED after every change to scan it.");
        assert_eq!(rules(&must, Dialect::ClaudeCode), Vec::<&str>::new());
        assert_eq!(
            findings(&must, Dialect::Standard),
            vec![(
                "description-action-verb",
                3,
                format!(
                    "the description begins with \"MUST BE USED\", not an action verb ({})",
                    clause::PROACTIVE
                )
            )]
        );
        let use_it = proactive("Use PROACTIVELY to scan every change.");
        assert_eq!(rules(&use_it, Dialect::Standard), Vec::<&str>::new());
        assert_eq!(rules(&use_it, Dialect::ClaudeCode), Vec::<&str>::new());
    }

    #[test]
    fn description_sentences_is_a_note_that_never_fails_strict() {
        let long = "---\nname: scanner\ndescription: Scan code. Report issues. Fix none.\ntools: [Read]\nmodel: opus\n---\n\nScan.\n";
        let l = lint(
            &[definition::read("agents/scanner.md", long)],
            &with(Dialect::Standard),
            true,
        );
        assert_eq!(l.findings.len(), 1);
        assert_eq!(l.findings[0].rule, "description-sentences");
        assert_eq!(l.findings[0].level, Level::May);
        assert!(l.findings[0]
            .message
            .contains("the kit's convention, not the standard's"));
        assert_eq!(l.exit_code(), crate::report::Exit::failed_if(false));
        assert!(
            l.console().contains("note[description-sentences]"),
            "{}",
            l.console()
        );
    }

    /// An unquoted value holding `: `: strict YAML refuses the frontmatter, Claude Code reads
    /// it. The standard's error says so in a clause and judges nothing else of the file; the
    /// claude-code dialect warns and judges the rest, read with that value quoted.
    #[test]
    fn an_unquoted_colon_is_an_error_in_the_standard_and_a_warning_for_claude_code() {
        let text = "---\nname: scanner\ndescription: Scan code. Examples: a leaked key, a token.\ntools: Read, Teleport\n---\n\nScan.\n";
        let standard = findings(text, Dialect::Standard);
        assert_eq!(standard.len(), 1, "{standard:?}");
        assert_eq!(standard[0].0, "frontmatter-yaml");
        assert!(
            standard[0].2.ends_with(&format!(
                "put it in quotes, e.g. `description: \"…\"`) ({})",
                clause::LENIENT_COLON
            )),
            "{}",
            standard[0].2
        );
        let claude = findings(text, Dialect::ClaudeCode);
        let found: Vec<&str> = claude.iter().map(|f| f.0).collect();
        assert_eq!(
            found,
            ["frontmatter-strict-yaml", "tools-known"],
            "{claude:?}"
        );
        assert_eq!(claude[0].1, 3, "the description's line");
        assert!(
            claude[0].2.contains("anthropics/claude-code#16916"),
            "{}",
            claude[0].2
        );
        // Quoted, it is strict YAML: nothing to say of it.
        let quoted = text.replace(
            "description: Scan code. Examples: a leaked key, a token.",
            "description: \"Scan code. Examples: a leaked key, a token.\"",
        );
        assert_eq!(rules(&quoted, Dialect::ClaudeCode), ["tools-known"]);
    }
}
