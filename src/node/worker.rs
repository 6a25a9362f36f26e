//! The claims worker: a background worker that claims this server's `auto` numbers from the
//! registry, renews their leases, gives them back on `snowflake_node_detach()` and claims
//! again on `snowflake_node_attach()`. It starts when recovery has finished: on a primary at
//! start, on a standby when it is promoted, so that a promoted standby claims a number of its
//! own rather than continuing under its old primary's (which may still be generating behind
//! a network partition until its lease ends).
//!
//! The registry's functions (src/sql/node.sql) decide who holds what, each in one
//! transaction there; this worker only publishes what they answered to shared memory
//! (`core::claim`), where generators check it, and says in the server log and the
//! `snowflake_node_claims` view what happened. A generator never depends on this worker being
//! responsive: a claim carries its own deadline.

use std::ffi::{CStr, CString};
use std::time::Duration;

use pgrx::bgworkers::{
    BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags,
};
use pgrx::pg_sys;

use crate::core::claim::{self, Claims, Kind, Request, State, RETRY_MS};
use crate::core::snowflake::epoch::format_utc;
use crate::core::wallclock::{self, COARSE_MARGIN_MS};
use crate::guc::{self, ClaimSettings};
use crate::node::libpq::{self, Connection, Failure};
use crate::pg::errors::{self, error, Code};
use crate::pg::shmem;

/// Registers the worker, when a number is `auto`. Called from `_PG_init` while preloading.
pub fn register() {
    // pg_upgrade starts the old and the new server for a moment each: neither is the server
    // that will generate, which claims its own numbers when it starts for good.
    // SAFETY: a plain read of a flag set from the command line before libraries load.
    if guc::server().and_then(|s| s.claims.as_ref()).is_none() || unsafe { pg_sys::IsBinaryUpgrade }
    {
        return;
    }
    BackgroundWorkerBuilder::new("snowflake_id claims")
        .set_type("snowflake_id claims")
        .set_library("snowflake_id")
        .set_function("snowflake_id_claims_main")
        .enable_shmem_access(None)
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

/// The worker's entry point.
///
/// # Safety
/// Called by PostgreSQL's background worker machinery, once, in a new process.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn snowflake_id_claims_main(_arg: pg_sys::Datum) {
    // SAFETY: the outermost Rust frame of the worker; an ERROR ends the process, which the
    // postmaster starts again after a second (the claims in shared memory carry their own
    // deadlines meanwhile).
    unsafe {
        errors::boundary(|| {
            BackgroundWorker::attach_signal_handlers(
                SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM,
            );
            pg_sys::BackgroundWorkerUnblockSignals();
            run()
        })
    }
}

/// One kind's claim, as the worker keeps it.
struct Holding {
    kind: Kind,
    /// The number held (or last held, until a new claim).
    number: Option<u16>,
    /// When to call the registry next (monotonic ms).
    due_ms: i64,
    detached: bool,
}

struct Worker {
    settings: ClaimSettings,
    /// `snowflake.registry` as libpq parsed it: as shown (secrets masked), and the secrets no
    /// message may show; or why it cannot be used (never quoting it).
    registry_shown: String,
    secrets: Vec<String>,
    unusable: Option<String>,
    claims: &'static Claims,
    holder: String,
    max_node: u32,
    conn: Option<Connection>,
    /// The registry's function schema, once connected.
    schema: String,
    /// The registry the claims were made with (its system identifier and database), once it
    /// answered: another one answering later is refused.
    registry_id: Option<String>,
    held: Vec<Holding>,
    stop: bool,
    /// Giving the numbers back at a shutdown: the calls no longer end at the SIGTERM.
    shutdown: bool,
}

