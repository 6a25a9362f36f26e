//! What a sequence is called: a snowflake sequence by one name, a gdid sequence by a scope and
//! a sequence name, and the PostgreSQL sequence relation that holds it (see `sequences`): a
//! relation of schema `snowflake` named as the sequence, or of schema `gdid` named
//! `scope/sequence` (a `/` and a `%` of the scope written `%2F` and `%25`, so that the first
//! `/` of the name is the one that separates).
//! Names are checked and shown here.
//!
//! PURE: no pgrx here. Names are bytes in the database's encoding, never assumed UTF-8.

use std::fmt;

use crate::core::dbtext::DbText;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    Snowflake = 1,
    Gdid = 2,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

    /// The names the schema that holds the sequence relations of this kind may have: the
    /// first, unless a schema `snowflake` or `gdid` was in the database before the extension
    /// (pgEdge's snowflake extension, a schema of the user's); then both kinds take the second.
    /// Both second names sort after `snowflake` and `gdid`: pg_dump writes `CREATE EXTENSION`
    /// right before the first schema of the extension in name order, so a restore makes those
    /// schemas first, and the extension takes the same names again. A database keeps the names
    /// its extension took; releases before 0.5.0 knew only the first.
    pub fn schema_names(self) -> [&'static str; 2] {
        match self {
            Kind::Snowflake => ["snowflake", "snowflake_seq"],
            Kind::Gdid => ["gdid", "snowflake_gdid_seq"],
        }
    }
}

/// The snowflake layout a sequence was created with: its epoch and node width (zero for gdid
/// sequences). Its relation keeps them (see `sequences::catalog`), so that a later change of
/// the settings cannot go unnoticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CreationLayout {
    pub epoch_ms: i64,
    pub node_bits: u32,
}

/// Longest relation name, and so longest snowflake sequence name, in bytes: a PostgreSQL
/// identifier (NAMEDATALEN - 1).
pub const MAX_NAME_LEN: usize = 63;

/// The name of a sequence, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceName<'a> {
    Snowflake(&'a [u8]),
    Gdid { scope: &'a [u8], sequence: &'a [u8] },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong,
    /// A NUL byte; only possible from a bytea-built text, and no identifier may hold one.
    Nul,
}

/// Which of a sequence's names is wrong, for the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePart {
    Snowflake,
    GdidScope,
    GdidSequence,
    /// A gdid scope and sequence name, each fine, that together make too long a relation name.
    GdidPair,
}

impl NamePart {
    pub fn describe(self) -> &'static str {
        match self {
            NamePart::Snowflake => "snowflake sequence",
            NamePart::GdidScope => "gdid scope",
            NamePart::GdidSequence => "gdid sequence",
            NamePart::GdidPair => "gdid scope and sequence",
        }
    }
}

/// A name that [`SequenceName::relation_name`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadName<'a> {
    pub part: NamePart,
    /// The offending name (for a pair, the scope).
    pub name: &'a [u8],
    pub error: NameError,
}

/// The name of a sequence relation, on the stack: the generators build one on their slow
/// path only, but without an allocation there either.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RelationName {
    len: usize,
    bytes: [u8; MAX_NAME_LEN],
}

impl RelationName {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// A relation name as it is (one [`SequenceName::relation_name`] made, passed along).
    pub fn from_bytes(name: &[u8]) -> Option<RelationName> {
        if name.is_empty() || name.len() > MAX_NAME_LEN || name.contains(&0) {
            return None;
        }
        let mut r = RelationName {
            len: name.len(),
            bytes: [0; MAX_NAME_LEN],
        };
        r.bytes[..name.len()].copy_from_slice(name);
        Some(r)
    }

    /// The key of the lock that serialises the making of this relation in schema `kind`
    /// (`creator`): FNV-1a over the kind and the name's bytes. Two names that share a key only
    /// wait for each other's making; nothing else depends on it being unique.
    pub fn creation_lock_key(&self, kind: Kind) -> u64 {
        std::iter::once(kind as u8)
            .chain(self.as_bytes().iter().copied())
            .fold(0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            })
    }
}

impl fmt::Debug for RelationName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// Separates a gdid scope from its sequence name in the relation name; escaped in the scope.
const SEPARATOR: u8 = b'/';
const ESCAPE: u8 = b'%';

