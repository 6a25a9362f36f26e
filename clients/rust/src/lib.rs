//! Rust types for the `snowflake_id` PostgreSQL extension, for drivers that check types:
//! tokio-postgres (and what builds on it: `postgres`, deadpool-postgres, bb8-postgres).
//!
//! - [`Snowflake`]: a snowflake ID. PostgreSQL types a parameter bound to a `snowflake`
//!   column (`INSERT ... VALUES ($1)`, `UPDATE ... SET id = $1`) as the domain `snowflake`,
//!   which tokio-postgres refuses for an `i64` ("cannot convert between the Rust type `i64`
//!   and the Postgres type `snowflake`"), while results and comparisons are plain `int8`.
//!   `Snowflake` accepts both. A `#[derive(ToSql, FromSql)] #[postgres(name = "snowflake")]`
//!   newtype reads `int8` results but binds only the domain: `WHERE id = $1` refuses it.
//! - [`Gdid`]: a gdid, in its binary form (12 bytes: the era as a big-endian u32, then
//!   `authority << 60 | counter` as a big-endian u64) for parameters, results and binary
//!   `COPY`, and its text form `era:authority:counter` ([`std::fmt::Display`],
//!   [`std::str::FromStr`], read exactly as the server's `gdid` input reads it). The type's
//!   OID differs in each database: it is matched by name.
//!
//! Without the default feature `postgres-types`, the two types and their text and byte forms
//! only.

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "postgres-types")]
mod pg;

/// A snowflake ID: a non-negative `bigint` (the domain `snowflake`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Snowflake(pub i64);

impl From<i64> for Snowflake {
    fn from(v: i64) -> Self {
        Snowflake(v)
    }
}

impl From<Snowflake> for i64 {
    fn from(v: Snowflake) -> Self {
        v.0
    }
}

impl fmt::Display for Snowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Snowflake {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Snowflake)
    }
}

/// The largest authority (4 bits).
pub const MAX_AUTHORITY: u8 = 15;
/// The largest counter (60 bits).
pub const MAX_COUNTER: u64 = (1 << 60) - 1;

/// A gdid: era (32 bits), authority (4 bits), counter (60 bits). Ordered as PostgreSQL
/// orders them: era, then authority, then counter (the order of the 12 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gdid {
    era: u32,
    /// `authority << 60 | counter`.
    id: u64,
}

/// Why a gdid could not be made or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GdidError {
    /// Not `era:authority:counter` in decimal nor 24 hex digits (22P02 on the server).
    Malformed(String),
    /// A part out of its range (22003 on the server): which one.
    OutOfRange(&'static str),
    /// A binary value that is not 12 bytes (22P03 on the server).
    Length(usize),
}

impl fmt::Display for GdidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GdidError::Malformed(t) => write!(f, "invalid input syntax for type gdid: {t:?}"),
            GdidError::OutOfRange(what) => write!(f, "value out of range for type gdid: {what}"),
            GdidError::Length(n) => write!(f, "a binary gdid is 12 bytes, not {n}"),
        }
    }
}

impl std::error::Error for GdidError {}

impl Gdid {
    /// The gdid of these parts; `None` if the authority is above 15 or the counter above
    /// 2^60 - 1 (the server's `gdid(era, authority, counter)` raises 22003 there).
    pub const fn new(era: u32, authority: u8, counter: u64) -> Option<Gdid> {
        if authority > MAX_AUTHORITY || counter > MAX_COUNTER {
            return None;
        }
        Some(Gdid {
            era,
            id: (authority as u64) << 60 | counter,
        })
    }

    pub const fn era(self) -> u32 {
        self.era
    }

    pub const fn authority(self) -> u8 {
        (self.id >> 60) as u8
    }

    pub const fn counter(self) -> u64 {
        self.id & MAX_COUNTER
    }

    /// The binary form: bytes 0-3 the era, big-endian; bytes 4-11 `authority << 60 |
    /// counter`, big-endian. Byte order is sort order.
    pub fn to_bytes(self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&self.era.to_be_bytes());
        b[4..].copy_from_slice(&self.id.to_be_bytes());
        b
    }

    /// From the binary form (every 12 bytes are a gdid).
    pub fn from_bytes(b: [u8; 12]) -> Gdid {
        let mut era = [0u8; 4];
        let mut id = [0u8; 8];
        era.copy_from_slice(&b[..4]);
        id.copy_from_slice(&b[4..]);
        Gdid {
            era: u32::from_be_bytes(era),
            id: u64::from_be_bytes(id),
        }
    }

    /// From a slice that must be 12 bytes long.
    pub fn from_slice(b: &[u8]) -> Result<Gdid, GdidError> {
        let b: [u8; 12] = b.try_into().map_err(|_| GdidError::Length(b.len()))?;
        Ok(Gdid::from_bytes(b))
    }

    /// 24 lowercase hex digits of the binary form (`gdid_to_hex`).
    pub fn to_hex(self) -> String {
        format!("{:08x}{:016x}", self.era, self.id)
    }
}

