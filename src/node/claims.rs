//! A claimed node number or authority as backends see it (the worker that holds it is
//! `worker`): whether it may be generated under now, the ERROR when it may not, and what
//! `snowflake_node_detach()`, `snowflake_node_attach()` and the `snowflake_node_claims` view do.

use pgrx::pg_sys;

use crate::core::claim::{Kind, Request, State};
use crate::core::wallclock;
use crate::guc::{self, Number};
use crate::pg::errors::{error, Code};
use crate::pg::shmem;

/// A claimed number as a generator read it before reserving a value: [`Held::still`] after
/// the reservation confirms that the value was reserved under a valid claim. The reservation
/// can wait (a lock, a lease extension's flush, a full cache, a process stopped), and the
/// claim can end meanwhile and the number go to another server.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    pub kind: Kind,
    pub number: u16,
    made: u64,
}

impl Held {
    /// Whether the claim read is still the one held, and valid now.
    #[inline(always)]
    pub fn still(self) -> bool {
        shmem::claims().is_some_and(|c| {
            c.slot(self.kind)
                .still_held(self.number, self.made, wallclock::monotonic_coarse_ms())
        })
    }
}

/// The claimed number of `kind`, if it may be generated under now (held, and its lease not
/// past, by the monotonic clock). Two atomic loads and one cheap clock read.
#[inline(always)]
pub fn valid(kind: Kind) -> Option<Held> {
    let claims = shmem::claims()?;
    claims
        .slot(kind)
        .held_at(wallclock::monotonic_coarse_ms())
        .map(|(number, made)| Held { kind, number, made })
}

/// How far ahead of the clock a snowflake sequence may run under the claimed node number:
/// `snowflake.max_clock_ahead`, but no more than the registry's hold after the lease allows
/// for (the worker sends a new value at its next renewal; until the registry confirmed it, a
/// raised setting waits).
#[inline(always)]
pub fn max_clock_ahead_ms(setting_ms: u64) -> u64 {
    let confirmed = shmem::claims().map_or(0, |c| c.node.ahead_ms());
    setting_ms.min(u64::try_from(confirmed).unwrap_or(0))
}

/// The era gdid sequences generate in under the claimed authority (read after [`valid`]).
#[inline(always)]
pub fn era_floor() -> u32 {
    shmem::claims().map_or(0, |c| c.authority.era_floor())
}

/// Whether the server claims numbers of `kind` (its setting was `auto` at start).
fn claimed_at_start(kind: Kind) -> bool {
    guc::server()
        .and_then(|s| s.claims.as_ref())
        .is_some_and(|c| match kind {
            Kind::Node => c.node,
            Kind::Authority => c.authority,
        })
}

/// Whether the current role may read `snowflake.registry` (a superuser-only setting): has the
/// privileges of `pg_read_all_settings`, as PostgreSQL asks of it to show such a setting. Only
/// such a role sees anything of the registry or of the claim's messages (which quote the
/// registry's hosts and users, and other servers' data directories).
pub fn may_read_registry() -> bool {
    // SAFETY: catalog lookups of the current role's memberships, in a transaction.
    unsafe {
        pg_sys::has_privs_of_role(
            pg_sys::GetUserId(),
            pg_sys::Oid::from(pg_sys::ROLE_PG_READ_ALL_SETTINGS),
        )
    }
}

