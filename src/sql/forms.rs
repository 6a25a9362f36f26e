//! IDs outside the database: the short text forms of a snowflake ID (Crockford base32,
//! base62) and the UUIDs of snowflake IDs (version 7) and gdids (version 8). Thin: the forms
//! are `core::snowflake::text_forms`, `core::snowflake::uuid_v7` and `core::gdid::uuid_v8`; this module
//! declares the functions and says what is wrong with a bad input.

use std::fmt::Write;

use crate::core::gdid::uuid_v8 as gdid_uuid;
use crate::core::snowflake::layout::{Layout, LayoutError};
use crate::core::snowflake::text_forms::{self, FormError};
use crate::core::snowflake::uuid_v7::{self as snowflake_uuid, UuidError};
use crate::pg::errors::{self, error, Clipped, Code};
use crate::sequences::generate::layout_range;
use crate::sql::snowflake::{named_layout, own_layout, parts};
use crate::sql::sqlfn::sql_functions;

sql_functions! {
    fn snowflake_to_base32(id: bigint) -> text [immutable parallel_safe] |_| {
        text_forms::to_base32(non_negative(id)).to_vec()
    }

    fn snowflake_from_base32(text: text) -> snowflake [immutable parallel_safe] |_| {
        decoded(text, &BASE32, text_forms::from_base32(text))
    }

    fn snowflake_to_base62(id: bigint) -> text [immutable parallel_safe] |_| {
        text_forms::to_base62(non_negative(id)).to_vec()
    }

    fn snowflake_from_base62(text: text) -> snowflake [immutable parallel_safe] |_| {
        decoded(text, &BASE62, text_forms::from_base62(text))
    }

    /// Of this server's layout (its settings): STABLE, as the other decoders of it.
    fn snowflake_to_uuid(id: bigint) -> uuid [stable parallel_safe] |_| {
        to_uuid(own_layout(), id)
    }

    fn snowflake_from_uuid(u: uuid) -> snowflake [stable parallel_safe] |_| {
        from_uuid(own_layout(), &u) as i64
    }

    fn snowflake_to_uuid_in_layout as snowflake_to_uuid(id: bigint, layout: text) -> uuid
        [immutable parallel_safe] |_| {
        to_uuid(named_layout(layout), id)
    }

    fn snowflake_from_uuid_in_layout as snowflake_from_uuid(u: uuid, layout: text) -> bigint
        [immutable parallel_safe] |_| {
        from_uuid(named_layout(layout), &u) as i64
    }

    fn gdid_to_uuid(g: gdid) -> uuid [immutable parallel_safe] |_| {
        gdid_uuid::to_uuid(g)
    }

    fn gdid_from_uuid(u: uuid) -> gdid [immutable parallel_safe] |_| {
        gdid_uuid::from_uuid(&u).unwrap_or_else(|e| {
            let (message, detail) = match e {
                gdid_uuid::UuidError::NotVersion8 => (
                    "is not a version 8 UUID",
                    "A gdid's UUID has version 8 and the variant of RFC 9562.",
                ),
                gdid_uuid::UuidError::NotOfGdid => (
                    "was not made from a gdid",
                    "A gdid's UUID has its last 26 bits zero.",
                ),
            };
            error(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("uuid \"{}\" {message}", uuid_text(&u)),
            )
            .detail(detail)
            .raise()
        })
    }
}

/// What a text form is called in messages, and its alphabet.
struct Form {
    name: &'static str,
    width: usize,
    digits: &'static str,
    largest: &'static str,
}

const BASE32: Form = Form {
    name: "base32",
    width: text_forms::BASE32_LEN,
    digits: "Crockford's base32 alphabet (0-9, A-Z without U; either case)",
    largest: "7ZZZZZZZZZZZZ",
};

const BASE62: Form = Form {
    name: "base62",
    width: text_forms::BASE62_LEN,
    digits: "the base62 alphabet (0-9, A-Z, a-z)",
    largest: "AzL8n0Y58m7",
};

/// Only non-negative IDs have a text form: the sign bit would break its order.
fn non_negative(id: i64) -> u64 {
    u64::try_from(id).unwrap_or_else(|_| {
        error(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{id} is not a valid snowflake ID"),
        )
        .detail("Only IDs from 0 to 9223372036854775807 have a text form.")
        .raise()
    })
}

fn decoded(text: &[u8], form: &Form, r: Result<i64, FormError>) -> i64 {
    let e = match r {
        Ok(id) => return id,
        Err(e) => e,
    };
    let syntax = || {
        error(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            format!(
                "invalid input syntax for a {} snowflake ID: \"{}\"",
                form.name,
                Clipped(text)
            ),
        )
    };
    match e {
        FormError::BadDigit { at } => {
            // Every byte before `at` is an ASCII digit: `at` counts characters too.
            let bad = errors::char_at(text, at);
            syntax()
                .detail(format!(
                    "Character {} (\"{}\") is not a digit of {}.",
                    at + 1,
                    Clipped(bad),
                    form.digits
                ))
                .raise()
        }
        FormError::Width => {
            // SAFETY: pg_mbstrlen_with_len counts the characters of `len` valid bytes.
            let chars = unsafe {
                pgrx::pg_sys::pg_mbstrlen_with_len(text.as_ptr().cast(), text.len() as i32)
            };
            syntax()
                .detail(format!(
                    "A {} snowflake ID has {} characters, not {chars}.",
                    form.name, form.width
                ))
                .raise()
        }
        FormError::OutOfRange => error(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "{} snowflake ID \"{}\" is out of range",
                form.name,
                Clipped(text)
            ),
        )
        .detail(format!(
            "The largest is {} (9223372036854775807).",
            form.largest
        ))
        .raise(),
    }
}

fn to_uuid(layout: &Layout, id: i64) -> [u8; 16] {
    snowflake_uuid::to_uuid(layout, id as u64).unwrap_or_else(|e| match e {
        LayoutError::TimeOutOfRange => error(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("the time of snowflake ID {id} has no UUIDv7 form"),
        )
        .detail("A UUIDv7 holds Unix milliseconds from 1970 to 10889.")
        .raise(),
        // The decoders' own error: not an ID of the layout.
        _ => {
            parts(layout, id);
            unreachable!("an ID its layout decodes")
        }
    })
}

fn from_uuid(layout: &Layout, u: &[u8; 16]) -> u64 {
    snowflake_uuid::from_uuid(layout, u).unwrap_or_else(|e| match e {
        UuidError::NotVersion7 => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("uuid \"{}\" is not a version 7 UUID", uuid_text(u)),
        )
        .detail("A snowflake ID's UUID has version 7 and the variant of RFC 9562.")
        .raise(),
        UuidError::NotOfLayout => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "uuid \"{}\" was not made from a snowflake ID of this layout",
                uuid_text(u)
            ),
        )
        .detail(format!(
            "Below its time, a snowflake ID's UUID holds the ID's {} bits of node and counter and zeros.",
            layout.node_bits + layout.counter_bits
        ))
        .raise(),
        UuidError::TimeOutOfRange => error(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!(
                "the time of uuid \"{}\" is outside the range of snowflake IDs",
                uuid_text(u)
            ),
        )
        .detail(layout_range(layout))
        .raise(),
    })
}

/// A UUID as PostgreSQL writes it: 8-4-4-4-12 hexadecimal digits.
fn uuid_text(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}
