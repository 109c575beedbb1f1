//! Making peer bytes safe to show: bounded excerpts, escaping of control and invisible characters,
//! JSON-pointer to dotted-path conversion, secret redaction.
//!
//! Everything an agent sends may end up on a terminal, in XML or in JSON. Escaping here means a
//! hostile peer cannot colour our console, spoof lines with `\r`, reorder text with bidi controls or
//! break an XML consumer with a NUL byte.

/// Longest excerpt of a peer's bytes kept in a report, in characters.
pub const EXCERPT_CHARS: usize = 2_000;

/// Renders bytes for a report: invalid UTF-8 becomes U+FFFD, control and invisible characters
/// become visible escapes, and at most `max_chars` characters are kept (with a note of what was cut).
pub fn excerpt(bytes: &[u8], max_chars: usize) -> String {
    excerpt_str(&lossy(bytes), max_chars)
}

/// Bytes as text, invalid UTF-8 as U+FFFD: [`String::from_utf8_lossy`], with the quicker
/// check of valid UTF-8 first (it skips ASCII a word at a time; the lossy decoder goes byte by
/// byte, which cost ~0.6 instruction a byte on every 100 KB request body a report describes).
pub fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// As [`excerpt`], for text already decoded.
pub fn excerpt_str(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars) + 32);
    let mut kept = 0usize;
    let mut rest = text;
    // The character after the last one kept is read (and dropped) before the note is decided,
    // as it always was: the note is added when at least one more follows it.
    while let Some(c) = rest.chars().next() {
        if kept == max_chars {
            rest = &rest[c.len_utf8()..];
            break;
        }
        // A run of plain ASCII (printable, newline, tab) is copied at once.
        let run = rest
            .bytes()
            .take(max_chars - kept)
            .take_while(|&b| is_plain_ascii(b))
            .count();
        if run > 0 {
            out.push_str(&rest[..run]);
            kept += run;
            rest = &rest[run..];
            continue;
        }
        push_escaped(&mut out, c);
        kept += 1;
        rest = &rest[c.len_utf8()..];
    }
    if kept == max_chars && !rest.is_empty() {
        // What is left, and the character dropped above.
        let more = rest.chars().count() + 1;
        out.push_str(&format!("… [{more} more characters]"));
    }
    out
}

/// An ASCII byte printed as it is (not [`is_unsafe_char`]).
#[inline]
fn is_plain_ascii(b: u8) -> bool {
    matches!(b, b' '..=b'~' | b'\n' | b'\t')
}

/// Escapes one character unless it is safe to print as it is. Newlines and tabs are kept.
fn push_escaped(out: &mut String, c: char) {
    if is_unsafe_char(c) {
        let code = c as u32;
        if code <= 0xff {
            out.push_str(&format!("\\x{code:02x}"));
        } else {
            out.push_str(&format!("\\u{{{code:04x}}}"));
        }
    } else {
        out.push(c);
    }
}

/// Control characters (C0 but `\n` and `\t`, DEL, C1), bidi controls, zero-width characters,
/// Unicode tag characters, non-characters and the replacement character stay visible as escapes.
pub fn is_unsafe_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        | '\u{e0000}'..='\u{e007f}')
}

/// Shortens a text to at most `max_chars` characters without escaping (for messages we wrote).
pub fn shorten(text: &str, max_chars: usize) -> String {
    excerpt_str(text, max_chars)
}

/// `/observations/1/severity` → `observations[1].severity`; the empty pointer is `$` (the body).
pub fn pointer_to_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "$".to_string();
    }
    let mut out = String::new();
    for token in pointer.trim_start_matches('/').split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{token}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// Replaces every occurrence of each secret with `***`. Secrets shorter than 3 bytes are left alone
/// (they would turn every report into asterisks and are not worth hiding).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Every secret, longest first: masked where it is sent (after `Bearer `).
    sent: Vec<String>,
    /// The secrets long enough to be searched for in any text, longest first.
    searched: Vec<String>,
}

/// Secrets shorter than this are masked only where they are sent: searched for everywhere, a
/// short key (`wrong`, `test`) would mask ordinary words in answers and messages.
pub const MIN_SEARCHED_SECRET: usize = 8;

