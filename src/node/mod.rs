//! This server's identity among the servers whose values meet: its node number
//! (`snowflake.node_id`) and gdid authority (`gdid.authority`), written by hand or claimed
//! from a registry (`auto`), as the generators and detection read them, and the checks around
//! them. Everything else reads them here.
//!
//! A claimed number (`claims`) is held by a background worker (`worker`) that claims and
//! renews it in the registry over libpq (`libpq`); `pair` warns about an `ALTER SYSTEM` that
//! leaves a node number the node bits cannot hold.

pub mod claims;
mod libpq;
pub mod pair;
pub mod worker;

use crate::core::claim::Kind;
use crate::guc::{self, Number, Server};
use crate::pg::errors::{error, Code};

pub use pair::after_statement;

/// What a generator checks again once its value is reserved: that the claimed number it read
/// before is still held by the same claim (see [`claims::Held`]); nothing for a number written
/// by hand.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct Check(Option<claims::Held>);

impl Check {
    /// Whether a value reserved since the number was read may carry it. No error (the fast
    /// path).
    #[inline(always)]
    pub fn passes(self) -> bool {
        self.0.is_none_or(|h| h.still())
    }

    /// The same, or the ERROR that says why not (the value reserved is dropped).
    pub fn confirm(self) {
        if let Some(h) = self.0 {
            if !h.still() {
                claims::refuse(h.kind);
            }
        }
    }
}

/// The node number a generator stamps now, if it may generate: the one written by hand, or
/// the claimed one while its claim is valid. No error (the fast path).
#[inline(always)]
pub fn node_now(server: &Server) -> Option<(u32, Check)> {
    match server.node {
        Number::Given(n) => Some((n, Check(None))),
        Number::Auto => claims::valid(Kind::Node).map(|h| (u32::from(h.number), Check(Some(h)))),
        Number::Unset => None,
    }
}

/// How far ahead of the wall clock snowflake sequences may run now: the setting, bounded under
/// a claimed node number by what the registry allows for (see `claims`).
#[inline(always)]
pub fn max_clock_ahead_ms(server: &Server) -> u64 {
    let setting = guc::max_clock_ahead_ms();
    match server.node {
        Number::Auto => claims::max_clock_ahead_ms(setting),
        _ => setting,
    }
}

/// The gdid authority a generator stamps now, for a claimed one the era it generates in, and
/// what to check once the value is reserved, if it may generate. No error (the fast path).
#[inline(always)]
pub fn authority_now() -> Option<(u8, Option<u32>, Check)> {
    authority_on(guc::server())
}

/// [`authority_now`] on `server` (the server's settings, read already).
#[inline(always)]
pub fn authority_now_on(server: &Server) -> Option<(u8, Option<u32>, Check)> {
    authority_on(Some(server))
}

#[inline(always)]
fn authority_on(server: Option<&Server>) -> Option<(u8, Option<u32>, Check)> {
    let claimed = || {
        claims::valid(Kind::Authority)
            .map(|h| (h.number as u8, Some(claims::era_floor()), Check(Some(h))))
    };
    // A server that claims its authority uses the claim only, whatever a session or a reload
    // made of the setting since (a number there would bypass the registry).
    if server.is_some_and(claims_authority) {
        return claimed();
    }
    match guc::gdid_authority() {
        Number::Given(n) => Some((n as u8, None, Check(None))),
        // auto written to the configuration files of a server started with a number: that
        // number until the restart that makes auto claim (see `guc::check_authority`).
        Number::Auto => match server.map(|s| s.authority) {
            Some(Number::Given(n)) => Some((n as u8, None, Check(None))),
            _ => claimed(),
        },
        Number::Unset => None,
    }
}

/// Whether this server claims its gdid authority from a registry (`auto` at start).
#[inline(always)]
fn claims_authority(server: &Server) -> bool {
    server.claims.as_ref().is_some_and(|c| c.authority)
}

/// This server's numbers, as the values it generates carry them (for detection): `None` for
/// one not set or not held.
pub fn own() -> (Option<u16>, Option<u16>) {
    let node = guc::server().and_then(node_now).map(|(n, _)| n as u16);
    let authority = authority_now().map(|(a, _, _)| u16::from(a));
    (node, authority)
}

/// The ERROR for a setting a generator needs and the server was not given.
fn setting_missing(setting: &str, range: &str, how: &str) -> ! {
    error(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("{setting} is not set"),
    )
    .detail(format!(
        "Every value this server generates carries it, so it must be unique among the \
         servers whose values meet; there is no default. Range {range}."
    ))
    .hint(how.to_owned())
    .raise()
}

/// This server's node number and what to check once a value is reserved, or the ERROR when
/// `snowflake.node_id` is not set or its claim is not held.
pub fn node_id(server: &Server) -> (u32, Check) {
    match server.node {
        Number::Given(n) => (n, Check(None)),
        Number::Auto => claims::valid(Kind::Node)
            .map(|h| (u32::from(h.number), Check(Some(h))))
            .unwrap_or_else(|| claims::refuse(Kind::Node)),
        Number::Unset => setting_missing(
            "snowflake.node_id",
            &format!("0 .. {}", server.layout.max_node()),
            "Set snowflake.node_id in postgresql.conf (or with ALTER SYSTEM), or auto with \
             snowflake.registry, and restart the server.",
        ),
    }
}

/// This session's gdid authority, for a claimed one the era it generates in, and what to check
/// once a value is reserved; or the ERROR when `gdid.authority` is not set or its claim is not
/// held.
pub fn gdid_authority() -> (u8, Option<u32>, Check) {
    // The library not preloaded is the cause to name first: no setting helps then.
    if guc::server().is_none() {
        crate::pg::errors::not_preloaded();
    }
    authority_now().unwrap_or_else(|| match guc::gdid_authority() {
        _ if guc::server().is_some_and(claims_authority) => claims::refuse(Kind::Authority),
        Number::Auto => claims::refuse(Kind::Authority),
        _ => setting_missing(
            "gdid.authority",
            "0 .. 15",
            "Set gdid.authority in postgresql.conf (or with ALTER SYSTEM) and reload the \
             configuration, or set it to auto with snowflake.registry and restart the server.",
        ),
    })
}
