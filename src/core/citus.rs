//! What Citus does to a sequence on a worker node: when a distributed table's column DEFAULT
//! depends on a sequence, Citus makes the sequence on every worker and, for a bigint one,
//! rewrites its bounds to a window of its own for that node (`AlterSequenceMinMax` in
//! worker_data_fetch_protocol.c: `ALTER SEQUENCE ... START x MINVALUE x MAXVALUE x + 2^48
//! RESTART x` with `x = (group << 48) + 1`), so that `nextval` on different nodes never meets.
//! This extension's sequences are never used with `nextval`: each node's values carry its own
//! number, and a sequence's value is its lease. Their definitions are kept (see
//! `sequences::ddl`).
//!
//! PURE: no pgrx here.

/// The width of a worker's window, in bits.
const WINDOW_BITS: u32 = 48;

/// The options of an `ALTER SEQUENCE`, as given (`None`: not given).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SequenceOptions {
    pub start: Option<i64>,
    pub minvalue: Option<i64>,
    pub maxvalue: Option<i64>,
    pub restart: Option<i64>,
    /// Any other option given.
    pub others: bool,
}

/// Whether `o` is exactly the rewrite of a bigint sequence's bounds into the window of a
/// Citus worker node (group 1 or later; the coordinator, group 0, keeps its sequences).
pub fn is_worker_window(o: &SequenceOptions) -> bool {
    let (Some(start), Some(min), Some(max), Some(restart)) =
        (o.start, o.minvalue, o.maxvalue, o.restart)
    else {
        return false;
    };
    let Some(group) = start.checked_sub(1).map(|s| s >> WINDOW_BITS) else {
        return false;
    };
    !o.others
        && start == min
        && start == restart
        && group >= 1
        && start == (group << WINDOW_BITS) + 1
        && Some(max) == start.checked_add(1 << WINDOW_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start: i64, max: i64) -> SequenceOptions {
        SequenceOptions {
            start: Some(start),
            minvalue: Some(start),
            maxvalue: Some(max),
            restart: Some(start),
            others: false,
        }
    }

    #[test]
    fn the_windows_citus_gives_its_workers() {
        // Measured on Citus 13.2.2: the first and second worker's bounds.
        assert!(is_worker_window(&window(281474976710657, 562949953421313)));
        assert!(is_worker_window(&window(562949953421313, 844424930131969)));
        let last = (((1i64 << 15) - 2) << 48) + 1;
        assert!(is_worker_window(&window(last, last + (1 << 48))));
    }

    #[test]
    fn anything_else_is_not_one() {
        // The coordinator's group 0, a window off by one, another width.
        assert!(!is_worker_window(&window(1, (1 << 48) + 1)));
        assert!(!is_worker_window(&window(281474976710658, 562949953421314)));
        assert!(!is_worker_window(&window(281474976710657, 562949953421312)));
        // An option missing, another one given, values that disagree.
        let w = window(281474976710657, 562949953421313);
        assert!(!is_worker_window(&SequenceOptions { restart: None, ..w }));
        assert!(!is_worker_window(&SequenceOptions { others: true, ..w }));
        assert!(!is_worker_window(&SequenceOptions {
            minvalue: Some(1),
            ..w
        }));
        assert!(!is_worker_window(&SequenceOptions::default()));
        // Negative and extreme values.
        assert!(!is_worker_window(&window(i64::MIN, i64::MAX)));
        assert!(!is_worker_window(&window(i64::MAX, i64::MAX)));
        // Group 32767, whose window would end past bigint.
        let past = ((((1i64 << 15) - 1) << 48) + 1, i64::MAX);
        assert!(!is_worker_window(&window(past.0, past.1)));
    }
}
