//! `agent-tck lint agents`: the built-in example definitions pass; each rule broken once is
//! caught by exactly that rule, at the line of the key; the SARIF validates against the SARIF
//! 2.1.0 schema and reads back through a SARIF reader; the binary's formats and exit codes.

use std::collections::BTreeSet;
use std::process::Output;

use agent_tck::protocols::agent_standard::definition;
use agent_tck::protocols::agent_standard::lint::{lint, Dialect, Extra, RULES};
use agent_tck::report::lint::Lint;
use serde_json::Value;

use crate::support::{run_within, tck_command, text, TempDir, RUN_DEADLINE};

const GOOD: &str = "---\nname: scanner\ndescription: Scan code for security issues.\ntools:\n  - Read\n  - Grep\nmodel: claude-opus-4-5-20251101\nsupports_plan_mode: true\n---\n\n# Scanner\n\n## Plan mode\n\nList what you will scan.\n\n## Execute mode\n\nScan it.\n";

fn lint_one(path: &str, text: &str) -> Lint {
    lint(&[definition::read(path, text)], &Extra::default(), false)
}

fn rules(l: &Lint) -> BTreeSet<&'static str> {
    l.findings.iter().map(|f| f.rule).collect()
}

#[test]
fn a_good_definition_is_clean_and_each_broken_rule_is_caught_alone_at_its_line() {
    assert_eq!(rules(&lint_one("agents/scanner.md", GOOD)), BTreeSet::new());
    let cases: Vec<(&str, String, &str, usize)> = vec![
        (
            "frontmatter-present",
            GOOD.replacen("---\n", "", 1),
            "scanner.md",
            1,
        ),
        (
            "frontmatter-yaml",
            GOOD.replace("  - Grep\n", "  - Grep\n  bad: [\n"),
            "scanner.md",
            7,
        ),
        (
            "required-field",
            GOOD.replace("model: claude-opus-4-5-20251101\n", ""),
            "scanner.md",
            1,
        ),
        (
            "field-type",
            GOOD.replace("model: claude-opus-4-5-20251101", "model: 4"),
            "scanner.md",
            7,
        ),
        (
            "name-kebab-case",
            GOOD.replace("name: scanner", "name: Scanner_One"),
            "Scanner_One.md",
            2,
        ),
        (
            "tools-non-empty",
            GOOD.replace("tools:\n  - Read\n  - Grep\n", "tools: []\n"),
            "scanner.md",
            4,
        ),
        (
            "plan-mode-boolean",
            GOOD.replace("supports_plan_mode: true", "supports_plan_mode: \"yes\""),
            "scanner.md",
            8,
        ),
        ("name-matches-file", GOOD.to_string(), "scanner-two.md", 2),
        (
            "description-action-verb",
            GOOD.replace("Scan code", "This agent scans code"),
            "scanner.md",
            3,
        ),
        (
            "description-sentences",
            GOOD.replace("security issues.", "security issues. Then more. And more."),
            "scanner.md",
            3,
        ),
        (
            "tools-known",
            GOOD.replace("  - Grep", "  - Teleport"),
            "scanner.md",
            6,
        ),
        (
            "model-recognisable",
            GOOD.replace("claude-opus-4-5-20251101", "the best one"),
            "scanner.md",
            7,
        ),
        (
            "body-present",
            GOOD[..GOOD.find("\n# Scanner").unwrap()].to_string(),
            "scanner.md",
            10,
        ),
        (
            "plan-instructions",
            GOOD.replace("## Plan mode", "## Planning"),
            "scanner.md",
            8,
        ),
    ];
    for (rule, text, file, line) in &cases {
        let l = lint_one(&format!("agents/{file}"), text);
        assert_eq!(rules(&l), [*rule].into(), "{rule}: {:#?}", l.findings);
        assert_eq!(l.findings[0].line, *line, "{rule}: {:#?}", l.findings);
    }
    // Names unique across the set: the second file is named, at its name.
    let two = lint(
        &[
            definition::read("a/scanner.md", GOOD),
            definition::read("b/scanner.md", GOOD),
        ],
        &Extra::default(),
        false,
    );
    assert_eq!(rules(&two), ["name-unique"].into());
    assert_eq!(
        (two.findings[0].file.as_str(), two.findings[0].line),
        ("b/scanner.md", 2)
    );
    assert!(two.findings[0].message.contains("a/scanner.md"));
    // Every rule has a case above.
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.0).chain(["name-unique"]).collect();
    let all: BTreeSet<&str> = RULES.iter().map(|r| r.id).collect();
    assert_eq!(covered, all);
    // The lists are the user's to extend.
    let extended = lint(
        &[definition::read(
            "agents/scanner.md",
            &GOOD
                .replace("  - Grep", "  - Teleport")
                .replace("Scan code", "Expert code"),
        )],
        &Extra {
            verbs: vec!["expert".into()],
            tools: vec!["Teleport".into()],
            ..Extra::default()
        },
        false,
    );
    assert_eq!(rules(&extended), BTreeSet::new());
}