/// A byte of a scope as it is written in a relation name.
fn escaped(b: u8) -> &'static [u8] {
    match b {
        SEPARATOR => b"%2F",
        ESCAPE => b"%25",
        _ => &[],
    }
}

fn check_part<'a>(part: NamePart, name: &'a [u8]) -> Result<(), BadName<'a>> {
    let error = match name.len() {
        0 => NameError::Empty,
        n if n > MAX_NAME_LEN => NameError::TooLong,
        _ if name.contains(&0) => NameError::Nul,
        _ => return Ok(()),
    };
    Err(BadName { part, name, error })
}

impl<'a> SequenceName<'a> {
    pub fn kind(&self) -> Kind {
        match self {
            SequenceName::Snowflake(_) => Kind::Snowflake,
            SequenceName::Gdid { .. } => Kind::Gdid,
        }
    }

    /// The name of the relation that holds the sequence, in its kind's schema: the snowflake
    /// name itself, or `scope/sequence` with `/` and `%` of the scope escaped (`%2F`, `%25`).
    /// Every part must be non-empty and free of NUL bytes, and the result at most
    /// [`MAX_NAME_LEN`] bytes; the first part that is not is reported.
    pub fn relation_name(&self) -> Result<RelationName, BadName<'a>> {
        let mut r = RelationName {
            len: 0,
            bytes: [0; MAX_NAME_LEN],
        };
        match *self {
            SequenceName::Snowflake(name) => {
                check_part(NamePart::Snowflake, name)?;
                r.bytes[..name.len()].copy_from_slice(name);
                r.len = name.len();
            }
            SequenceName::Gdid { scope, sequence } => {
                check_part(NamePart::GdidScope, scope)?;
                check_part(NamePart::GdidSequence, sequence)?;
                let scope_bytes = scope.iter().flat_map(|b| {
                    let e = escaped(*b);
                    let plain = e.is_empty().then_some(*b);
                    e.iter().copied().chain(plain)
                });
                let all = scope_bytes
                    .chain([SEPARATOR])
                    .chain(sequence.iter().copied());
                for b in all {
                    if r.len == MAX_NAME_LEN {
                        return Err(BadName {
                            part: NamePart::GdidPair,
                            name: scope,
                            error: NameError::TooLong,
                        });
                    }
                    r.bytes[r.len] = b;
                    r.len += 1;
                }
            }
        }
        Ok(r)
    }

    /// `snowflake sequence "orders"`, `gdid sequence "billing/invoices"`: for messages.
    pub fn described(&self) -> String {
        format!("{} sequence \"{self}\"", self.kind())
    }
}

