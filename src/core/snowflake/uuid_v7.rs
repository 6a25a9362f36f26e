//! PURE: a snowflake ID as a version-7 UUID (RFC 9562) and back.
//!
//! The UUID's first 48 bits are the ID's Unix milliseconds, as in every UUIDv7, so it sorts
//! among other UUIDv7 values by time and `uuid_extract_timestamp()` reads the ID's moment.
//! The ID's node and counter bits follow unchanged at the bottom of `rand_b`; `rand_a` and the
//! rest of `rand_b` are zero. Within one layout the UUIDs sort as the IDs do. Going back needs
//! the layout: the UUID holds Unix time, the ID time since the layout's epoch.
//!
//! Nothing in it is random: it must not stand where an unguessable ID is needed.

use super::layout::{Layout, LayoutError, Parts};

/// Why a UUID does not give an ID of a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UuidError {
    /// Not a version-7 UUID of the RFC 9562 variant.
    NotVersion7,
    /// A version-7 UUID whose other bits no ID of the layout writes.
    NotOfLayout,
    /// Its time is outside the layout's range.
    TimeOutOfRange,
}

/// Bits below the time field: node and counter.
fn low_bits(layout: &Layout) -> u32 {
    layout.node_bits + layout.counter_bits
}

/// The UUID of `id` (64 bits as an unsigned number), or why `id` is not an ID of `layout`.
pub fn to_uuid(layout: &Layout, id: u64) -> Result<[u8; 16], LayoutError> {
    let parts = layout.decode(id)?;
    let unix_ms = layout.unix_ms(parts);
    // Every layout's epoch is after 1970 and its time field ends before 2^48 ms (year 10889).
    if !(0..1 << 48).contains(&unix_ms) {
        return Err(LayoutError::TimeOutOfRange);
    }
    let low = id & ((1u64 << low_bits(layout)) - 1);
    let hi = (unix_ms as u64) << 16 | 0x7000; // unix_ts_ms, ver 7, rand_a 0
    let lo = 0x8000_0000_0000_0000 | low; // var 0b10, rand_b
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&hi.to_be_bytes());
    out[8..].copy_from_slice(&lo.to_be_bytes());
    Ok(out)
}

/// The ID of `layout` whose UUID is `uuid`.
pub fn from_uuid(layout: &Layout, uuid: &[u8; 16]) -> Result<u64, UuidError> {
    let hi = u64::from_be_bytes(uuid[..8].try_into().unwrap());
    let lo = u64::from_be_bytes(uuid[8..].try_into().unwrap());
    if hi >> 12 & 0xf != 7 || lo >> 62 != 0b10 {
        return Err(UuidError::NotVersion7);
    }
    let low = lo & !(0b11 << 62);
    if hi & 0xfff != 0 || low >> low_bits(layout) != 0 {
        return Err(UuidError::NotOfLayout);
    }
    let ms = layout
        .ms_since_epoch((hi >> 16) as i64)
        .map_err(|_| UuidError::TimeOutOfRange)?;
    let id = layout
        .encode(Parts {
            ms,
            node: 0,
            counter: 0,
        })
        .map_err(|_| UuidError::TimeOutOfRange)?;
    Ok(id | low)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::snowflake::layout::PRESETS;
    use crate::core::testrng::Rng;

    #[test]
    fn round_trips_extremes_of_every_preset() {
        for p in PRESETS {
            let l = p.layout;
            let last = if l.total_bits() == 64 {
                u64::MAX
            } else {
                (1u64 << l.total_bits()) - 1
            };
            for id in [
                0,
                1,
                last,
                last - 1,
                1 << low_bits(&l),
                (1 << low_bits(&l)) - 1,
            ] {
                let u = to_uuid(&l, id).unwrap();
                assert_eq!(from_uuid(&l, &u), Ok(id), "{} {id}", p.name);
                assert_eq!(u[6] >> 4, 7);
                assert_eq!(u[8] >> 6, 0b10);
                let unix_ms = u64::from_be_bytes([0, 0, u[0], u[1], u[2], u[3], u[4], u[5]]);
                assert_eq!(unix_ms as i64, l.unix_ms(l.decode(id).unwrap()));
            }
        }
    }

    /// Discord's API reference: 175928847299117063 was made at 2016-04-30 11:18:25.796 UTC
    /// (1462015105796 ms); its UUID starts with that time, as a UUIDv7 made then would.
    #[test]
    fn time_is_unix_milliseconds() {
        let l = PRESETS[1].layout;
        let u = to_uuid(&l, 175_928_847_299_117_063).unwrap();
        assert_eq!(&u[..6], &1_462_015_105_796u64.to_be_bytes()[2..]);
        assert_eq!(from_uuid(&l, &u), Ok(175_928_847_299_117_063));
    }

    #[test]
    fn order_is_kept_and_foreign_uuids_refused() {
        let l = PRESETS[4].layout;
        let mut rng = Rng::new(7);
        let mut ids: Vec<u64> = (0..10_000).map(|_| rng.next_u64() >> 1).collect();
        ids.sort_unstable();
        let uuids: Vec<[u8; 16]> = ids.iter().map(|&id| to_uuid(&l, id).unwrap()).collect();
        assert!(uuids.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(to_uuid(&l, 1 << 63), Err(LayoutError::BitsAboveTime));
        let good = to_uuid(&l, 12345 << 22 | 77).unwrap();
        let mut v4 = good;
        v4[6] = 0x40 | (v4[6] & 0x0f);
        assert_eq!(from_uuid(&l, &v4), Err(UuidError::NotVersion7));
        let mut variant = good;
        variant[8] &= 0x3f;
        assert_eq!(from_uuid(&l, &variant), Err(UuidError::NotVersion7));
        let mut rand_a = good;
        rand_a[7] = 1;
        assert_eq!(from_uuid(&l, &rand_a), Err(UuidError::NotOfLayout));
        let mut rand_b = good;
        rand_b[12] = 0x40; // bit 22 of rand_b: above node and counter
        assert_eq!(from_uuid(&l, &rand_b), Err(UuidError::NotOfLayout));
        // A time before the layout's epoch.
        let early = to_uuid(&PRESETS[0].layout, 5).unwrap();
        assert_eq!(from_uuid(&l, &early), Err(UuidError::TimeOutOfRange));
    }
}
