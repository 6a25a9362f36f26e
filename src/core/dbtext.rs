//! Text in the database's encoding inside Rust strings.
//!
//! PURE: no pgrx here.
//!
//! Names and input text reach the extension as bytes in the database's encoding, which need
//! not be UTF-8 (LATIN1, EUC_JP, SQL_ASCII...), while messages are composed with `format!`.
//! [`DbText`] carries such bytes through a `String` unchanged: ASCII as itself, anything else
//! hex-encoded between two private-use characters. [`to_db_bytes`] puts the bytes back when
//! the message is handed to PostgreSQL, so a LATIN1 name is quoted in LATIN1, byte for byte,
//! and an EUC_JP database never sees a UTF-8 replacement character it cannot convert.
//! Everything else in a message is ASCII, which every server encoding shares.

use std::fmt::{self, Write};

const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// Bytes in the database's encoding, for a message.
#[derive(Debug, Clone, Copy)]
pub struct DbText<'a>(pub &'a [u8]);

impl fmt::Display for DbText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_ascii() && !self.0.contains(&0) {
            // SAFETY-free fast path: ASCII is valid UTF-8 and the same in every encoding.
            return f.write_str(std::str::from_utf8(self.0).map_err(|_| fmt::Error)?);
        }
        f.write_char(OPEN)?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        f.write_char(CLOSE)
    }
}

/// The bytes of a message for PostgreSQL: what [`DbText`] carried is put back verbatim, NUL
/// bytes (which a C string cannot hold) are dropped. Other non-ASCII characters are written
/// as UTF-8 when the database is UTF-8, else as `?`: no message text of this extension has
/// any, but a message must never be invalid in its encoding.
pub fn to_db_bytes(message: &str, db_is_utf8: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find(OPEN) {
        push_plain(&mut out, &rest[..open], db_is_utf8);
        let carried = &rest[open + OPEN.len_utf8()..];
        let Some(close) = carried.find(CLOSE) else {
            // Never written by DbText; keep whatever follows as plain text.
            rest = carried;
            continue;
        };
        out.extend(
            carried.as_bytes()[..close]
                .chunks_exact(2)
                .filter_map(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
                .filter(|&b| b != 0),
        );
        rest = &carried[close + CLOSE.len_utf8()..];
    }
    push_plain(&mut out, rest, db_is_utf8);
    out
}

fn push_plain(out: &mut Vec<u8>, s: &str, db_is_utf8: bool) {
    for c in s.chars() {
        match c {
            '\0' => {}
            c if c.is_ascii() || db_is_utf8 => {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes())
            }
            _ => out.push(b'?'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message for a reader without a database encoding (the server log of the postmaster, a
    /// test): carried bytes as UTF-8 where they are, replacement characters where not.
    fn to_lossy(message: &str) -> String {
        String::from_utf8_lossy(&to_db_bytes(message, true)).into_owned()
    }

    #[test]
    fn carried_bytes_come_back_verbatim() {
        let latin1 = b"caf\xe9";
        let euc_jp = "\u{65e5}\u{672c}".as_bytes(); // any multibyte sequence
        let m = format!("name \"{}\" and \"{}\" ok", DbText(latin1), DbText(euc_jp));
        let mut want = b"name \"caf\xe9\" and \"".to_vec();
        want.extend_from_slice(euc_jp);
        want.extend_from_slice(b"\" ok");
        assert_eq!(to_db_bytes(&m, false), want);
        assert_eq!(to_db_bytes(&m, true), want);
        assert_eq!(format!("{}", DbText(b"orders")), "orders");
        assert_eq!(
            to_lossy(&m),
            "name \"caf\u{fffd}\" and \"\u{65e5}\u{672c}\" ok"
        );
    }

    #[test]
    fn a_message_is_always_valid_in_its_encoding() {
        assert_eq!(to_db_bytes("a\u{2264}b\0", false), b"a?b");
        assert_eq!(to_db_bytes("a\u{2264}b", true), "a\u{2264}b".as_bytes());
        assert_eq!(to_db_bytes(&DbText(b"a\0b").to_string(), false), b"ab");
        // A stray marker (never written by DbText) is not mistaken for carried bytes.
        assert_eq!(to_db_bytes("x\u{e000}zz", true), b"xzz");
    }
}