fn run() {
    let server = guc::server().expect("registered only when preloaded");
    let settings = server
        .claims
        .clone()
        .expect("registered only when a number is auto");
    let claims = shmem::claims().expect("registered only when preloaded");
    // SAFETY: this process's PGPROC latch lives in shared memory for the life of the server;
    // backends set it to wake this worker.
    unsafe {
        claims.worker_latch.store(
            (&raw mut (*pg_sys::MyProc).procLatch).cast(),
            std::sync::atomic::Ordering::Release,
        );
    }
    let public = holder();
    claims.holder.set(&public);
    let holder = format!("{public} #{:016x}", token(claims));
    // Masked as libpq reads it: what libpq takes for a secret, however it is written.
    let (registry_shown, secrets, unusable) = match libpq::parse_conninfo(&settings.registry) {
        Ok(options) => (
            claim::shown_conninfo(&options),
            claim::secrets(&options),
            None,
        ),
        Err(why) => ("(not shown)".to_owned(), Vec::new(), Some(why)),
    };
    claims.registry.set(&registry_shown);
    let held = Kind::ALL
        .into_iter()
        .filter(|k| match k {
            Kind::Node => settings.node,
            Kind::Authority => settings.authority,
        })
        .map(|kind| Holding {
            kind,
            number: None,
            due_ms: 0,
            detached: claims.slot(kind).word().state == State::Detached,
        })
        .collect();
    let mut w = Worker {
        settings,
        registry_shown,
        secrets,
        unusable,
        claims,
        holder,
        max_node: server.layout.max_node(),
        conn: None,
        schema: String::new(),
        registry_id: Some(claims.registry_id.get()).filter(|id| !id.is_empty()),
        held,
        stop: false,
        shutdown: false,
    };
    while !w.stop {
        if BackgroundWorker::sighup_received() {
            // snowflake.max_clock_ahead can change on a reload; the hold the registry
            // applies after the lease must follow it (see `claims::max_clock_ahead_ms`).
            // SAFETY: the worker's own configuration reload, between two calls.
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
        if let Some((action, number)) = claims.pending() {
            w.act(action);
            claims.finish(number);
        }
        let now = wallclock::monotonic_ms();
        for i in 0..w.held.len() {
            if w.held[i].due_ms <= now && !w.stop {
                w.step(i);
            }
        }
        let next = w.held.iter().map(|h| h.due_ms).min().unwrap_or(i64::MAX);
        let wait = (next - wallclock::monotonic_ms()).clamp(1, RETRY_MS);
        w.stop |= !BackgroundWorker::wait_latch(Some(Duration::from_millis(wait as u64)));
        w.stop |= BackgroundWorker::sigterm_received();
    }
    // A shutdown of the server (not a worker stopped alone, which comes back and finds its
    // numbers again): give the numbers back, so that they come free once the hold after the
    // release has passed rather than a whole lease after the last renewal.
    if shutting_down() {
        w.give_back_at_shutdown();
    }
    claims
        .worker_latch
        .store(std::ptr::null_mut(), std::sync::atomic::Ordering::Release);
    // Ended by SIGTERM. Outside a shutdown someone stopped the worker (it is no backend, so
    // pg_terminate_backend cannot): exit status 1 has the postmaster start it again after a
    // second, where 0 would end it for good and every claim would run out. In a shutdown the
    // postmaster starts nothing again.
    // SAFETY: ends the process as PostgreSQL does, running its exit callbacks.
    unsafe { pg_sys::proc_exit(1) };
}

/// This postmaster's secret part of the holder name: made once, by the first worker, kept in
/// shared memory for the workers started after it.
fn token(claims: &Claims) -> u64 {
    let made = claims.token.load(std::sync::atomic::Ordering::Acquire);
    if made != 0 {
        return made;
    }
    let mut bytes = [0u8; 8];
    // SAFETY: pg_strong_random fills the buffer it is given, of the length given.
    let ok = unsafe { pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), bytes.len()) };
    if !ok {
        error(
            Code::ERRCODE_INTERNAL_ERROR,
            "could not make a random holder token for the registry",
        )
        .raise();
    }
    let token = u64::from_le_bytes(bytes) | 1;
    match claims.token.compare_exchange(
        0,
        token,
        std::sync::atomic::Ordering::AcqRel,
        std::sync::atomic::Ordering::Acquire,
    ) {
        Ok(_) => token,
        Err(other) => other,
    }
}

/// This server as the registry knows it: host, port, data directory, system identifier and
/// the postmaster's start (see `claim::holder_name`).
fn holder() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes; DataDir is the NUL-terminated path
    // of the data directory, set before any worker starts.
    let (host, dir, port, system) = unsafe {
        libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1);
        (
            CStr::from_ptr(buf.as_ptr().cast())
                .to_string_lossy()
                .into_owned(),
            CStr::from_ptr(pg_sys::DataDir)
                .to_string_lossy()
                .into_owned(),
            pg_sys::PostPortNumber as u16,
            pg_sys::GetSystemIdentifier(),
        )
    };
    // SAFETY: a plain read of a postmaster global, set before any worker starts.
    let started_us = unsafe { pg_sys::PgStartTime };
    // PostgreSQL's timestamps count microseconds from 2000-01-01 UTC.
    let started = format_utc(started_us.div_euclid(1_000) + 946_684_800_000);
    claim::holder_name(&host, port, &dir, system, &started)
}

