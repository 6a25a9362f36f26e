//! PURE: the values an integer range holds, as the closed interval `first..=last` that two
//! comparisons select, so that `x <@ r` can be planned as `x >= first AND x <= last`.

/// One end of a range of bigints, as PostgreSQL stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Unbounded,
    Inclusive(i64),
    Exclusive(i64),
}

/// The first and last value a range holds, None if it holds none.
pub fn closed(empty: bool, lower: End, upper: End) -> Option<(i64, i64)> {
    if empty {
        return None;
    }
    let first = match lower {
        End::Unbounded => i64::MIN,
        End::Inclusive(v) => v,
        End::Exclusive(v) => v.checked_add(1)?,
    };
    let last = match upper {
        End::Unbounded => i64::MAX,
        End::Inclusive(v) => v,
        End::Exclusive(v) => v.checked_sub(1)?,
    };
    (first <= last).then_some((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use End::*;

    #[test]
    fn ends() {
        assert_eq!(closed(false, Inclusive(1), Exclusive(5)), Some((1, 4)));
        assert_eq!(closed(false, Exclusive(1), Inclusive(5)), Some((2, 5)));
        assert_eq!(
            closed(false, Unbounded, Unbounded),
            Some((i64::MIN, i64::MAX))
        );
        assert_eq!(closed(false, Inclusive(7), Unbounded), Some((7, i64::MAX)));
        assert_eq!(closed(true, Inclusive(1), Exclusive(5)), None);
        assert_eq!(closed(false, Inclusive(5), Exclusive(5)), None);
        assert_eq!(closed(false, Exclusive(i64::MAX), Unbounded), None);
        assert_eq!(closed(false, Unbounded, Exclusive(i64::MIN)), None);
    }
}
