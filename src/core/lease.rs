//! What a sequence's durable lease is, and how it is kept in its relation's `bigint` value.
//!
//! PURE: no pgrx here.
//!
//! A snowflake lease is a millisecond: nothing at or past it was handed out. Its relation
//! keeps it as a Unix millisecond (`epoch + end`), readable as a time by anyone.
//!
//! A gdid lease is an (era, counter) pair: 32 + 61 bits, more than a `bigint` holds. The
//! relation keeps it in an encoding that preserves order, so that a larger lease is a larger
//! value: in era 0 (every sequence that has not used up 2^60 counters) the counter itself,
//! exactly; in later eras the counter rounded *up* to a multiple of 2^30, which only ever
//! makes a lease cover more than it must (a crash then skips up to 2^30 counters of that era,
//! never repeats one).

/// How far a sequence's durable lease reaches: nothing at or past `end` of `era` has been
/// handed out. Leases are ordered by era, then end; a snowflake lease has era 0 and ends at a
/// millisecond since its epoch, a gdid lease ends at a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Lease {
    pub era: u32,
    pub end: u64,
}

/// The largest end of a gdid lease: one past the largest counter, 2^60 - 1.
pub const MAX_GDID_END: u64 = 1 << 60;

/// Counters per unit of a lease of era 1 or later.
const UNIT: u64 = 1 << 30;
/// Values one era of 1 or later takes: ends 0 ..= 2^60 in units of 2^30.
const STRIDE: u64 = MAX_GDID_END / UNIT + 1;
/// The first value of era 1.
const BASE: u64 = MAX_GDID_END + 1;

/// The relation value of gdid lease `lease` (its end at most [`MAX_GDID_END`]): order
/// preserving, never negative.
pub fn gdid_to_value(lease: Lease) -> i64 {
    let end = lease.end.min(MAX_GDID_END);
    let v = match lease.era {
        0 => end,
        era => BASE + u64::from(era - 1) * STRIDE + end.div_ceil(UNIT),
    };
    v as i64
}

/// The gdid lease a relation value holds: at least the lease it was made from. `None` for a
/// negative value, which no lease encodes.
pub fn gdid_from_value(value: i64) -> Option<Lease> {
    let v = u64::try_from(value).ok()?;
    if v <= MAX_GDID_END {
        return Some(Lease { era: 0, end: v });
    }
    let w = v - BASE;
    let era = u32::try_from(w / STRIDE + 1).ok()?;
    Some(Lease {
        era,
        end: (w % STRIDE * UNIT).min(MAX_GDID_END),
    })
}

/// The relation value of a snowflake lease ending `end_ms` after `epoch_ms`.
pub fn snowflake_to_value(epoch_ms: i64, end_ms: u64) -> i64 {
    epoch_ms.saturating_add(i64::try_from(end_ms).unwrap_or(i64::MAX))
}

/// The snowflake lease a relation value holds, in milliseconds since `epoch_ms`.
pub fn snowflake_from_value(epoch_ms: i64, value: i64) -> u64 {
    u64::try_from(value.saturating_sub(epoch_ms)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testrng::Rng;

    fn lease(era: u32, end: u64) -> Lease {
        Lease { era, end }
    }

    #[test]
    fn era_zero_is_kept_exactly() {
        for end in [0, 1, 1_024, 1 << 40, MAX_GDID_END - 1, MAX_GDID_END] {
            let v = gdid_to_value(lease(0, end));
            assert_eq!(v, end as i64);
            assert_eq!(gdid_from_value(v), Some(lease(0, end)));
        }
    }

    #[test]
    fn the_last_era_fits_and_negative_values_mean_nothing() {
        let last = gdid_to_value(lease(u32::MAX, MAX_GDID_END));
        assert!(last > 0);
        assert_eq!(gdid_from_value(last), Some(lease(u32::MAX, MAX_GDID_END)));
        assert_eq!(gdid_from_value(-1), None);
        assert_eq!(gdid_from_value(i64::MAX), None, "past the last era");
    }

    /// Every lease reads back as itself or a larger lease of the same era, and a larger lease
    /// is never a smaller value: a durable lease only ever covers more.
    #[test]
    fn encoding_preserves_order_and_never_understates() {
        let mut rng = Rng::new(11);
        let draw = |rng: &mut Rng| {
            let era = match rng.below(4) {
                0 => 0,
                1 => 1 + rng.below(3) as u32,
                2 => u32::MAX - rng.below(3) as u32,
                _ => rng.next_u64() as u32,
            };
            let end = match rng.below(3) {
                0 => rng.below(1 << 20),
                1 => MAX_GDID_END - rng.below(1 << 31),
                _ => rng.below(MAX_GDID_END + 1),
            };
            lease(era, end)
        };
        for _ in 0..200_000 {
            let (a, b) = (draw(&mut rng), draw(&mut rng));
            let (va, vb) = (gdid_to_value(a), gdid_to_value(b));
            let back = gdid_from_value(va).unwrap();
            assert!(
                back >= a && back.era == a.era,
                "{a:?} read back as {back:?}"
            );
            assert!(back.end - a.end < UNIT);
            assert_eq!(
                gdid_to_value(back),
                va,
                "a value read back is stored as itself"
            );
            if a < b {
                assert!(va <= vb, "{a:?} < {b:?} but {va} > {vb}");
            }
        }
    }

    #[test]
    fn snowflake_leases_are_unix_milliseconds() {
        let epoch = 1_735_689_600_000;
        assert_eq!(snowflake_to_value(epoch, 5_000), epoch + 5_000);
        assert_eq!(snowflake_from_value(epoch, epoch + 5_000), 5_000);
        assert_eq!(snowflake_from_value(epoch, epoch - 1), 0);
    }
}
