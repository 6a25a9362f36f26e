//! PURE: short text forms of a snowflake ID, for URLs and logs: Crockford base32 (the ULID
//! alphabet) and base62. Both are fixed width, left-padded with the zero digit, and their
//! alphabets are in ASCII order, so that comparing two forms byte by byte (COLLATE "C")
//! compares the IDs.
//!
//! Only non-negative IDs have a form: a negative bigint would sort after every positive one
//! as text. Decoding reads exactly the characters encoding writes, except where Crockford
//! says otherwise: either case, and I, L read as 1 and O as 0. Hyphens, which Crockford lets
//! a reader skip, are refused with everything else: a form has one spelling of its width.

/// Characters of a base32 form: 13 × 5 bits hold 63.
pub const BASE32_LEN: usize = 13;
/// Characters of a base62 form: 62^11 > 2^63 > 62^10.
pub const BASE62_LEN: usize = 11;

/// Crockford's alphabet, as ULID uses it: digits, then the capitals without I, L, O, U.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Digits, capitals, small letters: ASCII order.
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Why a text is not a form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormError {
    /// The byte at this index (0-based; every byte before it is an ASCII digit of the
    /// alphabet) is not a digit.
    BadDigit { at: usize },
    /// Every byte is a digit, but there are not exactly the form's width of them.
    Width,
    /// A well-formed text whose value is above 2^63 - 1.
    OutOfRange,
}

pub fn to_base32(id: u64) -> [u8; BASE32_LEN] {
    let mut out = [b'0'; BASE32_LEN];
    let mut v = id;
    for c in out.iter_mut().rev() {
        *c = CROCKFORD[(v & 31) as usize];
        v >>= 5;
    }
    out
}

pub fn to_base62(id: u64) -> [u8; BASE62_LEN] {
    let mut out = [b'0'; BASE62_LEN];
    let mut v = id;
    for c in out.iter_mut().rev() {
        *c = BASE62[(v % 62) as usize];
        v /= 62;
    }
    out
}

/// A Crockford digit's value: either case; I and L are 1, O is 0; U and the rest are none.
fn crockford_digit(b: u8) -> Option<u64> {
    let v = match b.to_ascii_uppercase() {
        c @ b'0'..=b'9' => c - b'0',
        b'O' => 0,
        b'I' | b'L' => 1,
        c @ b'A'..=b'Z' => CROCKFORD.iter().position(|&d| d == c)? as u8,
        _ => return None,
    };
    Some(u64::from(v))
}

fn base62_digit(b: u8) -> Option<u64> {
    let v = match b {
        b'0'..=b'9' => b - b'0',
        b'A'..=b'Z' => b - b'A' + 10,
        b'a'..=b'z' => b - b'a' + 36,
        _ => return None,
    };
    Some(u64::from(v))
}

/// Reads `width` digits of `base`: the first bad byte first, then the width, then the range.
fn decode(
    text: &[u8],
    width: usize,
    base: u64,
    digit: fn(u8) -> Option<u64>,
) -> Result<i64, FormError> {
    let mut v: u128 = 0;
    for (at, &b) in text.iter().enumerate() {
        let d = digit(b).ok_or(FormError::BadDigit { at })?;
        // At most `width` digits are accumulated: base^width < 2^128.
        if at < width {
            v = v * u128::from(base) + u128::from(d);
        }
    }
    if text.len() != width {
        return Err(FormError::Width);
    }
    i64::try_from(v).map_err(|_| FormError::OutOfRange)
}

pub fn from_base32(text: &[u8]) -> Result<i64, FormError> {
    decode(text, BASE32_LEN, 32, crockford_digit)
}

