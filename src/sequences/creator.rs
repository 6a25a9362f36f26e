//! Making a new sequence relation in a transaction of its own, through a background worker.
//!
//! A sequence that a generator makes for a new name (`SELECT snowflake_next('x')`, or the first
//! DEFAULT that names it) must not be made by the caller's transaction: if that transaction
//! rolled back after values had left it (returned to a client), the relation would go with
//! it, and the name's next relation would hand the same values out again. So a background
//! worker makes it and commits before the caller hands anything out; a rollback of the
//! caller leaves the sequence in place, as it leaves a `nextval` consumed.
//!
//! The worker connects to the caller's database and makes the relation as the caller's
//! current role (`SECURITY_LOCAL_USERID_CHANGE`, as the role itself would): PostgreSQL checks
//! the role's CREATE privilege on the schema, and the role owns the result. It connects as
//! the bootstrap superuser only because a role that cannot log in (a group role, the owner of
//! a SECURITY DEFINER function) may still create objects. Its error, if any, comes back to the
//! caller whole (SQLSTATE, message, detail, hint), through a dynamic shared memory segment.

use std::ffi::{c_char, CStr};

use pgrx::pg_sys::{self, Datum, Oid};

use crate::core::identity::{Kind, RelationName, SequenceName, MAX_NAME_LEN};
use crate::core::snowflake::layout::Layout;
use crate::pg::errors::{self, error, Code};
use crate::pg::pgcompat;
use crate::pg::spi;
use crate::sequences::catalog::{self, Schema};

/// What caller and worker exchange. Written by the caller before the worker starts, the
/// outcome by the worker before it exits (and read by the caller after that).
#[repr(C)]
struct Exchange {
    db: Oid,
    role: Oid,
    kind: u8,
    name_len: u8,
    name: [u8; MAX_NAME_LEN],
    epoch_ms: i64,
    node_bits: u32,
    /// 0: the worker did not report; 1: made (or there already); 2: failed.
    outcome: u32,
    sqlstate: i32,
    message: Text,
    detail: Text,
    hint: Text,
}

#[repr(C)]
struct Text {
    len: u32,
    bytes: [u8; 1024],
}

impl Text {
    fn set(&mut self, s: &[u8]) {
        let n = s.len().min(self.bytes.len());
        self.bytes[..n].copy_from_slice(&s[..n]);
        self.len = n as u32;
    }

    fn get(&self) -> Option<String> {
        let s = &self.bytes[..(self.len as usize).min(self.bytes.len())];
        (!s.is_empty()).then(|| crate::core::dbtext::DbText(s).to_string())
    }
}

/// Makes the relation of new name `name`: by a background worker, in a transaction of its
/// own, unless this transaction made the extension itself (no other session sees the schema
/// yet), where it is made here.
pub fn make(name: SequenceName<'_>, relname: &RelationName, schema: Schema, layout: &Layout) {
    // SAFETY: plain reads of the current user and security context.
    let (user, restricted) =
        unsafe { (pg_sys::GetUserId(), pg_sys::InSecurityRestrictedOperation()) };
    if restricted {
        error(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "cannot create {} within a security-restricted operation",
                name.described()
            ),
        )
        .raise();
    }
    if !pgcompat::namespace_aclcheck(schema.oid, user, pg_sys::ACL_CREATE as pg_sys::AclMode) {
        error(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to create {}", name.described()),
        )
        .detail(format!(
            "A new name makes a sequence in schema {}, which takes CREATE on that schema.",
            schema.name
        ))
        .hint(format!(
            "Have a role with that privilege use the name first, or GRANT CREATE ON SCHEMA {} \
             to this role.",
            schema.name
        ))
        .raise();
    }
    let kind = name.kind();
    if schema.new_in_this_transaction() {
        catalog::create_in_this_transaction(kind, schema.name, relname, layout);
    } else {
        make_once(kind, relname, schema, layout);
    }
}