impl Redactor {
    pub fn new<I: IntoIterator<Item = String>>(secrets: I) -> Self {
        let mut sent: Vec<String> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        // Longest first, so a secret that contains another is replaced whole.
        sent.sort_by_key(|s| std::cmp::Reverse(s.len()));
        sent.dedup();
        let searched = sent
            .iter()
            .filter(|s| s.chars().count() >= MIN_SEARCHED_SECRET)
            .cloned()
            .collect();
        Redactor { sent, searched }
    }

    /// Whether a secret is too short to be searched for (it is masked only where it is sent).
    pub fn has_short_secret(&self) -> bool {
        self.sent.len() > self.searched.len()
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.sent {
            out = mask_sent(&out, secret);
        }
        for secret in &self.searched {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }

    pub fn redact_in_place(&self, text: &mut String) {
        if self.sent.iter().any(|s| text.contains(s.as_str())) {
            *text = self.redact(text);
        }
    }
}

/// `Bearer SECRET` → `Bearer ***`, where the token is the secret whole (not a longer token that
/// starts with it).
fn mask_sent(text: &str, secret: &str) -> String {
    let needle = format!("Bearer {secret}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        let end = at + needle.len();
        let whole = !rest[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || "-._~+/=".contains(c));
        out.push_str(&rest[..at]);
        out.push_str(if whole { "Bearer ***" } else { &needle });
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The name of `known` closest to `typed` by edit distance, when it is close enough to be what
/// was meant (a typo: at most a third of the name's length, and at most 3 edits).
pub fn nearest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (typed.chars().count() / 3).clamp(1, 3);
    known
        .into_iter()
        .map(|k| (edit_distance(typed, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, counting a swap of two neighbours as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// Quotes a string for a POSIX shell (single quotes).
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Why a data file of people's does not read, each message `FILE:LINE: what is wrong`. A usage
/// error: the file is to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataFileError {
    #[error("{file}:{line}: `${{` without its closing `}}` (write $$ for a literal $)")]
    UnclosedVariable { file: String, line: usize },
    #[error("{file}:{line}: ${{{written}}}: {name:?} is not a variable name")]
    NotAVariableName {
        file: String,
        line: usize,
        written: String,
        name: String,
    },
    #[error(
        "{file}:{line}: ${{{name}}}: the environment variable {name} is not set \
         (set it, or give a default: ${{{name}:-VALUE}})"
    )]
    UnsetVariable {
        file: String,
        line: usize,
        name: String,
    },
    /// The YAML parser's error, one line ([`yaml_error`]).
    #[error("{0}")]
    Yaml(String),
}

impl crate::error::LayerError for DataFileError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// For the file loaders that gather one-line messages with `?` (the message unchanged).
impl From<DataFileError> for String {
    fn from(e: DataFileError) -> Self {
        e.to_string()
    }
}

/// A YAML file of people's (a fleet file): `${ENV}` substituted ([`substitute_env`]), then read
/// as `T`; errors read `FILE:LINE: what is wrong`.
pub fn read_yaml_with_env<T: serde::de::DeserializeOwned>(
    source: &str,
    text: &str,
) -> Result<T, DataFileError> {
    let text = substitute_env(source, text)?;
    serde_saphyr::from_str(&text)
        .map_err(|e| DataFileError::Yaml(yaml_error(source, &e.to_string())))
}

/// `${NAME}` in a file's text replaced by the environment variable NAME, `${NAME:-default}` by it
/// or the default when it is unset or empty; `$$` is a literal `$` (any other `$` stays as it
/// is). An unset variable without a default is an error naming `source`, the line and the
/// variable.
pub fn substitute_env(source: &str, text: &str) -> Result<String, DataFileError> {
    substitute_with(source, text, |name| std::env::var(name).ok())
}

/// [`substitute_env`] with the variables from `lookup`.
pub fn substitute_with(
    source: &str,
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, DataFileError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let line = text[..text.len() - rest.len() + at].matches('\n').count() + 1;
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let close = body
                .find('}')
                .ok_or_else(|| DataFileError::UnclosedVariable {
                    file: source.to_string(),
                    line,
                })?;
            let inner = &body[..close];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(DataFileError::NotAVariableName {
                    file: source.to_string(),
                    line,
                    written: inner.to_string(),
                    name: name.to_string(),
                });
            }
            let value = lookup(name).filter(|v| !v.is_empty());
            match (value, default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(DataFileError::UnsetVariable {
                        file: source.to_string(),
                        line,
                        name: name.to_string(),
                    })
                }
            }
            rest = &body[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The YAML parser's error as one line, `FILE:LINE:COLUMN: what is wrong` (its source snippet
/// is dropped: the line number says where to look).
pub fn yaml_error(source: &str, error: &str) -> String {
    let first = error.lines().next().unwrap_or_default();
    let first = first.trim_start_matches("error: ");
    let located = first.strip_prefix("line ").and_then(|rest| {
        let (line, rest) = rest.split_once(" column ")?;
        let (column, message) = rest.split_once(": ")?;
        Some(format!("{source}:{line}:{column}: {message}"))
    });
    located.unwrap_or_else(|| format!("{source}: {first}"))
}

/// Glob match with `*` (any run of characters) and `?` (one character).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// `bytes` as text when they are UTF-8. ASCII (keys, header values, digits: nearly everything
/// the mock reads on its hot path) is told in a few instructions; `str::from_utf8` costs ~100
/// even for a short ASCII string, and the rest goes to it.
#[inline]
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    if is_ascii(bytes) {
        // SAFETY: ASCII is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// Whether every byte is ASCII: sixteen bytes at a time, their high bits gathered with one OR
/// each (the last sixteen read again, overlapping, rather than byte by byte); eight to fifteen
/// bytes as two words; fewer byte by byte. `<[u8]>::is_ascii` took ~2.5 instructions a byte on
/// a request head.
#[inline]
pub fn is_ascii(bytes: &[u8]) -> bool {
    const HIGH: u128 = u128::from_ne_bytes([0x80; 16]);
    let Some(last) = bytes.last_chunk::<16>() else {
        // Eight to fifteen bytes: two words, overlapping.
        if let (Some(first), Some(last)) = (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
            return (u64::from_ne_bytes(*first) | u64::from_ne_bytes(*last)) & (HIGH as u64) == 0;
        }
        return bytes.iter().fold(0, |all, &b| all | b) < 0x80;
    };
    let (chunks, _) = bytes.as_chunks::<16>();
    let all = chunks
        .iter()
        .fold(u128::from_ne_bytes(*last), |all, chunk| {
            all | u128::from_ne_bytes(*chunk)
        });
    all & HIGH == 0
}

/// `n` in decimal, written at the end of `buf` (no allocation, no formatter).
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    utf8(&buf[at..]).unwrap_or("0")
}

/// 64-bit FNV-1a: a tiny hash, stable across platforms and releases (unlike `DefaultHasher`), for
/// everything a seed must reproduce (content, canaries, shards).
pub struct Fnv1a(pub u64);

impl Fnv1a {
    /// The FNV-1a offset basis: the state of an empty hash.
    pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// A string with its length first, so that ("ab", "c") and ("a", "bc") hash differently.
    pub fn write_str(&mut self, s: &str) {
        self.write(&(s.len() as u64).to_le_bytes());
        self.write(s.as_bytes());
    }
}

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(Fnv1a::OFFSET)
    }
}

/// FNV-1a of `text`'s bytes.
pub fn fnv1a(text: &str) -> u64 {
    let mut hash = Fnv1a::default();
    hash.write(text.as_bytes());
    hash.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Agrees with `<[u8]>::is_ascii` at every length around the sixteen-byte steps, with one
    /// non-ASCII byte at each place in turn.
    #[test]
    fn is_ascii_agrees_with_the_standard_library() {
        for len in 0..70 {
            let plain = vec![b'a'; len];
            assert!(is_ascii(&plain), "{len}");
            for at in 0..len {
                for high in [0x80, 0xc3, 0xff] {
                    let mut bytes = plain.clone();
                    bytes[at] = high;
                    assert_eq!(is_ascii(&bytes), bytes.is_ascii(), "{len} {at}");
                    assert!(!is_ascii(&bytes), "{len} {at}");
                }
            }
        }
    }

    #[test]
    fn utf8_takes_what_from_utf8_takes_and_decimal_writes_what_display_writes() {
        let texts: [&[u8]; 6] = [
            b"",
            b"task-1",
            "é認".as_bytes(),
            b"a\xffb",
            b"\xc0\x80",
            b"x\xe8\xaa",
        ];
        for bytes in texts {
            assert_eq!(utf8(bytes), std::str::from_utf8(bytes).ok(), "{bytes:?}");
        }
        for n in [0, 7, 10, 999, 1_000_000, u64::MAX] {
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string());
        }
    }

