//! Every configuration setting, in one place. docs/settings.md's table mirrors this file.
//!
//! A server never generates under a setting it was not given. PostgreSQL replaces an invalid
//! value of an extension's setting in `postgresql.conf` by the default, with only a WARNING,
//! and drops a misspelt name the same way. Here an invalid value or an unknown
//! `snowflake.*`/`gdid.*` name stops the server at start (FATAL, naming the setting and its
//! range; pgEdge's `snowflake.node` excepted, and the prefix shared with pgEdge's extension
//! where it is in use), and a node number or authority that was never set makes the generators refuse
//! (55000) instead of stamping a default that another server may use too.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::pg_guard;
use pgrx::pg_sys;

use crate::core::plain_decimal::{self, NumberOrAuto};
use crate::core::snowflake::epoch::{parse_epoch, DEFAULT_EPOCH};
use crate::core::snowflake::layout::{Layout, DEFAULT_NODE_BITS, MAX_NODE_BITS, MIN_NODE_BITS};
use crate::pg::errors::{error, Code};

/// The value of `snowflake.node_id` and `gdid.authority` until they are set.
const UNSET: &CStr = c"-1";

/// `snowflake.node_id` and `gdid.authority` are text settings, parsed here as plain decimal
/// numbers (see `plain_decimal`): an integer setting's check would only see the number
/// PostgreSQL made of the text, `010` already turned into 8.
static NODE_ID: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(UNSET));
static NODE_BITS: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_NODE_BITS as i32);
static EPOCH: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(DEFAULT_EPOCH));
/// The cache of sequences: 4096 entries of 192 bytes, 768 kB of shared memory. More sequences
/// than that are used in turn, each read back from its relation when it enters.
static MAX_SEQUENCES: GucSetting<i32> = GucSetting::<i32>::new(4096);
/// Obsolete since 0.4.0, when sequences became relations of their databases: kept so that a
/// configuration written for an earlier release still starts.
static MAX_SEQUENCES_PER_DATABASE: GucSetting<i32> = GucSetting::<i32>::new(128);
static MAX_CLOCK_AHEAD_MS: GucSetting<i32> = GucSetting::<i32>::new(10_000);
static GDID_AUTHORITY: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(UNSET));
/// `gdid.authority` as a number (-1: not set, -2: auto), kept by its assign hook in each
/// backend: the generators read it on every call.
static AUTHORITY: AtomicI32 = AtomicI32::new(-1);
const AUTHORITY_AUTO: i32 = -2;
/// Where `auto` numbers are claimed: a connection string, a group of numbers in it, how long
/// a claim lasts unless renewed, and how far the clocks involved may be off.
static REGISTRY: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c""));
static REGISTRY_GROUP: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(c"default"));
static CLAIM_LEASE_MS: GucSetting<i32> =
    GucSetting::<i32>::new(crate::core::claim::DEFAULT_LEASE_MS as i32);
static CLAIM_CLOCK_ERROR_MS: GucSetting<i32> =
    GucSetting::<i32>::new(crate::core::claim::DEFAULT_CLOCK_ERROR_MS as i32);
/// The largest node number of the layout, for the check of `snowflake.node_id`.
static MAX_NODE: AtomicU32 = AtomicU32::new(0);
const MAX_AUTHORITY: u32 = 15;
static REFUSE_SHARED_NODE: GucSetting<bool> = GucSetting::<bool>::new(false);

/// A node number or authority as the server was given it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Number {
    Unset,
    Given(u32),
    /// Claimed from the registry.
    Auto,
}

/// What the claims worker needs, when a number is `auto` (fixed at start).
#[derive(Debug, Clone)]
pub struct ClaimSettings {
    pub registry: String,
    pub group: String,
    pub lease_ms: i64,
    pub clock_error_ms: i64,
    pub node: bool,
    pub authority: bool,
}

