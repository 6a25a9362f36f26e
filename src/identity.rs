//! What a sequence is: a snowflake sequence called by one name, a gdid sequence by a scope and
//! a sequence name, both within a database, and the layout it was created with. The key the
//! registry finds it by and the lease file stores it under is built from the names here,
//! taken apart again, checked and shown.
//!
//! PURE: no pgrx here. Names are bytes in the database's encoding, never assumed UTF-8.

use std::fmt;

use crate::dbtext::DbText;

/// Longest key name: a gdid key is `scope NUL sequence`, each at most
/// [`crate::identity::MAX_NAME_LEN`] bytes.
pub const MAX_KEY_LEN: usize = 127;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    Snowflake = 1,
    Gdid = 2,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Snowflake => "snowflake",
            Kind::Gdid => "gdid",
        })
    }
}

impl Kind {
    pub fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Snowflake),
            2 => Some(Kind::Gdid),
            _ => None,
        }
    }
}

/// What identifies a sequence in the table and on disk. `name` is the key name (see
/// [`crate::sequence_id`]), bytes in the database's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key<'k> {
    pub db: u32,
    pub kind: Kind,
    pub name: &'k [u8],
}

impl Key<'_> {
    pub fn to_owned(self) -> OwnedKey {
        OwnedKey {
            db: self.db,
            kind: self.kind,
            name: self.name.to_vec(),
        }
    }
}

/// A [`Key`] that owns its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnedKey {
    pub db: u32,
    pub kind: Kind,
    pub name: Vec<u8>,
}

impl OwnedKey {
    pub fn key(&self) -> Key<'_> {
        Key {
            db: self.db,
            kind: self.kind,
            name: &self.name,
        }
    }
}

/// The snowflake layout a sequence was created with: its epoch and node width (zero for gdid
/// sequences). Kept with the sequence, durably, so that a later change of the settings cannot
/// go unnoticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CreationLayout {
    pub epoch_ms: i64,
    pub node_bits: u32,
}

/// Longest snowflake sequence name, gdid scope or gdid sequence name in bytes, like a
/// PostgreSQL identifier (NAMEDATALEN - 1).
pub const MAX_NAME_LEN: usize = 63;

const _: () = assert!(2 * MAX_NAME_LEN + 1 == MAX_KEY_LEN);

/// The name of a sequence, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceName<'a> {
    Snowflake(&'a [u8]),
    Gdid { scope: &'a [u8], sequence: &'a [u8] },
}

/// A sequence of one database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceId<'a> {
    pub db: u32,
    pub name: SequenceName<'a>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong,
    /// A NUL byte; only possible from a bytea-built text, but the gdid key uses NUL.
    Nul,
}

/// Which of a sequence's names is wrong, for the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePart {
    Snowflake,
    GdidScope,
    GdidSequence,
}

impl NamePart {
    pub fn describe(self) -> &'static str {
        match self {
            NamePart::Snowflake => "snowflake sequence",
            NamePart::GdidScope => "gdid scope",
            NamePart::GdidSequence => "gdid sequence",
        }
    }
}

pub fn check_name(name: &[u8]) -> Result<(), NameError> {
    match name.len() {
        0 => Err(NameError::Empty),
        n if n > MAX_NAME_LEN => Err(NameError::TooLong),
        _ if name.contains(&0) => Err(NameError::Nul),
        _ => Ok(()),
    }
}

/// A name that [`SequenceName::check`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadName<'a> {
    pub part: NamePart,
    pub name: &'a [u8],
    pub error: NameError,
}

impl<'a> SequenceName<'a> {
    pub fn kind(&self) -> Kind {
        match self {
            SequenceName::Snowflake(_) => Kind::Snowflake,
            SequenceName::Gdid { .. } => Kind::Gdid,
        }
    }

