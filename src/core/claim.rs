//! A node number or gdid authority claimed from a registry (`snowflake.node_id = auto`,
//! `gdid.authority = auto`), as the generators of every backend and the claims worker share
//! it in shared memory.
//!
//! PURE: no pgrx here.
//!
//! Generators read one word: whether a number is held, which, and until when (the monotonic
//! clock, in milliseconds). The worker writes it: at a claim, at each renewal (a later
//! deadline), and when the claim ends (detached, lost, expired). A generator hands out nothing
//! under a number once its deadline has passed, whatever the worker is doing: a server frozen
//! (SIGSTOP) past its lease finds the deadline passed when it wakes, before any value.
//!
//! The deadline is the moment the renewal was *sent* plus the lease, less the clock error the
//! registry allows for: the registry granted the lease no earlier than that, by its own
//! clock, and gives the number to another holder only after the lease plus that error (and,
//! for node numbers, plus how far the holder's IDs may run ahead of its clock) has passed.

use crate::core::sync::{fence, spin_loop, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// Which number: a snowflake node number or a gdid authority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Node,
    Authority,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::Node, Kind::Authority];

    /// The registry's name of the kind.
    pub fn registry_name(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Authority => "authority",
        }
    }

    /// The setting that asks for a claim of it.
    pub fn setting(self) -> &'static str {
        match self {
            Kind::Node => "snowflake.node_id",
            Kind::Authority => "gdid.authority",
        }
    }

    /// How the monitoring view names it.
    pub fn described(self) -> &'static str {
        match self {
            Kind::Node => "snowflake node",
            Kind::Authority => "gdid authority",
        }
    }
}

/// Where a claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Not held yet: the server has not reached the registry since it started (or since the
    /// claim ended), or the registry refused (all numbers held).
    Unclaimed = 0,
    /// Held until the deadline, unless renewed.
    Held = 1,
    /// Given back by `snowflake_node_detach()`; held again only by `snowflake_node_attach()`.
    Detached = 2,
    /// The registry said the number is no longer this server's (its lease had passed and the
    /// number was given to another server); a new claim follows.
    Lost = 3,
    /// A problem no retry solves by itself: another registry than the one the claim was made
    /// with answers.
    Failed = 4,
}

impl State {
    fn from_bits(bits: u64) -> State {
        match bits {
            1 => State::Held,
            2 => State::Detached,
            3 => State::Lost,
            4 => State::Failed,
            _ => State::Unclaimed,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            State::Unclaimed => "unclaimed",
            State::Held => "held",
            State::Detached => "detached",
            State::Lost => "lost",
            State::Failed => "failed",
        }
    }
}

const STATE_SHIFT: u32 = 60;
const NUMBER_SHIFT: u32 = 44;
const DEADLINE_MASK: u64 = (1 << NUMBER_SHIFT) - 1;
const NUMBER_MASK: u64 = (1 << (STATE_SHIFT - NUMBER_SHIFT)) - 1;

/// The word generators read: state (4 bits), number (16 bits), deadline (44 bits of
/// monotonic milliseconds: 557 years of uptime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub state: State,
    pub number: u16,
    pub deadline_ms: i64,
}

impl Word {
    fn pack(self) -> u64 {
        (self.state as u64) << STATE_SHIFT
            | (u64::from(self.number) & NUMBER_MASK) << NUMBER_SHIFT
            | (self.deadline_ms.max(0) as u64 & DEADLINE_MASK)
    }

    fn unpack(w: u64) -> Word {
        Word {
            state: State::from_bits(w >> STATE_SHIFT),
            number: ((w >> NUMBER_SHIFT) & NUMBER_MASK) as u16,
            deadline_ms: (w & DEADLINE_MASK) as i64,
        }
    }

    /// The number, if it may be generated under at monotonic time `now_ms`.
    #[inline(always)]
    pub fn valid_at(self, now_ms: i64) -> Option<u16> {
        (self.state == State::Held && now_ms < self.deadline_ms).then_some(self.number)
    }
}

/// Text the worker writes and any backend reads (the holder, the registry, the last problem):
/// a seqlock over plain atomics, one writer.
#[repr(C)]
pub struct SharedText {
    version: AtomicU64,
    len: AtomicU64,
    bytes: [AtomicU64; TEXT_WORDS],
}