/// Makes the relation by a worker unless another session made it meanwhile, one making per
/// name at a time. Sessions that meet a new name together (16 inserts through the same new
/// DEFAULT) wait here for the first one's worker and then find its relation: without the
/// lock each started a worker, which took every slot of `max_worker_processes` (53000), and
/// all workers but one failed on pg_class's unique index (23505).
///
/// The lock is a transaction-level advisory lock (user lock method, as
/// `pg_advisory_xact_lock` takes one) keyed by the kind and the name, with a `field4` of its
/// own ([`CREATION_LOCK_CLASS`]) so that it never meets a user's advisory lock. It is taken
/// without queueing in the lock manager: a session that finds it held polls for it, in
/// sleeps of 1 to 16 ms that a cancel or `statement_timeout` ends, and gives up with 55P03
/// after `lock_timeout` as a lock wait would. A wait in the lock manager would be seen by
/// Citus's distributed deadlock detector, for which the shard tasks of one distributed
/// statement are one transaction: a task waiting for a sibling task that holds the lock (and
/// waits for its worker, outside any lock) was taken for a deadlock of the statement with
/// itself, and cancelled. The holder waits for its worker, which is bounded
/// (`WORKER_SLOT_WAIT_MS` for a slot, the worker's own `lock_timeout`), so the others' wait
/// is bounded too. The lock is released as soon as the relation is there, not held while the
/// caller goes on generating.
fn make_once(kind: Kind, relname: &RelationName, schema: Schema, layout: &Layout) {
    let key = relname.creation_lock_key(kind);
    // SAFETY: a plain read; MyDatabaseId is set in a backend connected to a database.
    let db = unsafe { pg_sys::MyDatabaseId };
    let tag = pg_sys::LOCKTAG {
        locktag_field1: db.to_u32(),
        locktag_field2: (key >> 32) as u32,
        locktag_field3: key as u32,
        locktag_field4: CREATION_LOCK_CLASS,
        locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
        locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
    };
    let mode = pg_sys::ExclusiveLock as pg_sys::LOCKMODE;
    let started = std::time::Instant::now();
    // Back off, from a millisecond to 16: the worker takes milliseconds, but the holder may
    // be held up (a lock the worker needs, every worker slot taken) for seconds.
    let mut sleep_ms = 1;
    loop {
        // SAFETY: a lock request that never waits (dontWait); it raises only for an exhausted
        // lock table (53200), as any lock request.
        let got = unsafe { pg_sys::LockAcquire(&tag, mode, false, true) };
        if got != pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL {
            break;
        }
        // SAFETY: a plain read of the setting.
        let timeout_ms = unsafe { pg_sys::LockTimeout };
        if timeout_ms > 0 && started.elapsed().as_millis() >= timeout_ms as u128 {
            error(
                Code::ERRCODE_LOCK_NOT_AVAILABLE,
                format!(
                    "canceling statement due to lock timeout: another session is making {kind} sequence \"{}\"",
                    crate::core::dbtext::DbText(relname.as_bytes())
                ),
            )
            .raise();
        }
        // SAFETY: the standard interruptible wait on the process latch, with a timeout and
        // exit on postmaster death; interrupts are checked right after.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                sleep_ms,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
        pgrx::check_for_interrupts!();
        sleep_ms = (sleep_ms * 2).min(16);
    }
    // SAFETY: the invalidations of whatever committed while this session waited, as
    // LockRelationOid reads them: a relation another session's worker made is found below.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    if catalog::find(schema.oid, relname).is_none() {
        create_autonomously(kind, relname, layout);
        // SAFETY: reads the worker's catalog changes into this backend's caches.
        unsafe { pg_sys::AcceptInvalidationMessages() };
    }
    // SAFETY: the lock taken above, by this transaction; releasing it early is allowed for
    // a transaction-level lock (UnlockRelationOid does the same).
    unsafe { pg_sys::LockRelease(&tag, mode, false) };
}

/// `field4` of the advisory lock tag of a name's making ("SF"): PostgreSQL's own advisory
/// locks use 1 and 2, and other extensions small numbers. In `pg_locks` it shows as an
/// advisory lock with `objsubid` 21318.
const CREATION_LOCK_CLASS: u16 = 0x5346;

/// How long `create_autonomously` waits for a free background worker slot before raising
/// 53000: workers of this extension end within milliseconds, so a full `max_worker_processes`
/// at a burst of new names frees up quickly; one held by long-running workers of others
/// does not, and the caller is told.
const WORKER_SLOT_WAIT_MS: u64 = 10_000;