    /// Checks every part; the first bad one is reported, with its bytes.
    pub fn check(&self) -> Result<(), BadName<'a>> {
        let part = |part, name| check_name(name).map_err(|error| BadName { part, name, error });
        match *self {
            SequenceName::Snowflake(name) => part(NamePart::Snowflake, name),
            SequenceName::Gdid { scope, sequence } => {
                part(NamePart::GdidScope, scope)?;
                part(NamePart::GdidSequence, sequence)
            }
        }
    }

    /// The registry's key name: the snowflake name, or `scope NUL sequence`. Names must have
    /// passed [`SequenceName::check`].
    pub fn key_name(&self) -> KeyName {
        let mut k = KeyName {
            len: 0,
            bytes: [0; MAX_KEY_LEN],
        };
        match *self {
            SequenceName::Snowflake(name) => k.push(name),
            SequenceName::Gdid { scope, sequence } => {
                k.push(scope);
                k.push(&[0]);
                k.push(sequence);
            }
        }
        k
    }

    /// The name of a registry key; `None` for a key no sequence could have.
    pub fn from_key(kind: Kind, name: &'a [u8]) -> Option<SequenceName<'a>> {
        match kind {
            Kind::Snowflake => Some(SequenceName::Snowflake(name)),
            Kind::Gdid => {
                let split = name.iter().position(|&b| b == 0)?;
                Some(SequenceName::Gdid {
                    scope: &name[..split],
                    sequence: &name[split + 1..],
                })
            }
        }
    }
}

/// A key name on the stack: building one costs no allocation on the generators' paths.
pub struct KeyName {
    len: usize,
    bytes: [u8; MAX_KEY_LEN],
}

impl KeyName {
    fn push(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl<'a> SequenceId<'a> {
    /// The sequence of a registry key; `None` for a key no sequence could have.
    pub fn from_key(key: Key<'a>) -> Option<SequenceId<'a>> {
        Some(SequenceId {
            db: key.db,
            name: SequenceName::from_key(key.kind, key.name)?,
        })
    }
}

/// `orders`, or `billing/invoices` for a gdid sequence: the names as the user wrote them (in
/// the database's encoding, see [`DbText`]).
impl fmt::Display for SequenceName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SequenceName::Snowflake(name) => write!(f, "{}", DbText(name)),
            SequenceName::Gdid { scope, sequence } => {
                write!(f, "{}/{}", DbText(scope), DbText(sequence))
            }
        }
    }
}

/// `snowflake sequence "orders"`, `gdid sequence "billing/invoices"`.
impl fmt::Display for SequenceId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.name {
            SequenceName::Snowflake(_) => "snowflake sequence",
            SequenceName::Gdid { .. } => "gdid sequence",
        };
        write!(f, "{what} \"{}\"", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbtext;

    #[test]
    fn names_are_checked() {
        assert_eq!(check_name(b""), Err(NameError::Empty));
        assert_eq!(check_name(&[b'x'; 64]), Err(NameError::TooLong));
        assert_eq!(check_name(&[b'x'; 63]), Ok(()));
        assert_eq!(check_name(b"a\0b"), Err(NameError::Nul));
        let g = SequenceName::Gdid {
            scope: b"s",
            sequence: b"",
        };
        assert_eq!(
            g.check(),
            Err(BadName {
                part: NamePart::GdidSequence,
                name: b"",
                error: NameError::Empty
            })
        );
    }

    #[test]
    fn keys_round_trip_and_show_the_names() {
        let g = SequenceName::Gdid {
            scope: b"billing",
            sequence: b"invoices",
        };
        let key = g.key_name();
        assert_eq!(key.as_bytes(), b"billing\0invoices");
        assert_eq!(SequenceName::from_key(Kind::Gdid, key.as_bytes()), Some(g));
        let id = SequenceId::from_key(Key {
            db: 5,
            kind: Kind::Gdid,
            name: key.as_bytes(),
        })
        .unwrap();
        assert_eq!(id.to_string(), "gdid sequence \"billing/invoices\"");
        let s = SequenceName::Snowflake(b"orders");
        assert_eq!(s.key_name().as_bytes(), b"orders");
        assert_eq!(s.to_string(), "orders");
        assert_eq!(SequenceName::from_key(Kind::Gdid, b"no-separator"), None);
        // Bytes in another encoding reach the message as they are.
        let latin1 = SequenceName::Snowflake(b"caf\xe9");
        assert_eq!(dbtext::to_db_bytes(&latin1.to_string(), false), b"caf\xe9");
        let longest = SequenceName::Gdid {
            scope: &[b'a'; MAX_NAME_LEN],
            sequence: &[b'b'; MAX_NAME_LEN],
        };
        assert_eq!(longest.key_name().as_bytes().len(), MAX_KEY_LEN);
    }
}