/// (Two under loom: a reader racing a writer may see each word old or new, two ways per word
/// for the checker to explore.)
const TEXT_WORDS: usize = if cfg!(loom) { 2 } else { 64 };
/// The longest text kept; longer ones are cut (at a character boundary).
pub const TEXT_MAX: usize = TEXT_WORDS * 8;

impl SharedText {
    /// Only the one writer (the claims worker) calls this.
    pub fn set(&self, text: &str) {
        let mut end = text.len().min(TEXT_MAX);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let bytes = &text.as_bytes()[..end];
        let v = self.version.load(Ordering::Relaxed);
        self.version.store(v + 1, Ordering::Release); // odd: being written
        fence(Ordering::Release);
        for (i, word) in self.bytes.iter().enumerate() {
            let mut b = [0u8; 8];
            let chunk = bytes.get(i * 8..).unwrap_or(&[]);
            let n = chunk.len().min(8);
            b[..n].copy_from_slice(&chunk[..n]);
            word.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.len.store(end as u64, Ordering::Relaxed);
        self.version.store(v + 2, Ordering::Release);
    }

    /// A consistent copy (retried while the writer is in the middle of a change).
    pub fn get(&self) -> String {
        loop {
            let v = self.version.load(Ordering::Acquire);
            if v % 2 == 1 {
                spin_loop();
                continue;
            }
            let len = (self.len.load(Ordering::Relaxed) as usize).min(TEXT_MAX);
            let mut out = Vec::with_capacity(TEXT_MAX);
            for word in &self.bytes {
                out.extend_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
            }
            fence(Ordering::Acquire);
            if self.version.load(Ordering::Relaxed) == v {
                out.truncate(len);
                return String::from_utf8_lossy(&out).into_owned();
            }
        }
    }
}

/// One kind's claim in shared memory. Zeroed memory is an unclaimed slot.
#[repr(C)]
pub struct ClaimSlot {
    word: AtomicU64,
    /// Bumped before the word changes to another claim (ended, or held anew): a generator
    /// that read the number before reserving its value checks after it that the claim is still
    /// the same one ([`ClaimSlot::still_held`]). A claim lost and the same number claimed
    /// again is another claim: between the two, another server may have held it.
    claims_made: AtomicU64,
    /// For a node number, the `snowflake.max_clock_ahead` (ms) the registry's hold after the
    /// lease allows for, as last confirmed: generators run ahead of the clock by no more.
    ahead_ms: AtomicI64,
    /// gdid authorities: the era every gdid sequence generates in under this claim (a number
    /// given to another holder continues above every era the previous ones used).
    era_floor: AtomicU64,
    /// When the claim was made, its lease ends, it was last renewed (Unix ms; the lease end by
    /// the registry's clock); 0 for never.
    since_ms: AtomicI64,
    lease_end_ms: AtomicI64,
    renewed_ms: AtomicI64,
    /// The last problem with the registry, or what happened last.
    pub message: SharedText,
}

/// What the monitoring view shows of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub word: Word,
    pub era_floor: u32,
    pub since_ms: i64,
    pub lease_end_ms: i64,
    pub renewed_ms: i64,
    pub message: String,
}

impl ClaimSlot {
    #[inline(always)]
    pub fn word(&self) -> Word {
        Word::unpack(self.word.load(Ordering::Acquire))
    }

    /// The era floor that goes with `word` (read after it: the writer stores the floor first).
    #[inline(always)]
    pub fn era_floor(&self) -> u32 {
        self.era_floor.load(Ordering::Acquire) as u32
    }

    /// The number held at monotonic time `now_ms` and the claim it is held by, if any.
    #[inline(always)]
    pub fn held_at(&self, now_ms: i64) -> Option<(u16, u64)> {
        let made = self.claims_made.load(Ordering::Acquire);
        self.word().valid_at(now_ms).map(|n| (n, made))
    }