/// The entry point PostgreSQL's background worker machinery calls, by name.
const ENTRY: &CStr = c"snowflake_id_sequence_creator";

/// Makes sequence `name` of `kind` (its definition recording `layout`) in a transaction of its
/// own, as the current role; returns once it is committed (or was there already, or made
/// meanwhile by another transaction: the caller looks it up again). Raises the worker's
/// error, or 53000 when no worker could be started for `WORKER_SLOT_WAIT_MS`.
pub fn create_autonomously(kind: Kind, name: &RelationName, layout: &Layout) {
    // SAFETY: dsm_create in a transaction (its segment is the transaction's resource, detached
    // at abort); the segment is sized for an Exchange, zeroed, and written before any worker
    // can attach. The worker registration copies `bgw`; WaitForBackgroundWorkerShutdown waits
    // interruptibly (a cancel raises here, and the worker then finds no segment or finishes
    // alone). The outcome is read after the worker exited.
    unsafe {
        let seg = pg_sys::dsm_create(std::mem::size_of::<Exchange>(), 0);
        let ex = pg_sys::dsm_segment_address(seg).cast::<Exchange>();
        std::ptr::write_bytes(ex.cast::<u8>(), 0, std::mem::size_of::<Exchange>());
        (*ex).db = pg_sys::MyDatabaseId;
        (*ex).role = pg_sys::GetUserId();
        (*ex).kind = kind as u8;
        (*ex).name_len = name.as_bytes().len() as u8;
        (&mut (*ex).name)[..name.as_bytes().len()].copy_from_slice(name.as_bytes());
        (*ex).epoch_ms = layout.epoch_ms;
        (*ex).node_bits = layout.node_bits;

        let mut bgw: pg_sys::BackgroundWorker = std::mem::zeroed();
        copy_name(&mut bgw.bgw_name, c"snowflake_id sequence creator");
        copy_name(&mut bgw.bgw_type, c"snowflake_id sequence creator");
        copy_name(&mut bgw.bgw_library_name, c"snowflake_id");
        copy_name(&mut bgw.bgw_function_name, ENTRY);
        bgw.bgw_flags =
            (pg_sys::BGWORKER_SHMEM_ACCESS | pg_sys::BGWORKER_BACKEND_DATABASE_CONNECTION) as i32;
        bgw.bgw_start_time = pg_sys::BgWorkerStartTime::BgWorkerStart_RecoveryFinished;
        bgw.bgw_restart_time = pg_sys::BGW_NEVER_RESTART;
        bgw.bgw_main_arg = Datum::from(pg_sys::dsm_segment_handle(seg));
        bgw.bgw_notify_pid = pg_sys::MyProcPid;
        let mut handle: *mut pg_sys::BackgroundWorkerHandle = std::ptr::null_mut();
        // No free slot: wait for one, in steps of 10 ms that a cancel or statement_timeout
        // ends (the segment is then detached by the abort).
        let mut waited_ms = 0;
        let registered = loop {
            if pg_sys::RegisterDynamicBackgroundWorker(&mut bgw, &mut handle) {
                break true;
            }
            if waited_ms >= WORKER_SLOT_WAIT_MS {
                break false;
            }
            pg_sys::pg_usleep(10_000);
            pgrx::check_for_interrupts!();
            waited_ms += 10;
        };
        if !registered {
            pg_sys::dsm_detach(seg);
            error(
                Code::ERRCODE_INSUFFICIENT_RESOURCES,
                format!(
                    "could not start a background worker to create {} sequence \"{}\"",
                    kind,
                    crate::core::dbtext::DbText(name.as_bytes())
                ),
            )
            .detail(format!(
                "New sequences are made by a background worker, in a transaction of their own; \
                 no slot of max_worker_processes became free for {} s.",
                WORKER_SLOT_WAIT_MS / 1000
            ))
            .hint("Raise max_worker_processes, or retry when fewer background workers run.")
            .raise();
        }
        let status = pg_sys::WaitForBackgroundWorkerShutdown(handle);
        let (outcome, sqlstate) = ((*ex).outcome, (*ex).sqlstate);
        let (message, detail, hint) = ((*ex).message.get(), (*ex).detail.get(), (*ex).hint.get());
        pg_sys::dsm_detach(seg);
        match outcome {
            1 => {}
            // Another transaction made the same relation (one that does not take the lock of
            // `make_once`: CREATE SEQUENCE by hand, the update from 0.3.0) between the worker's
            // IF NOT EXISTS and its insert; it exists now, and the caller looks it up again.
            2 if sqlstate == Code::ERRCODE_UNIQUE_VIOLATION as i32 => {}
            2 => {
                let mut e = error(
                    Code::from(sqlstate as isize),
                    message.unwrap_or_else(|| "could not create the sequence".into()),
                );
                if let Some(d) = detail {
                    e = e.detail(d);
                }
                if let Some(h) = hint {
                    e = e.hint(h);
                }
                e.raise()
            }
            _ => error(
                Code::ERRCODE_INTERNAL_ERROR,
                format!(
                    "the background worker creating {kind} sequence \"{}\" ended without a word",
                    crate::core::dbtext::DbText(name.as_bytes())
                ),
            )
            .detail(if status == pg_sys::BgwHandleStatus::BGWH_POSTMASTER_DIED {
                "The postmaster died."
            } else {
                "See the server log."
            })
            .raise(),
        }
    }
}