/// Whether the postmaster is shutting down (smart or fast): it writes `stopping` into line 8
/// of `postmaster.pid` before it signals any process to end. A worker ended by a SIGTERM of
/// its own finds `ready` there.
fn shutting_down() -> bool {
    // SAFETY: DataDir is the NUL-terminated path of the data directory, set before any worker
    // starts.
    let dir = unsafe { CStr::from_ptr(pg_sys::DataDir) }
        .to_string_lossy()
        .into_owned();
    std::fs::read_to_string(format!("{dir}/postmaster.pid"))
        .ok()
        .and_then(|text| text.lines().nth(7).map(|l| l.trim() == "stopping"))
        .unwrap_or(false)
}

fn log(message: String) {
    error(Code::ERRCODE_SUCCESSFUL_COMPLETION, message).log(false);
}

impl Worker {
    fn interrupted(&self) -> impl Fn() -> bool {
        let shutdown = self.shutdown;
        move || !shutdown && BackgroundWorker::sigterm_received()
    }

    /// The deadline for one call to the registry: a quarter of the lease, at most 5 s (at
    /// shutdown, at most 1 s).
    fn call_deadline(&self) -> i64 {
        let span = claim::call_span_ms(self.settings.lease_ms);
        wallclock::monotonic_ms() + if self.shutdown { span.min(1_000) } else { span }
    }

    /// A message about the registry, every secret of its connection string masked.
    fn scrub(&self, message: &str) -> String {
        claim::scrub(
            message,
            &self.settings.registry,
            &self.registry_shown,
            &self.secrets,
        )
    }

    /// The connection, opened if needed: the extension's schema looked up there, and a
    /// registry that is a standby or lacks the extension refused with a clear message.
    fn connection(&mut self) -> Result<&mut Connection, Failure> {
        if self.conn.is_none() {
            if let Some(why) = &self.unusable {
                return Err(Failure::Unusable(why.clone()));
            }
            let interrupted = self.interrupted();
            let mut conn =
                Connection::open(&self.settings.registry, self.call_deadline(), &interrupted)?;
            // The registry gives up on a call when this worker does: a call waiting there (for
            // a lock an administrator holds, say) ends rather than piling up behind a new
            // connection.
            let timeout = format!("{}ms", claim::call_span_ms(self.settings.lease_ms));
            let rows = conn.query(
                c"SELECT pg_catalog.pg_is_in_recovery()::text,
                         (SELECT pg_catalog.quote_ident(n.nspname)
                            FROM pg_catalog.pg_extension e
                            JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                           WHERE e.extname = 'snowflake_id'),
                         pg_catalog.set_config('statement_timeout', $1, false)",
                &[&timeout],
                self.call_deadline(),
                &interrupted,
            )?;
            let row = rows.into_iter().next().unwrap_or_default();
            if row.first().cloned().flatten().as_deref() == Some("true") {
                return Err(Failure::Refused {
                    sqlstate: "25006".into(),
                    message:
                        "the registry is a standby (in recovery): claims are made on a primary"
                            .into(),
                });
            }
            let Some(schema) = row.get(1).cloned().flatten() else {
                return Err(Failure::Refused {
                    sqlstate: "42883".into(),
                    message: "the registry's database has no snowflake_id extension (CREATE EXTENSION snowflake_id there)".into(),
                });
            };
            self.schema = schema;
            self.conn = Some(conn);
        }
        Ok(self.conn.as_mut().expect("just opened"))
    }

    /// Runs a registry function; the connection is dropped when the call did not get an
    /// answer, so that the next call starts afresh.
    fn call(&mut self, sql: String, params: &[&str]) -> Result<Vec<Vec<Option<String>>>, Failure> {
        let sql = CString::new(sql).expect("no NUL in the query");
        let deadline = self.call_deadline();
        let interrupted = self.interrupted();
        let result = self
            .connection()
            .and_then(|c| c.query(&sql, params, deadline, &interrupted));
        if matches!(result, Err(Failure::Unreachable(_)))
            || matches!(result, Err(Failure::Interrupted))
        {
            self.conn = None;
        }
        if matches!(result, Err(Failure::Interrupted)) {
            self.stop = true;
        }
        result
    }

