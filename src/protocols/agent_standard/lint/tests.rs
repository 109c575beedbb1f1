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
        comma.2.ends_with(
            "(the standard requires a YAML list; Claude Code also reads a comma-separated string)"
        ),
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
        format!(
            "---\nname: scanner\ndescription: {desc}\ntools: [Read]\nmodel: opus\n---\n\nScan.\n"
        )
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
