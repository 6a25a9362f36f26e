//! From a sequence's name to what a generator uses: its relation found (or made, see
//! `creator`), locked for the rest of the transaction as `nextval` locks a sequence, checked
//! (a sequence of the right kind, made under the server's layout, with the caller allowed to
//! use it), and its slot in the cache (see `cache`).
//!
//! The lock (`RowExclusiveLock`, once per transaction) is what keeps a cached slot honest: a
//! `DROP`, `ALTER` or `RENAME` of the sequence waits until the transaction ends, and a call
//! site's cache is good for one transaction only. Within one, catalog changes that could
//! change the answer (privileges, roles, the sequence's definition) arrive as invalidations,
//! which [`invalidations`] counts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pgrx::pg_sys::{self, Oid};

use crate::core::cache::{Full, Key, SlotRef};
use crate::core::identity::{BadName, CreationLayout, Kind, NameError, SequenceName, MAX_NAME_LEN};
use crate::core::snowflake::epoch::format_utc;
use crate::core::snowflake::layout::Layout;
use crate::pg::errors::{error, Clipped, Code};
use crate::pg::shmem::{self, InterruptibleLock};
use crate::sequences::catalog::{self, NotOurs, Opened, Schema};
use crate::sequences::{creator, privileges};
use crate::{core::wallclock, sequences::lookup};

/// What a generator needs of a resolved sequence.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    pub relid: Oid,
    pub key: Key,
    pub at: SlotRef,
}

/// What the caller is about to do, for the privilege check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Generate,
    /// `gdid_advance`: `UPDATE` on the sequence, as `setval`.
    Advance,
}

/// Resolves sequence `name` for `purpose`, making its relation if the name is new. `layout`
/// is the server's (snowflake sequences must have been made under it).
pub fn resolve(name: SequenceName<'_>, layout: &Layout, purpose: Purpose) -> Resolved {
    let relname = name.relation_name().unwrap_or_else(|bad| bad_name(bad));
    let kind = name.kind();
    let schema = catalog::schema(kind);
    // A name can lose its relation between the lookup and the lock (a concurrent DROP or
    // RENAME): look again, a few times.
    for _ in 0..10 {
        let relid = match catalog::find(schema.oid, &relname) {
            Some(relid) => relid,
            None => {
                creator::make(name, &relname, schema, layout);
                continue;
            }
        };
        lock_for_transaction(relid);
        let opened = match catalog::open(kind, relid) {
            None => continue,
            Some(Err(why)) => not_ours(name, relid, why),
            Some(Ok(o)) => o,
        };
        if catalog::find(schema.oid, &relname) != Some(relid) {
            continue;
        }
        check(name, &opened, &schema, layout, purpose);
        let key = Key {
            db: lookup::current_db(),
            relid: relid.to_u32(),
            filenode: opened.filenode,
        };
        return Resolved {
            relid,
            key,
            at: cache_slot(key, kind, opened.layout),
        };
    }
    error(
        Code::ERRCODE_OBJECT_IN_USE,
        format!("{} changed while it was being looked up", name.described()),
    )
    .hint("Retry the statement.")
    .raise()
}

/// Takes the lock `nextval` takes, `RowExclusiveLock`, held until the end of the top
/// transaction (taken under its resource owner, as `lock_and_open_sequence` does).
fn lock_for_transaction(relid: Oid) {
    // SAFETY: TopTransactionResourceOwner exists in a transaction; the owner is put back
    // right after (an error escaping LockRelationOid aborts the transaction, which resets
    // it).
    unsafe {
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::CurrentResourceOwner = pg_sys::TopTransactionResourceOwner;
        pg_sys::LockRelationOid(relid, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        pg_sys::CurrentResourceOwner = owner;
    }
}

fn check(
    name: SequenceName<'_>,
    opened: &Opened,
    schema: &Schema,
    layout: &Layout,
    purpose: Purpose,
) {
    // A sequence the transaction made hands values out only in the transaction that made the
    // extension's schema too (a first migration): there the name keeps a floor should it roll
    // back (`name_floors_xact`), which is no other role's to plant (CREATE EXTENSION takes a
    // superuser). Any other, made by hand in the transaction, waits for its commit.
    if opened.made_in_this_transaction && !schema.new_in_this_transaction() {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "{} was created in the current transaction",
                name.described()
            ),
        )
        .detail(
            "Values it handed out now would come back if the transaction rolled back and the \
             sequence were made again.",
        )
        .hint("Commit the transaction that created it first, or let the name's first use make it.")
        .raise();
    }
    if opened.reset_in_this_transaction {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("{} was reset in the current transaction", name.described()),
        )
        .detail(
            "ALTER SEQUENCE ... RESTART gave it new storage, which a rollback would take back: \
             its earlier lease would then return, below values handed out now.",
        )
        .hint("Commit the transaction that ran ALTER SEQUENCE ... RESTART first.")
        .raise();
    }
    if name.kind() == Kind::Snowflake {
        let now = CreationLayout {
            epoch_ms: layout.epoch_ms,
            node_bits: layout.node_bits,
        };
        if opened.layout != now {
            layout_changed(name, opened.layout, &now);
        }
    }
    // SAFETY: a plain read of the current user.
    let user = unsafe { pg_sys::GetUserId() };
    let allowed = match purpose {
        Purpose::Generate => privileges::may_generate(opened.relid, user),
        Purpose::Advance => privileges::may_advance(opened.relid, user),
    };
    if !allowed {
        error(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "permission denied for sequence {}",
                catalog::described(name.kind(), opened.relid)
            ),
        )
        .detail(match purpose {
            Purpose::Generate => format!(
                "Generating from {} takes USAGE on it, or INSERT on a table whose DEFAULT \
                 generates from it.",
                name.described()
            ),
            Purpose::Advance => format!("Moving {} on takes UPDATE on it.", name.described()),
        })
        .raise();
    }
}