/// The ERROR of a generator whose claimed number may not be used now, saying why: to a role
/// that may read the registry, the worker's last message as DETAIL; to others no DETAIL. The
/// server log has the message and the registry (masked) in every case.
pub fn refuse(kind: Kind) -> ! {
    let setting = kind.setting();
    if !claimed_at_start(kind) {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "{setting} is auto, but this server claims no {} number",
                kind.registry_name()
            ),
        )
        .detail(format!(
            "Numbers are claimed from snowflake.registry when {setting} is auto at server start."
        ))
        .hint("Restart the server with the setting in postgresql.conf.")
        .raise();
    }
    let Some(claims) = shmem::claims() else {
        crate::pg::errors::not_preloaded()
    };
    let shown = claims.slot(kind).shown();
    let what = kind.described();
    let registry = claims.registry.get();
    let logged = if shown.message.is_empty() {
        format!("Registry: {registry}.")
    } else {
        format!("{} (registry: {registry})", shown.message)
    };
    let (message, hint) = match shown.word.state {
        State::Unclaimed => (
            format!("this server holds no {what} number yet ({setting} is auto)"),
            "It is claimed from the registry as soon as the registry answers; \
             SELECT * FROM snowflake_node_claims shows what happened.",
        ),
        State::Held => (
            format!(
                "the claim of {what} number {} has run out: it could not be renewed in time",
                shown.word.number
            ),
            "Generation resumes when the registry renews it (or gives this server another \
             number); SELECT * FROM snowflake_node_claims shows why it could not.",
        ),
        State::Detached => (
            format!("this server gave its {what} number back (snowflake_node_detach())"),
            "SELECT snowflake_node_attach() claims a number again.",
        ),
        State::Lost => (
            format!(
                "{what} number {} is no longer this server's: the registry gave it to another server",
                shown.word.number
            ),
            "Its lease had run out; a new number is being claimed.",
        ),
        State::Failed => (
            format!("this server cannot claim a {what} number"),
            "SELECT * FROM snowflake_node_claims shows why; snowflake_node_attach() tries again.",
        ),
    };
    let mut e = error(Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message)
        .hint(hint.to_owned())
        .detail_log(logged);
    if may_read_registry() && !shown.message.is_empty() {
        e = e.detail(shown.message);
    }
    e.raise()
}

/// How long `snowflake_node_detach()` and `snowflake_node_attach()` wait for the worker: a
/// call it may be in, then one call for each kind, and a margin.
fn wait_limit_ms() -> i64 {
    guc::server()
        .and_then(|s| s.claims.as_ref())
        .map_or(10_000, |c| {
            (3 * crate::core::claim::call_span_ms(c.lease_ms) + 5_000).max(10_000)
        })
}

/// Posts `action` to the worker and waits (cancellably) until it has dealt with it or the
/// limit has passed; whether it has.
fn ask_worker(action: Request) -> bool {
    let Some(claims) = shmem::claims() else {
        crate::pg::errors::not_preloaded()
    };
    let number = claims.request(action);
    let latch = claims
        .worker_latch
        .load(std::sync::atomic::Ordering::Acquire);
    if !latch.is_null() {
        // SAFETY: the worker's PGPROC latch, in shared memory for the life of the server.
        unsafe { pg_sys::SetLatch(latch.cast()) };
    }
    let until = wallclock::monotonic_ms() + wait_limit_ms();
    while !claims.done(number) {
        if wallclock::monotonic_ms() >= until {
            return false;
        }
        // SAFETY: the standard interruptible wait on this backend's latch; a cancel is
        // raised by the interrupt check right after.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                10,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
        pgrx::check_for_interrupts!();
    }
    true
}

/// The kinds this server claims, or the ERROR when it claims none.
fn claimed_kinds() -> Vec<Kind> {
    let kinds: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|&k| claimed_at_start(k))
        .collect();
    if kinds.is_empty() {
        error(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "this server claims no number from a registry",
        )
        .detail("snowflake.node_id and gdid.authority were not auto when the server started.")
        .raise();
    }
    kinds
}

/// `snowflake_node_detach()`: generation under the claimed numbers stops at once; the worker
/// gives them back to the registry.
pub fn detach() {
    let kinds = claimed_kinds();
    let claims = shmem::claims().expect("claimed kinds exist only when preloaded");
    for kind in &kinds {
        claims.slot(*kind).end(State::Detached);
    }
    if !ask_worker(Request::Detach) {
        error(
            Code::ERRCODE_WARNING,
            "the registry has not confirmed that the numbers were given back",
        )
        .detail("This server stopped generating under them at once; the claims worker gives them back as soon as the registry answers, and until then they stay held there, up to the end of their lease.")
        .log(false);
    }
}

