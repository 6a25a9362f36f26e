//! The gdid value: era (32 bits), authority (4 bits), counter (60 bits), and its text and
//! byte forms, following the Azos `GDID` reference semantics.
//!
//! PURE: no pgrx here.

use std::fmt;

pub const MAX_AUTHORITY: u8 = 15;
pub const MAX_COUNTER: u64 = (1 << 60) - 1;
pub const SIZE: usize = 12;

/// Ordered by era, then authority, then counter: the order of `(era, id)` since the
/// authority holds the top four bits of `id`, and the order of the 12 big-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gdid {
    pub era: u32,
    /// `authority << 60 | counter`.
    pub id: u64,
}

/// Which part of a gdid a value does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Era,
    Authority,
    Counter,
}

impl Part {
    pub fn describe(self) -> &'static str {
        match self {
            Part::Era => "era must be between 0 and 4294967295",
            Part::Authority => "authority must be between 0 and 15",
            Part::Counter => "counter must be between 0 and 1152921504606846975 (2^60 - 1)",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    Malformed,
    OutOfRange(Part),
}

impl Gdid {
    pub fn new(era: i64, authority: i64, counter: i64) -> Result<Gdid, Part> {
        let era = u32::try_from(era).map_err(|_| Part::Era)?;
        let authority = u8::try_from(authority)
            .ok()
            .filter(|&a| a <= MAX_AUTHORITY)
            .ok_or(Part::Authority)?;
        let counter = u64::try_from(counter)
            .ok()
            .filter(|&c| c <= MAX_COUNTER)
            .ok_or(Part::Counter)?;
        Ok(Gdid::from_parts(era, authority, counter))
    }

    /// Parts already known to be in range.
    pub const fn from_parts(era: u32, authority: u8, counter: u64) -> Gdid {
        Gdid {
            era,
            id: (authority as u64) << 60 | counter,
        }
    }

    /// A number in the order of gdids (era, then authority and counter).
    pub const fn order_value(self) -> u128 {
        (self.era as u128) << 64 | self.id as u128
    }

    /// The gdid of [`Gdid::order_value`]'s number.
    pub const fn from_order_value(v: u128) -> Gdid {
        Gdid {
            era: (v >> 64) as u32,
            id: v as u64,
        }
    }

    pub const fn authority(self) -> u8 {
        (self.id >> 60) as u8
    }

    pub const fn counter(self) -> u64 {
        self.id & MAX_COUNTER
    }

    /// Era then id, both big-endian: byte order is sort order.
    pub fn to_bytes(self) -> [u8; SIZE] {
        let mut b = [0u8; SIZE];
        b[..4].copy_from_slice(&self.era.to_be_bytes());
        b[4..].copy_from_slice(&self.id.to_be_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; SIZE]) -> Gdid {
        Gdid {
            era: u32::from_be_bytes(b[..4].try_into().unwrap()),
            id: u64::from_be_bytes(b[4..].try_into().unwrap()),
        }
    }

    /// A 64-bit key whose unsigned order agrees with the gdid order (`a < b` implies
    /// `abbreviated(a) <= abbreviated(b)`) and tells apart every two gdids with eras below
    /// 255 and counters below 2^52: era (8 bits), authority (4), counter (52). Larger parts
    /// saturate, and an era past 254 leaves the rest zero, so ties go to the full comparison.
    pub fn abbreviated(self) -> u64 {
        const SATURATED_ERA: u32 = 0xFF;
        const COUNTER_BITS: u32 = 52;
        if self.era >= SATURATED_ERA {
            return u64::from(SATURATED_ERA) << 56;
        }
        let counter = self.counter().min((1 << COUNTER_BITS) - 1);
        u64::from(self.era) << 56 | u64::from(self.authority()) << COUNTER_BITS | counter
    }

    /// 24 lowercase hex digits of the bytes.
    pub fn to_hex(self) -> String {
        format!("{:08x}{:016x}", self.era, self.id)
    }

    /// `era:authority:counter` in decimal, or 24 hex digits with an optional `0x`/`0X`;
    /// whitespace around the value allowed (what `int8` input takes: C's `isspace`, vertical
    /// tab included), none inside.
    pub fn parse(text: &str) -> Result<Gdid, ParseError> {
        let t = text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
        if t.contains(':') {
            return parse_parts(t);
        }
        let hex = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        if hex.len() != 2 * SIZE || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ParseError::Malformed);
        }
        // 24 hex digits: both halves fit their types.
        Ok(Gdid {
            era: u32::from_str_radix(&hex[..8], 16).map_err(|_| ParseError::Malformed)?,
            id: u64::from_str_radix(&hex[8..], 16).map_err(|_| ParseError::Malformed)?,
        })
    }
}

fn parse_parts(t: &str) -> Result<Gdid, ParseError> {
    // Whitespace is allowed around the value only (trimmed by the caller), as uuid's input
    // allows it: `1 : 2 : 3` is malformed.
    let mut parts = t.split(':');
    let (Some(era), Some(authority), Some(counter), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ParseError::Malformed);
    };
    let era = decimal(era)?;
    let authority = decimal(authority)?;
    let counter = decimal(counter)?;
    let era = u32::try_from(era).map_err(|_| ParseError::OutOfRange(Part::Era))?;
    if authority > u64::from(MAX_AUTHORITY) {
        return Err(ParseError::OutOfRange(Part::Authority));
    }
    if counter > MAX_COUNTER {
        return Err(ParseError::OutOfRange(Part::Counter));
    }
    Ok(Gdid::from_parts(era, authority as u8, counter))
}

