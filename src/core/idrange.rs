//! PURE: the values an integer range holds, as the closed interval `first..=last` that two
//! comparisons select, so that `x <@ r` can be planned as `x >= first AND x <= last`.

/// One end of a range of bigints, as PostgreSQL stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Unbounded,
    Inclusive(i64),
    Exclusive(i64),
}

/// A range of bigints as PostgreSQL stores it: empty, or its two ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    pub empty: bool,
    pub lower: End,
    pub upper: End,
}

impl IdRange {
    /// The first and last value the range holds, None if it holds none.
    pub fn closed(self) -> Option<(i64, i64)> {
        if self.empty {
            return None;
        }
        let first = match self.lower {
            End::Unbounded => i64::MIN,
            End::Inclusive(v) => v,
            End::Exclusive(v) => v.checked_add(1)?,
        };
        let last = match self.upper {
            End::Unbounded => i64::MAX,
            End::Inclusive(v) => v,
            End::Exclusive(v) => v.checked_sub(1)?,
        };
        (first <= last).then_some((first, last))
    }

    pub fn holds(self, v: i64) -> bool {
        self.closed()
            .is_some_and(|(first, last)| (first..=last).contains(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use End::*;

    fn r(lower: End, upper: End) -> IdRange {
        IdRange {
            empty: false,
            lower,
            upper,
        }
    }

    #[test]
    fn ends() {
        assert_eq!(r(Inclusive(1), Exclusive(5)).closed(), Some((1, 4)));
        assert_eq!(r(Exclusive(1), Inclusive(5)).closed(), Some((2, 5)));
        assert_eq!(r(Unbounded, Unbounded).closed(), Some((i64::MIN, i64::MAX)));
        assert_eq!(r(Inclusive(7), Unbounded).closed(), Some((7, i64::MAX)));
        let empty = IdRange {
            empty: true,
            ..r(Inclusive(1), Exclusive(5))
        };
        assert_eq!(empty.closed(), None);
        assert!(!empty.holds(2));
        assert_eq!(r(Inclusive(5), Exclusive(5)).closed(), None);
        assert_eq!(r(Exclusive(i64::MAX), Unbounded).closed(), None);
        assert_eq!(r(Unbounded, Exclusive(i64::MIN)).closed(), None);
        assert!(r(Inclusive(1), Exclusive(5)).holds(4));
        assert!(!r(Inclusive(1), Exclusive(5)).holds(5));
        assert!(r(Unbounded, Unbounded).holds(i64::MIN));
    }
}
