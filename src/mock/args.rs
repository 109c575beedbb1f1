//! The arguments of a behaviour item (`NAME:ARGS`): a bare main value and `key=value` pairs,
//! read by each behaviour's parser (the engine's and the protocols'), which refuses what it does
//! not take.

/// Why a behaviour list does not parse, or an item does not fit the agent it is for. Every
/// one is the user's (a `--behavior` flag, a fleet file's `behaviors`, a matrix row): a usage
/// error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BehaviorError {
    /// The list holds no item.
    #[error("no behaviour given")]
    Empty,
    /// An item, or one of its arguments (a duration, a number, an endpoint), is wrong: `text`
    /// is what was written, `why` what is wrong with it.
    #[error("{text:?}: {why}")]
    Item { text: String, why: String },
    /// A variant the behaviour does not have.
    #[error("{item:?}: unknown variant {variant:?} (expected {expected})")]
    UnknownVariant {
        item: String,
        variant: String,
        /// The variants it has, comma-separated.
        expected: String,
    },
    /// No behaviour of that name; `hint` is a `did you mean …? ` or empty.
    #[error("unknown behaviour {name:?} ({hint}known: {known})")]
    Unknown {
        name: String,
        hint: String,
        known: String,
    },
}

impl BehaviorError {
    /// `text` is wrong for the reason `why`.
    pub fn item(text: &str, why: impl Into<String>) -> BehaviorError {
        BehaviorError::Item {
            text: text.to_string(),
            why: why.into(),
        }
    }
}

impl crate::error::LayerError for BehaviorError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// The arguments of one item: the bare value and `key=value` pairs. A behaviour reads the ones
/// it takes; [`Args::finish`] refuses the rest.
pub struct Args<'a> {
    item: &'a str,
    bare: Option<&'a str>,
    keyed: Vec<(&'a str, &'a str)>,
    used: Vec<&'static str>,
}

impl<'a> Args<'a> {
    /// Splits an item's argument text (after the `:`).
    pub fn parse(item: &'a str, text: Option<&'a str>) -> Result<Args<'a>, BehaviorError> {
        let mut args = Args {
            item,
            bare: None,
            keyed: Vec::new(),
            used: Vec::new(),
        };
        for arg in text
            .unwrap_or("")
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            match arg.split_once('=') {
                Some((k, v)) => args.keyed.push((k.trim(), v.trim())),
                None if args.bare.is_none() => args.bare = Some(arg),
                None => {
                    return Err(BehaviorError::item(
                        item,
                        format!("two bare arguments ({arg:?})"),
                    ))
                }
            }
        }
        Ok(args)
    }

    /// The item as written, for messages.
    pub fn item(&self) -> &'a str {
        self.item
    }

    /// The value of `key`, or the bare value when `key` is the main parameter.
    pub fn get(&mut self, key: &'static str, main: bool) -> Option<&'a str> {
        self.used.push(key);
        let keyed = self.keyed.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        if keyed.is_none() && main {
            let bare = self.bare.take();
            if bare.is_some() {
                self.used.push("");
            }
            return bare;
        }
        keyed
    }

    /// The number at `key` (`_` allowed between digits), or `default` when it is not given.
    pub fn number<T: std::str::FromStr>(
        &mut self,
        key: &'static str,
        main: bool,
        default: T,
    ) -> Result<T, BehaviorError> {
        match self.get(key, main) {
            None => Ok(default),
            Some(v) => v.replace('_', "").parse().map_err(|_| {
                BehaviorError::item(self.item, format!("{key}={v:?} is not a number"))
            }),
        }
    }

    /// Fails on arguments the behaviour does not take.
    pub fn finish(self) -> Result<(), BehaviorError> {
        if let Some(bare) = self.bare {
            return Err(BehaviorError::item(
                self.item,
                format!("unexpected argument {bare:?}"),
            ));
        }
        for (k, _) in &self.keyed {
            if !self.used.contains(k) {
                return Err(BehaviorError::item(
                    self.item,
                    format!(
                        "unknown argument {k:?}{}",
                        if self.used.is_empty() {
                            " (this behaviour takes none)".to_string()
                        } else {
                            format!(
                                " (expected {})",
                                self.used
                                    .iter()
                                    .filter(|u| !u.is_empty())
                                    .copied()
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The error for a variant a behaviour does not have, listing those it has.
pub fn unknown_variant<'a>(
    item: &str,
    v: &str,
    known: impl Iterator<Item = &'a str>,
) -> BehaviorError {
    BehaviorError::UnknownVariant {
        item: item.to_string(),
        variant: v.to_string(),
        expected: known.collect::<Vec<_>>().join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn argument_errors_name_the_item_and_are_usage_errors() {
        let e = Args::parse("slow:1s;2s", Some("1s;2s")).err().unwrap();
        assert_eq!(
            e,
            BehaviorError::Item {
                text: "slow:1s;2s".into(),
                why: "two bare arguments (\"2s\")".into()
            }
        );
        assert_eq!(
            Error::from(e).shown(),
            (
                crate::error::Class::Usage,
                "\"slow:1s;2s\": two bare arguments (\"2s\")".into()
            )
        );
        let mut a = Args::parse("flaky:p=x", Some("p=x")).unwrap();
        assert_eq!(
            a.number("p", true, 0.5f64).unwrap_err().to_string(),
            "\"flaky:p=x\": p=\"x\" is not a number"
        );
        let a = Args::parse("hang:n=1", Some("n=1")).unwrap();
        assert_eq!(
            a.finish().unwrap_err().to_string(),
            "\"hang:n=1\": unknown argument \"n\" (this behaviour takes none)"
        );
        assert_eq!(
            unknown_variant("reset:at=x", "x", ["a", "b"].into_iter()).to_string(),
            "\"reset:at=x\": unknown variant \"x\" (expected a, b)"
        );
    }
}
