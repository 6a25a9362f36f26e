//! Seeding: the first time this server meets a sequence (a new database from a dump or a
//! template, a new data directory from pg_upgrade, a dropped sequence used again), it looks
//! for the values the sequence may have made elsewhere before it hands out any: in every
//! column whose DEFAULT calls the generator with the sequence's names (see `defaults`), the
//! highest value that could collide with what this server is about to make. The sequence
//! then continues above it.
//!
//! What can collide is small, so a seed costs a few index probes whatever the table holds:
//! - a snowflake sequence's next ID is never below the current wall-clock tick, so only
//!   stored IDs of this server's node at or above that tick matter: one range probe from it;
//! - a gdid sequence continues above the highest gdid of this server's authority: within an
//!   era the keys of one authority are a contiguous range of the btree order (era, authority,
//!   counter), so each era costs two probes, from the highest era down to the first that
//!   holds one. The probes are plain queries with constant bounds, which any planner takes
//!   (Citus refuses recursive CTEs over distributed tables).
//!
//! Each table is read as its owner in a security-restricted operation (see `maintenance`),
//! never with the caller's privileges and never with more than the owner's. Paid once per
//! sequence per server, by the first call that needs the sequence, never on the common path;
//! concurrent first users wait for one seed (a transaction-scoped lock, see [`exclusively`]).

use std::ffi::{c_int, CString};

use pgrx::pg_sys;

use crate::dbtext::DbText;
use crate::defaults::{self, Column, Holds};
use crate::durable::lease::LeaseLock;
use crate::errors::{self, error, Code};
use crate::gdid::counter::GdidState;
use crate::gdid::handle::GdidSeq;
use crate::gdid::value::{Gdid, MAX_COUNTER, SIZE};
use crate::maintenance;
use crate::registry::{Registry, SlotRef};
use crate::snowflake::handle::{SnowflakeSeq, SnowflakeState};
use crate::snowflake::layout::Layout;
use crate::spi::{self, Connection};
use crate::wallclock;

/// Seeds snowflake sequence `seq`, new to this server, if no other backend has meanwhile:
/// above the stored IDs of `node` that could collide with what it makes (from the clock's now
/// up), and above what a dropped sequence of the same name handed out (see
/// `Registry::tombstones`).
pub fn snowflake(
    registry: &Registry<'_>,
    seq: SnowflakeSeq<'_>,
    name: &[u8],
    layout: &Layout,
    node: u32,
) {
    exclusively(seq.at(), || {
        if seq.slot().is_seeded() {
            return; // seeded by the backend this one waited for
        }
        // The sequence's next tick is never below the clock's now, so only stored IDs at or
        // above it can collide; holding the sequence at now also keeps a clock that steps back
        // meanwhile from reaching below what was looked at.
        let now = wallclock::precise_unix_ms();
        if let (Ok(now_ms), Ok(from)) = (layout.ms_since_epoch(now), layout.min_id_at(now)) {
            seq.raise_to((now_ms << layout.counter_bits).saturating_sub(1));
            if let Some(id) = snowflake_floor(name, node, layout, from) {
                let parts = layout
                    .decode(id)
                    .expect("the floor decodes: it is a node's ID of this layout");
                seq.raise_to(layout.tick_of(parts));
            }
        }
        // A dropped sequence of the name may have handed out IDs that are not stored yet (its
        // slot has not taken a new sequence, so transactions that used it may still run).
        let _lock = LeaseLock::acquire();
        for old in registry.tombstones::<SnowflakeState>(seq.slot().key()) {
            if old.slot().created_with() == seq.slot().created_with() {
                seq.raise_to(old.closed_at());
            }
        }
        seq.slot().mark_seeded();
    });
}

/// Seeds gdid sequence `seq`, new to this server, if no other backend has meanwhile: above
/// the stored gdids of `authority`, and above what a dropped sequence of the same names
/// handed out.
pub fn gdid(
    registry: &Registry<'_>,
    seq: GdidSeq<'_>,
    scope: &[u8],
    sequence: &[u8],
    authority: u8,
) {
    exclusively(seq.at(), || {
        if seq.slot().is_seeded() {
            return; // seeded by the backend this one waited for
        }
        if let Some(floor) = gdid_floor(scope, sequence, authority) {
            advance(seq, floor);
        }
        let dropped: Vec<(u32, u64)> = {
            let _lock = LeaseLock::acquire();
            registry
                .tombstones::<GdidState>(seq.slot().key())
                .iter()
                .map(|old| old.closed_at())
                .collect()
        };
        for (era, last) in dropped {
            advance(seq, Gdid::from_parts(era, 0, last));
        }
        seq.slot().mark_seeded();
    });
}