    /// Whether `number` is still held at monotonic time `now_ms` by claim `made` (as
    /// [`ClaimSlot::held_at`] gave it): a value reserved between the two was reserved under a
    /// valid claim. The word before the counter: a word of another claim was stored after its
    /// counter was bumped, so reading it makes the bump visible.
    #[inline(always)]
    /// (Read the other way round, the counter then the word, loom_models::claim confirms the
    /// first claim's value by the second claim's word.)
    pub fn still_held(&self, number: u16, made: u64, now_ms: i64) -> bool {
        let w = self.word();
        self.claims_made.load(Ordering::Acquire) == made && w.valid_at(now_ms) == Some(number)
    }

    /// The run-ahead bound the registry's hold allows for (0: none confirmed yet).
    #[inline(always)]
    pub fn ahead_ms(&self) -> i64 {
        self.ahead_ms.load(Ordering::Acquire)
    }

    /// Records the run-ahead bound a confirmed claim or renewal allowed for.
    pub fn set_ahead_ms(&self, ms: i64) {
        self.ahead_ms.store(ms, Ordering::Release);
    }

    /// A new claim of `number`, valid until `deadline_ms`: the floor before the word, so that
    /// a reader of the new word reads the new floor.
    pub fn hold(
        &self,
        number: u16,
        deadline_ms: i64,
        era_floor: u32,
        now_unix_ms: i64,
        lease_end_ms: i64,
    ) {
        let old = self.word();
        if old.state != State::Held || old.number != number {
            // AcqRel: a generator that reads the new count (`held_at`, before the word) must
            // read the end before it, and then the new floor with the new word (relaxed,
            // loom_models::claim takes the second claim's value under the first's floor).
            self.claims_made.fetch_add(1, Ordering::AcqRel);
            self.since_ms.store(now_unix_ms, Ordering::Relaxed);
        }
        self.era_floor
            .store(u64::from(era_floor), Ordering::Release);
        self.renewed_ms.store(now_unix_ms, Ordering::Relaxed);
        self.lease_end_ms.store(lease_end_ms, Ordering::Relaxed);
        self.word.store(
            Word {
                state: State::Held,
                number,
                deadline_ms,
            }
            .pack(),
            Ordering::Release,
        );
    }

    /// A renewal of the claim held: a later deadline, only if the claim is still the one
    /// renewed (a detach meanwhile wins).
    pub fn renew(
        &self,
        number: u16,
        deadline_ms: i64,
        now_unix_ms: i64,
        lease_end_ms: i64,
    ) -> bool {
        let current = self.word.load(Ordering::Acquire);
        let w = Word::unpack(current);
        if w.state != State::Held || w.number != number {
            return false;
        }
        let renewed = Word {
            deadline_ms: deadline_ms.max(w.deadline_ms),
            ..w
        };
        if self
            .word
            .compare_exchange(current, renewed.pack(), Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.renewed_ms.store(now_unix_ms, Ordering::Relaxed);
        self.lease_end_ms.store(lease_end_ms, Ordering::Relaxed);
        true
    }

    /// Ends the claim held (detached, lost, failed, or back to unclaimed): generators stop at
    /// once. The number is kept for the view.
    pub fn end(&self, state: State) {
        debug_assert!(state != State::Held);
        self.claims_made.fetch_add(1, Ordering::AcqRel);
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(current);
            let ended = Word {
                state,
                deadline_ms: 0,
                ..w
            };
            match self.word.compare_exchange_weak(
                current,
                ended.pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(c) => current = c,
            }
        }
    }

    pub fn shown(&self) -> Shown {
        let word = self.word();
        Shown {
            word,
            era_floor: self.era_floor(),
            since_ms: self.since_ms.load(Ordering::Relaxed),
            lease_end_ms: self.lease_end_ms.load(Ordering::Relaxed),
            renewed_ms: self.renewed_ms.load(Ordering::Relaxed),
            message: self.message.get(),
        }
    }
}

