//! The epoch setting: an ISO 8601 timestamp, and conversions between Unix milliseconds and
//! PostgreSQL's timestamptz (microseconds since 2000-01-01 UTC).
//!
//! PURE: no pgrx here. The epoch is parsed here rather than by `timestamptz_in` because it is
//! read in the postmaster while loading the library, and because its meaning must not depend
//! on the server's TimeZone: a timestamp without an offset is UTC.

use crate::core::snowflake::layout::UnixMs;

/// The default of `snowflake.epoch` (a C string: it is the setting's boot value); in Unix
/// milliseconds `layout::DEFAULT_EPOCH_MS` (a unit test checks that they agree).
pub const DEFAULT_EPOCH: &std::ffi::CStr = c"2025-01-01 00:00:00+00";

/// The range the README promises for an epoch: 1970-01-01 00:00:00 UTC to the last
/// millisecond of 9999, after applying the offset.
const MAX_EPOCH_MS: UnixMs = 253_402_300_799_999;

/// Unix milliseconds of PostgreSQL's epoch, 2000-01-01 00:00:00 UTC.
const PG_EPOCH_UNIX_MS: i64 = 946_684_800_000;

/// Accepts `YYYY-MM-DD`, optionally followed by `T` or a space and `HH:MM[:SS[.fff]]`,
/// optionally followed by `Z` or an offset `+HH`, `+HHMM` or `+HH:MM` (or `-`, at most
/// 15:59). The result must lie from 1970-01-01 00:00:00 UTC through 9999-12-31 23:59:59.999
/// UTC. Fractions finer than a millisecond are refused, not rounded.
pub fn parse_epoch(text: &str) -> Result<UnixMs, String> {
    let s = text.trim();
    let bad = || {
        format!(
            "\"{text}\" is not a timestamp like \"{}\"",
            DEFAULT_EPOCH.to_string_lossy()
        )
    };
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = match (num(0, 4), b.get(4), num(5, 2), b.get(7), num(8, 2)) {
        (Some(y), Some(b'-'), Some(m), Some(b'-'), Some(d)) => (y, m, d),
        _ => return Err(bad()),
    };
    if !(1970..=9999).contains(&year) || !(1..=12).contains(&month) {
        return Err(bad());
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(bad());
    }
    let mut pos = 10;
    let (mut hour, mut minute, mut second, mut milli) = (0, 0, 0, 0);
    if matches!(b.get(pos), Some(b'T' | b't' | b' ')) {
        pos += 1;
        match (num(pos, 2), b.get(pos + 2), num(pos + 3, 2)) {
            (Some(h), Some(b':'), Some(m)) if h < 24 && m < 60 => (hour, minute) = (h, m),
            _ => return Err(bad()),
        }
        pos += 5;
        if b.get(pos) == Some(&b':') {
            second = num(pos + 1, 2).filter(|&s| s < 60).ok_or_else(bad)?;
            pos += 3;
            if b.get(pos) == Some(&b'.') {
                let digits = b[pos + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits == 0 || digits > 3 {
                    return Err(bad());
                }
                milli = num(pos + 1, digits).ok_or_else(bad)? * 10i64.pow(3 - digits as u32);
                pos += 1 + digits;
            }
        }
    }
    let offset_minutes = match s[pos..].trim_start() {
        "" | "Z" | "z" => 0,
        rest => parse_offset(rest).ok_or_else(bad)?,
    };
    let days = days_from_civil(year, month, day);
    let minutes = days * 1440 + hour * 60 + minute - offset_minutes;
    let ms = (minutes * 60 + second) * 1000 + milli;
    if !(0..=MAX_EPOCH_MS).contains(&ms) {
        return Err(format!(
            "\"{text}\" is outside the range of an epoch, 1970-01-01 00:00:00 UTC to \
             9999-12-31 23:59:59.999 UTC"
        ));
    }
    Ok(ms)
}

/// Exactly `+HH`, `+HHMM` or `+HH:MM` (or with `-`), in minutes east of UTC.
fn parse_offset(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let sign = match b.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let two = |at: usize| -> Option<i64> {
        let d = b.get(at..at + 2)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| i64::from(d[0] - b'0') * 10 + i64::from(d[1] - b'0'))
    };
    let (h, m) = match b.len() {
        3 => (two(1)?, 0),
        5 => (two(1)?, two(3)?),
        6 if b[3] == b':' => (two(1)?, two(4)?),
        _ => return None,
    };
    (h <= 15 && m < 60).then_some(sign * (h * 60 + m))
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date of a day count since 1970-01-01 (inverse of `days_from_civil`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// Unix ms as `YYYY-MM-DD HH:MM:SS.fff+00`, for messages that must not depend on TimeZone.
pub fn format_utc(ms: UnixMs) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let s = ms_of_day / 1000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}+00",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ms_of_day % 1000
    )
}