/// Moves gdid sequence `seq` so that its next gdid is later than `past` (never back), with
/// its lease: a seed, or `gdid_advance`. False if the sequence was dropped meanwhile.
pub fn advance(seq: GdidSeq<'_>, past: Gdid) -> bool {
    let lock = LeaseLock::acquire();
    match seq.plan_advance(past.era, past.counter()) {
        Some(m) => lock.persist_then_publish(seq, m.lease, || {
            seq.publish(m, wallclock::precise_unix_ms())
        }),
        None => true,
    }
}

/// The highest ID of `node` at or above `from` in the columns whose DEFAULT is
/// `snowflake_next(name)`.
fn snowflake_floor(name: &[u8], node: u32, layout: &Layout, from: u64) -> Option<u64> {
    maintenance::with_safe_search_path(|| {
        spi::connect(|conn| {
            let columns = defaults::calling(conn, "snowflake_next", &[name], Holds::Integers);
            let node_mask = (1u64 << layout.node_bits) - 1;
            let mut floor = None;
            for c in &columns {
                let (col, tab) = (&c.column_name[..], &c.table_name[..]);
                let query = sql(&[
                    b"SELECT pg_catalog.max(v) FROM (SELECT (",
                    col,
                    b")::pg_catalog.int8 AS v FROM ONLY ",
                    tab,
                    b" WHERE ",
                    col,
                    format!(" >= {from} AND ").as_bytes(),
                    col,
                    format!(
                        " <= {}) s WHERE (v >> {}) & {node_mask} = {node}",
                        i64::MAX,
                        layout.counter_bits
                    )
                    .as_bytes(),
                ]);
                let found = read_as_owner(c, "snowflake", &DbText(name).to_string(), || {
                    conn.select(&query, 0).i64(0, 1)
                });
                floor = floor.max(found.map(|id| id as u64));
            }
            floor
        })
    })
}

/// The highest gdid of `authority` in the columns whose DEFAULT is
/// `gdid_next(scope, sequence)`.
fn gdid_floor(scope: &[u8], sequence: &[u8], authority: u8) -> Option<Gdid> {
    maintenance::with_safe_search_path(|| {
        spi::connect(|conn| {
            let columns = defaults::calling(conn, "gdid_next", &[scope, sequence], Holds::Gdids);
            if columns.is_empty() {
                return None;
            }
            let schema = extension_schema(conn);
            let label = format!("{}/{}", DbText(scope), DbText(sequence));
            let mut floor: Option<Gdid> = None;
            for c in &columns {
                let found = read_as_owner(c, "gdid", &label, || {
                    highest_of_authority(conn, c, &schema, authority)
                });
                floor = floor.max(found);
            }
            floor
        })
    })
}

/// The highest gdid of `authority` in column `c`: from the highest era down, the highest key
/// of the era within the authority's range, until an era holds one.
fn highest_of_authority(
    conn: &mut Connection,
    c: &Column,
    schema: &[u8],
    authority: u8,
) -> Option<Gdid> {
    let (col, tab) = (&c.column_name[..], &c.table_name[..]);
    let literal = |g: Gdid| {
        let mut l = format!("'{g}'::").into_bytes();
        l.extend_from_slice(schema);
        l.extend_from_slice(b".gdid");
        l
    };
    let op = |o: &str| {
        let mut l = b" OPERATOR(".to_vec();
        l.extend_from_slice(schema);
        l.extend_from_slice(format!(".{o}) ").as_bytes());
        l
    };
    let highest = |conn: &mut Connection, condition: &[&[u8]]| -> Option<Gdid> {
        let mut parts: Vec<&[u8]> = vec![b"SELECT ", col, b" FROM ONLY ", tab, b" WHERE "];
        parts.extend_from_slice(condition);
        parts.extend_from_slice(&[b" ORDER BY ", col, b" DESC LIMIT 1"]);
        let query = sql(&parts);
        conn.select(&query, 1)
            .fixed::<SIZE>(0, 1, c.ty)
            .map(|b| Gdid::from_bytes(&b))
    };
    let mut top = highest(conn, &[col, b" IS NOT NULL"])?;
    loop {
        let era = top.era;
        let (low, high) = (
            literal(Gdid::from_parts(era, authority, 0)),
            literal(Gdid::from_parts(era, authority, MAX_COUNTER)),
        );
        let in_era = highest(
            conn,
            &[col, &op(">="), &low, b" AND ", col, &op("<="), &high],
        );
        if in_era.is_some() {
            return in_era;
        }
        if era == 0 {
            return None;
        }
        let below = literal(Gdid::from_parts(era, 0, 0));
        top = highest(conn, &[col, &op("<"), &below])?;
    }
}