/// Digits only: no sign, no space inside the number. Too many digits for a u64 is out of range, and
/// reported as such for whichever part it is (u64::MAX exceeds every part's range).
fn decimal(s: &str) -> Result<u64, ParseError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError::Malformed);
    }
    Ok(s.parse::<u64>().unwrap_or(u64::MAX))
}

impl fmt::Display for Gdid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.era, self.authority(), self.counter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;

    pub fn random(rng: &mut Rng) -> Gdid {
        // Mix small and large parts: edges matter more than the middle.
        let pick = |rng: &mut Rng, max: u64| match rng.below(4) {
            0 => rng.below(4),
            1 => max - rng.below(4).min(max),
            2 => rng.below(1 << 20).min(max),
            _ => rng.next_u64() & max,
        };
        Gdid::from_parts(
            pick(rng, u64::from(u32::MAX)) as u32,
            rng.below(16) as u8,
            pick(rng, MAX_COUNTER),
        )
    }

    #[test]
    fn whitespace_only_around_the_value() {
        let g = Gdid::new(1, 2, 3).unwrap();
        assert_eq!(Gdid::parse(" \t1:2:3\n "), Ok(g));
        assert_eq!(
            Gdid::parse("\x0b\x0c\r1:2:3\x0b"),
            Ok(g),
            "isspace's set, as int8"
        );
        for inside in [
            "1 : 2 : 3",
            "1 :2:3",
            "1:2 :3",
            "1:2: 3",
            "1\t:\n2:3",
            "1:2:3 4",
        ] {
            assert_eq!(
                Gdid::parse(inside),
                Err(ParseError::Malformed),
                "{inside:?}"
            );
        }
    }

    #[test]
    fn reference_cases() {
        let g = Gdid::new(1293, 3, 57).unwrap();
        assert_eq!(g.to_string(), "1293:3:57");
        assert_eq!(
            Gdid::parse("0x00000000100000000000004B"),
            Ok(Gdid::new(0, 1, 75).unwrap())
        );
        assert_eq!(
            Gdid::new(2852170240, 15, 1).unwrap().to_hex(),
            "aa00aa00f000000000000001"
        );
        assert!(Gdid::new(0, 0, 12321).unwrap() < Gdid::new(0, 1, 0).unwrap());
        for bad in [
            "-1:2:3123",
            "1::3",
            "0x0000000010000000",
            "",
            "1:2",
            "1:2:3:4",
            "+1:2:3",
        ] {
            assert_eq!(Gdid::parse(bad), Err(ParseError::Malformed), "{bad}");
        }
        assert_eq!(
            Gdid::parse("1:18:3123"),
            Err(ParseError::OutOfRange(Part::Authority))
        );
        assert_eq!(
            Gdid::parse("4294967296:0:1"),
            Err(ParseError::OutOfRange(Part::Era))
        );
        assert_eq!(
            Gdid::parse("0:0:1152921504606846976"),
            Err(ParseError::OutOfRange(Part::Counter))
        );
        assert_eq!(
            Gdid::parse("0:0:99999999999999999999999"),
            Err(ParseError::OutOfRange(Part::Counter))
        );
        assert_eq!(Gdid::parse("  7:1:2\n"), Ok(Gdid::from_parts(7, 1, 2)));
        for bad in [
            "1 : : 3",
            "1:2:3 1",
            "1: +2:3",
            " : 1:2",
            "0x 00000000100000000000004B",
        ] {
            assert_eq!(Gdid::parse(bad), Err(ParseError::Malformed), "{bad}");
        }
        assert_eq!(
            Gdid::parse("AA00aa00F000000000000001"),
            Ok(Gdid::new(2852170240, 15, 1).unwrap())
        );
        assert_eq!(Gdid::new(-1, 0, 0), Err(Part::Era));
        assert_eq!(Gdid::new(0, 16, 0), Err(Part::Authority));
        assert_eq!(Gdid::new(0, 0, 1 << 60), Err(Part::Counter));
    }

    #[test]
    fn abbreviated_keys_never_contradict_the_order() {
        let mut rng = Rng::new(5);
        let mut prev = Gdid::default();
        for _ in 0..200_000 {
            let g = random(&mut rng);
            let (a, b) = if g < prev { (g, prev) } else { (prev, g) };
            assert!(a.abbreviated() <= b.abbreviated(), "{a} {b}");
            if a != b && b.era < 255 && b.counter() < 1 << 52 {
                assert!(a.abbreviated() < b.abbreviated(), "{a} {b}");
            }
            prev = g;
        }
    }

    #[test]
    fn text_hex_and_bytes_round_trip_and_bytes_sort_like_values() {
        let mut rng = Rng::new(3);
        let mut prev = Gdid::default();
        for _ in 0..100_000 {
            let g = random(&mut rng);
            assert_eq!(Gdid::parse(&g.to_string()), Ok(g));
            assert_eq!(Gdid::parse(&g.to_hex()), Ok(g));
            assert_eq!(Gdid::parse(&format!("0X{}", g.to_hex())), Ok(g));
            assert_eq!(Gdid::from_bytes(&g.to_bytes()), g);
            assert_eq!(g.cmp(&prev), g.to_bytes().cmp(&prev.to_bytes()));
            assert_eq!(
                g.cmp(&prev),
                (g.era, g.authority(), g.counter()).cmp(&(
                    prev.era,
                    prev.authority(),
                    prev.counter()
                ))
            );
            prev = g;
        }
    }
}