/// timestamptz (µs since 2000-01-01) to Unix ms, rounding down so that a timestamp inside a
/// millisecond maps to that millisecond.
pub fn pg_timestamp_to_unix_ms(pg_us: i64) -> UnixMs {
    pg_us.div_euclid(1000) + PG_EPOCH_UNIX_MS
}

/// Unix ms to timestamptz. Every millisecond an ID can hold fits: no overflow.
pub fn unix_ms_to_pg_timestamp(ms: UnixMs) -> i64 {
    (ms - PG_EPOCH_UNIX_MS) * 1000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::snowflake::layout::DEFAULT_EPOCH_MS;

    #[test]
    fn accepted_forms() {
        let e2025 = 1_735_689_600_000;
        for s in [
            "2025-01-01",
            "2025-01-01 00:00:00+00",
            " 2025-01-01T00:00:00Z ",
            "2025-01-01 00:00",
            "2025-01-01 01:00:00+01",
            "2025-01-01 01:30:00+0130",
            "2024-12-31 19:00:00-05:00",
            "2025-01-01 00:00:00.000",
        ] {
            assert_eq!(parse_epoch(s), Ok(e2025), "{s}");
        }
        assert_eq!(parse_epoch("1970-01-01"), Ok(0));
        assert_eq!(
            parse_epoch("2010-11-04 01:42:54.657Z"),
            Ok(1_288_834_974_657)
        );
        assert_eq!(parse_epoch("2024-02-29 12:00:00.5"), Ok(1_709_208_000_500));
        assert_eq!(
            parse_epoch(DEFAULT_EPOCH.to_str().unwrap()),
            Ok(DEFAULT_EPOCH_MS)
        );
        assert_eq!(DEFAULT_EPOCH_MS, e2025);
        assert_eq!(
            parse_epoch("9999-12-31 23:59:59.999"),
            Ok(MAX_EPOCH_MS),
            "the last millisecond of 9999"
        );
        assert_eq!(parse_epoch("1970-01-01 01:00:00+01:00"), Ok(0));
    }

    #[test]
    fn refused_forms() {
        for s in [
            "",
            "now",
            "2025-1-01",
            "2025-02-30",
            "2023-02-29",
            "2025-13-01",
            "1969-12-31",
            "2025-01-01 24:00",
            "2025-01-01 00:60",
            "2025-01-01 00:00:60",
            "2025-01-01 00:00:00.0001",
            "2025-01-01 00:00:00.",
            "2025-01-01 00:00:00 PST",
            "2025-01-01 00:00:00+1",
            "2025-01-01 00:00:00+16",
            "2025-01-01x",
            "١٢٣٤-01-01",
            // Malformed offsets (found by a new user with ALTER SYSTEM).
            "2025-01-01 00:00:00+:0100",
            "2025-01-01 00:00:00+0:100",
            "2025-01-01 00:00:00+01:",
            "2025-01-01 00:00:00+01:0",
            "2025-01-01 00:00:00+010",
            "2025-01-01 00:00:00+01::00",
            "2025-01-01 00:00:00+01:60",
            // Inside 1970..9999 as written, outside once the offset is applied.
            "1970-01-01 00:00:00+01",
            "9999-12-31 23:59:59.999-15:59",
            "9999-12-31 23:59:59.999-00:01",
        ] {
            assert!(parse_epoch(s).is_err(), "{s:?} should be refused");
        }
    }

    #[test]
    fn days_from_civil_matches_a_day_count() {
        // Walk day by day from 1970 to 2100 and compare with the algorithm.
        let mut days = 0;
        for y in 1970..2100 {
            for m in 1..=12 {
                for d in 1..=days_in_month(y, m) {
                    assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
                    days += 1;
                }
            }
        }
    }

    #[test]
    fn format_utc_round_trips_through_parse_epoch() {
        assert_eq!(format_utc(1_735_689_600_000), "2025-01-01 00:00:00.000+00");
        assert_eq!(format_utc(3_934_712_855_551), "2094-09-07 15:47:35.551+00");
        let mut rng = crate::core::testrng::Rng::new(5);
        for _ in 0..100_000 {
            let ms = rng.below(253_402_300_800_000) as i64; // up to 9999-12-31
            assert_eq!(parse_epoch(&format_utc(ms)), Ok(ms));
        }
    }

    #[test]
    fn pg_timestamp_conversion_floors_to_the_millisecond() {
        assert_eq!(pg_timestamp_to_unix_ms(0), PG_EPOCH_UNIX_MS);
        assert_eq!(pg_timestamp_to_unix_ms(1999), PG_EPOCH_UNIX_MS + 1);
        assert_eq!(pg_timestamp_to_unix_ms(-1), PG_EPOCH_UNIX_MS - 1);
        for ms in [0, 1, 946_684_800_000, 1_735_689_600_123, 4_000_000_000_000] {
            assert_eq!(pg_timestamp_to_unix_ms(unix_ms_to_pg_timestamp(ms)), ms);
        }
    }

    /// A second parser for the same grammar, written differently (split on separators,
    /// a month table instead of the civil-date algorithm), to check `parse_epoch` against.
    fn reference(text: &str) -> Option<UnixMs> {
        fn digits(s: &str, n: usize) -> Option<i64> {
            (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
        }
        let s = text.trim();
        if s.len() < 10 || !s.is_char_boundary(10) {
            return None;
        }
        let (date, rest) = s.split_at(10);
        let mut d = date.split('-');
        let (y, mo, da) = (d.next()?, d.next()?, d.next()?);
        let (y, mo, da) = (digits(y, 4)?, digits(mo, 2)?, digits(da, 2)?);
        const DAYS: [i64; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let leap = |y: i64| y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
        if !(1970..=9999).contains(&y) || !(1..=12).contains(&mo) {
            return None;
        }
        let month_len = DAYS[(mo - 1) as usize] + i64::from(mo == 2 && leap(y));
        if !(1..=month_len).contains(&da) {
            return None;
        }
        // Time: up to the first Z, z, +, - or space after it.
        let (mut time, mut zone) = ("", rest);
        if let Some(t) = rest.strip_prefix(['T', 't', ' ']) {
            let end = t.find(['Z', 'z', '+', '-', ' ']).unwrap_or(t.len());
            (time, zone) = t.split_at(end);
            if time.is_empty() {
                return None;
            }
        }
        let (mut h, mut mi, mut sec, mut ms) = (0, 0, 0, 0);
        if !time.is_empty() {
            let (hms, frac) = match time.split_once('.') {
                Some((a, f)) => (a, Some(f)),
                None => (time, None),
            };
            let parts: Vec<&str> = hms.split(':').collect();
            match parts[..] {
                [a, b] if frac.is_none() => (h, mi) = (digits(a, 2)?, digits(b, 2)?),
                [a, b, c] => (h, mi, sec) = (digits(a, 2)?, digits(b, 2)?, digits(c, 2)?),
                _ => return None,
            }
            if let Some(f) = frac {
                if f.is_empty() || f.len() > 3 {
                    return None;
                }
                ms = digits(f, f.len())? * [100, 10, 1][f.len() - 1];
            }
            if h > 23 || mi > 59 || sec > 59 {
                return None;
            }
        }
        let zone = zone.trim_start();
        let offset = match zone {
            "" | "Z" | "z" => 0,
            _ => {
                let sign = match zone.as_bytes()[0] {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                let body = &zone[1..];
                let (oh, om) = match (body.len(), body.split_once(':')) {
                    (2, None) => (digits(body, 2)?, 0),
                    (4, None) => (digits(&body[..2], 2)?, digits(&body[2..], 2)?),
                    (5, Some((a, b))) => (digits(a, 2)?, digits(b, 2)?),
                    _ => return None,
                };
                if oh > 15 || om > 59 {
                    return None;
                }
                sign * (oh * 60 + om)
            }
        };
        let mut days = 0;
        for year in 1970..y {
            days += 365 + i64::from(leap(year));
        }
        for m in 1..mo {
            days += DAYS[(m - 1) as usize] + i64::from(m == 2 && leap(y));
        }
        days += da - 1;
        let total = ((days * 24 + h) * 60 + mi - offset) * 60_000 + sec * 1000 + ms;
        (0..=MAX_EPOCH_MS).contains(&total).then_some(total)
    }

    /// Random timestamps in every accepted form, and mutations of them: `parse_epoch` agrees
    /// with the reference on acceptance and on the value.
    #[test]
    fn parse_epoch_agrees_with_a_reference_parser() {
        let mut rng = crate::core::testrng::Rng::new(99);
        let pick = |rng: &mut crate::core::testrng::Rng, options: &[&str]| {
            options[rng.below(options.len() as u64) as usize].to_string()
        };
        let mut accepted = 0;
        for i in 0..60_000u64 {
            // Mostly near the edges of the range and of each field.
            let year = match rng.below(4) {
                0 => 1970 + rng.below(2),
                1 => 9998 + rng.below(2),
                _ => 1970 + rng.below(8030),
            };
            let mut s = format!(
                "{year:04}-{:02}-{:02}",
                1 + rng.below(12),
                1 + rng.below(31)
            );
            if rng.below(4) != 0 {
                s += &pick(&mut rng, &["T", " ", "t"]);
                s += &format!("{:02}:{:02}", rng.below(25), rng.below(61));
                if rng.below(2) == 0 {
                    s += &format!(":{:02}", rng.below(61));
                    if rng.below(2) == 0 {
                        let digits = 1 + rng.below(4) as usize;
                        s += &format!(".{:0digits$}", rng.below(10u64.pow(digits as u32)));
                    }
                }
            }
            match rng.below(5) {
                0 => {}
                1 => s += &pick(&mut rng, &["Z", "z"]),
                _ => {
                    s += &pick(&mut rng, &["", " "]);
                    s += &pick(&mut rng, &["+", "-"]);
                    let (h, m) = (rng.below(17), rng.below(61));
                    s += &match rng.below(3) {
                        0 => format!("{h:02}"),
                        1 => format!("{h:02}{m:02}"),
                        _ => format!("{h:02}:{m:02}"),
                    };
                }
            }
            if i % 3 == 0 {
                // Mutate: delete, insert or replace a character.
                const ALPHABET: &[u8] = b"0123456789-:+ .TZ";
                let mut b = s.into_bytes();
                let at = rng.below(b.len() as u64 + 1) as usize;
                let c = ALPHABET[rng.below(ALPHABET.len() as u64) as usize];
                match rng.below(3) {
                    0 if at < b.len() => {
                        b.remove(at);
                    }
                    1 => b.insert(at, c),
                    _ if at < b.len() => b[at] = c,
                    _ => {}
                }
                s = String::from_utf8(b).unwrap();
            }
            let got = parse_epoch(&s).ok();
            assert_eq!(got, reference(&s), "{s:?}");
            accepted += usize::from(got.is_some());
        }
        // Both outcomes are exercised.
        assert!((10_000..50_000).contains(&accepted), "{accepted} accepted");
    }
}