/// The slot of `key` in the cache, entering it if it is not there. A full cache evicts the
/// least recently used of a sample; if every slot is held by calls still running, the caller
/// waits up to a second for one to end.
fn cache_slot(key: Key, kind: Kind, created_with: CreationLayout) -> SlotRef {
    let cache = lookup::cache();
    if let Some(at) = cache.find(key) {
        if cache.slot(at.idx).created_with() == created_with {
            return at;
        }
    }
    let now_ms = wallclock::precise_unix_ms();
    let seed = key.hash() ^ now_ms as u64;
    let mut waited_ms = 0;
    loop {
        // Nothing of the cache is in use here: slots evicted so far (by this call too) may be
        // taken, and this call, waiting, must not keep others' evictions from reuse.
        shmem::refresh_phase();
        let lock = InterruptibleLock::acquire(shmem::cache_lock());
        if let Some(at) = cache.find(key) {
            if cache.slot(at.idx).created_with() == created_with {
                return at;
            }
            // Its definition changed (ALTER SEQUENCE without new storage): read it afresh.
            cache.evict(at.idx);
        }
        // Keep an eighth of the cache free, so that entering rarely waits for an eviction.
        if cache.occupied() * 8 >= cache.capacity() * 7 {
            cache.evict_one(seed.wrapping_add(waited_ms), 16);
        }
        match cache.find_or_insert(key, kind, created_with, now_ms) {
            Ok(at) => return at,
            Err(Full) => {
                cache.evict_one(seed.wrapping_mul(31).wrapping_add(waited_ms), 64);
            }
        }
        drop(lock);
        if waited_ms >= CACHE_WAIT_MS {
            error(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!(
                    "the cache of sequences is full: all {} entries are in use",
                    cache.capacity()
                ),
            )
            .detail(format!(
                "{} evicted entries wait for calls still using them to end.",
                cache.evicted_in_use()
            ))
            .hint("Raise snowflake.max_sequences and restart.")
            .raise();
        }
        // SAFETY: pg_usleep only sleeps; interrupts are checked right after.
        unsafe { pg_sys::pg_usleep(1000) };
        pgrx::check_for_interrupts!();
        waited_ms += 1;
    }
}

/// How long entering the cache waits for a slot that transactions still hold.
const CACHE_WAIT_MS: u64 = 1_000;

/// Raises the ERROR for a bad name: empty, too long, with a NUL byte.
pub fn bad_name(bad: BadName<'_>) -> ! {
    let what = bad.part.describe();
    match bad.error {
        NameError::Empty => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} name must not be empty"),
        )
        .raise(),
        NameError::TooLong if bad.part == crate::core::identity::NamePart::GdidPair => error(
            Code::ERRCODE_NAME_TOO_LONG,
            format!("{what} names starting \"{}\" are too long together", Clipped(bad.name)),
        )
        .detail(format!(
            "They name the sequence gdid.\"scope/sequence\" (a / or % of the scope written %2F or %25), \
             whose name is at most {MAX_NAME_LEN} bytes."
        ))
        .raise(),
        NameError::TooLong => error(
            Code::ERRCODE_NAME_TOO_LONG,
            format!("{what} name \"{}\" is too long", Clipped(bad.name)),
        )
        .detail(format!("Names are at most {MAX_NAME_LEN} bytes."))
        .raise(),
        NameError::Nul => error(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{what} name must not contain a NUL byte"),
        )
        .raise(),
    }
}

