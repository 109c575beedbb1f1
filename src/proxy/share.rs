//! A fault's share of the traffic (`--fault NAME=…:P%`): written the same way for every fault
//! the proxy puts on real traffic, and drawn from the run's seed and the exchange's number, so
//! that the same run bends the same exchanges (and `judge` of its recording finds them again).

/// `text` without its trailing `:P%`, and the share it gives (1.0 when it gives none). The
/// error says what is wrong with the percentage.
pub fn split(text: &str) -> Result<(&str, f64), String> {
    let Some((rest, pct)) = text.rsplit_once(':').filter(|(_, p)| p.ends_with('%')) else {
        return Ok((text, 1.0));
    };
    let p: f64 = pct
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("{pct:?} is not a percentage"))?;
    if !(0.0..=100.0).contains(&p) {
        return Err(format!("{pct} is not between 0% and 100%"));
    }
    Ok((rest, p / 100.0))
}

/// Whether fault number `fault` (of the run's list) falls on exchange `seq`, given its share.
pub fn drawn(seed: u64, seq: u64, fault: usize, share: f64) -> bool {
    let draw = crate::text::fnv1a(&format!("{seed}:{seq}:{fault}")) % 10_000;
    (draw as f64) < share * 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_read_off_the_end() {
        assert_eq!(split("slow-ack:6s"), Ok(("slow-ack:6s", 1.0)));
        assert_eq!(
            split("error-ack:503@/input:25%"),
            Ok(("error-ack:503@/input", 0.25))
        );
        assert_eq!(split("x:100%"), Ok(("x", 1.0)));
        assert_eq!(
            split("x:lots%").unwrap_err(),
            "\"lots%\" is not a percentage"
        );
        assert_eq!(
            split("x:120%").unwrap_err(),
            "120% is not between 0% and 100%"
        );
    }

    #[test]
    fn a_share_falls_on_about_its_part_of_the_exchanges_and_on_the_same_ones_again() {
        let hits = |seed| (0..10_000).filter(|&n| drawn(seed, n, 0, 0.3)).count();
        let n = hits(7);
        assert!((2_700..3_300).contains(&n), "{n} of 10,000 at 30%");
        assert_eq!(hits(7), n);
        assert!((0..1_000).all(|n| drawn(7, n, 1, 1.0)));
        assert!((0..1_000).all(|n| !drawn(7, n, 1, 0.0)));
    }
}