    /// The hold after giving a number back: for values made ahead of the clock under the
    /// larger of the bound now and the one the registry last confirmed (generators used no
    /// more than the smaller, but a setting lowered since may not have been sent yet).
    fn release_hold_after_ms(&self, kind: Kind) -> i64 {
        let ahead = (guc::max_clock_ahead_ms() as i64).max(self.claims.slot(kind).ahead_ms());
        claim::hold_after_ms(kind, ahead, self.settings.clock_error_ms)
    }

    fn max_number(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Node => self.max_node,
            Kind::Authority => 15,
        }
    }

    /// Checks that the registry that answered is the one the claims were made with.
    fn same_registry(&mut self, answered: &str) -> bool {
        match &self.registry_id {
            None => {
                self.registry_id = Some(answered.to_owned());
                self.claims.registry_id.set(answered);
                self.claims
                    .registry
                    .set(&format!("{} (system {answered})", self.registry_shown));
                true
            }
            Some(known) if known == answered => true,
            Some(known) => {
                let why = format!(
                    "another registry answers (system and database {answered}) than the one the claims were made with ({known}): refused rather than risk two holders of one number"
                );
                for h in &mut self.held {
                    self.claims.slot(h.kind).end(State::Failed);
                    self.claims.slot(h.kind).message.set(&why);
                    h.detached = true;
                    // Nothing to give back to this registry (and the message must stay).
                    h.number = None;
                }
                error(Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, why).log(true);
                false
            }
        }
    }

    /// Claims or renews the number of `self.held[i]`, as it is due; or, detached, gives it
    /// back until the registry has it.
    fn step(&mut self, i: usize) {
        if self.held[i].detached {
            self.release(i);
            return;
        }
        let kind = self.held[i].kind;
        let slot = self.claims.slot(kind);
        let sent = wallclock::monotonic_ms();
        let lease = format!("{} milliseconds", self.settings.lease_ms);
        let ahead_ms = guc::max_clock_ahead_ms() as i64;
        let hold_after = format!(
            "{} milliseconds",
            claim::hold_after_ms(kind, ahead_ms, self.settings.clock_error_ms)
        );
        let outcome = match self.held[i].number {
            Some(number) => {
                let sql = format!(
                    "SELECT (pg_catalog.date_part('epoch', lease_until) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8::pg_catalog.text, registry
                       FROM {}.snowflake_registry_renew($1, $2, $3, $4::pg_catalog.int4, $5::pg_catalog.interval, $6::pg_catalog.interval)",
                    self.schema_or_placeholder()
                );
                let (n, group, holder) = (
                    number.to_string(),
                    self.settings.group.clone(),
                    self.holder.clone(),
                );
                let params = [
                    kind.registry_name(),
                    group.as_str(),
                    holder.as_str(),
                    &n,
                    &lease,
                    &hold_after,
                ];
                self.call_with_schema(sql, &params)
                    .map(|rows| {
                        let row = rows.into_iter().next().unwrap_or_default();
                        (
                            row.first().cloned().flatten(),
                            row.get(1).cloned().flatten(),
                        )
                    })
                    .map(|(lease_end, registry)| Outcome::Renewed {
                        number,
                        lease_end,
                        registry,
                    })
            }
            None => {
                let sql = format!(
                    "SELECT number::pg_catalog.text, (pg_catalog.date_part('epoch', lease_until) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8::pg_catalog.text,
                            era_floor::pg_catalog.text, registry
                       FROM {}.snowflake_registry_claim($1, $2, $3, $4::pg_catalog.int4, $5::pg_catalog.interval, $6::pg_catalog.interval)",
                    self.schema_or_placeholder()
                );
                let (max, group, holder) = (
                    self.max_number(kind).to_string(),
                    self.settings.group.clone(),
                    self.holder.clone(),
                );
                let params = [
                    kind.registry_name(),
                    group.as_str(),
                    holder.as_str(),
                    &max,
                    &lease,
                    &hold_after,
                ];
                self.call_with_schema(sql, &params).map(|rows| {
                    let row = rows.into_iter().next().unwrap_or_default();
                    let get = |c: usize| row.get(c).cloned().flatten();
                    Outcome::Claimed {
                        number: get(0).and_then(|n| n.parse().ok()),
                        lease_end: get(1),
                        // An era floor that is no u32 (the registry's rows altered) is no
                        // claim: era 0 could meet an earlier holder's gdids.
                        era_floor: get(2).and_then(|e| e.parse().ok()),
                        registry: get(3),
                    }
                })
            }
        };
        let deadline = claim::deadline(
            sent,
            self.settings.lease_ms,
            self.settings.clock_error_ms,
            COARSE_MARGIN_MS as i64,
        );
        let now_unix = wallclock::precise_unix_ms();
        let renew_at = sent + claim::renew_interval_ms(self.settings.lease_ms);
        match outcome {
            Ok(Outcome::Claimed {
                number: Some(number),
                lease_end,
                era_floor: Some(era_floor),
                registry,
            }) => {
                if !self.same_registry(registry.as_deref().unwrap_or_default()) {
                    return;
                }
                let number = number as u16;
                slot.set_ahead_ms(ahead_ms);
                slot.hold(number, deadline, era_floor, now_unix, parse_ms(lease_end));
                slot.message.set("");
                self.held[i].number = Some(number);
                self.held[i].due_ms = renew_at;
                log(format!(
                    "claimed {} number {number} from the registry{}",
                    kind.described(),
                    if kind == Kind::Authority {
                        format!(" (gdids in era {era_floor})")
                    } else {
                        String::new()
                    }
                ));
            }
            Ok(Outcome::Claimed { number: None, .. }) => {
                slot.message.set("the registry answered without a number");
                self.held[i].due_ms = sent + RETRY_MS;
            }
            Ok(Outcome::Claimed {
                era_floor: None, ..
            }) => {
                slot.message.set(
                    "the registry answered with an era floor that is no era (0 .. 4294967295)",
                );
                self.held[i].due_ms = sent + RETRY_MS;
            }
            Ok(Outcome::Renewed {
                number,
                lease_end: Some(lease_end),
                registry,
            }) => {
                if !self.same_registry(registry.as_deref().unwrap_or_default()) {
                    return;
                }
                if slot.renew(number, deadline, now_unix, parse_ms(Some(lease_end))) {
                    // The registry's hold now allows for this run-ahead bound (a lower one:
                    // it keeps the longer hold of before).
                    slot.set_ahead_ms(ahead_ms);
                    slot.message.set("");
                }
                self.held[i].due_ms = renew_at;
            }
            Ok(Outcome::Renewed {
                number,
                lease_end: None,
                ..
            }) => {
                // Not held any more: the lease had run out and the number went to another
                // server (or was given back). Claim again, at once.
                slot.end(State::Lost);
                let why = format!(
                    "{} number {number} is no longer this server's: the registry does not have it as this server's (its lease ran out before a renewal reached the registry and it went to another server, or the registry lost its claims)",
                    kind.described()
                );
                slot.message.set(&why);
                error(Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, why).log(true);
                self.held[i].number = None;
                self.held[i].due_ms = wallclock::monotonic_ms();
            }
            Err(Failure::Interrupted) => {}
            Err(failure) => {
                // libpq's messages may quote the connection string, password and all.
                let why = self.scrub(&failure.to_string());
                if slot.shown().message != why {
                    error(
                        Code::ERRCODE_CONNECTION_FAILURE,
                        format!("{} claim: {why}", kind.described()),
                    )
                    .log(true);
                }
                slot.message.set(&why);
                self.held[i].due_ms = wallclock::monotonic_ms() + RETRY_MS;
            }
        }
    }

    /// The schema of the registry's functions, connecting first if needed (an empty name
    /// when the connection fails: the call then fails the same way).
    fn schema_or_placeholder(&mut self) -> String {
        let _ = self.connection();
        self.schema.clone()
    }

    fn call_with_schema(
        &mut self,
        sql: String,
        params: &[&str],
    ) -> Result<Vec<Vec<Option<String>>>, Failure> {
        if self.schema.is_empty() {
            // connection() failed in schema_or_placeholder: get its failure.
            self.connection()?;
        }
        self.call(sql, params)
    }

    /// Gives the number of detached `self.held[i]` back; tried again later if the registry
    /// does not answer. The release names the end of the lease this worker last had
    /// confirmed: if the registry's is still that one (no renewal or claim of the number
    /// reached it since), the number is free once the hold after the release has passed;
    /// otherwise (a registry of 0.4.0, or a role not granted the function: the release
    /// without it) once its lease and the hold after it have.
    fn release(&mut self, i: usize) {
        let kind = self.held[i].kind;
        let Some(number) = self.held[i].number else {
            self.held[i].due_ms = i64::MAX;
            return;
        };
        let (n, hold_after) = (
            number.to_string(),
            format!("{} milliseconds", self.release_hold_after_ms(kind)),
        );
        let known_lease_end = self.claims.slot(kind).shown().lease_end_ms.to_string();
        let (group, holder) = (self.settings.group.clone(), self.holder.clone());
        let params = [
            kind.registry_name(),
            group.as_str(),
            holder.as_str(),
            &n,
            &hold_after,
            &known_lease_end,
        ];
        let sql = format!(
            "SELECT {}.snowflake_registry_release($1, $2, $3, $4::pg_catalog.int4, $5::pg_catalog.interval, $6::pg_catalog.int8)::pg_catalog.text",
            self.schema_or_placeholder()
        );
        let mut outcome = self.call_with_schema(sql, &params);
        if matches!(&outcome, Err(Failure::Refused { sqlstate, .. }) if sqlstate == "42883" || sqlstate == "42501")
        {
            let sql = format!(
                "SELECT {}.snowflake_registry_release($1, $2, $3, $4::pg_catalog.int4, $5::pg_catalog.interval)::pg_catalog.text",
                self.schema_or_placeholder()
            );
            outcome = self.call_with_schema(sql, &params[..5]);
        }
        match outcome {
            Ok(_) => {
                self.held[i].number = None;
                self.held[i].due_ms = i64::MAX;
                self.claims
                    .slot(kind)
                    .message
                    .set(&format!("number {number} given back"));
                log(format!(
                    "gave {} number {number} back to the registry",
                    kind.described()
                ));
            }
            Err(failure) => {
                let why = self.scrub(&format!(
                    "{} number {number} not given back yet: {failure}",
                    kind.described()
                ));
                if self.claims.slot(kind).shown().message != why {
                    error(Code::ERRCODE_CONNECTION_FAILURE, why.clone()).log(true);
                }
                self.claims.slot(kind).message.set(&why);
                self.held[i].due_ms = wallclock::monotonic_ms() + RETRY_MS;
            }
        }
    }

    /// At a shutdown: generation under the numbers ends, and each is given back, with one try
    /// of at most a second or two in all (a registry that does not answer leaves the number
    /// taken until its lease and the hold after it have passed, as for a server that died).
    fn give_back_at_shutdown(&mut self) {
        self.shutdown = true;
        self.stop = false;
        for i in 0..self.held.len() {
            let kind = self.held[i].kind;
            if self.held[i].number.is_none() || self.claims.slot(kind).word().state != State::Held {
                continue;
            }
            // Generators refuse from here on; one that read the number before confirms it
            // after reserving its value, and is refused too.
            self.claims.slot(kind).end(State::Detached);
            self.release(i);
            if self.stop {
                break; // the postmaster died
            }
        }
    }

    /// A request of `snowflake_node_detach()` or `snowflake_node_attach()`.
    fn act(&mut self, action: Request) {
        match action {
            Request::None => {}
            Request::Detach => {
                for i in 0..self.held.len() {
                    self.held[i].detached = true;
                    self.claims.slot(self.held[i].kind).end(State::Detached);
                    self.release(i);
                }
            }
            Request::Attach => {
                // A registry refused earlier as another one is accepted anew: the operator
                // asked for it.
                if self
                    .held
                    .iter()
                    .any(|h| self.claims.slot(h.kind).word().state == State::Failed)
                {
                    self.registry_id = None;
                    self.claims.registry_id.set("");
                    self.conn = None;
                }
                for i in 0..self.held.len() {
                    let kind = self.held[i].kind;
                    let state = self.claims.slot(kind).word().state;
                    self.held[i].detached = false;
                    if state != State::Held {
                        self.held[i].number = None;
                    }
                    if self.held[i].number.is_none() || state != State::Held {
                        self.held[i].due_ms = 0;
                        self.step(i);
                    }
                }
            }
        }
    }
}

enum Outcome {
    Claimed {
        number: Option<u32>,
        lease_end: Option<String>,
        era_floor: Option<u32>,
        registry: Option<String>,
    },
    Renewed {
        number: u16,
        lease_end: Option<String>,
        registry: Option<String>,
    },
}

fn parse_ms(text: Option<String>) -> i64 {
    text.and_then(|t| t.parse().ok()).unwrap_or(0)
}