/// `snowflake_node_attach()`: claims numbers again (perhaps others than before), and waits
/// until they are held; the ERROR says why when they are not.
pub fn attach() {
    let kinds = claimed_kinds();
    let answered = ask_worker(Request::Attach);
    for kind in kinds {
        if valid(kind).is_none() {
            if !answered {
                error(
                    Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("no {} number was claimed in time", kind.described()),
                )
                .hint("SELECT * FROM snowflake_node_claims shows what happened.")
                .raise();
            }
            refuse(kind);
        }
    }
}

/// A row of the `snowflake_node_claims` view.
pub struct Row {
    pub kind: &'static str,
    pub number: Option<i32>,
    pub state: &'static str,
    pub holder: Option<String>,
    pub registry: Option<String>,
    pub since_ms: Option<i64>,
    pub lease_end_ms: Option<i64>,
    pub renewed_ms: Option<i64>,
    pub message: Option<String>,
}

/// One row per kind: a number written by hand (`configured`), or the claim. The holder, the
/// registry and the claim's message only for a role that may read the registry (see
/// [`may_read_registry`]): the function is PUBLIC, as the view over it.
pub fn rows() -> Vec<Row> {
    let privileged = may_read_registry();
    let server = guc::server();
    let claims = shmem::claims();
    Kind::ALL
        .into_iter()
        .map(|kind| {
            // A server that claims uses the claim, whatever a reload made of the setting.
            let given = match kind {
                _ if claimed_at_start(kind) => Number::Auto,
                Kind::Node => server.map_or(Number::Unset, |s| s.node),
                Kind::Authority => guc::gdid_authority(),
            };
            let claimed = claimed_at_start(kind) && given == Number::Auto;
            let none = Row {
                kind: kind.described(),
                number: None,
                state: "not set",
                holder: None,
                registry: None,
                since_ms: None,
                lease_end_ms: None,
                renewed_ms: None,
                message: None,
            };
            match (given, claims) {
                (Number::Given(n), _) => Row {
                    number: Some(n as i32),
                    state: "configured",
                    ..none
                },
                (Number::Auto, Some(c)) if claimed => {
                    let shown = c.slot(kind).shown();
                    let expired = shown.word.state == State::Held
                        && shown
                            .word
                            .valid_at(wallclock::monotonic_coarse_ms())
                            .is_none();
                    let ever = shown.since_ms != 0;
                    let nonzero = |v: i64| (v != 0).then_some(v);
                    Row {
                        number: ever.then_some(i32::from(shown.word.number)),
                        state: if expired {
                            "expired"
                        } else {
                            shown.word.state.name()
                        },
                        holder: Some(c.holder.get()).filter(|h| privileged && !h.is_empty()),
                        registry: Some(c.registry.get()).filter(|r| privileged && !r.is_empty()),
                        since_ms: nonzero(shown.since_ms),
                        lease_end_ms: nonzero(shown.lease_end_ms),
                        renewed_ms: nonzero(shown.renewed_ms),
                        message: Some(shown.message).filter(|m| privileged && !m.is_empty()),
                        ..none
                    }
                }
                // auto in the configuration files of a server started with a number, which
                // stays in force until the restart (see `node::authority_now`).
                (Number::Auto, _) => match (kind, server.map(|s| s.authority)) {
                    (Kind::Authority, Some(Number::Given(n))) => Row {
                        number: Some(n as i32),
                        state: "configured",
                        message: Some(format!(
                            "{} is auto in the configuration files, which takes effect at the \
                             next start",
                            kind.setting()
                        )),
                        ..none
                    },
                    _ => Row {
                        state: "not claimed",
                        message: Some(format!(
                            "{} is auto, but was not when the server started",
                            kind.setting()
                        )),
                        ..none
                    },
                },
                (Number::Unset, _) => none,
            }
        })
        .collect()
}