/// The ERROR for a relation of a kind's schema that is not a sequence of this extension: the
/// generators' and the watermarks'.
pub fn not_ours(name: SequenceName<'_>, relid: Oid, why: NotOurs) -> ! {
    let kind = name.kind();
    let relation = catalog::described(kind, relid);
    match why {
        NotOurs::NotASequence => error(
            Code::ERRCODE_WRONG_OBJECT_TYPE,
            format!("{relation} is not a sequence"),
        )
        .detail(format!(
            "{} is the relation {relation}, which is not a sequence.",
            name.described()
        ))
        .raise(),
        NotOurs::Definition => error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("sequence {relation} is not a {kind} sequence of snowflake_id"),
        )
        .detail(
            "Its definition (bounds, increment) is not one that snowflake_id makes: it was made by \
             hand, or altered since.",
        )
        .hint(format!(
            "ALTER SEQUENCE {relation} back to the definition snowflake_id gives it (its lease \
             stays), or drop it where no DEFAULT names it: the next use of {} makes one.",
            name.described()
        ))
        .raise(),
        NotOurs::Unlogged => error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("sequence {relation} is unlogged"),
        )
        .detail("An unlogged sequence starts afresh after a crash: it could hand out its values again.")
        .hint(format!("ALTER SEQUENCE {relation} SET LOGGED"))
        .raise(),
    }
}

/// The ERROR for a snowflake sequence created under other layout settings than the server's.
fn layout_changed(name: SequenceName<'_>, was: CreationLayout, now: &CreationLayout) -> ! {
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("snowflake sequence \"{name}\" was created with a different layout"),
    )
    .detail(format!(
        "It was created with snowflake.epoch = '{}' and snowflake.node_bits = {}; the server \
         now runs with '{}' and {}. Its new IDs could repeat or sort below the ones it made.",
        format_utc(was.epoch_ms),
        was.node_bits,
        format_utc(now.epoch_ms),
        now.node_bits
    ))
    .hint(
        "Restore those two settings and restart, or generate under a new sequence name (and \
         decode the old IDs with the settings they were made with).",
    )
    .raise()
}

// ---------------------------------------------------------------------------------------------
// Invalidations

/// What may have changed a resolution since this backend began resolving: catalog
/// invalidations it has received (any change of a relation: a GRANT on a sequence, its ALTER
/// or DROP, a DEFAULT dropped; of role memberships or of schemas) and transactions it has
/// ended (the lock a resolution takes lasts one transaction). A call site's cache is valid
/// only while the count is what it was when it resolved.
static INVALIDATIONS: AtomicU64 = AtomicU64::new(0);
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// The count, for a resolution about to be cached.
#[inline]
pub fn invalidations() -> u64 {
    if !REGISTERED.load(Ordering::Relaxed) {
        register();
    }
    INVALIDATIONS.load(Ordering::Relaxed)
}

/// The count, for a cached resolution: one load, since whatever cached it counted with
/// [`invalidations`] first, which registered the callbacks that count.
#[inline(always)]
pub fn invalidations_since_registered() -> u64 {
    INVALIDATIONS.load(Ordering::Relaxed)
}

#[cold]
fn register() {
    // SAFETY: registered once per backend, as PostgreSQL allows; the callbacks only count.
    unsafe {
        pg_sys::RegisterXactCallback(Some(on_transaction_end), std::ptr::null_mut());
        pg_sys::CacheRegisterRelcacheCallback(Some(on_relation), pg_sys::Datum::from(0));
        for cache in [
            pg_sys::SysCacheIdentifier::AUTHMEMROLEMEM,
            pg_sys::SysCacheIdentifier::NAMESPACEOID,
        ] {
            pg_sys::CacheRegisterSyscacheCallback(
                cache as _,
                Some(on_catalog),
                pg_sys::Datum::from(0),
            );
        }
    }
    // Only once all are registered: a registration that raised (out of memory) is tried
    // again at the next call, instead of leaving the count of transaction ends still, which
    // would keep a call site's cache fresh across transactions.
    REGISTERED.store(true, Ordering::Relaxed);
}

// nothrow: counts.
unsafe extern "C-unwind" fn on_relation(_arg: pg_sys::Datum, _relid: Oid) {
    INVALIDATIONS.fetch_add(1, Ordering::Relaxed);
}

// nothrow: counts.
unsafe extern "C-unwind" fn on_transaction_end(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::XactEvent::*;
    if matches!(
        event,
        XACT_EVENT_COMMIT
            | XACT_EVENT_ABORT
            | XACT_EVENT_PREPARE
            | XACT_EVENT_PARALLEL_COMMIT
            | XACT_EVENT_PARALLEL_ABORT
    ) {
        INVALIDATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// nothrow: counts.
unsafe extern "C-unwind" fn on_catalog(_arg: pg_sys::Datum, _cache: i32, _hash: u32) {
    INVALIDATIONS.fetch_add(1, Ordering::Relaxed);
}