pub fn from_base62(text: &[u8]) -> Result<i64, FormError> {
    decode(text, BASE62_LEN, 62, base62_digit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;

    #[test]
    fn extremes() {
        assert_eq!(&to_base32(0), b"0000000000000");
        assert_eq!(&to_base32(i64::MAX as u64), b"7ZZZZZZZZZZZZ");
        assert_eq!(&to_base62(0), b"00000000000");
        assert_eq!(&to_base62(i64::MAX as u64), b"AzL8n0Y58m7");
        assert_eq!(from_base32(b"7ZZZZZZZZZZZZ"), Ok(i64::MAX));
        assert_eq!(from_base62(b"AzL8n0Y58m7"), Ok(i64::MAX));
        assert_eq!(from_base32(b"8000000000000"), Err(FormError::OutOfRange));
        assert_eq!(from_base32(b"ZZZZZZZZZZZZZ"), Err(FormError::OutOfRange));
        assert_eq!(from_base62(b"AzL8n0Y58m8"), Err(FormError::OutOfRange));
        assert_eq!(from_base62(b"zzzzzzzzzzz"), Err(FormError::OutOfRange));
    }

    /// The ULID specification (github.com/ulid/spec) and its reference implementation:
    /// `ulid(1469918176385)` starts with the ten characters 01ARYZ6S41, the time of the
    /// spec's example ULID 01ARYZ6S41TSV4RRFFQ69G5FAV; the largest time, 2^48 - 1 ms, is
    /// 7ZZZZZZZZZ.
    #[test]
    fn ulid_specification_examples() {
        assert_eq!(from_base32(b"00001ARYZ6S41"), Ok(1_469_918_176_385));
        assert_eq!(&to_base32(1_469_918_176_385)[3..], b"01ARYZ6S41");
        assert_eq!(from_base32(b"0007ZZZZZZZZZ"), Ok((1 << 48) - 1));
        assert_eq!(&to_base32((1 << 48) - 1)[3..], b"7ZZZZZZZZZ");
        // The randomness part of the example, read as digits of the same alphabet.
        assert!(b"TSV4RRFFQ69G5FAV"
            .iter()
            .all(|&b| crockford_digit(b).is_some()));
    }

    #[test]
    fn crockford_reading() {
        let id = from_base32(b"01ARZ3NDEKTSV").unwrap();
        assert_eq!(from_base32(b"01arz3ndektsv"), Ok(id));
        assert_eq!(from_base32(b"0IL0000000000"), from_base32(b"0110000000000"));
        assert_eq!(from_base32(b"0o00000000000"), Ok(0));
        assert_eq!(
            from_base32(b"01ARZ3NDEKTSU"),
            Err(FormError::BadDigit { at: 12 })
        );
        assert_eq!(
            from_base32(b"0000-00000000"),
            Err(FormError::BadDigit { at: 4 })
        );
        assert_eq!(from_base32(b"000000000000"), Err(FormError::Width));
        assert_eq!(from_base32(b"00000000000000"), Err(FormError::Width));
        assert_eq!(from_base32(b""), Err(FormError::Width));
        // A bad character is reported before a wrong width.
        assert_eq!(from_base32(b"0u"), Err(FormError::BadDigit { at: 1 }));
        assert_eq!(
            from_base32("00é".as_bytes()),
            Err(FormError::BadDigit { at: 2 })
        );
        assert_eq!(
            from_base62(b"0000000000!"),
            Err(FormError::BadDigit { at: 10 })
        );
        assert_eq!(
            from_base62(b" 0000000000"),
            Err(FormError::BadDigit { at: 0 })
        );
        assert_eq!(from_base62(b"0000000000"), Err(FormError::Width));
        // Long inputs of digits do not overflow the accumulator.
        assert_eq!(from_base62(&[b'z'; 1000]), Err(FormError::Width));
    }

    #[test]
    fn round_trips_and_order() {
        let mut rng = Rng::new(25);
        let mut next = || rng.next_u64();
        let mut ids: Vec<u64> = (0..20_000)
            .map(|i| match i % 4 {
                0 => next() >> 1,
                1 => next() >> (1 + next() % 63),
                2 => (i as u64) << 22,
                _ => i64::MAX as u64 - i as u64,
            })
            .collect();
        ids.extend([0, 1, 31, 32, 61, 62, i64::MAX as u64]);
        for &id in &ids {
            assert_eq!(from_base32(&to_base32(id)), Ok(id as i64));
            assert_eq!(from_base62(&to_base62(id)), Ok(id as i64));
        }
        let mut by_id = ids.clone();
        by_id.sort_unstable();
        let mut by_32 = ids.clone();
        by_32.sort_unstable_by_key(|&id| to_base32(id));
        let mut by_62 = ids;
        by_62.sort_unstable_by_key(|&id| to_base62(id));
        assert_eq!(by_id, by_32);
        assert_eq!(by_id, by_62);
    }
}