/// The SARIF 2.1.0 schema, as the `serde-sarif` crate ships it (found through `cargo metadata`,
/// offline: for this host's dependencies, which are on disk once the tests are built).
fn sarif_schema() -> Value {
    let mut rustc = std::process::Command::new("rustc");
    rustc.arg("-vV");
    let rustc = run_within(rustc, RUN_DEADLINE);
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc's host");
    let mut metadata = std::process::Command::new(env!("CARGO"));
    metadata
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
            &host,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let out = run_within(metadata, RUN_DEADLINE);
    assert!(out.status.success(), "cargo metadata: {}", text(&out));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "serde-sarif")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("serde-sarif among the dev-dependencies");
    let path = std::path::Path::new(manifest).with_file_name("src/schema.json");
    let mut schema: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    // The published schema's language pattern is no valid regex (a stray `]`), which a
    // validator checking formats refuses; what it means is written instead, wherever it is.
    let mut fixed = 0;
    for def in ["run", "toolComponent"] {
        let language = &mut schema["definitions"][def]["properties"]["language"]["pattern"];
        if language == "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$" {
            *language = "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$".into();
            fixed += 1;
        }
    }
    assert!(
        fixed > 0,
        "the schema's language pattern has changed: look again"
    );
    schema
}

#[test]
fn the_sarif_validates_against_the_schema_and_reads_back() {
    let defs: Vec<_> = ["scanner.md", "sub dir/other.md", "/abs/third.md"]
        .iter()
        .map(|p| {
            definition::read(
                p,
                &GOOD
                    .replace("  - Grep", "  - Teleport")
                    .replace("model: claude-opus-4-5-20251101\n", ""),
            )
        })
        .collect();
    let l = lint(&defs, &Extra::default(), true);
    assert!(l.findings.len() >= 6);
    let sarif = l.sarif();
    let schema = sarif_schema();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema can fail: a level it does not know.
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&broken));
    // A SARIF reader takes it, and gives it back unchanged.
    let read: serde_sarif::sarif::Sarif = serde_json::from_value(sarif.clone()).unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap(), sarif);
    let results = read.runs[0].results.as_ref().unwrap();
    assert_eq!(results.len(), l.findings.len());
}

fn lint_cli(args: &[&str]) -> Output {
    let mut command = tck_command(&["lint", "agents"]);
    command.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    run_within(command, RUN_DEADLINE)
}