/// What is fixed at server start: the layout, from `snowflake.node_bits` and
/// `snowflake.epoch`, the node number as `snowflake.node_id` gives it, and the claims, if a
/// number is `auto`.
pub struct Server {
    pub layout: Layout,
    pub node: Number,
    /// `gdid.authority` as the server started with it: what a server that does not claim
    /// keeps using while the configuration files say `auto` (which takes a restart).
    pub authority: Number,
    pub claims: Option<ClaimSettings>,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// A setting as the user gave it, before PostgreSQL had a definition to check it against.
struct Given {
    name: &'static CStr,
    value: Option<String>,
}

/// The value given for `name` in the configuration or on the command line, if any. Until the
/// setting is defined it is a placeholder holding that text unchecked.
fn given(name: &'static CStr) -> Given {
    // SAFETY: GetConfigOption with missing_ok returns NULL or the current value's string,
    // valid until the setting changes; it is copied at once.
    let value = unsafe {
        let p = pg_sys::GetConfigOption(name.as_ptr(), true, false);
        (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    Given { name, value }
}

/// Registers the settings and refuses to start under invalid ones. Only called while
/// `shared_preload_libraries` is processed: PostgreSQL refuses (FATAL) to define
/// postmaster-level settings any later.
pub fn register() {
    define_int(
        c"snowflake.node_bits",
        c"Bits of a snowflake ID that hold the node number (7 to 13: 128 to 8192 nodes).",
        c"The counter takes the remaining 22 - node_bits bits. Fixed at server start.",
        &NODE_BITS,
        (MIN_NODE_BITS as i32, MAX_NODE_BITS as i32),
        GucContext::Postmaster,
        GucFlags::default(),
    );
    // Read back now: the node number's range depends on it.
    let node_bits = NODE_BITS.get() as u32;
    let max_node = (1 << node_bits) - 1;

    MAX_NODE.store(max_node, Ordering::Relaxed);
    let node_id_given = given(c"snowflake.node_id");
    // SAFETY: the check hook only reads its arguments and returns a verdict.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"snowflake.node_id",
            c"Node number written into every snowflake ID this server generates.",
            c"Required for generating snowflake IDs; unique among all servers whose IDs meet. \
              Plain decimal, 0 .. 2^node_bits - 1, or auto: claimed from snowflake.registry. \
              Fixed at server start.",
            &NODE_ID,
            GucContext::Postmaster,
            GucFlags::default(),
            Some(check_node_id),
            None,
            None,
        );
    }
    refuse_invalid_decimal(&node_id_given, max_node);

    let epoch_given = given(c"snowflake.epoch");
    // SAFETY: the check hook does not raise errors and only touches its arguments and the
    // check-hook message globals.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"snowflake.epoch",
            c"Time from which snowflake IDs count milliseconds, e.g. '2025-01-01 00:00:00+00'.",
            c"ISO 8601; without an offset the time is UTC. Fixed at server start.",
            &EPOCH,
            GucContext::Postmaster,
            GucFlags::default(),
            Some(check_epoch),
            None,
            None,
        );
    }
    if let Some(value) = &epoch_given.value {
        if let Err(why) = parse_epoch(value) {
            refuse(&epoch_given, &why);
        }
    }

    define_int(
        c"snowflake.max_sequences",
        c"How many sequences shared memory caches at once: snowflake and gdid, all databases.",
        c"Each entry takes 192 bytes; more sequences than that are used in turn, each read back \
          from its relation as it enters the cache.",
        &MAX_SEQUENCES,
        (1, 1 << 20),
        GucContext::Postmaster,
        GucFlags::default(),
    );
    define_int(
        c"snowflake.max_sequences_per_database",
        c"Obsolete: has no effect since release 0.4.0.",
        c"Sequences are relations of their databases, without a limit of their own; the \
          setting is accepted so that configurations of earlier releases still start.",
        &MAX_SEQUENCES_PER_DATABASE,
        (1, 1 << 20),
        GucContext::Sighup,
        GucFlags::default(),
    );
    define_int(
        c"snowflake.max_clock_ahead",
        c"How far a sequence's logical clock may run ahead of the wall clock.",
        c"Past it, generation waits up to 100 ms for the clock, then fails.",
        &MAX_CLOCK_AHEAD_MS,
        (1, 3_600_000),
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );

    let authority_given = given(c"gdid.authority");
    // SAFETY: the hooks only read their arguments; the assign hook stores a number.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"gdid.authority",
            c"Authority (0 to 15) written into every gdid this server generates.",
            c"Required for generating gdids; unique among the servers that generate gdids of \
              the same scope and sequence. Plain decimal, or auto: claimed from \
              snowflake.registry (given at server start).",
            &GDID_AUTHORITY,
            GucContext::Suset,
            GucFlags::default(),
            Some(check_authority),
            Some(assign_authority),
            None,
        );
    }
    refuse_invalid_decimal(&authority_given, MAX_AUTHORITY);

    let refuse_given = given(c"snowflake.refuse_shared_node");
    GucRegistry::define_bool_guc(
        c"snowflake.refuse_shared_node",
        c"Makes generation refuse once this server's node number or authority is known to be \
          used by another server too.",
        c"Known from values that arrive through logical replication (snowflake_node_conflicts).",
        &REFUSE_SHARED_NODE,
        GucContext::Sighup,
        GucFlags::default(),
    );
    refuse_invalid_bool(&refuse_given);

    define_claim_settings();

    let shared = prefix_shared();
    refuse_unknown_names();
    // SAFETY: plain calls PostgreSQL allows while libraries are preloaded; afterwards a
    // misspelt `snowflake.` or `gdid.` setting is an error instead of a silent placeholder
    // (ALTER SYSTEM, SET). Not `snowflake.` where pgEdge's snowflake extension is in use: it
    // need not be preloaded and may be loaded after this library, and reserving the prefix
    // would drop its `snowflake.node` from the configuration files (and refuse its SET)
    // before that library could define it.
    unsafe {
        if !shared {
            pg_sys::MarkGUCPrefixReserved(c"snowflake".as_ptr());
        }
        pg_sys::MarkGUCPrefixReserved(c"gdid".as_ptr());
    }

    // The checks above have refused anything that does not parse.
    let epoch = EPOCH
        .get()
        .and_then(|s| parse_epoch(s.to_str().ok()?).ok())
        .expect("checked above");
    let number = |s: Option<CString>, max| match s
        .and_then(|s| plain_decimal::parse_or_auto(s.to_str().ok()?, max).ok())
    {
        Some(NumberOrAuto::Number(n)) => Number::Given(n),
        Some(NumberOrAuto::Auto) => Number::Auto,
        None => Number::Unset,
    };
    let node = number(NODE_ID.get(), max_node);
    let authority = number(GDID_AUTHORITY.get(), MAX_AUTHORITY);
    let claims = claim_settings(node == Number::Auto, authority == Number::Auto);
    let _ = SERVER.set(Server {
        layout: Layout::own(node_bits, epoch),
        node,
        authority,
        claims,
    });
}

