//! PURE: a gdid as a version-8 UUID (RFC 9562) and back.
//!
//! The gdid's 96 bits in its order (era, authority, counter: [`Gdid::order_value`]) fill the
//! UUID's free bits from the top: 48 bits, the version nibble 8, 12 bits, the variant 0b10,
//! then 36 bits, and 26 zero bits to the end. UUIDs compare byte by byte, so they sort as the
//! gdids do. Nothing in it is random.

use super::value::Gdid;

/// Why a UUID is not one of a gdid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UuidError {
    /// Not a version-8 UUID of the RFC 9562 variant.
    NotVersion8,
    /// A version-8 UUID with bits set where a gdid's has none.
    NotOfGdid,
}

pub fn to_uuid(g: Gdid) -> [u8; 16] {
    let v = g.order_value(); // 96 bits
    let top48 = (v >> 48) as u64;
    let mid12 = ((v >> 36) & 0xfff) as u64;
    let low36 = (v & ((1 << 36) - 1)) as u64;
    let hi = top48 << 16 | 0x8000 | mid12;
    let lo = 0b10 << 62 | low36 << 26;
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&hi.to_be_bytes());
    out[8..].copy_from_slice(&lo.to_be_bytes());
    out
}

pub fn from_uuid(uuid: &[u8; 16]) -> Result<Gdid, UuidError> {
    let hi = u64::from_be_bytes(uuid[..8].try_into().unwrap());
    let lo = u64::from_be_bytes(uuid[8..].try_into().unwrap());
    if hi >> 12 & 0xf != 8 || lo >> 62 != 0b10 {
        return Err(UuidError::NotVersion8);
    }
    if lo & ((1 << 26) - 1) != 0 {
        return Err(UuidError::NotOfGdid);
    }
    let v = u128::from(hi >> 16) << 48
        | u128::from(hi & 0xfff) << 36
        | u128::from((lo >> 26) & ((1 << 36) - 1));
    Ok(Gdid::from_order_value(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;

    #[test]
    fn round_trips_and_order() {
        let mut rng = Rng::new(8);
        let mut values: Vec<u128> = (0..10_000)
            .map(|_| u128::from(rng.next_u64()) << 32 ^ u128::from(rng.next_u64()))
            .map(|v| v & ((1 << 96) - 1))
            .collect();
        values.extend([
            0,
            1,
            (1 << 96) - 1,
            1 << 64,
            (1 << 64) - 1,
            1 << 36,
            1 << 48,
        ]);
        values.sort_unstable();
        let uuids: Vec<[u8; 16]> = values
            .iter()
            .map(|&v| to_uuid(Gdid::from_order_value(v)))
            .collect();
        for (u, &v) in uuids.iter().zip(&values) {
            assert_eq!(from_uuid(u).map(Gdid::order_value), Ok(v));
            assert_eq!((u[6] >> 4, u[8] >> 6), (8, 0b10));
        }
        assert!(uuids.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn foreign_uuids_are_refused() {
        let good = to_uuid(Gdid::from_order_value(12345));
        let mut v7 = good;
        v7[6] = 0x70 | (v7[6] & 0x0f);
        assert_eq!(from_uuid(&v7), Err(UuidError::NotVersion8));
        let mut variant = good;
        variant[8] |= 0x40;
        assert_eq!(from_uuid(&variant), Err(UuidError::NotVersion8));
        let mut tail = good;
        tail[15] = 1;
        assert_eq!(from_uuid(&tail), Err(UuidError::NotOfGdid));
    }
}