impl fmt::Display for Gdid {
    /// `era:authority:counter` in decimal, as the server prints a gdid.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.era, self.authority(), self.counter())
    }
}

impl FromStr for Gdid {
    type Err = GdidError;

    /// What the server's `gdid` input takes: `era:authority:counter` in decimal digits (no
    /// sign, no empty part), or 24 hex digits with an optional `0x`/`0X`; whitespace around
    /// the value (C's `isspace`, as for `int8`), none inside.
    fn from_str(text: &str) -> Result<Gdid, GdidError> {
        let malformed = || GdidError::Malformed(text.to_string());
        let t = text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
        if t.contains(':') {
            let mut parts = t.split(':');
            let (Some(era), Some(authority), Some(counter), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(malformed());
            };
            // Digits only; more digits than a u64 holds is out of range for any part.
            let decimal = |s: &str| {
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(malformed());
                }
                Ok(s.parse::<u64>().unwrap_or(u64::MAX))
            };
            let (era, authority, counter) = (decimal(era)?, decimal(authority)?, decimal(counter)?);
            let era = u32::try_from(era)
                .map_err(|_| GdidError::OutOfRange("era must be between 0 and 4294967295"))?;
            if authority > u64::from(MAX_AUTHORITY) {
                return Err(GdidError::OutOfRange("authority must be between 0 and 15"));
            }
            if counter > MAX_COUNTER {
                return Err(GdidError::OutOfRange(
                    "counter must be between 0 and 1152921504606846975 (2^60 - 1)",
                ));
            }
            return Ok(Gdid::new(era, authority as u8, counter).expect("parts checked"));
        }
        let hex = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        if hex.len() != 24 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed());
        }
        Ok(Gdid {
            era: u32::from_str_radix(&hex[..8], 16).map_err(|_| malformed())?,
            id: u64::from_str_radix(&hex[8..], 16).map_err(|_| malformed())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_forms() {
        let g = Gdid::new(1293, 3, 57).unwrap();
        assert_eq!(g.to_string(), "1293:3:57");
        assert_eq!(
            g.to_bytes(),
            [0x00, 0x00, 0x05, 0x0d, 0x30, 0, 0, 0, 0, 0, 0, 0x39]
        );
        assert_eq!(Gdid::from_bytes(g.to_bytes()), g);
        assert_eq!("1293:3:57".parse::<Gdid>(), Ok(g));
        assert_eq!(
            "0x00000000100000000000004B".parse::<Gdid>(),
            Ok(Gdid::new(0, 1, 75).unwrap())
        );
        assert_eq!(
            Gdid::new(2852170240, 15, 1).unwrap().to_hex(),
            "aa00aa00f000000000000001"
        );
        assert!(Gdid::new(0, 0, 12321).unwrap() < Gdid::new(0, 1, 0).unwrap());
        assert_eq!(Gdid::new(0, 16, 0), None);
        assert_eq!(Gdid::new(0, 0, 1 << 60), None);
        assert_eq!(Gdid::from_slice(&[0; 11]), Err(GdidError::Length(11)));
        assert_eq!(
            " \t1:2:3\x0b".parse::<Gdid>(),
            Ok(Gdid::new(1, 2, 3).unwrap())
        );
        for bad in [
            "1 : 2:3",
            "+1:2:3",
            "1::3",
            "",
            "1:2",
            "1:2:3:4",
            "0x 000000001000000000000004B",
        ] {
            assert!(
                matches!(bad.parse::<Gdid>(), Err(GdidError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            "1:16:0".parse::<Gdid>(),
            Err(GdidError::OutOfRange(_))
        ));
        assert!(matches!(
            "4294967296:0:0".parse::<Gdid>(),
            Err(GdidError::OutOfRange(_))
        ));
    }

    #[test]
    fn byte_order_is_gdid_order() {
        let values = [
            Gdid::new(0, 0, 0).unwrap(),
            Gdid::new(0, 0, MAX_COUNTER).unwrap(),
            Gdid::new(0, 1, 0).unwrap(),
            Gdid::new(1, 0, 0).unwrap(),
            Gdid::new(u32::MAX, 15, MAX_COUNTER).unwrap(),
        ];
        for w in values.windows(2) {
            assert!(w[0] < w[1] && w[0].to_bytes() < w[1].to_bytes());
        }
    }
}
