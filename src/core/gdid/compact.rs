//! Byte encodings of a gdid besides the fixed 12 bytes: the compact, order-preserving form
//! and the LEB128 form of Azos `SlimWriter`.
//!
//! PURE: no pgrx here. Decoders accept exactly what the encoders produce and nothing else.
//!
//! # Compact form (docs/functions.md: "Compact encoding")
//!
//! `era code ++ id code`, both prefix-free and order-preserving, so the concatenation is too:
//! comparing two encodings bytewise (as bytea does) orders them like the gdids.
//!
//! Era code, by the smallest class that holds the era (a longer form is rejected):
//!
//! | era              | bytes | first byte  | then                |
//! |------------------|-------|-------------|---------------------|
//! | 0 .. 2^7         | 1     | `0xxxxxxx`  |                     |
//! | 2^7 .. 2^14      | 2     | `10xxxxxx`  | 1 byte, big-endian  |
//! | 2^14 .. 2^21     | 3     | `110xxxxx`  | 2 bytes             |
//! | 2^21 .. 2^28     | 4     | `1110xxxx`  | 3 bytes             |
//! | 2^28 .. 2^32     | 5     | `11110000`  | 4 bytes             |
//!
//! Id code: one byte `authority << 4 | n`, then the counter in `n` big-endian bytes, `n` the
//! fewest bytes that hold it (0 for counter 0, at most 8). Era < 128 and counter < 2^24 take
//! at most 1 + 1 + 3 = 5 bytes, whatever the authority; the longest form is 14 bytes.

use crate::core::gdid::value::{Gdid, MAX_COUNTER};

pub const MAX_COMPACT_LEN: usize = 14;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ends inside a value.
    Truncated,
    /// Bytes follow a complete value.
    Trailing,
    /// A longer form than the value needs.
    Overlong,
    /// A value too large for its field, or a byte no encoder writes.
    Invalid,
}

impl DecodeError {
    pub fn describe(self) -> &'static str {
        match self {
            DecodeError::Truncated => "the data ends in the middle of a value",
            DecodeError::Trailing => "bytes follow the end of the value",
            DecodeError::Overlong => "a part is encoded in more bytes than it needs",
            DecodeError::Invalid => "a part is out of range or malformed",
        }
    }
}

/// Era classes: (first value, prefix bits, prefix) for 1..=5 bytes.
const ERA_CLASSES: [(u32, u8, u8); 5] = [
    (0, 0x80, 0x00),
    (1 << 7, 0xC0, 0x80),
    (1 << 14, 0xE0, 0xC0),
    (1 << 21, 0xF0, 0xE0),
    (1 << 28, 0xFF, 0xF0),
];

pub fn compress(g: Gdid) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAX_COMPACT_LEN);
    let class = ERA_CLASSES
        .iter()
        .rposition(|&(min, _, _)| g.era >= min)
        .expect("class 0 starts at 0");
    let (_, mask, prefix) = ERA_CLASSES[class];
    let era = u64::from(g.era).to_be_bytes();
    // The first byte carries the era's top bits under the prefix (none in the 5-byte class).
    let first = if class == 4 {
        0
    } else {
        era[7 - class] & !mask
    };
    out.push(prefix | first);
    out.extend_from_slice(&era[8 - class..]);
    let counter = g.counter();
    let n = 8 - counter.leading_zeros() as usize / 8;
    out.push(g.authority() << 4 | n as u8);
    out.extend_from_slice(&counter.to_be_bytes()[8 - n..]);
    out
}

pub fn decompress(bytes: &[u8]) -> Result<Gdid, DecodeError> {
    let (&first, rest) = bytes.split_first().ok_or(DecodeError::Truncated)?;
    let class = ERA_CLASSES
        .iter()
        .position(|&(_, mask, prefix)| first & mask == prefix)
        .ok_or(DecodeError::Invalid)?;
    let (era_rest, rest) = split(rest, class)?;
    let (min, mask, _) = ERA_CLASSES[class];
    let era = era_rest
        .iter()
        .fold(u64::from(first & !mask), |v, &b| v << 8 | u64::from(b));
    if era < u64::from(min) {
        return Err(DecodeError::Overlong);
    }
    let (&id_byte, rest) = rest.split_first().ok_or(DecodeError::Truncated)?;
    let n = usize::from(id_byte & 0x0F);
    if n > 8 {
        return Err(DecodeError::Invalid);
    }
    let (counter_bytes, rest) = split(rest, n)?;
    if counter_bytes.first() == Some(&0) {
        return Err(DecodeError::Overlong);
    }
    let counter = counter_bytes
        .iter()
        .fold(0u64, |v, &b| v << 8 | u64::from(b));
    if counter > MAX_COUNTER {
        return Err(DecodeError::Invalid);
    }
    if !rest.is_empty() {
        return Err(DecodeError::Trailing);
    }
    // era fits: the 5-byte class holds exactly 32 bits.
    Ok(Gdid::from_parts(era as u32, id_byte >> 4, counter))
}

fn split(bytes: &[u8], n: usize) -> Result<(&[u8], &[u8]), DecodeError> {
    if bytes.len() < n {
        Err(DecodeError::Truncated)
    } else {
        Ok(bytes.split_at(n))
    }
}

/// Azos `SlimWriter`: LEB128 of the era (uint), then LEB128 of the id (ulong).
pub fn to_leb128(g: Gdid) -> Vec<u8> {
    let mut out = Vec::with_capacity(15);
    leb128_put(&mut out, u64::from(g.era));
    leb128_put(&mut out, g.id);
    out
}