/// The scope and sequence name of a gdid sequence relation's name, if it is one that
/// [`SequenceName::relation_name`] makes.
pub fn gdid_names(relation: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let split = relation.iter().position(|&b| b == SEPARATOR)?;
    let (written, sequence) = (&relation[..split], &relation[split + 1..]);
    let mut scope = Vec::with_capacity(written.len());
    let mut i = 0;
    while i < written.len() {
        if written[i] == ESCAPE {
            let b = [SEPARATOR, ESCAPE]
                .into_iter()
                .find(|&b| written[i..].starts_with(escaped(b)))?;
            scope.push(b);
            i += 3;
        } else {
            scope.push(written[i]);
            i += 1;
        }
    }
    (!scope.is_empty() && !sequence.is_empty()).then(|| (scope, sequence.to_vec()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::dbtext;
    use crate::core::testrng::Rng;

    fn gdid<'a>(scope: &'a [u8], sequence: &'a [u8]) -> SequenceName<'a> {
        SequenceName::Gdid { scope, sequence }
    }

    #[test]
    fn creation_lock_keys_tell_kinds_and_names_apart() {
        let r = |n: &[u8]| RelationName::from_bytes(n).unwrap();
        let a = r(b"orders").creation_lock_key(Kind::Snowflake);
        assert_eq!(a, r(b"orders").creation_lock_key(Kind::Snowflake));
        assert_ne!(a, r(b"orders").creation_lock_key(Kind::Gdid));
        assert_ne!(a, r(b"order").creation_lock_key(Kind::Snowflake));
        assert_ne!(a, r(b"orderz").creation_lock_key(Kind::Snowflake));
    }

    #[test]
    fn names_are_checked() {
        fn bad(n: SequenceName<'_>) -> BadName<'_> {
            n.relation_name().map(|_| ()).unwrap_err()
        }
        assert_eq!(bad(SequenceName::Snowflake(b"")).error, NameError::Empty);
        assert_eq!(
            bad(SequenceName::Snowflake(&[b'x'; 64])).error,
            NameError::TooLong
        );
        assert!(SequenceName::Snowflake(&[b'x'; 63]).relation_name().is_ok());
        assert_eq!(bad(SequenceName::Snowflake(b"a\0b")).error, NameError::Nul);
        assert_eq!(
            bad(gdid(b"s", b"")),
            BadName {
                part: NamePart::GdidSequence,
                name: b"",
                error: NameError::Empty
            }
        );
        assert_eq!(bad(gdid(b"", b"q")).part, NamePart::GdidScope);
        // 31 + 1 + 31 fits; one byte more does not, and an escaped slash counts three times.
        assert!(gdid(&[b'a'; 31], &[b'b'; 31]).relation_name().is_ok());
        assert_eq!(bad(gdid(&[b'a'; 31], &[b'b'; 32])).part, NamePart::GdidPair);
        assert_eq!(bad(gdid(&[b'/'; 21], b"q")).part, NamePart::GdidPair);
        assert!(gdid(&[b'/'; 20], b"q").relation_name().is_ok());
    }

    #[test]
    fn relation_names_split_back_one_way() {
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (b"billing", b"invoices", b"billing/invoices"),
            (b"a/b", b"c", b"a%2Fb/c"),
            (b"a", b"b/c", b"a/b/c"),
            (b"a", b"/b", b"a//b"),
            (b"a/", b"b", b"a%2F/b"),
            (b"/", b"/", b"%2F//"),
            (b"50%", b"x", b"50%25/x"),
        ];
        for &(scope, sequence, relation) in cases {
            let r = gdid(scope, sequence).relation_name().unwrap();
            assert_eq!(r.as_bytes(), relation);
            assert_eq!(
                gdid_names(relation),
                Some((scope.to_vec(), sequence.to_vec()))
            );
        }
        assert_eq!(gdid_names(b"no-separator"), None);
        assert_eq!(gdid_names(b"/lead"), None);
        assert_eq!(gdid_names(b"trail/"), None);
        assert_eq!(gdid_names(b"bad%2G/x"), None);
        assert_eq!(
            SequenceName::Snowflake(b"public.orders.id")
                .relation_name()
                .unwrap()
                .as_bytes(),
            b"public.orders.id"
        );
    }

    /// Every pair that fits makes a relation name that splits back into it, and two pairs
    /// never make the same name.
    #[test]
    fn relation_names_are_injective() {
        let mut rng = Rng::new(7);
        let mut seen = std::collections::HashMap::new();
        for _ in 0..20_000 {
            let mut part = || {
                let len = 1 + rng.below(6) as usize;
                (0..len)
                    .map(|_| b"ab/.%2F"[rng.below(7) as usize])
                    .collect::<Vec<u8>>()
            };
            let (scope, sequence) = (part(), part());
            let r = gdid(&scope, &sequence).relation_name().unwrap();
            assert_eq!(
                gdid_names(r.as_bytes()),
                Some((scope.clone(), sequence.clone()))
            );
            if let Some(other) =
                seen.insert(r.as_bytes().to_vec(), (scope.clone(), sequence.clone()))
            {
                assert_eq!(other, (scope, sequence));
            }
        }
    }

    #[test]
    fn names_are_shown_as_written() {
        assert_eq!(
            gdid(b"billing", b"invoices").described(),
            "gdid sequence \"billing/invoices\""
        );
        assert_eq!(
            SequenceName::Snowflake(b"orders").described(),
            "snowflake sequence \"orders\""
        );
        // Bytes in another encoding reach the message as they are.
        let latin1 = SequenceName::Snowflake(b"caf\xe9");
        assert_eq!(dbtext::to_db_bytes(&latin1.to_string(), false), b"caf\xe9");
    }
}