#[test]
fn the_command_line_lints_directories_in_every_format() {
    let good = lint_cli(&["suites/agent-standard/agents"]);
    assert_eq!(
        good.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&good.stdout)
    );
    assert!(String::from_utf8_lossy(&good.stdout).contains("3 files: 0 errors, 0 warnings"));
    let dir = TempDir::new("lint-agents");
    std::fs::create_dir_all(dir.path("agents/nested")).unwrap();
    std::fs::write(
        dir.path("agents/scanner.md"),
        GOOD.replace("  - Grep", "  - Teleport"),
    )
    .unwrap();
    std::fs::write(
        dir.path("agents/nested/bad.md"),
        "---\nname: Bad\ndescription: Scan.\ntools: [Read]\nmodel: opus\n---\nBody.\n",
    )
    .unwrap();
    std::fs::write(dir.path("agents/README.md"), "# Not a definition\n").unwrap();
    let agents = dir.path("agents");
    let console = lint_cli(&[&agents]);
    let text = String::from_utf8_lossy(&console.stdout);
    assert_eq!(console.status.code(), Some(1), "{text}");
    assert!(
        text.contains("nested/bad.md:2:1: error[name-kebab-case]"),
        "{text}"
    );
    assert!(
        text.contains("scanner.md:6:5: warning[tools-known]"),
        "{text}"
    );
    assert!(text.contains("2 files: 1 error, 2 warnings"), "{text}");
    // Warnings alone pass, unless --strict.
    let scanner = dir.path("agents/scanner.md");
    assert_eq!(lint_cli(&[&scanner]).status.code(), Some(0));
    assert_eq!(lint_cli(&[&scanner, "--strict"]).status.code(), Some(1));
    // SARIF on stdout and to a file; JSON and JUnit reports with a case per rule.
    let sarif_file = dir.path("out.sarif");
    let sarif = lint_cli(&[&agents, "--format", "sarif", "--sarif", &sarif_file]);
    let printed: Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let written: Value = serde_json::from_slice(&std::fs::read(&sarif_file).unwrap()).unwrap();
    assert_eq!(printed, written);
    assert_eq!(printed["runs"][0]["results"].as_array().unwrap().len(), 3);
    let json = lint_cli(&[&agents, "--format", "json"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["cases"].as_array().unwrap().len(), RULES.len());
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &report),
        vec![]
    );
    let junit = lint_cli(&[&agents, "--format", "junit"]);
    let xml = String::from_utf8_lossy(&junit.stdout);
    assert!(
        xml.contains("name-kebab-case") && xml.contains("<failure"),
        "{xml}"
    );
    // A path that is not there, or holds no definition: exit 2, naming it.
    let missing = lint_cli(&["no/such/dir"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/dir"));
    let empty = dir.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let none = lint_cli(&[&empty]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no agent definition"));
}

/// A definition as Claude Code users write it (tools a comma string, an alias, Claude Code's
/// own keys), written for this test.
const CLAUDE_STYLE: &str = "---\nname: triage\ndescription: Pulls the open issues and drafts a triage note for each. Use it at the start of a sprint.\ntools: Read, Grep, Bash(gh issue list *)\nmodel: sonnet\ncolor: green\npermissionMode: plan\n---\n\nRead the issues and write one note per issue.\n";

#[test]
fn the_dialects_split_what_the_standard_requires_from_what_claude_code_loads() {
    let dir = TempDir::new("lint-dialects");
    std::fs::create_dir_all(dir.path("agents")).unwrap();
    std::fs::write(dir.path("agents/triage.md"), CLAUDE_STYLE).unwrap();
    let agents = dir.path("agents");
    // The standard's letter: the comma string is an error that says Claude Code reads it.
    let standard = lint_cli(&[&agents]);
    let out = String::from_utf8_lossy(&standard.stdout);
    assert_eq!(standard.status.code(), Some(1), "{out}");
    assert!(
        out.contains("triage.md:4:1: error[field-type]: `tools` is a string (\"Read, Grep, Bash(gh issue list *)\"), not a list: write one tool per `- ` line (the standard requires a YAML list; Claude Code also reads a comma-separated string)"),
        "{out}"
    );
    assert!(out.contains("1 file: 1 error, 0 warnings"), "{out}");
    // What Claude Code loads: clean, its keys judged.
    let claude = lint_cli(&[&agents, "--dialect", "claude-code", "--strict"]);
    let out = String::from_utf8_lossy(&claude.stdout);
    assert_eq!(claude.status.code(), Some(0), "{out}");
    assert!(out.contains("1 file: 0 errors, 0 warnings"), "{out}");
    // A misspelt key of Claude Code's is a warning there, at its line.
    std::fs::write(
        dir.path("agents/triage.md"),
        CLAUDE_STYLE.replace("color: green", "colour: green"),
    )
    .unwrap();
    let misspelt = lint_cli(&[&agents, "--dialect", "claude-code"]);
    let out = String::from_utf8_lossy(&misspelt.stdout);
    assert_eq!(misspelt.status.code(), Some(0), "{out}");
    assert!(
        out.contains("triage.md:6:1: warning[claude-code-keys]: Claude Code does not read `colour`: it ignores it"),
        "{out}"
    );
    // SARIF says the dialect in each rule, and still validates.
    let sarif = lint_cli(&[&agents, "--dialect", "claude-code", "--format", "sarif"]);
    let sarif: Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert!(rules
        .iter()
        .all(|r| r["properties"]["dialect"] == "claude-code"));
    assert!(rules.iter().any(|r| r["id"] == "claude-code-keys"));
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&sarif_schema())
        .unwrap();
    assert!(validator.is_valid(&sarif));
    // With only the four fields, the keys rule has nothing to judge: a skip that says so.
    std::fs::write(
        dir.path("agents/triage.md"),
        CLAUDE_STYLE.replace("color: green\npermissionMode: plan\n", ""),
    )
    .unwrap();
    let json = lint_cli(&[&agents, "--dialect", "claude-code", "--format", "json"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    let keys = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "claude-code-keys")
        .unwrap();
    assert_eq!(keys["status"], "skip", "{keys}");
    assert!(keys["message"].as_str().unwrap().contains("permissionMode"));
    // A dialect that does not exist: a usage error naming the flag.
    let bad = lint_cli(&[&agents, "--dialect", "cursor"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--dialect"));
}

#[test]
fn a_yaml_mistake_is_reported_at_its_line_and_long_descriptions_counted_right() {
    let dir = TempDir::new("lint-yaml-line");
    std::fs::write(
        dir.path("scanner.md"),
        GOOD.replace("tools:\n  - Read\n  - Grep\n", "tools: [Read, Grep\n"),
    )
    .unwrap();
    let out = lint_cli(&[&dir.path("scanner.md")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("scanner.md:4:8: error[frontmatter-yaml]: invalid YAML: the `[` opened at line 4, column 8 is never closed (the parser stopped at line 5"),
        "{text}"
    );
    // Four sentences, the last without a full stop: four.
    let four = GOOD.replace(
        "Scan code for security issues.",
        "Scan code for security issues. Report each one. Suggest a fix. Run it before a release",
    );
    let l = lint_one("agents/scanner.md", &four);
    let messages: Vec<&str> = l.findings.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        messages,
        ["the description is 4 sentences (the kit's convention, not the standard's: one or two, when to use the agent)"]
    );
}

/// Definitions written for this test, one per pattern seen in public collections, and the
/// findings a careful reader agrees with, in each dialect: (file, text, standard, claude-code).
const WRITTEN: &[(&str, &str, &[&str], &[&str])] = &[
    // Tools omitted, model omitted: Claude Code gives every tool and the session's model.
    (
        "notes.md",
        "---\nname: notes\ndescription: Summarize meeting notes into action items.\n---\nBody.\n",
        &["required-field", "required-field"],
        &[],
    ),
    // A comma string with a restricted tool, and an alias.
    (
        "release.md",
        "---\nname: release\ndescription: Prepare a release branch and its changelog.\ntools: Read, Edit, Bash(git tag *)\nmodel: haiku\n---\nBody.\n",
        &["field-type"],
        &[],
    ),
    // Role-noun openings: a warning in both worlds.
    (
        "db-tuner.md",
        "---\nname: db-tuner\ndescription: Expert database tuner for slow queries.\ntools: [Read]\nmodel: opus\n---\nBody.\n",
        &["description-action-verb"],
        &["description-action-verb"],
    ),
    (
        "k8s.md",
        "---\nname: k8s\ndescription: Senior platform engineer who knows Kubernetes.\ntools: [Read, Bash]\nmodel: sonnet\n---\nBody.\n",
        &["description-action-verb"],
        &["description-action-verb"],
    ),
    // Real verbs no list had: nothing to say.
    (
        "syncer.md",
        "---\nname: syncer\ndescription: Pulls upstream changes and integrates them into the fork.\ntools: [Read, Bash, Agent, SendMessage, TaskCreate]\nmodel: opusplan\n---\nBody.\n",
        &[],
        &[],
    ),
    (
        "helpdesk.md",
        "---\nname: helpdesk\ndescription: Answer questions about the codebase. Use it when onboarding.\ntools: [Read, Grep, Glob]\nmodel: us.anthropic.claude-sonnet-4-5-20250929-v1:0\n---\nBody.\n",
        &[],
        &[],
    ),
    // A long description: four sentences, the last without a full stop.
    (
        "auditor.md",
        "---\nname: auditor\ndescription: Audit dependencies for known vulnerabilities. Check licences too, e.g. GPL. Report each finding with its severity. Run it weekly\ntools: [Read, Bash]\nmodel: claude-sonnet-4-5@20250929\n---\nBody.\n",
        &["description-sentences"],
        &["description-sentences"],
    ),
    // YAML that breaks on an unquoted colon: an error in the standard; Claude Code reads it
    // with a fallback, so a warning there (and the rest of the file is judged).
    (
        "planner.md",
        "---\nname: planner\ndescription: Plan work. Note: it never edits files.\ntools: [Read]\nmodel: inherit\n---\nBody.\n",
        &["frontmatter-yaml"],
        &["frontmatter-strict-yaml"],
    ),
    // Claude Code's own keys, one misspelt.
    (
        "reviewer.md",
        "---\nname: reviewer\ndescription: Review the diff before a merge.\ntools: Read, Grep\nmodel: sonnet\ncolor: blue\npermission_mode: plan\n---\nBody.\n",
        &["field-type"],
        &["claude-code-keys"],
    ),
];

#[test]
fn written_definitions_get_exactly_the_findings_a_reader_agrees_with() {
    for dialect in [Dialect::Standard, Dialect::ClaudeCode] {
        let defs: Vec<_> = WRITTEN
            .iter()
            .map(|w| definition::read(&format!("agents/{}", w.0), w.1))
            .collect();
        let l = lint(
            &defs,
            &Extra {
                dialect,
                ..Extra::default()
            },
            false,
        );
        for w in WRITTEN {
            let got: Vec<&str> = l
                .findings
                .iter()
                .filter(|f| f.file == format!("agents/{}", w.0))
                .map(|f| f.rule)
                .collect();
            let want = match dialect {
                Dialect::Standard => w.2,
                Dialect::ClaudeCode => w.3,
            };
            assert_eq!(got, want, "{dialect:?} {}: {:#?}", w.0, l.findings);
        }
    }
}

#[test]
fn the_calibration_script_prints_the_findings_per_rule_in_each_dialect() {
    let dir = TempDir::new("lint-calibration");
    for w in WRITTEN {
        std::fs::write(dir.path(w.0), w.1).unwrap();
    }
    let mut command = std::process::Command::new("bash");
    command
        .arg("scripts/lint-calibration.sh")
        .arg(dir.path(""))
        .env("AGENT_TCK", crate::support::EXE)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let out = run_within(command, RUN_DEADLINE);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines: Vec<String> = printed
        .lines()
        .map(|l| {
            // The time varies: `in N ms` is left out.
            l.split(" in ").next().unwrap_or(l).trim().to_string()
        })
        .collect();
    assert_eq!(
        lines,
        [
            "== dialect standard: 9 files: 5 errors, 2 warnings, 1 note",
            "2 error[field-type]",
            "2 error[required-field]",
            "2 warning[description-action-verb]",
            "1 error[frontmatter-yaml]",
            "1 note[description-sentences]",
            "== dialect claude-code: 9 files: 0 errors, 4 warnings, 1 note",
            "2 warning[description-action-verb]",
            "1 note[description-sentences]",
            "1 warning[claude-code-keys]",
            "1 warning[frontmatter-strict-yaml]",
        ],
        "{printed}"
    );
    // A folder that is not there: the linter's own exit 2, not a count.
    let mut missing = std::process::Command::new("bash");
    missing
        .args(["scripts/lint-calibration.sh", "no/such/dir"])
        .env("AGENT_TCK", crate::support::EXE)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(run_within(missing, RUN_DEADLINE).status.code(), Some(2));
}

// `lint agents --fix`: definitions written for these tests, each with what has one safe answer.

/// Tools as a comma string with a comment, and nothing else to fix.
const FIX_TOOLS: &str = "---\n# reads only\nname: tools-only\ndescription: Scan code for leaked keys.\ntools: Read, Grep, Glob # read-only\nmodel: sonnet\n---\n\nScan it.\n";
/// A camelCase name in a file already named for its kebab form.
const FIX_NAME: &str = "---\nname: codeReviewer # shown in menus\ndescription: Review the diff for bugs.\ntools:\n  - Read\nmodel: sonnet\n---\n\nReview it.\n";
/// supports_plan_mode as a string (`'yes'`; unquoted, the parser reads a boolean).
const FIX_PLAN: &str = "---\nname: plan-only\ndescription: Plan the migration.\ntools: [Read]\nmodel: sonnet\nsupports_plan_mode: 'yes'\n---\n\n## Plan mode\n\nList the steps.\n\n## Execute mode\n\nRun them.\n";
/// All three at once, between comments, in an order of its own.
const FIX_ALL: &str = "---\nmodel: opus\n# the menu name\nname: \"Pull Request Reviewer\"   # was a title\nsupports_plan_mode: \"false\"\ntools: Read, Glob\ndescription: Review pull requests.\n---\n\nReview it.\n";

fn fix_dir(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    std::fs::create_dir_all(dir.path("agents")).unwrap();
    for (file, text) in [
        ("agents/tools-only.md", FIX_TOOLS),
        ("agents/code-reviewer.md", FIX_NAME),
        ("agents/plan-only.md", FIX_PLAN),
        ("agents/all.md", FIX_ALL),
        ("agents/scanner.md", GOOD),
    ] {
        std::fs::write(dir.path(file), text).unwrap();
    }
    dir
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn fix_rewrites_each_finding_alone_and_together_keeping_comments_and_order() {
    let dir = fix_dir("lint-fix");
    let agents = dir.path("agents");
    let out = lint_cli(&[&agents, "--fix"]);
    let printed = String::from_utf8_lossy(&out.stdout);
    // What is left needs a person: all.md's name is not its file's (a warning), so exit 0.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let fixed: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("fixed "))
        .collect();
    let at = |file: &str| format!("fixed {}", dir.path(&format!("agents/{file}")));
    assert_eq!(
        fixed,
        [
            format!(
                "{}:4: name: \"Pull Request Reviewer\" → pull-request-reviewer",
                at("all.md")
            ),
            format!(
                "{}:5: supports_plan_mode: string \"false\" → false",
                at("all.md")
            ),
            format!(
                "{}:6: tools: comma string → YAML list (2 tools)",
                at("all.md")
            ),
            format!(
                "{}:2: name: \"codeReviewer\" → code-reviewer",
                at("code-reviewer.md")
            ),
            format!(
                "{}:6: supports_plan_mode: string 'yes' → true",
                at("plan-only.md")
            ),
            format!(
                "{}:5: tools: comma string → YAML list (3 tools)",
                at("tools-only.md")
            ),
        ],
        "{printed}"
    );
    assert_eq!(
        read(&dir.path("agents/tools-only.md")),
        "---\n# reads only\nname: tools-only\ndescription: Scan code for leaked keys.\ntools: # read-only\n  - Read\n  - Grep\n  - Glob\nmodel: sonnet\n---\n\nScan it.\n"
    );
    assert_eq!(
        read(&dir.path("agents/code-reviewer.md")),
        FIX_NAME.replace("codeReviewer", "code-reviewer")
    );
    assert_eq!(
        read(&dir.path("agents/plan-only.md")),
        FIX_PLAN.replace("mode: 'yes'", "mode: true")
    );
    assert_eq!(
        read(&dir.path("agents/all.md")),
        "---\nmodel: opus\n# the menu name\nname: pull-request-reviewer   # was a title\nsupports_plan_mode: false\ntools:\n  - Read\n  - Glob\ndescription: Review pull requests.\n---\n\nReview it.\n"
    );
    // A file with nothing to fix is not written or named.
    assert_eq!(read(&dir.path("agents/scanner.md")), GOOD);
    assert!(!printed.contains("scanner.md:"), "{printed}");
    // Each fixed file lints clean of what was fixed; all.md keeps the finding that needs a person.
    for file in ["tools-only.md", "code-reviewer.md", "plan-only.md"] {
        let path = dir.path(&format!("agents/{file}"));
        assert_eq!(
            rules(&lint_one(&path, &read(&path))),
            BTreeSet::new(),
            "{file}"
        );
    }
    let all = dir.path("agents/all.md");
    assert_eq!(
        rules(&lint_one(&all, &read(&all))),
        BTreeSet::from(["name-matches-file"])
    );
    assert!(
        printed.contains("all.md:4:1: warning[name-matches-file]"),
        "{printed}"
    );
    assert!(
        printed.contains("5 files: 0 errors, 1 warning"),
        "{printed}"
    );
    // A second --fix changes nothing, byte for byte, and says no fix.
    let before: Vec<Vec<u8>> = [
        "tools-only.md",
        "code-reviewer.md",
        "plan-only.md",
        "all.md",
    ]
    .iter()
    .map(|f| std::fs::read(dir.path(&format!("agents/{f}"))).unwrap())
    .collect();
    let again = lint_cli(&[&agents, "--fix"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(!text(&again).contains("fixed "), "{}", text(&again));
    let after: Vec<Vec<u8>> = [
        "tools-only.md",
        "code-reviewer.md",
        "plan-only.md",
        "all.md",
    ]
    .iter()
    .map(|f| std::fs::read(dir.path(&format!("agents/{f}"))).unwrap())
    .collect();
    assert_eq!(before, after);
}

#[test]
fn fix_dry_run_prints_the_diff_and_writes_nothing() {
    let dir = fix_dir("lint-fix-dry");
    let file = dir.path("agents/tools-only.md");
    let out = lint_cli(&[&file, "--fix", "--dry-run"]);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        printed.contains(&format!(
            "--- a/{file}\n+++ b/{file}\n@@ -2,7 +2,10 @@\n # reads only\n name: tools-only\n description: Scan code for leaked keys.\n-tools: Read, Grep, Glob # read-only\n+tools: # read-only\n+  - Read\n+  - Grep\n+  - Glob\n model: sonnet\n ---\n \n"
        )),
        "{printed}"
    );
    assert_eq!(read(&file), FIX_TOOLS);
    // The lint that follows judges the text as it would be: no field-type error left.
    assert!(!printed.contains("field-type"), "{printed}");
    // With a document on stdout, the fixes are said on stderr.
    let json = lint_cli(&[&file, "--fix", "--dry-run", "--format", "json"]);
    let _: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(String::from_utf8_lossy(&json.stderr).contains("+  - Glob"));
    assert_eq!(read(&file), FIX_TOOLS);
    // --dry-run and --fix-names need --fix.
    assert_eq!(lint_cli(&[&file, "--dry-run"]).status.code(), Some(2));
}

#[test]
fn fix_names_renames_the_file_unless_the_name_is_taken() {
    let dir = TempDir::new("lint-fix-names");
    std::fs::create_dir_all(dir.path("agents")).unwrap();
    let all = dir.path("agents/all.md");
    std::fs::write(&all, FIX_ALL).unwrap();
    let out = lint_cli(&[&all, "--fix", "--fix-names"]);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let renamed = dir.path("agents/pull-request-reviewer.md");
    assert!(
        printed.contains(&format!("renamed {all} → {renamed}\n")),
        "{printed}"
    );
    assert!(!std::path::Path::new(&all).exists());
    assert!(read(&renamed).contains("name: pull-request-reviewer   # was a title\n"));
    assert!(
        printed.contains("1 file: 0 errors, 0 warnings"),
        "{printed}"
    );
    // The target exists: that file is refused whole (not even its other fixes are written).
    std::fs::write(&all, FIX_ALL).unwrap();
    let refused = lint_cli(&[&all, "--fix", "--fix-names"]);
    let printed = String::from_utf8_lossy(&refused.stdout);
    assert!(
        printed.contains(&format!(
            "not fixed {all}: --fix-names would rename it to {renamed}, which exists; nothing is changed in this file"
        )),
        "{printed}"
    );
    assert!(!printed.contains("fixed  "), "{printed}");
    assert_eq!(read(&all), FIX_ALL);
    assert_eq!(refused.status.code(), Some(1), "{printed}");
}

#[test]
fn fix_leaves_a_file_with_a_yaml_error_untouched_and_says_so() {
    let dir = TempDir::new("lint-fix-yaml");
    let broken = "---\nname: Broken One\nsupports_plan_mode: \"true\"\ntools: [Read, Grep\nmodel: opus\n---\nBody.\n";
    let file = dir.path("broken.md");
    std::fs::write(&file, broken).unwrap();
    let out = lint_cli(&[&file, "--fix"]);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains(&format!(
            "not fixed {file}:4:8: invalid YAML: the `[` opened at line 4, column 8 is never closed"
        )),
        "{printed}"
    );
    assert!(
        printed.contains("; the file is left as it is\n"),
        "{printed}"
    );
    assert!(printed.contains("error[frontmatter-yaml]"), "{printed}");
    assert_eq!(read(&file), broken);
}

// Issue #31 point 5: Claude Code's proactive wording, and description-sentences advisory.

#[test]
fn must_be_used_is_claude_codes_wording_and_long_descriptions_are_notes() {
    let dir = TempDir::new("lint-proactive");
    std::fs::create_dir_all(dir.path("agents")).unwrap();
    std::fs::write(
        dir.path("agents/guard.md"),
        "---\nname: guard\ndescription: MUST BE USED before every commit to scan the diff.\ntools: [Read, Grep]\nmodel: sonnet\n---\nBody.\n",
    )
    .unwrap();
    let guard = dir.path("agents/guard.md");
    let standard = lint_cli(&[&guard]);
    let out = String::from_utf8_lossy(&standard.stdout);
    assert_eq!(standard.status.code(), Some(0), "{out}");
    assert!(
        out.contains("guard.md:3:1: warning[description-action-verb]: the description begins with \"MUST BE USED\", not an action verb (the standard asks for an action verb; Claude Code documents `MUST BE USED` and `use PROACTIVELY` as the wording that makes it delegate to the agent on its own)"),
        "{out}"
    );
    let claude = lint_cli(&[&guard, "--dialect", "claude-code", "--strict"]);
    let out = String::from_utf8_lossy(&claude.stdout);
    assert_eq!(claude.status.code(), Some(0), "{out}");
    assert!(
        out.contains("1 file: 0 errors, 0 warnings (--strict: warnings fail)\n"),
        "{out}"
    );
    // A long description: a note, which --strict does not fail on.
    std::fs::write(
        dir.path("agents/scribe.md"),
        "---\nname: scribe\ndescription: Write release notes. Read the log first. Keep them short.\ntools: [Read]\nmodel: sonnet\n---\nBody.\n",
    )
    .unwrap();
    let scribe = dir.path("agents/scribe.md");
    let strict = lint_cli(&[&scribe, "--strict"]);
    let out = String::from_utf8_lossy(&strict.stdout);
    assert_eq!(strict.status.code(), Some(0), "{out}");
    assert!(
        out.contains("scribe.md:3:1: note[description-sentences]: the description is 3 sentences (the kit's convention, not the standard's: one or two, when to use the agent)"),
        "{out}"
    );
    assert!(
        out.contains("1 file: 0 errors, 0 warnings, 1 note (--strict: warnings fail)"),
        "{out}"
    );
}