    #[test]
    fn environment_variables_are_substituted_or_named() {
        let env = |name: &str| match name {
            "URL" => Some("http://10.0.0.7:8080".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        let sub = |text: &str| substitute_with("f.yaml", text, env).map_err(|e| e.to_string());
        assert_eq!(
            sub("url: ${URL}/api\nport: ${PORT:-9000}\n").unwrap(),
            "url: http://10.0.0.7:8080/api\nport: 9000\n"
        );
        assert_eq!(
            sub("${EMPTY:-fallback} $$HOME $5 a$").unwrap(),
            "fallback $HOME $5 a$"
        );
        assert_eq!(
            sub("a: 1\nb: ${NOPE}\n").unwrap_err(),
            "f.yaml:2: ${NOPE}: the environment variable NOPE is not set (set it, or give a default: ${NOPE:-VALUE})"
        );
        assert!(sub("x: ${URL")
            .unwrap_err()
            .starts_with("f.yaml:1: `${` without its closing `}`"));
        assert!(sub("x: ${9X}")
            .unwrap_err()
            .contains("\"9X\" is not a variable name"));
    }

    #[test]
    fn excerpt_escapes_controls_and_cuts() {
        let e = excerpt(b"a\x00b\x1b[31mc\xffd", 100);
        assert_eq!(e, "a\\x00b\\x1b[31mc\u{fffd}d");
        let long = "x".repeat(10);
        assert_eq!(excerpt_str(&long, 4), "xxxx… [6 more characters]");
        assert_eq!(excerpt_str("abcd", 4), "abcd");
        assert_eq!(excerpt_str("a\u{202e}b", 10), "a\\u{202e}b");
    }

    /// The excerpt as it was written first (character by character): the quicker one must
    /// give the same text, the note after a cut included.
    fn excerpt_char_by_char(text: &str, max_chars: usize) -> String {
        let mut out = String::new();
        let mut kept = 0usize;
        let mut chars = text.char_indices();
        for (_, c) in chars.by_ref() {
            if kept == max_chars {
                break;
            }
            push_escaped(&mut out, c);
            kept += 1;
        }
        if kept == max_chars && chars.next().is_some() {
            let total = text.chars().count();
            out.push_str(&format!("… [{} more characters]", total - kept));
        }
        out
    }

    #[test]
    fn the_excerpt_is_the_same_as_char_by_char() {
        let texts = [
            String::new(),
            "plain words, a tab\tand a newline\n".repeat(40),
            "a\u{0}b\u{1b}[31mc\u{7f}d\re\u{85}f".into(),
            "é—ü 名前 \u{202e}rtl\u{feff} \u{e0041}x".repeat(7),
            "x".repeat(17),
        ];
        for text in &texts {
            for max in [0, 1, 2, 3, 5, 15, 16, 17, 18, 100, 10_000] {
                assert_eq!(
                    excerpt_str(text, max),
                    excerpt_char_by_char(text, max),
                    "{text:?} cut at {max}"
                );
            }
        }
        let bytes = b"ok \xff\xfe then \xc3\xa9 and \xe2\x82";
        assert_eq!(lossy(bytes), String::from_utf8_lossy(bytes));
        assert!(matches!(
            lossy(b"valid \xc3\xa9"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn pointer_paths() {
        assert_eq!(pointer_to_path(""), "$");
        assert_eq!(
            pointer_to_path("/observations/1/severity"),
            "observations[1].severity"
        );
        assert_eq!(pointer_to_path("/a~1b/0"), "a/b[0]");
    }

    #[test]
    fn a_long_secret_is_masked_everywhere() {
        let r = Redactor::new(vec!["s3cret-key-1234".to_string()]);
        assert_eq!(
            r.redact("Bearer s3cret-key-1234, s3cret-key-1234!"),
            "Bearer ***, ***!"
        );
        assert!(!r.has_short_secret());
    }

    #[test]
    fn a_short_secret_is_masked_only_where_it_is_sent() {
        let r = Redactor::new(vec!["wrong".to_string()]);
        assert!(r.has_short_secret());
        assert_eq!(
            r.redact("authorization: Bearer wrong\n{\"error\":\"wrong api key\"}"),
            "authorization: Bearer ***\n{\"error\":\"wrong api key\"}"
        );
        assert_eq!(
            r.redact("curl -H 'authorization: Bearer wrong' x"),
            "curl -H 'authorization: Bearer ***' x"
        );
        // Another token that starts with the key is not the key.
        assert_eq!(r.redact("Bearer wrongful"), "Bearer wrongful");
    }

    #[test]
    fn the_nearest_name_is_suggested_only_when_close() {
        let known = ["slow", "hang", "reset", "null-bytes"];
        assert_eq!(nearest("slwo", known), Some("slow"));
        assert_eq!(nearest("nul-bytes", known), Some("null-bytes"));
        assert_eq!(nearest("teleport", known), None);
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}

/// `word` with its indefinite article, as a generated message reads: `an APPROVAL`, `a QUERY`,
/// `an async-mode`, `an HTTP`. An all-capital word of three letters or fewer, or without a
/// vowel, is read letter by letter (`an SSE`, `a URL`, `a TCP`); any other word by its first
/// letter.
pub fn with_article(word: &str) -> String {
    format!("{} {word}", article(word))
}

/// `a` or `an` before `word` (see [`with_article`]).
pub fn article(word: &str) -> &'static str {
    let letters: String = word.chars().take_while(|c| c.is_alphanumeric()).collect();
    let Some(first) = letters.chars().next() else {
        return "a";
    };
    let is_vowel = |c: char| "aeiouAEIOU".contains(c);
    let capitals = letters
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let spelled = capitals && (letters.len() <= 3 || !letters.chars().any(is_vowel));
    let vowel_sound = if spelled {
        // Letters whose names begin with a vowel sound: eff, aitch, ell, em, en, ar, ess, ex.
        "AEFHILMNORSX".contains(first)
    } else {
        let lower = letters.to_ascii_lowercase();
        // "u" read as "you", "one" as "won".
        let consonant_sounding = ["uni", "use", "usu", "one", "eu"]
            .iter()
            .any(|p| lower.starts_with(p));
        is_vowel(first) && !consonant_sounding
    };
    if vowel_sound {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod article_tests {
    use super::with_article;

    #[test]
    fn the_article_fits_the_word() {
        for (word, said) in [
            ("APPROVAL", "an APPROVAL"),
            ("QUERY", "a QUERY"),
            ("INFORMATION", "an INFORMATION"),
            ("REPORT", "a REPORT"),
            ("async-mode", "an async-mode"),
            ("sync-mode", "a sync-mode"),
            ("execute_task", "an execute_task"),
            ("SSE", "an SSE"),
            ("HTTP", "an HTTP"),
            ("TCP", "a TCP"),
            ("URL", "a URL"),
            ("unique", "a unique"),
            ("", "a "),
        ] {
            assert_eq!(with_article(word), said);
        }
    }
}

/// `n` and `phrase` with its head noun in the number `n` asks for: `count(1, "lists")` is `1
/// list`, `count(3, "answer to the crafted request")` is `3 answers to the crafted request`,
/// `count(1, "strings from 2 agents")` is `1 string from 2 agents`. The phrase may be given in
/// either number (callers describe what they counted, often as a plural). See [`in_number`].
pub fn count(n: u64, phrase: &str) -> String {
    format!("{n} {}", in_number(n, phrase))
}

/// The words that end a phrase's head noun group: what follows them qualifies it (`answers
/// *to* key …`, `cases *the* probe judged`), and no noun after them is the one counted.
const AFTER_HEAD: [&str; 25] = [
    "to", "of", "on", "from", "with", "that", "which", "whose", "before", "after", "below",
    "above", "at", "in", "by", "for", "per", "the", "a", "an", "than", "over", "under", "into",
    "without",
];

/// Whether `word` reads as a regular plural (`lists`, `replies`, `exchanges`; not `status`,
/// `access`, `analysis`).
fn is_plural(word: &str) -> bool {
    word.len() > 2
        && word.ends_with('s')
        && !["ss", "us", "is"].iter().any(|end| word.ends_with(end))
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
}

fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if ["sses", "ches", "shes", "xes", "zes"]
        .iter()
        .any(|end| word.ends_with(end))
    {
        word[..word.len() - 2].to_string()
    } else {
        word[..word.len() - 1].to_string()
    }
}

fn plural(word: &str) -> String {
    let vowel_before_y = word
        .strip_suffix('y')
        .and_then(|stem| stem.chars().last())
        .is_some_and(|c| "aeiou".contains(c));
    if let (Some(stem), false) = (word.strip_suffix('y'), vowel_before_y) {
        format!("{stem}ies")
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|end| word.ends_with(end))
    {
        format!("{word}es")
    } else {
        format!("{word}s")
    }
}

/// `phrase` with its head noun — the last word of its first group of words, before a word that
/// qualifies it ([`AFTER_HEAD`]) — singular when `n` is 1 and plural otherwise. Zero keeps the
/// phrase as given (`no request came`).
pub fn in_number(n: u64, phrase: &str) -> String {
    if n == 0 {
        return phrase.to_string();
    }
    let words: Vec<&str> = phrase.split(' ').collect();
    let group = words
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, w)| AFTER_HEAD.contains(w) || w.starts_with('('))
        .map_or(words.len(), |(i, _)| i);
    // The noun counted: the last plural of the group (`capabilities requests after …`: the
    // requests), else its last word.
    let head = (0..group)
        .rev()
        .find(|&i| is_plural(words[i]))
        .unwrap_or(group.saturating_sub(1));
    let word = words[head];
    let changed = match (n == 1, is_plural(word)) {
        (true, true) => singular(word),
        (false, false) if word.chars().all(|c| c.is_ascii_alphabetic() || c == '-') => plural(word),
        _ => return phrase.to_string(),
    };
    let mut out: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    out[head] = changed;
    out.join(" ")
}

#[cfg(test)]
mod count_tests {
    use super::count;

    /// Every form the kit's counts take: the messages of issue 39 ("judged 1 lists", "judged 1
    /// flooding clients") among them.
    #[test]
    fn a_count_puts_its_noun_in_the_number_it_asks_for() {
        for (n, phrase, said) in [
            (1, "lists", "1 list"),
            (2, "lists", "2 lists"),
            (1, "flooding clients", "1 flooding client"),
            (1, "warnings", "1 warning"),
            (3, "warnings", "3 warnings"),
            (1, "agents", "1 agent"),
            (
                1,
                "expected failures by the baseline",
                "1 expected failure by the baseline",
            ),
            (
                2,
                "expected failures by the baseline",
                "2 expected failures by the baseline",
            ),
            (
                1,
                "strings from 1 agent with null-bytes",
                "1 string from 1 agent with null-bytes",
            ),
            (
                1,
                "capabilities requests after the fleet",
                "1 capabilities request after the fleet",
            ),
            (
                1,
                "cases the probe judged against the mock",
                "1 case the probe judged against the mock",
            ),
            (1, "answers to key abc", "1 answer to key abc"),
            (
                3,
                "answer to the crafted request",
                "3 answers to the crafted request",
            ),
            (2, "answer", "2 answers"),
            (1, "answer", "1 answer"),
            (
                1,
                "exchanges with the stdio agent",
                "1 exchange with the stdio agent",
            ),
            (1, "deliveries", "1 delivery"),
            (2, "delivery", "2 deliveries"),
            (2, "day", "2 days"),
            (1, "matches", "1 match"),
            (2, "match", "2 matches"),
            (1, "task_descriptions", "1 task_description"),
            (
                1,
                "requests before the fleet (GET /agent/capabilities)",
                "1 request before the fleet (GET /agent/capabilities)",
            ),
            (1, "HTTP status", "1 HTTP status"),
            (2, "sync-mode run", "2 sync-mode runs"),
            (0, "no request came", "0 no request came"),
            (2, "2xx", "2 2xx"),
        ] {
            assert_eq!(count(n, phrase), said, "{n} {phrase}");
        }
    }
}
