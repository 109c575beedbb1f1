//! Generated content, deterministic under `--seed`: the probe's request templates and the
//! reference agents' answers are made from it (each protocol assembles its own messages from
//! these words and phrases in its own folder). Each use draws from its own stream (a name
//! mixed into the seed), so adding a case does not change what other cases send.
//!
//! Words come from `fake`'s English lists, but phrases are assembled here, each into one string:
//! a conforming mock agent makes an answer per request, and `fake`'s template replacing and
//! per-word strings were most of a fleet agent's CPU per request under load.

use fake::locales::{Data, EN};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Where generated text goes: a `String` as it is, or a JSON string's contents ([`Json`]).
pub trait Sink {
    fn push(&mut self, text: &str);

    /// A word of this module's tables, or a piece of one, or a separator: text that needs no
    /// JSON escape when the tables need none (see [`words_are_plain`]).
    fn push_word(&mut self, word: &'static str) {
        self.push(word);
    }
}

impl Sink for String {
    #[inline]
    fn push(&mut self, text: &str) {
        self.push_str(text);
    }
}

/// The inside of a JSON string being written (its quotes are the writer's).
pub struct Json<'a> {
    out: &'a mut Vec<u8>,
    /// [`words_are_plain`], read once per string rather than per word.
    plain: bool,
}

impl<'a> Json<'a> {
    #[inline]
    pub fn new(out: &'a mut Vec<u8>) -> Json<'a> {
        Json {
            out,
            plain: words_are_plain(),
        }
    }
}

impl Sink for Json<'_> {
    #[inline]
    fn push(&mut self, text: &str) {
        crate::json_out::escaped(self.out, text);
    }

    #[inline]
    fn push_word(&mut self, word: &'static str) {
        if self.plain {
            self.out.extend_from_slice(word.as_bytes());
        } else {
            self.push(word);
        }
    }
}

/// The word lists phrases are drawn from.
const TABLES: [&[&str]; 8] = [
    EN::LOREM_WORD,
    EN::COMPANY_BS_VERBS,
    EN::COMPANY_BS_ADJ,
    EN::COMPANY_BS_NOUNS,
    EN::COMPANY_BUZZWORD_HEAD,
    EN::COMPANY_BUZZWORD_MIDDLE,
    EN::COMPANY_BUZZWORD_TAIL,
    EN::PATH_SEGMENTS,
];

/// Whether no word of the tables (nor of this module's own lists) needs a JSON escape: checked
/// once, so that a generated answer copies its words without looking at each byte again.
pub fn words_are_plain() -> bool {
    static PLAIN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PLAIN.get_or_init(|| {
        let plain = |w: &&str| crate::json_skim::plain_prefix(w.as_bytes()) == w.len();
        TABLES.iter().all(|t| t.iter().all(plain))
            && [&ROOTS[..], &EXTENSIONS[..]]
                .iter()
                .all(|t| t.iter().all(plain))
    })
}

const ROOTS: [&str; 5] = ["src", "lib", "services", "config", "migrations"];
const EXTENSIONS: [&str; 8] = ["rs", "py", "go", "ts", "java", "sql", "yaml", "tf"];

/// A drawn file name: its stem and extension.
#[derive(Clone, Copy)]
pub struct FileName(&'static str, &'static str);

impl FileName {
    #[inline]
    pub fn push(self, out: &mut impl Sink) {
        out.push_word(self.0);
        out.push_word(".");
        out.push_word(self.1);
    }
}

/// A seeded source of content.
pub struct Content {
    rng: ChaCha8Rng,
}

/// Samples of scripts and symbols a platform will forward: accents, CJK, emoji (with a ZWJ
/// sequence), right-to-left Arabic and Hebrew.
const UNICODE_SAMPLES: &[&str] = &[
    "Évaluer la sécurité du module d'authentification — façade, naïve, Ångström",
    "認証モジュールのセキュリティ脆弱性を確認してください",
    "审查身份验证模块的安全漏洞",
    "인증 모듈의 보안 취약점 검토",
    "🔐 auth review 🚀 👩‍💻 ✅",
    "راجع وحدة المصادقة بحثًا عن الثغرات الأمنية",
    "סקור את מודול האימות לאיתור פגיעויות",
    "Überprüfe das Anmeldemodul: Größe, Maß, straße",
];