fn define_claim_settings() {
    GucRegistry::define_string_guc(
        c"snowflake.registry",
        c"Where snowflake.node_id = auto and gdid.authority = auto claim their numbers.",
        c"A libpq connection string or URI of a database with snowflake_id installed. Fixed at \
          server start; shown to superusers only (it may hold a password).",
        &REGISTRY,
        GucContext::Postmaster,
        GucFlags::SUPERUSER_ONLY,
    );
    GucRegistry::define_string_guc(
        c"snowflake.registry_group",
        c"The group of numbers this server claims from in the registry.",
        c"Servers whose values never meet may use separate groups, each with every number. \
          Fixed at server start.",
        &REGISTRY_GROUP,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    define_int(
        c"snowflake.claim_lease",
        c"How long a claimed number is held without a renewal.",
        c"A server that cannot renew stops generating under it before the lease ends; another \
          server gets the number only after it ended. Renewed every third of it, at least every \
          30 s: a registry outage of nearly the lease stops nothing.",
        &CLAIM_LEASE_MS,
        (1_000, 86_400_000),
        GucContext::Postmaster,
        GucFlags::UNIT_MS,
    );
    define_int(
        c"snowflake.claim_clock_error",
        c"How far the clocks of the servers and of the registry may be off from each other.",
        c"A holder stops this much before its lease ends, and the registry waits this much (twice, \
          and for node numbers also snowflake.max_clock_ahead) before giving the number to \
          another server.",
        &CLAIM_CLOCK_ERROR_MS,
        (0, 600_000),
        GucContext::Postmaster,
        GucFlags::UNIT_MS,
    );
}

/// The claim settings, or the FATAL for a configuration that asks for a claimed number without
/// a registry, or with a lease that the clock error would use up.
fn claim_settings(node: bool, authority: bool) -> Option<ClaimSettings> {
    if !node && !authority {
        return None;
    }
    let text = |s: &GucSetting<Option<CString>>| {
        s.get()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let registry = text(&REGISTRY);
    let asked = if node {
        "snowflake.node_id"
    } else {
        "gdid.authority"
    };
    if registry.trim().is_empty() {
        refuse(
            &Given {
                name: c"snowflake.registry",
                value: Some(registry),
            },
            &format!("{asked} is auto: a number claimed from a registry, which snowflake.registry names."),
        );
    }
    let (lease_ms, clock_error_ms) = (
        i64::from(CLAIM_LEASE_MS.get()),
        i64::from(CLAIM_CLOCK_ERROR_MS.get()),
    );
    if 3 * clock_error_ms >= lease_ms {
        refuse(
            &Given {
                name: c"snowflake.claim_clock_error",
                value: Some(format!("{clock_error_ms}ms")),
            },
            &format!(
                "It must be less than a third of snowflake.claim_lease ({lease_ms} ms): a holder \
                 stops generating that much before its lease ends."
            ),
        );
    }
    Some(ClaimSettings {
        registry,
        group: text(&REGISTRY_GROUP),
        lease_ms,
        clock_error_ms,
        node,
        authority,
    })
}

/// Defines an integer setting without hooks, and refuses a given value outside `min ..= max`.
fn define_int(
    name: &'static CStr,
    short: &'static CStr,
    long: &'static CStr,
    setting: &'static GucSetting<i32>,
    (min, max): (i32, i32),
    context: GucContext,
    flags: GucFlags,
) {
    // Before the definition, which takes over the placeholder holding the given value.
    let given = given(name);
    GucRegistry::define_int_guc(name, short, long, setting, min, max, context, flags);
    refuse_invalid_int(&given, min, max, flags.bits());
}

/// The FATAL for a setting PostgreSQL would have replaced by its default.
fn refuse(given: &Given, why: &str) -> ! {
    let name = given.name.to_string_lossy();
    error(
        Code::ERRCODE_INVALID_PARAMETER_VALUE,
        format!(
            "invalid value for parameter \"{name}\": \"{}\"",
            given.value.as_deref().unwrap_or_default()
        ),
    )
    .detail(why.to_owned())
    .hint(format!(
        "Correct {name} in postgresql.conf (or postgresql.auto.conf) and start the server again. \
         snowflake_id does not start with a setting it cannot use."
    ))
    .fatal()
}

/// Refuses a given integer outside `min ..= max` or that PostgreSQL cannot parse, read with
/// the setting's `flags` (its unit) as PostgreSQL reads it.
fn refuse_invalid_int(given: &Given, min: i32, max: i32, flags: c_int) {
    let Some(value) = &given.value else { return };
    let text = CString::new(value.as_str()).unwrap_or_default();
    let mut parsed: c_int = 0;
    // SAFETY: parse_int reads the NUL-terminated text and writes the result; the hint
    // pointer may be set to a static string, which is not used.
    let ok = unsafe {
        let mut hint: *const c_char = std::ptr::null();
        pg_sys::parse_int(text.as_ptr(), &mut parsed, flags, &mut hint)
    };
    if !ok {
        refuse(given, "The value is not an integer.");
    }
    if !(min..=max).contains(&parsed) {
        let unit = if flags & pg_sys::GUC_UNIT_MS as c_int != 0 {
            " ms"
        } else {
            ""
        };
        refuse(
            given,
            &format!("It must be between {min}{unit} and {max}{unit}."),
        );
    }
}

/// Refuses a given `snowflake.node_id` or `gdid.authority` that is not a plain decimal number
/// from 0 to `max`.
fn refuse_invalid_decimal(given: &Given, max: u32) {
    let Some(value) = &given.value else { return };
    if let Err(why) = plain_decimal::parse_or_auto(value, max) {
        refuse(given, &why.describe(value));
    }
}

/// Refuses a given boolean that PostgreSQL cannot parse.
fn refuse_invalid_bool(given: &Given) {
    let Some(value) = &given.value else { return };
    let text = CString::new(value.as_str()).unwrap_or_default();
    let mut parsed = false;
    // SAFETY: parse_bool reads the NUL-terminated text and writes the result.
    if !unsafe { pg_sys::parse_bool(text.as_ptr(), &mut parsed) } {
        refuse(
            given,
            "The value is not a boolean (on, off, true, false, yes, no, 1, 0).",
        );
    }
}

/// Settings of other extensions under the `snowflake.` prefix: pgEdge's snowflake extension's
/// node number, which a server may keep beside this one's while moving from it.
const OTHERS: &[&str] = &["snowflake.node"];

/// Whether pgEdge's snowflake extension shares the `snowflake.` prefix on this server: its
/// setting is in the configuration, or its library is installed beside this one.
fn prefix_shared() -> bool {
    // SAFETY: pkglib_path is set before libraries are preloaded, NUL-terminated.
    let libdir = unsafe { CStr::from_ptr((&raw const pg_sys::pkglib_path).cast::<c_char>()) };
    let installed = std::path::Path::new(&*libdir.to_string_lossy())
        .join("snowflake.so")
        .exists();
    installed
        || placeholder_names()
            .iter()
            .any(|n| OTHERS.contains(&n.to_ascii_lowercase().as_str()))
}

/// Refuses `snowflake.*` and `gdid.*` names this extension does not define: a misspelt
/// `snowflake.nodeid` would otherwise leave the node number unset without a word. Names
/// another extension defines ([`OTHERS`]) pass.
fn refuse_unknown_names() {
    for name in placeholder_names() {
        let lower = name.to_ascii_lowercase();
        if OTHERS.contains(&lower.as_str()) {
            continue;
        }
        if lower.starts_with("snowflake.") || lower.starts_with("gdid.") {
            error(
                Code::ERRCODE_UNDEFINED_OBJECT,
                format!("unrecognized configuration parameter \"{name}\""),
            )
            .detail(
                "snowflake_id defines snowflake.node_id, snowflake.node_bits, snowflake.epoch, \
                 snowflake.max_sequences, snowflake.max_sequences_per_database, \
                 snowflake.max_clock_ahead, snowflake.refuse_shared_node, snowflake.registry, \
                 snowflake.registry_group, snowflake.claim_lease, snowflake.claim_clock_error \
                 and gdid.authority.",
            )
            .hint("Correct or remove it in postgresql.conf and start the server again.")
            .fatal();
        }
    }
}

/// The names of settings that were given but that no loaded library defines (yet).
fn placeholder_names() -> Vec<String> {
    // SAFETY: the GUC table is only changed by this (the postmaster's only) thread; every
    // entry is a valid config_generic with a NUL-terminated name.
    unsafe {
        #[cfg(feature = "pg15")]
        let (vars, n) = (
            pg_sys::get_guc_variables(),
            pg_sys::GetNumConfigOptions() as usize,
        );
        #[cfg(not(feature = "pg15"))]
        let (vars, n) = {
            let mut n: c_int = 0;
            let vars = pg_sys::get_guc_variables(&mut n);
            (vars, n as usize)
        };
        (0..n)
            .map(|i| *vars.add(i))
            .filter(|&v| (*v).flags & pg_sys::GUC_CUSTOM_PLACEHOLDER as c_int != 0)
            .map(|v| CStr::from_ptr((*v).name).to_string_lossy().into_owned())
            .collect()
    }
}

/// What is fixed at server start, or `None` when the library was not preloaded.
pub fn server() -> Option<&'static Server> {
    SERVER.get()
}

// The two settings below are read on every generated value. GucSetting::get also checks that
// it runs on the backend's main thread, which costs more than the read itself on this path.

pub fn max_clock_ahead_ms() -> u64 {
    // SAFETY: a backend has one thread, and PostgreSQL writes the variable only between
    // statements (when it processes a reload). The GUC's range is 1 .. 3600000.
    unsafe { *MAX_CLOCK_AHEAD_MS.as_ptr() as u64 }
}

#[inline(always)]
pub fn refuse_shared_node() -> bool {
    // SAFETY: as in max_clock_ahead_ms.
    unsafe { *REFUSE_SHARED_NODE.as_ptr() }
}

/// `snowflake.max_sequences`: the slots of the table.
pub fn max_sequences() -> usize {
    MAX_SEQUENCES.get() as usize
}

/// `gdid.authority` as this session has it.
#[inline(always)]
pub fn gdid_authority() -> Number {
    match AUTHORITY.load(Ordering::Relaxed) {
        AUTHORITY_AUTO => Number::Auto,
        n => u8::try_from(n).map_or(Number::Unset, |n| Number::Given(u32::from(n))),
    }
}

/// The check of a plain decimal setting from 0 to `max`, whose boot value -1 means "not
/// set" and cannot be set explicitly.
///
/// # Safety
/// `newval` is the pointer PostgreSQL passes to a string check hook.
unsafe fn check_decimal(
    newval: *mut *mut c_char,
    source: pg_sys::GucSource::Type,
    max: u32,
) -> bool {
    // SAFETY: PostgreSQL passes a valid pointer to the candidate value, a NUL-terminated
    // string (NULL only for a string reset to a NULL boot value, which these never are).
    let text = unsafe {
        if newval.is_null() || (*newval).is_null() {
            return false;
        }
        CStr::from_ptr(*newval).to_string_lossy()
    };
    let problem = if text == "-1" {
        if source == pg_sys::GucSource::PGC_S_DEFAULT {
            return true;
        }
        "-1 means that the setting is not set; set a real value.".to_owned()
    } else {
        match plain_decimal::parse_or_auto(&text, max) {
            Ok(_) => return true,
            Err(why) => why.describe(&text),
        }
    };
    set_check_detail(&problem);
    false
}

/// The DETAIL of a check hook's refusal.
fn set_check_detail(detail: &str) {
    let detail = CString::new(detail).unwrap_or_default();
    // SAFETY: GUC_check_errdetail_string is read by the GUC machinery right after the hook
    // returns false; pstrdup copies into the current memory context, as GUC_check_errdetail
    // does.
    unsafe {
        pg_sys::GUC_check_errdetail_string = pg_sys::pstrdup(detail.as_ptr());
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn check_node_id(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    source: pg_sys::GucSource::Type,
) -> bool {
    // A value from the configuration files (ALTER SYSTEM checks what it writes this way) may
    // go with a node_bits that is written too but not in force yet: only the widest layout's
    // bound here. The pair is checked where it matters: at start (FATAL) and after ALTER
    // SYSTEM (a WARNING naming the other setting, see `node::pair`).
    let max = if source == pg_sys::GucSource::PGC_S_FILE {
        (1 << MAX_NODE_BITS) - 1
    } else {
        MAX_NODE.load(Ordering::Relaxed)
    };
    // SAFETY: called by PostgreSQL as a string check hook.
    unsafe { check_decimal(newval, source, max) }
}

#[pg_guard]
unsafe extern "C-unwind" fn check_authority(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: called by PostgreSQL as a string check hook.
    if !unsafe { check_decimal(newval, source, MAX_AUTHORITY) } {
        return false;
    }
    // A session's number on a server that claims its authority would bypass the registry:
    // refused (generators ignore it anyway, see `node::authority_now`). The configuration
    // files may name one, for the next start.
    let claims = server().is_some_and(|s| s.claims.as_ref().is_some_and(|c| c.authority));
    // SAFETY: check_decimal accepted it: a valid NUL-terminated string.
    let auto = unsafe { CStr::from_ptr(*newval) }.to_bytes() == b"auto";
    if claims && !auto && source > pg_sys::GucSource::PGC_S_FILE {
        set_check_detail(
            "This server claims its gdid authority from snowflake.registry (gdid.authority was \
             auto at start): a number set here would bypass the registry.",
        );
        return false;
    }
    // The other way round: a server claims only what it was started with (the claim worker
    // starts with the server), so auto set in a session would leave it without an authority:
    // refused. In the configuration files (ALTER SYSTEM, a reload) it is kept for the next
    // start, and until then the number the server started with stays in force (see
    // `node::authority_now`), as for a setting that needs a restart.
    if server().is_some() && !claims && auto && source > pg_sys::GucSource::PGC_S_FILE {
        set_check_detail(
            "gdid.authority = auto takes effect at the next start: this server was started with \
             a number, and claims from snowflake.registry only what it starts with.",
        );
        // SAFETY: sets the SQLSTATE the GUC machinery reports right after the hook.
        unsafe {
            pg_sys::GUC_check_errcode(
                pgrx::PgSqlErrorCode::ERRCODE_CANT_CHANGE_RUNTIME_PARAM as std::ffi::c_int,
            )
        };
        return false;
    }
    true
}

#[pg_guard]
unsafe extern "C-unwind" fn assign_authority(newval: *const c_char, _extra: *mut c_void) {
    // SAFETY: the value the check hook accepted, a NUL-terminated string (or NULL).
    let text = unsafe { (!newval.is_null()).then(|| CStr::from_ptr(newval).to_string_lossy()) };
    let n = match text.and_then(|t| plain_decimal::parse_or_auto(&t, MAX_AUTHORITY).ok()) {
        Some(NumberOrAuto::Number(n)) => n as i32,
        Some(NumberOrAuto::Auto) => AUTHORITY_AUTO,
        None => -1,
    };
    AUTHORITY.store(n, Ordering::Relaxed);
}

#[pg_guard]
unsafe extern "C-unwind" fn check_epoch(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: PostgreSQL passes a valid pointer to the candidate value (NULL only for a
    // string GUC reset to a NULL boot value, which ours never is).
    let value = unsafe {
        if newval.is_null() || (*newval).is_null() {
            return false;
        }
        CStr::from_ptr(*newval)
    };
    let problem = match value.to_str().map(parse_epoch) {
        Ok(Ok(_)) => return true,
        Ok(Err(msg)) => msg,
        Err(_) => "the value is not valid UTF-8".to_string(),
    };
    set_check_detail(&problem);
    false
}
