//! One lease record of releases 0.2.0 and 0.3.0, which kept each sequence's lease in a file of
//! the data directory and in WAL records of their own: the same 256 bytes in both. Read (and,
//! for WAL replay, written) only to carry those leases into sequence relations.
//!
//! PURE: no pgrx here.
//!
//! Byte layout (little-endian; the file and the WAL never leave machines of one
//! architecture, as with every other PostgreSQL data file):
//!
//! | offset | size | field                                                         |
//! |--------|------|---------------------------------------------------------------|
//! | 0      | 4    | magic `SFL1`                                                  |
//! | 4      | 1    | kind: 1 snowflake, 2 gdid                                     |
//! | 5      | 1    | key name length                                               |
//! | 6      | 1    | snowflake node bits (0 for gdid)                              |
//! | 7      | 1    | zero                                                          |
//! | 8      | 4    | database OID                                                  |
//! | 12     | 4    | gdid era (0 for snowflake)                                    |
//! | 16     | 8    | snowflake epoch, Unix ms (0 for gdid)                         |
//! | 24     | 8    | lease end: snowflake ms since the epoch, gdid counter (excl.) |
//! | 32     | 127  | key name, zero-padded                                         |
//! | 159    | 93   | zero                                                          |
//! | 252    | 4    | CRC-32C of bytes 0..252                                       |
//!
//! A record is 256 bytes at a 256-byte-aligned offset, so it never straddles a 512-byte
//! sector: like `pg_control`, it is written whole or not at all.

use crate::core::crc32c::crc32c;
use crate::core::identity::{CreationLayout, Kind, SequenceName};
use crate::core::lease::Lease;

pub const RECORD_SIZE: usize = 256;

/// Longest key name: a gdid key was `scope NUL sequence`, each at most 63 bytes.
pub const MAX_KEY_LEN: usize = 127;

/// What identified a sequence then: its database, kind, and key name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnedKey {
    pub db: u32,
    pub kind: Kind,
    pub name: Vec<u8>,
}

impl OwnedKey {
    /// The sequence's name; `None` for a key no sequence could have.
    pub fn name(&self) -> Option<SequenceName<'_>> {
        match self.kind {
            Kind::Snowflake => Some(SequenceName::Snowflake(&self.name)),
            Kind::Gdid => {
                let split = self.name.iter().position(|&b| b == 0)?;
                Some(SequenceName::Gdid {
                    scope: &self.name[..split],
                    sequence: &self.name[split + 1..],
                })
            }
        }
    }
}
const MAGIC: [u8; 4] = *b"SFL1";
const NAME_AT: usize = 32;
const CRC_AT: usize = RECORD_SIZE - 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    pub key: OwnedKey,
    pub created_with: CreationLayout,
    pub lease: Lease,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corrupt {
    Magic,
    Checksum,
    Field,
    /// Fewer bytes than a record at the end of the file.
    Partial,
}

impl Corrupt {
    pub fn describe(self) -> &'static str {
        match self {
            Corrupt::Magic => "not a lease record",
            Corrupt::Checksum => "checksum mismatch",
            Corrupt::Field => "a field out of range",
            Corrupt::Partial => "the file ends inside it",
        }
    }
}

impl LeaseRecord {
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let name = &self.key.name;
        debug_assert!(!name.is_empty() && name.len() <= MAX_KEY_LEN);
        let mut b = [0u8; RECORD_SIZE];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = self.key.kind as u8;
        b[5] = name.len() as u8;
        b[6] = self.created_with.node_bits as u8;
        b[8..12].copy_from_slice(&self.key.db.to_le_bytes());
        b[12..16].copy_from_slice(&self.lease.era.to_le_bytes());
        b[16..24].copy_from_slice(&self.created_with.epoch_ms.to_le_bytes());
        b[24..32].copy_from_slice(&self.lease.end.to_le_bytes());
        b[NAME_AT..NAME_AT + name.len()].copy_from_slice(name);
        let crc = crc32c(&b[..CRC_AT]);
        b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The key of a record whose checksum fails, if its key fields still read as a key. A
    /// record torn by a concurrent copy (a base backup reading while it is rewritten) mixes
    /// old and new bytes; both have the same key unless the slot was new, so the key tells
    /// which sequence WAL replay must supply. Its lease is not trusted.
    pub fn key_of_damaged(b: &[u8; RECORD_SIZE]) -> Option<OwnedKey> {
        let kind = Kind::from_u8(b[4])?;
        let len = b[5] as usize;
        if b[0..4] != MAGIC || len == 0 || len > MAX_KEY_LEN {
            return None;
        }
        Some(OwnedKey {
            db: u32::from_le_bytes(b[8..12].try_into().ok()?),
            kind,
            name: b[NAME_AT..NAME_AT + len].to_vec(),
        })
    }

    /// `Ok(None)` for an all-zero (unused) record.
    pub fn decode(b: &[u8; RECORD_SIZE]) -> Result<Option<LeaseRecord>, Corrupt> {
        if b.iter().all(|&x| x == 0) {
            return Ok(None);
        }
        if b[0..4] != MAGIC {
            return Err(Corrupt::Magic);
        }
        if crc32c(&b[..CRC_AT]).to_le_bytes() != b[CRC_AT..] {
            return Err(Corrupt::Checksum);
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let kind = Kind::from_u8(b[4]).ok_or(Corrupt::Field)?;
        let len = b[5] as usize;
        if len == 0 || len > MAX_KEY_LEN {
            return Err(Corrupt::Field);
        }
        Ok(Some(LeaseRecord {
            key: OwnedKey {
                db: u32_at(8),
                kind,
                name: b[NAME_AT..NAME_AT + len].to_vec(),
            },
            created_with: CreationLayout {
                epoch_ms: u64_at(16) as i64,
                node_bits: u32::from(b[6]),
            },
            lease: Lease {
                era: u32_at(12),
                end: u64_at(24),
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;

    fn sample(rng: &mut Rng) -> LeaseRecord {
        let len = 1 + rng.below(MAX_KEY_LEN as u64) as usize;
        LeaseRecord {
            key: OwnedKey {
                db: rng.next_u64() as u32,
                kind: if rng.below(2) == 0 {
                    Kind::Snowflake
                } else {
                    Kind::Gdid
                },
                name: (0..len).map(|_| rng.next_u64() as u8).collect(),
            },
            created_with: CreationLayout {
                epoch_ms: rng.next_u64() as i64,
                node_bits: rng.below(256) as u32,
            },
            lease: Lease {
                era: rng.next_u64() as u32,
                end: rng.next_u64(),
            },
        }
    }

    #[test]
    fn records_round_trip_and_any_flipped_bit_is_caught() {
        let mut rng = Rng::new(11);
        for _ in 0..20_000 {
            let r = sample(&mut rng);
            let mut bytes = r.encode();
            assert_eq!(LeaseRecord::decode(&bytes), Ok(Some(r.clone())));
            let bit = rng.below(RECORD_SIZE as u64 * 8) as usize;
            bytes[bit / 8] ^= 1 << (bit % 8);
            assert!(LeaseRecord::decode(&bytes).is_err());
            // Damage outside the key fields leaves the key readable.
            if !(0..12).contains(&(bit / 8))
                && !(NAME_AT..NAME_AT + MAX_KEY_LEN).contains(&(bit / 8))
            {
                assert_eq!(LeaseRecord::key_of_damaged(&bytes), Some(r.key.clone()));
            }
        }
    }

    #[test]
    fn zeroes_are_an_unused_record() {
        assert_eq!(LeaseRecord::decode(&[0; RECORD_SIZE]), Ok(None));
    }
}