// Every protocol's messages are assembled from these in another module:
// `#[inline]` lets the compiler inline them there too (across codegen units), as it did when
// they were one module (~3,000 instructions per generated analysis otherwise).
impl Content {
    pub fn new(seed: u64, stream: &str) -> Content {
        Content {
            rng: ChaCha8Rng::seed_from_u64(seed ^ crate::text::fnv1a(stream)),
        }
    }

    /// The stream of `new(seed, &parts.join("/"))`, without building the joined name.
    pub fn from_parts(seed: u64, parts: &[&str]) -> Content {
        let mut hash = crate::text::Fnv1a(crate::text::Fnv1a::OFFSET);
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                hash.write(b"/");
            }
            hash.write(part.as_bytes());
        }
        Content {
            rng: ChaCha8Rng::seed_from_u64(seed ^ hash.0),
        }
    }

    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.random_range(0..n)
        }
    }

    pub fn task_id(&mut self) -> String {
        format!("{:012x}", self.rng.random::<u64>() & 0xffff_ffff_ffff)
    }

    /// One entry of `list` (never empty: the lists are constants).
    #[inline]
    pub fn pick(&mut self, list: &[&'static str]) -> &'static str {
        list[self.below(list.len())]
    }

    #[inline]
    pub fn word(&mut self) -> String {
        self.pick(EN::LOREM_WORD).to_string()
    }

    /// Four to eight lorem words and a full stop.
    #[inline]
    pub fn sentence(&mut self) -> String {
        let mut out = String::with_capacity(64);
        self.push_sentence(&mut out);
        out
    }

    #[inline]
    pub fn push_sentence(&mut self, out: &mut impl Sink) {
        for i in 0..4 + self.below(5) {
            if i > 0 {
                out.push_word(" ");
            }
            out.push_word(self.pick(EN::LOREM_WORD));
        }
        out.push_word(".");
    }

    /// "Verb adjective nouns" (e.g. "Streamline robust platforms"), capitalized.
    #[inline]
    pub fn business_goal(&mut self) -> String {
        let mut out = String::with_capacity(48);
        self.push_business_goal(&mut out);
        out
    }

    #[inline]
    pub fn push_business_goal(&mut self, out: &mut impl Sink) {
        let verb = self.pick(EN::COMPANY_BS_VERBS);
        match verb.as_bytes().first() {
            Some(first) if first.is_ascii() => {
                let upper = [first.to_ascii_uppercase()];
                out.push(std::str::from_utf8(&upper).unwrap_or_default());
                out.push_word(&verb[1..]);
            }
            _ => out.push(&capitalize(verb)),
        }
        for list in [EN::COMPANY_BS_ADJ, EN::COMPANY_BS_NOUNS] {
            out.push_word(" ");
            out.push_word(self.pick(list));
        }
    }

    /// "Head middle tail" (e.g. "Adaptive modular middleware").
    #[inline]
    pub fn catch_phrase(&mut self) -> String {
        let mut out = String::with_capacity(48);
        self.push_catch_phrase(&mut out);
        out
    }

    #[inline]
    pub fn push_catch_phrase(&mut self, out: &mut impl Sink) {
        out.push_word(self.pick(EN::COMPANY_BUZZWORD_HEAD));
        out.push_word(" ");
        out.push_word(self.pick(EN::COMPANY_BUZZWORD_MIDDLE));
        out.push_word(" ");
        out.push_word(self.pick(EN::COMPANY_BUZZWORD_TAIL));
    }

    /// A source file name, e.g. `payment.rs`.
    #[inline]
    pub fn file_name(&mut self) -> String {
        let mut out = String::with_capacity(24);
        self.push_file_name(&mut out);
        out
    }

    #[inline]
    pub fn push_file_name(&mut self, out: &mut impl Sink) {
        self.draw_file_name().push(out);
    }

    /// A file name drawn now, to be written later (no string in between).
    #[inline]
    pub fn draw_file_name(&mut self) -> FileName {
        FileName(self.pick(EN::PATH_SEGMENTS), self.pick(&EXTENSIONS))
    }

    /// A directory, e.g. `src/world/case`.
    #[inline]
    pub fn dir_path(&mut self) -> String {
        let mut out = String::with_capacity(32);
        self.push_dir_path(&mut out);
        out
    }

    #[inline]
    pub fn push_dir_path(&mut self, out: &mut impl Sink) {
        out.push_word(self.pick(&ROOTS));
        for _ in 0..1 + self.below(3) {
            out.push_word("/");
            out.push_word(self.pick(EN::PATH_SEGMENTS));
        }
    }

    /// A task as a platform would phrase it.
    pub fn task_content(&mut self) -> String {
        let thing = self.pick(EN::COMPANY_BUZZWORD_MIDDLE);
        let goal = self.business_goal().to_lowercase();
        format!(
            "Review the {} module and plan how to {goal}. {}",
            thing.to_lowercase(),
            self.sentence()
        )
    }

    /// Text of exactly `chars` characters (sentences repeated and cut).
    pub fn text(&mut self, chars: usize) -> String {
        let mut out = String::with_capacity(chars + 64);
        // The count is kept as the text grows: counting the whole text again after each
        // sentence made a 100,000-character text cost ~100 million instructions.
        let mut count = 0;
        while count < chars {
            let start = out.len();
            self.push_sentence(&mut out);
            out.push(' ');
            count += out[start..].chars().count();
        }
        // All ASCII (the tables' words are): the cut is at byte `chars`.
        let cut = if count == out.len() {
            Some(chars)
        } else {
            out.char_indices().nth(chars).map(|(at, _)| at)
        };
        if let Some(cut) = cut {
            out.truncate(cut);
        }
        out
    }

    /// A task in several scripts at once.
    pub fn unicode_text(&mut self) -> String {
        let mut picks: Vec<&str> = UNICODE_SAMPLES.to_vec();
        let first = self.below(picks.len());
        picks.rotate_left(first);
        picks.join(" · ")
    }

    /// A confidence in hundredths, 0.05 to 1.0 (written with [`crate::json_out::hundredths`]).
    #[inline]
    pub fn confidence_hundredths(&mut self) -> u32 {
        self.rng.random_range(5..=100u32)
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_have_their_shape() {
        let mut c = Content::new(3, "shapes");
        for _ in 0..200 {
            let sentence = c.sentence();
            let words = sentence.trim_end_matches('.').split(' ').count();
            assert!(
                sentence.ends_with('.') && (4..=8).contains(&words),
                "{sentence:?}"
            );
            let goal = c.business_goal();
            // Three parts; a part may be two words ("web services").
            assert!(goal.split(' ').count() >= 3, "{goal:?}");
            assert!(goal.starts_with(|ch: char| ch.is_uppercase()), "{goal:?}");
            assert!(c.catch_phrase().split(' ').count() >= 3);
            let file = c.file_name();
            let (stem, ext) = file.rsplit_once('.').expect("an extension");
            assert!(!stem.is_empty() && ext.len() >= 2, "{file:?}");
            assert!(c.dir_path().split('/').count() >= 2);
        }
    }

    /// Generated answers copy the tables' words without escaping them: this holds them to it.
    #[test]
    fn the_tables_need_no_json_escape() {
        assert!(words_are_plain());
        let mut out = Vec::new();
        Json::new(&mut out).push_word("plain");
        Json::new(&mut out).push("a \"quote\"");
        assert_eq!(out, br#"plaina \"quote\""#);
    }

    #[test]
    fn a_stream_named_in_parts_is_the_stream_of_the_joined_name() {
        let mut parts = Content::from_parts(9, &["agent-1", "analyze", "task-7"]);
        let mut joined = Content::new(9, "agent-1/analyze/task-7");
        assert_eq!(parts.sentence(), joined.sentence());
        assert_ne!(
            Content::from_parts(9, &["agent-1", "analyze", "task-8"]).sentence(),
            Content::new(9, "agent-1/analyze/task-7").sentence()
        );
    }

    /// `text(N)` as it was first written (the whole text counted again after each sentence):
    /// the quicker one gives the very same text, so every generated request is unchanged.
    #[test]
    fn text_is_the_same_as_counting_again() {
        fn counting_again(c: &mut Content, chars: usize) -> String {
            let mut out = String::new();
            while out.chars().count() < chars {
                out.push_str(&c.sentence());
                out.push(' ');
            }
            out.chars().take(chars).collect()
        }
        for (seed, chars) in [(1, 0), (2, 1), (3, 57), (4, 1234), (5, 100_000)] {
            let (mut a, mut b) = (Content::new(seed, "t"), Content::new(seed, "t"));
            assert_eq!(
                a.text(chars),
                counting_again(&mut b, chars),
                "text({chars})"
            );
            // And the generator is left in the same state.
            assert_eq!(a.sentence(), b.sentence());
        }
    }

    #[test]
    fn text_has_the_asked_length() {
        assert_eq!(Content::new(1, "t").text(1234).chars().count(), 1234);
    }
}
