use super::*;

fn split(text: &str) -> Vec<String> {
    split_command(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

#[test]
fn splits_like_a_shell() {
    assert_eq!(split("agent"), ["agent"]);
    assert_eq!(
        split("  python3   agent.py\t--x 1 "),
        ["python3", "agent.py", "--x", "1"]
    );
    assert_eq!(
        split(r#"sh -c 'echo "$HOME" | cat; exit 3'"#),
        ["sh", "-c", r#"echo "$HOME" | cat; exit 3"#]
    );
    assert_eq!(split(r#"a "b c" 'd e' f\ g"#), ["a", "b c", "d e", "f g"]);
    assert_eq!(split(r#"a"b"'c'd"#), ["abcd"]);
    assert_eq!(
        split(r#"x "q\"uote" "back\\slash" "kept\n""#),
        ["x", "q\"uote", "back\\slash", "kept\\n"]
    );
    assert_eq!(split(r"x \$y \'z\\"), ["x", "$y", "'z\\"]);
    assert_eq!(split(r#"x '' """#), ["x", "", ""]);
    assert_eq!(split("x \\\n y"), ["x", "y"]);
    assert_eq!(
        split("python3 -c 'import sys\nprint(1)'"),
        ["python3", "-c", "import sys\nprint(1)"]
    );
    assert_eq!(split("a~b *.json"), ["a~b", "*.json"]);
}

#[test]
fn split_errors_say_which() {
    let err = |text: &str| split_command(text).unwrap_err().to_string();
    assert_eq!(err(""), "the command is empty");
    assert_eq!(err("   \t"), "the command is empty");
    assert!(err("sh -c 'echo").contains("unterminated single quote"));
    assert!(err(r#"echo "abc"#).contains("unterminated double quote"));
    assert!(err(r"echo \").contains("lone backslash"));
    assert!(err("agent | tee log").contains("`|` at byte 6 is a shell operator"));
    assert!(err("agent > out").contains("shell operator"));
    assert!(err("agent --home $HOME").contains("`$` at byte 13 would be expanded"));
    assert!(err(r#"agent "$HOME""#).contains("would be expanded"));
    assert!(err("python3 ~/agent.py").contains("`~`"));
    assert!(err("a `b`").contains("would be expanded"));
}

#[test]
fn stderr_ring_keeps_the_last_bytes() {
    let mut ring = StderrRing::new(8);
    ring.push(b"abc");
    ring.push(b"defgh");
    assert_eq!(ring.log().tail, "abcdefgh");
    assert!(!ring.log().truncated);
    ring.push(b"ij");
    let log = ring.log();
    assert_eq!(
        (log.tail.as_str(), log.total_bytes, log.truncated),
        ("cdefghij", 10, true)
    );
    ring.push(&[b'z'; 100]);
    assert_eq!(ring.log().tail, "zzzzzzzz");
    assert_eq!(ring.quote_since(110), "");
    assert_eq!(ring.quote_since(108), "zz");
    assert_eq!(ring.quote_since(0), "…zzzzzzzz");
    let mut ring = StderrRing::new(0);
    ring.push(b"abc");
    assert_eq!((ring.log().tail.as_str(), ring.log().total_bytes), ("", 3));
}
