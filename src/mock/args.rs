//! The arguments of a behaviour item (`NAME:ARGS`): a bare main value and `key=value` pairs,
//! read by each behaviour's parser (the engine's and the protocols'), which refuses what it does
//! not take.

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
    pub fn parse(item: &'a str, text: Option<&'a str>) -> Result<Args<'a>, String> {
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
                None => return Err(format!("{item:?}: two bare arguments ({arg:?})")),
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

    pub fn number<T: std::str::FromStr>(
        &mut self,
        key: &'static str,
        main: bool,
        default: T,
    ) -> Result<T, String> {
        match self.get(key, main) {
            None => Ok(default),
            Some(v) => v
                .replace('_', "")
                .parse()
                .map_err(|_| format!("{:?}: {key}={v:?} is not a number", self.item)),
        }
    }

    /// Fails on arguments the behaviour does not take.
    pub fn finish(self) -> Result<(), String> {
        if let Some(bare) = self.bare {
            return Err(format!("{:?}: unexpected argument {bare:?}", self.item));
        }
        for (k, _) in &self.keyed {
            if !self.used.contains(k) {
                return Err(format!(
                    "{:?}: unknown argument {k:?}{}",
                    self.item,
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
                ));
            }
        }
        Ok(())
    }
}

/// The error for a variant a behaviour does not have, listing those it has.
pub fn unknown_variant<'a>(item: &str, v: &str, known: impl Iterator<Item = &'a str>) -> String {
    format!(
        "{item:?}: unknown variant {v:?} (expected {})",
        known.collect::<Vec<_>>().join(", ")
    )
}