fn copy_name<const N: usize>(to: &mut [c_char; N], from: &CStr) {
    for (t, &f) in to.iter_mut().zip(from.to_bytes_with_nul()) {
        *t = f as c_char;
    }
}

/// The background worker: makes the relation its Exchange describes, reports, exits.
///
/// # Safety
/// Called by PostgreSQL as the main function of a background worker registered by
/// `create_autonomously`, whose argument is the handle of the Exchange's segment.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn snowflake_id_sequence_creator(arg: Datum) {
    // SAFETY: the outermost frame of the worker; see each step.
    unsafe {
        errors::boundary(|| {
            pg_sys::BackgroundWorkerUnblockSignals();
            // The caller may have gone (a cancel) and taken the segment with it.
            let seg = pg_sys::dsm_attach(arg.value() as pg_sys::dsm_handle);
            if seg.is_null() {
                return;
            }
            let ex = pg_sys::dsm_segment_address(seg).cast::<Exchange>();
            pg_sys::BackgroundWorkerInitializeConnectionByOid(
                (*ex).db,
                Oid::from(pg_sys::BOOTSTRAP_SUPERUSERID),
                0,
            );
            let kind = Kind::from_u8((*ex).kind).unwrap_or(Kind::Snowflake);
            let relation = RelationName::from_bytes(&(&(*ex).name)[..(*ex).name_len as usize])
                .expect("the caller sends a relation name it made");
            let layout = Layout::own((*ex).node_bits, (*ex).epoch_ms);

            pg_sys::SetCurrentStatementStartTimestamp();
            pg_sys::StartTransactionCommand();
            pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
            let (mut user, mut context) = (pg_sys::InvalidOid, 0);
            pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
            pg_sys::SetUserIdAndSecContext(
                (*ex).role,
                context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32,
            );
            let made = errors::catch(|| {
                spi::connect(|conn| {
                    // A lock the caller itself holds would make the worker wait forever
                    // (the caller waits for the worker, out of the deadlock detector's
                    // sight): give up instead.
                    conn.execute(c"SET LOCAL lock_timeout = '10s'");
                    // The schema as the caller found it: the extension's, committed.
                    let schema = catalog::schema(kind);
                    conn.execute(&catalog::creation_statement(
                        kind,
                        schema.name,
                        &relation,
                        &layout,
                    ));
                })
            });
            match made {
                Ok(()) => {
                    pg_sys::SetUserIdAndSecContext(user, context);
                    pg_sys::PopActiveSnapshot();
                    pg_sys::CommitTransactionCommand();
                    (*ex).outcome = 1;
                    pg_sys::dsm_detach(seg);
                }
                Err(reported) => {
                    (*ex).sqlstate = reported.sqlstate;
                    (*ex).message.set(&reported.message);
                    (*ex).detail.set(&reported.detail);
                    (*ex).hint.set(&reported.hint);
                    (*ex).outcome = 2;
                    pg_sys::dsm_detach(seg);
                    // The server log gets it too; the worker exits with it.
                    reported.raise()
                }
            }
        })
    }
}