pub fn from_leb128(bytes: &[u8]) -> Result<Gdid, DecodeError> {
    let (era, rest) = leb128_get(bytes, 32)?;
    let (id, rest) = leb128_get(rest, 64)?;
    if !rest.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(Gdid {
        era: era as u32,
        id,
    })
}

fn leb128_put(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let low = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// One LEB128 value of at most `bits` bits, in its shortest form.
fn leb128_get(bytes: &[u8], bits: u32) -> Result<(u64, &[u8]), DecodeError> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        let shift = 7 * i as u32;
        if shift >= bits || (u64::from(b & 0x7F) << shift) >> shift != u64::from(b & 0x7F) {
            return Err(DecodeError::Invalid);
        }
        let part = u64::from(b & 0x7F) << shift;
        if bits < 64 && (v | part) >> bits != 0 {
            return Err(DecodeError::Invalid);
        }
        v |= part;
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return Err(DecodeError::Overlong);
            }
            return Ok((v, &bytes[i + 1..]));
        }
    }
    Err(DecodeError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;

    fn random(rng: &mut Rng) -> Gdid {
        let era_bits = rng.below(33) as u32;
        let counter_bits = rng.below(61) as u32;
        let mask = |bits: u32| {
            if bits == 0 {
                0
            } else {
                u64::MAX >> (64 - bits)
            }
        };
        Gdid::from_parts(
            (rng.next_u64() & mask(era_bits)) as u32,
            rng.below(16) as u8,
            rng.next_u64() & mask(counter_bits),
        )
    }

    #[test]
    fn small_gdids_take_at_most_five_bytes_for_every_authority() {
        for authority in 0..16 {
            for (era, counter) in [(0, 0), (127, (1 << 24) - 1), (5, 300), (127, 1)] {
                let g = Gdid::from_parts(era, authority, counter);
                assert!(compress(g).len() <= 5, "{g}");
            }
        }
        let largest = Gdid::from_parts(u32::MAX, 15, MAX_COUNTER);
        assert_eq!(compress(largest).len(), MAX_COMPACT_LEN);
        assert_eq!(compress(Gdid::from_parts(1, 2, 3)), [0x01, 0x21, 0x03]);
        assert_eq!(compress(Gdid::from_parts(200, 0, 0)), [0x80, 0xC8, 0x00]);
    }

    #[test]
    fn both_forms_round_trip_and_compact_order_is_gdid_order() {
        let mut rng = Rng::new(17);
        let mut prev = Gdid::default();
        for _ in 0..200_000 {
            let g = random(&mut rng);
            let c = compress(g);
            assert_eq!(decompress(&c), Ok(g));
            assert_eq!(from_leb128(&to_leb128(g)), Ok(g));
            assert_eq!(
                g.cmp(&prev),
                c.as_slice().cmp(compress(prev).as_slice()),
                "{g} {prev}"
            );
            prev = g;
        }
    }

    #[test]
    fn leb128_is_slim_writer_bytes() {
        // era 1 -> 01; id 2^60 + 75 -> LEB128 of 0x100000000000004B
        let g = Gdid::from_parts(1, 1, 75);
        assert_eq!(
            to_leb128(g),
            [0x01, 0xCB, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]
        );
        assert_eq!(to_leb128(Gdid::default()), [0, 0]);
    }

    #[test]
    fn non_canonical_and_broken_input_is_rejected() {
        use DecodeError::*;
        let cases: &[(&[u8], DecodeError)] = &[
            (&[], Truncated),
            (&[0x01], Truncated),
            (&[0x80], Truncated),
            (&[0x01, 0x03], Truncated),
            (&[0x01, 0x00, 0x00], Trailing),
            (&[0x80, 0x05, 0x00], Overlong),
            (&[0xF0, 0x00, 0x00, 0x00, 0x05, 0x00], Overlong),
            (&[0x01, 0x01, 0x00], Overlong),
            (&[0xF8, 0x00], Invalid),
            (&[0x01, 0x09], Invalid),
            (&[0x01, 0x08, 0x10, 0, 0, 0, 0, 0, 0, 0], Invalid),
        ];
        for &(bytes, want) in cases {
            assert_eq!(decompress(bytes), Err(want), "{bytes:02x?}");
        }
        let leb: &[(&[u8], DecodeError)] = &[
            (&[], Truncated),
            (&[0x01], Truncated),
            (&[0x81, 0x00, 0x00], Overlong),
            (&[0x00, 0x00, 0x00], Trailing),
            (&[0x80, 0x80, 0x80, 0x80, 0x10, 0x00], Invalid),
            (
                &[
                    0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02,
                ],
                Invalid,
            ),
        ];
        for &(bytes, want) in leb {
            assert_eq!(from_leb128(bytes), Err(want), "{bytes:02x?}");
        }
        let max = Gdid::from_parts(u32::MAX, 15, MAX_COUNTER);
        assert_eq!(from_leb128(&to_leb128(max)), Ok(max));
    }

    #[test]
    fn decoders_never_panic_on_random_bytes() {
        let mut rng = Rng::new(23);
        for _ in 0..300_000 {
            let len = rng.below(18) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if let Ok(g) = decompress(&bytes) {
                assert_eq!(compress(g), bytes);
            }
            if let Ok(g) = from_leb128(&bytes) {
                assert_eq!(to_leb128(g), bytes);
            }
        }
    }
}