/// Shared memory holds them zeroed; under loom, atomics are the checker's objects and are made.
#[cfg(loom)]
impl Default for SharedText {
    fn default() -> Self {
        SharedText {
            version: AtomicU64::new(0),
            len: AtomicU64::new(0),
            bytes: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

#[cfg(loom)]
impl Default for ClaimSlot {
    fn default() -> Self {
        ClaimSlot {
            word: AtomicU64::new(0),
            claims_made: AtomicU64::new(0),
            ahead_ms: AtomicI64::new(0),
            era_floor: AtomicU64::new(0),
            since_ms: AtomicI64::new(0),
            lease_end_ms: AtomicI64::new(0),
            renewed_ms: AtomicI64::new(0),
            message: SharedText::default(),
        }
    }
}

/// What `snowflake_node_detach()` and `snowflake_node_attach()` ask of the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Request {
    None = 0,
    Detach = 1,
    Attach = 2,
}

/// Both claims of the server, what they were made as and with, and the requests of the SQL
/// functions to the worker. Zeroed memory is the state at start.
#[repr(C)]
pub struct Claims {
    pub node: ClaimSlot,
    pub authority: ClaimSlot,
    /// How this server names itself to the registry, and the registry (its connection string
    /// without a password, and its identity once it answered).
    pub holder: SharedText,
    pub registry: SharedText,
    /// The registry the claims were made with (system, database OID and name), once it
    /// answered: kept here, so that a worker started again after a crash refuses another one
    /// too.
    pub registry_id: SharedText,
    /// This postmaster's secret part of the holder name, made by the first worker (0: not
    /// yet): the registry's claim, renewal and release take the holder name as proof, and
    /// the public part is shown to anyone with EXECUTE (in a refusal that lists holders) and
    /// in the view.
    pub token: AtomicU64,
    /// The worker's latch, which the SQL functions set to wake it (null: no worker).
    pub worker_latch: AtomicPtr<std::ffi::c_void>,
    action: AtomicU32,
    requested: AtomicU64,
    done: AtomicU64,
}

#[cfg(loom)]
impl Default for Claims {
    fn default() -> Self {
        Claims {
            node: ClaimSlot::default(),
            authority: ClaimSlot::default(),
            holder: SharedText::default(),
            registry: SharedText::default(),
            registry_id: SharedText::default(),
            token: AtomicU64::new(0),
            worker_latch: AtomicPtr::new(std::ptr::null_mut()),
            action: AtomicU32::new(0),
            requested: AtomicU64::new(0),
            done: AtomicU64::new(0),
        }
    }
}

impl Claims {
    pub fn slot(&self, kind: Kind) -> &ClaimSlot {
        match kind {
            Kind::Node => &self.node,
            Kind::Authority => &self.authority,
        }
    }

    /// Posts `action`; the number to wait for with [`Claims::done`].
    pub fn request(&self, action: Request) -> u64 {
        self.action.store(action as u32, Ordering::Release);
        self.requested.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The worker's side: the action posted last and its number, if any is pending.
    pub fn pending(&self) -> Option<(Request, u64)> {
        let requested = self.requested.load(Ordering::Acquire);
        if requested == self.done.load(Ordering::Acquire) {
            return None;
        }
        let action = match self.action.load(Ordering::Acquire) {
            1 => Request::Detach,
            2 => Request::Attach,
            _ => Request::None,
        };
        Some((action, requested))
    }

    /// The worker's side: every request up to `number` is dealt with.
    pub fn finish(&self, number: u64) {
        self.done.fetch_max(number, Ordering::AcqRel);
    }

    /// Whether request `number` has been dealt with.
    pub fn done(&self, number: u64) -> bool {
        self.done.load(Ordering::Acquire) >= number
    }
}

/// The deadline of a lease granted in answer to a request sent at monotonic time `sent_ms`:
/// the lease from then, less the clock error allowed for (the registry's clock may run fast or
/// step), less the lag of the coarse clock the generators read.
pub fn deadline(sent_ms: i64, lease_ms: i64, clock_error_ms: i64, coarse_margin_ms: i64) -> i64 {
    sent_ms + lease_ms - clock_error_ms - coarse_margin_ms
}

/// How long after its lease ends a number given back (or abandoned) stays with nobody: how far
/// the holder's snowflake IDs may be ahead of its clock (`max_clock_ahead_ms`, node numbers
/// only: a gdid authority's next holder moves to a later era instead), plus the clock error
/// on both sides (the holder's clock and the next holder's may each be off by that much).
pub fn hold_after_ms(kind: Kind, max_clock_ahead_ms: i64, clock_error_ms: i64) -> i64 {
    let ahead = match kind {
        Kind::Node => max_clock_ahead_ms,
        Kind::Authority => 0,
    };
    ahead + 2 * clock_error_ms
}

/// How this server names itself to the registry: host, port, data directory, system and the
/// time the postmaster started. The worker restarted within one life of the postmaster (a
/// crash of a backend included) finds its number again; anything else is another holder,
/// even a copy that matches in everything but the start (a standby promoted, a cloned
/// machine with the same host name, a data directory copied and started elsewhere): it
/// claims a free number, and never one that may still be in use under the same name.
pub fn holder_name(
    host: &str,
    port: u16,
    data_directory: &str,
    system_identifier: u64,
    started: &str,
) -> String {
    format!("{host}:{port}:{data_directory} (system {system_identifier}, started {started})")
}

/// One option of a connection string as libpq parsed it (`PQconninfoParse`): its keyword, its
/// value, and libpq's display character for it (`""` shown, `"*"` a secret such as `password`
/// or `sslpassword`, `"D"` a debug option). Parsing is libpq's own (`node::libpq`), so that what
/// is masked is exactly what libpq takes for a secret, however the string writes it (a URI's
/// userinfo, a percent-encoded keyword among its parameters, quotes and escapes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnOption {
    pub keyword: String,
    pub value: String,
    pub dispchar: String,
}

impl ConnOption {
    /// Whether libpq shows the option as it is; anything else (a secret, a debug option, a
    /// display character a later libpq may add) is masked. So is a database name that reads as
    /// a connection string itself (`dbname='host=... password=...'`, or a bare word that does):
    /// libpq expands only the outer string, so such a name is not used as one, but its text
    /// may hold a password.
    fn shown(&self) -> bool {
        self.dispchar.is_empty()
            && !(self.keyword == "dbname"
                && (is_connection_string(self.value.trim_start()) || self.value.contains('=')))
    }
}

/// What a connection string is for libpq (`recognized_connection_string` in fe-connect.c): a
/// URI (only with the prefix `postgresql://` or `postgres://`) or `keyword=value` pairs when it
/// has either; otherwise a database name.
pub fn is_connection_string(conninfo: &str) -> bool {
    conninfo.starts_with("postgresql://")
        || conninfo.starts_with("postgres://")
        || conninfo.contains('=')
}

const MASK: &str = "********";

/// The connection string as the view and the log show it, from libpq's parse of it: every
/// option it sets as `keyword=value` (quoted where needed), the value of every option libpq
/// does not display (`password`, `sslpassword`, ...) replaced by `********`.
pub fn shown_conninfo(options: &[ConnOption]) -> String {
    options
        .iter()
        .map(|o| {
            let value = if o.shown() {
                quoted(&o.value)
            } else {
                MASK.to_owned()
            };
            format!("{}={value}", o.keyword)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value as a `keyword=value` connection string writes it: bare when it can be, else
/// single-quoted with `\` before each `'` and `\`.
fn quoted(value: &str) -> String {
    let bare = !value.is_empty()
        && !value
            .chars()
            .any(|c| c.is_whitespace() || c == '\'' || c == '\\' || c == '=');
    if bare {
        return value.to_owned();
    }
    let mut out = String::from("'");
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The values of the options libpq does not display, as libpq read them (decoded): what a
/// message must never show.
pub fn secrets(options: &[ConnOption]) -> Vec<String> {
    let mut found: Vec<String> = options
        .iter()
        .filter(|o| !o.shown() && !o.value.is_empty())
        .map(|o| o.value.clone())
        .collect();
    // Longest first, so that a secret containing another is masked whole.
    found.sort_by_key(|s| std::cmp::Reverse(s.len()));
    found
}

/// A message that may quote the registry's connection string (libpq's errors can quote parts
/// of it): the string itself replaced by `shown`, and every secret in it by `********`, so
/// that the view and the log never show one.
pub fn scrub(message: &str, conninfo: &str, shown: &str, secrets: &[String]) -> String {
    let mut out = if conninfo.is_empty() {
        message.to_owned()
    } else {
        message.replace(conninfo, shown)
    };
    for secret in secrets {
        out = out.replace(secret.as_str(), MASK);
    }
    out
}

/// The default `snowflake.claim_lease` and `snowflake.claim_clock_error` (ms).
pub const DEFAULT_LEASE_MS: i64 = 600_000;
pub const DEFAULT_CLOCK_ERROR_MS: i64 = 1_000;
/// The longest time between two renewals.
pub const MAX_RENEW_INTERVAL_MS: i64 = 30_000;
/// How long the worker waits before trying the registry again after it did not answer.
pub const RETRY_MS: i64 = 1_000;

/// How often a claim is renewed: every third of the lease, at least every 30 s, so that a
/// long lease rides out a registry outage of nearly its whole length.
pub fn renew_interval_ms(lease_ms: i64) -> i64 {
    (lease_ms / 3).min(MAX_RENEW_INTERVAL_MS)
}

/// How long one call to the registry may take before the worker gives up on it (and the
/// registry, through the session's `statement_timeout`, on its side): a quarter of the lease,
/// at most 5 s.
pub fn call_span_ms(lease_ms: i64) -> i64 {
    (lease_ms / 4).min(5_000)
}

#[cfg(not(loom))] // with std atomics, outside the model checker
#[cfg(test)]
mod tests {
    use super::*;

    /// The longest registry outage a holder rides out without stopping, at worst: the outage
    /// starts right before a renewal was due, and once the registry answers again, the worker's
    /// next try comes after its retry pause and a call that may have just begun to wait in vain.
    fn outage_ridden_out_ms(lease_ms: i64, clock_error_ms: i64, coarse_margin_ms: i64) -> i64 {
        deadline(0, lease_ms, clock_error_ms, coarse_margin_ms)
            - renew_interval_ms(lease_ms)
            - RETRY_MS
            - call_span_ms(lease_ms)
    }

    /// How long after its holder's last renewal a number that is not given back (its holder dead,
    /// or cut off from the registry) stays taken: the lease, then the hold after it.
    fn taken_after_last_renewal_ms(
        kind: Kind,
        lease_ms: i64,
        max_clock_ahead_ms: i64,
        clock_error_ms: i64,
    ) -> i64 {
        lease_ms + hold_after_ms(kind, max_clock_ahead_ms, clock_error_ms)
    }

    fn zeroed<T>() -> T {
        // SAFETY: the types here are repr(C) atomics, valid when zeroed (as in shared memory).
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn words_round_trip() {
        for state in [
            State::Unclaimed,
            State::Held,
            State::Detached,
            State::Lost,
            State::Failed,
        ] {
            for number in [0u16, 1, 15, 1023, 8191, u16::MAX] {
                for deadline_ms in [0i64, 1, 123_456_789, (1 << 44) - 1] {
                    let w = Word {
                        state,
                        number,
                        deadline_ms,
                    };
                    assert_eq!(Word::unpack(w.pack()), w);
                }
            }
        }
    }

    /// A value reserved between `held_at` and `still_held` was reserved under a valid claim:
    /// not after the deadline, not after the claim ended, and not across a claim lost and the
    /// same number claimed again (another server may have held it in between).
    #[test]
    fn a_claim_is_confirmed_only_if_it_is_the_same_one() {
        let slot: ClaimSlot = zeroed();
        slot.hold(4, 10_000, 0, 1, 2);
        let (n, made) = slot.held_at(100).unwrap();
        assert_eq!(n, 4);
        assert!(slot.still_held(4, made, 200));
        // A renewal is the same claim.
        assert!(slot.renew(4, 20_000, 3, 4));
        assert!(slot.still_held(4, made, 15_000));
        // Past the deadline: not confirmed.
        assert!(!slot.still_held(4, made, 20_000));
        // Lost, then the same number claimed again: another claim.
        slot.end(State::Lost);
        slot.hold(4, 30_000, 0, 5, 6);
        assert!(!slot.still_held(4, made, 21_000));
        let (_, again) = slot.held_at(21_000).unwrap();
        assert!(slot.still_held(4, again, 21_000));
        // The same holder's own number claimed again while held (the worker restarted) is
        // the same claim.
        slot.hold(4, 40_000, 0, 7, 8);
        assert!(slot.still_held(4, again, 21_000));
    }

    #[test]
    fn a_zeroed_slot_is_unclaimed_and_never_valid() {
        let slot: ClaimSlot = zeroed();
        assert_eq!(slot.word().state, State::Unclaimed);
        assert_eq!(slot.word().valid_at(0), None);
        assert_eq!(slot.shown().message, "");
    }

    #[test]
    fn valid_only_while_held_and_before_the_deadline() {
        let slot: ClaimSlot = zeroed();
        slot.hold(7, 10_000, 3, 1, 2);
        assert_eq!(slot.word().valid_at(9_999), Some(7));
        assert_eq!(
            slot.word().valid_at(10_000),
            None,
            "at the deadline: no more"
        );
        assert_eq!(slot.era_floor(), 3);
        // A renewal moves the deadline on, never back.
        assert!(slot.renew(7, 20_000, 5, 6));
        assert_eq!(slot.word().valid_at(15_000), Some(7));
        assert!(slot.renew(7, 12_000, 5, 6));
        assert_eq!(slot.word().deadline_ms, 20_000);
        // A renewal of another number (a claim replaced meanwhile) changes nothing.
        assert!(!slot.renew(8, 30_000, 5, 6));
        slot.end(State::Detached);
        assert_eq!(slot.word().valid_at(0), None);
        assert_eq!(slot.word().number, 7, "kept for the view");
        // A detach wins over a renewal in flight.
        assert!(!slot.renew(7, 40_000, 5, 6));
        assert_eq!(slot.word().state, State::Detached);
    }

    #[test]
    fn shared_text_keeps_what_was_set() {
        let t: SharedText = zeroed();
        assert_eq!(t.get(), "");
        t.set("registry unreachable: connection refused");
        assert_eq!(t.get(), "registry unreachable: connection refused");
        let long = "é".repeat(TEXT_MAX);
        t.set(&long);
        let got = t.get();
        assert!(got.len() <= TEXT_MAX && got.chars().all(|c| c == 'é'));
        t.set("short");
        assert_eq!(t.get(), "short");
    }

    #[test]
    fn shared_text_readers_never_see_a_mix() {
        let t: SharedText = zeroed();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mixed = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        let v = t.get();
                        if !(v.is_empty()
                            || v.chars().all(|c| c == 'a')
                            || v.chars().all(|c| c == 'b'))
                        {
                            mixed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            for i in 0..20_000 {
                t.set(&if i % 2 == 0 {
                    "a".repeat(300)
                } else {
                    "b".repeat(200)
                });
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(mixed.into_inner(), 0);
    }

    #[test]
    fn requests_are_answered_in_order() {
        let c: Claims = zeroed();
        assert_eq!(c.pending(), None);
        let first = c.request(Request::Detach);
        let second = c.request(Request::Attach);
        // The worker sees the latest action; dealing with it answers both.
        assert_eq!(c.pending(), Some((Request::Attach, second)));
        assert!(!c.done(first));
        c.finish(second);
        assert!(c.done(first) && c.done(second));
        assert_eq!(c.pending(), None);
    }

    #[test]
    fn the_deadline_allows_for_clock_error_and_the_coarse_clock() {
        assert_eq!(deadline(1_000, 10_000, 1_000, 50), 9_950);
        // Node numbers wait for IDs made ahead of the clock; authorities move to a later era.
        assert_eq!(hold_after_ms(Kind::Node, 10_000, 1_000), 12_000);
        assert_eq!(hold_after_ms(Kind::Authority, 10_000, 1_000), 2_000);
    }

    fn option(keyword: &str, value: &str, dispchar: &str) -> ConnOption {
        ConnOption {
            keyword: keyword.into(),
            value: value.into(),
            dispchar: dispchar.into(),
        }
    }

    /// What libpq does not display is masked, whatever its name; what it displays is quoted
    /// so that the shown string reads back as the same options.
    #[test]
    fn only_what_libpq_displays_is_shown() {
        let options = [
            option("host", "reg", ""),
            option("dbname", "my ids", ""),
            option("user", "o'brien", ""),
            option("password", "ab://cd", "*"),
            option("sslpassword", "key pass", "*"),
            option("oauth_client_secret", "s3", "*"),
            option("some_debug", "d", "D"),
            option("dbname", "host=h password=XYZ1", ""),
            option("dbname", " postgresql://u:pw@h/db", ""),
        ];
        let shown = shown_conninfo(&options);
        assert_eq!(
            shown,
            "host=reg dbname='my ids' user='o\\'brien' password=******** \
             sslpassword=******** oauth_client_secret=******** some_debug=******** \
             dbname=******** dbname=********"
        );
        for secret in ["ab://cd", "key pass", "s3", "XYZ1", "pw@"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert_eq!(
            secrets(&options),
            [
                " postgresql://u:pw@h/db",
                "host=h password=XYZ1",
                "key pass",
                "ab://cd",
                "s3",
                "d"
            ]
        );
    }

    #[test]
    fn messages_never_show_a_secret() {
        let conninfo = "host=reg password=se\\ cret dbname=ids";
        let options = [
            option("host", "reg", ""),
            option("password", "se cret", "*"),
            option("dbname", "ids", ""),
        ];
        let shown = shown_conninfo(&options);
        let secrets = secrets(&options);
        for message in [
            format!("invalid: \"{conninfo}\""),
            "could not connect (se cret)".to_owned(),
            "FATAL: password authentication failed for user \"se cret\"".to_owned(),
        ] {
            let scrubbed = scrub(&message, conninfo, &shown, &secrets);
            assert!(!scrubbed.contains("cret"), "{message} -> {scrubbed}");
        }
        assert_eq!(scrub("timeout", conninfo, &shown, &secrets), "timeout");
    }

    /// libpq reads a URI only with its own two prefixes; anything else with an `=` is
    /// keyword=value pairs (a password may contain `://`), and a bare word a database name.
    #[test]
    fn connection_strings_are_recognised_as_libpq_does() {
        assert!(is_connection_string("postgresql://reg/ids"));
        assert!(is_connection_string("postgres://reg/ids"));
        assert!(is_connection_string("host=reg password=a://b"));
        assert!(!is_connection_string("ids"));
        assert!(!is_connection_string("postgresq://reg/ids"));
    }

    /// The defaults ride out a registry stopped for 5 minutes (a minor release's restart, a
    /// failover under an HA manager), at worst; what they cost is a number taken about 10
    /// minutes after its holder's last renewal.
    #[test]
    fn the_default_lease_rides_out_five_minutes_of_registry_outage() {
        let ridden = outage_ridden_out_ms(DEFAULT_LEASE_MS, DEFAULT_CLOCK_ERROR_MS, 50);
        assert_eq!(ridden, 600_000 - 1_000 - 50 - 30_000 - 1_000 - 5_000);
        assert!(ridden >= 5 * 60_000, "{ridden} ms");
        assert_eq!(
            taken_after_last_renewal_ms(Kind::Node, DEFAULT_LEASE_MS, 10_000, 1_000),
            612_000
        );
        assert_eq!(
            taken_after_last_renewal_ms(Kind::Authority, DEFAULT_LEASE_MS, 10_000, 1_000),
            602_000
        );
        // Short leases (the tests') renew every third, as before.
        assert_eq!(renew_interval_ms(3_000), 1_000);
        assert_eq!(call_span_ms(3_000), 750);
        assert_eq!(renew_interval_ms(DEFAULT_LEASE_MS), 30_000);
    }

    #[test]
    fn holders_differ_by_server() {
        let a = holder_name("db1", 5432, "/var/lib/postgresql/15/main", 7, "t1");
        assert_eq!(
            a,
            "db1:5432:/var/lib/postgresql/15/main (system 7, started t1)"
        );
        assert_ne!(
            a,
            holder_name("db1", 5432, "/var/lib/postgresql/15/main", 7, "t2"),
            "a copy started at another time is another holder"
        );
        assert_ne!(
            a,
            holder_name("db2", 5432, "/var/lib/postgresql/15/main", 7, "t1")
        );
        assert_ne!(
            a,
            holder_name("db1", 5432, "/var/lib/postgresql/15/main", 8, "t1")
        );
    }
}