/// Runs `read` (queries of column `c`) as the table's owner, with a CONTEXT line naming
/// what is being read for whom, should it fail.
fn read_as_owner<R>(c: &Column, kind: &str, name: &str, read: impl FnOnce() -> R) -> R {
    let context = format!(
        "reading column {} of table {} as its owner, for the {kind} sequence \"{name}\" new to this server",
        DbText(&c.column_name),
        DbText(&c.table_name),
    );
    errors::with_context(&context, || maintenance::as_owner(c.owner, read))
}

/// The extension's schema, quoted.
fn extension_schema(conn: &mut Connection) -> Vec<u8> {
    conn.select(
        c"SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text)
            FROM pg_catalog.pg_extension e
            JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
           WHERE e.extname = 'snowflake_id'",
        1,
    )
    .text(0, 1)
    .unwrap_or_else(|| {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "extension \"snowflake_id\" is not installed in this database",
        )
        .raise()
    })
}

fn sql(parts: &[&[u8]]) -> CString {
    CString::new(parts.concat()).expect("identifiers and the query text hold no NUL")
}

/// Runs `seed` holding the seeding lock of the sequence `at`: concurrent first users of a sequence wait for the one that seeds it instead
/// of repeating its work. A heavyweight lock, held to the end of the seed or of the
/// transaction: it can be cancelled and times out like any lock wait (`statement_timeout`,
/// `lock_timeout`), the deadlock detector sees it, and `pg_locks` shows it (advisory, with
/// `objsubid` [`SEED_LOCK_TAG`]). A seed cut short leaves the sequence unseeded, so the next
/// attempt seeds it afresh.
pub fn exclusively<R>(at: SlotRef, seed: impl FnOnce() -> R) -> R {
    let tag = pg_sys::LOCKTAG {
        // SAFETY: MyDatabaseId is set for the life of a backend connected to a database.
        locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
        locktag_field2: at.idx as u32,
        locktag_field3: at.generation,
        locktag_field4: SEED_LOCK_TAG,
        locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
        locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
    };
    // SAFETY: LockAcquire and LockRelease of a transaction-scoped lock on a tag of our own;
    // errors (a cancel, a timeout, a deadlock) are raised inside the guard.
    unsafe {
        errors::guarded(|| LockAcquire(&tag, pg_sys::ExclusiveLock as c_int, false, false));
    }
    let r = seed();
    // SAFETY: releases the lock acquired above.
    unsafe {
        errors::guarded(|| LockRelease(&tag, pg_sys::ExclusiveLock as c_int, false));
    }
    r
}

/// The fourth field of the seeding lock's tag, `objsubid` in `pg_locks`: advisory locks
/// taken with `pg_advisory_lock` use 1 and 2, so this one never meets them.
pub const SEED_LOCK_TAG: u16 = 0x5346; // "SF"

unsafe extern "C-unwind" {
    // Declared here so that errors::guarded is the only guard around them.
    fn LockAcquire(
        locktag: *const pg_sys::LOCKTAG,
        lockmode: c_int,
        session_lock: bool,
        dont_wait: bool,
    ) -> c_int;
    fn LockRelease(locktag: *const pg_sys::LOCKTAG, lockmode: c_int, session_lock: bool) -> bool;
}
