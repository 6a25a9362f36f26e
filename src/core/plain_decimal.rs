//! The form `snowflake.node_id` and `gdid.authority` are written in: plain decimal digits.
//!
//! PURE: no pgrx here.
//!
//! PostgreSQL reads an integer setting with `strtol(..., 0)` and rounds fractions: `010` is 8
//! (octal), `0x10` is 16, `1.5` and `2.5` are 2, `1e1` is 10. For most settings that is a
//! convenience; for a number that must be unique among servers it is a trap: a zero-padded
//! inventory number `010` would silently collide with the server numbered 8. These two
//! settings therefore accept digits only, with no leading zero, sign, base prefix, fraction
//! or exponent, and no blanks (`' 3'` would show as written in `SHOW` and `pg_settings`, and
//! is not what an inventory holds), and say why anything else is refused.

/// Why a text is not a plain decimal number within the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Empty,
    /// A leading zero: PostgreSQL's other integer settings would read the number as octal.
    LeadingZero,
    /// A sign, a base prefix, a fraction, an exponent, a blank, anything but digits.
    NotDigits,
    /// Digits, but above `max`.
    OutOfRange {
        max: u32,
    },
}

impl Refused {
    /// The DETAIL of the error.
    pub fn describe(&self, text: &str) -> String {
        match self {
            Refused::Empty => "The value is empty.".to_owned(),
            Refused::LeadingZero => format!(
                "Leading zeros are not allowed: PostgreSQL reads \"{}\" as an octal number in \
                 other integer settings. Write the number in plain decimal digits.",
                text.trim()
            ),
            Refused::NotDigits => "Only plain decimal digits are allowed (no sign, base prefix, \
                                   fraction, exponent or blanks), or auto for a number claimed \
                                   from snowflake.registry."
                .to_owned(),
            Refused::OutOfRange { max } => format!("It must be between 0 and {max}."),
        }
    }
}

/// The number `text` writes, if it is plain decimal digits and at most `max`.
pub fn parse(text: &str, max: u32) -> Result<u32, Refused> {
    let digits = text;
    if digits.is_empty() {
        return Err(Refused::Empty);
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refused::NotDigits);
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(Refused::LeadingZero);
    }
    digits
        .parse::<u32>()
        .ok()
        .filter(|&n| n <= max)
        .ok_or(Refused::OutOfRange { max })
}

/// `snowflake.node_id` and `gdid.authority` are either a plain decimal number or `auto`: a
/// number claimed from the registry (`snowflake.registry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberOrAuto {
    Number(u32),
    Auto,
}

/// The word that asks for a claimed number.
pub const AUTO: &str = "auto";

/// `auto`, or a plain decimal number as [`parse`] reads it.
pub fn parse_or_auto(text: &str, max: u32) -> Result<NumberOrAuto, Refused> {
    if text == AUTO {
        return Ok(NumberOrAuto::Auto);
    }
    parse(text, max).map(NumberOrAuto::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimal_only() {
        assert_eq!(parse("0", 15), Ok(0));
        assert_eq!(parse("15", 15), Ok(15));
        assert_eq!(parse("1023", 1023), Ok(1023));
        assert_eq!(parse("16", 15), Err(Refused::OutOfRange { max: 15 }));
        assert_eq!(
            parse("99999999999", 15),
            Err(Refused::OutOfRange { max: 15 })
        );
        assert_eq!(parse("010", 1023), Err(Refused::LeadingZero));
        assert_eq!(parse("00", 1023), Err(Refused::LeadingZero));
        for bad in [
            "0x10", "+1", "-1", "1.5", "2.5", "1e1", "15.4", "1_0", "١", " 3", "3 ", "\t4\n",
            "1 0", "  ",
        ] {
            assert_eq!(parse(bad, 1023), Err(Refused::NotDigits), "{bad}");
        }
        assert_eq!(parse("", 15), Err(Refused::Empty));
    }

    #[test]
    fn auto_or_a_number() {
        assert_eq!(parse_or_auto("auto", 15), Ok(NumberOrAuto::Auto));
        assert_eq!(parse_or_auto("7", 15), Ok(NumberOrAuto::Number(7)));
        for bad in ["AUTO", " auto", "auto ", "automatic", ""] {
            assert!(parse_or_auto(bad, 15).is_err(), "{bad:?}");
        }
    }
}
