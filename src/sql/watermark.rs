//! SQL-facing watermarks (see `sequences::watermark`): the function of each kind and the rows
//! of the views of what holds them back. Each is declared once, below; their SQL is in
//! snowflake.sql and gdid.sql.

use crate::core::cache::{Cache, SlotRef};
use crate::core::gdid::counter::GdidState;
use crate::core::gdid::gdid_slot::GdidSeq;
use crate::core::gdid::value::{Gdid, MAX_COUNTER};
use crate::core::identity::{Kind, SequenceName};
use crate::core::inflight::Value;
use crate::core::lease;
use crate::core::snowflake::epoch::unix_ms_to_pg_timestamp;
use crate::core::snowflake::layout::Layout;
use crate::core::snowflake::snowflake_slot::{SnowflakeSeq, SnowflakeState};
use crate::node;
use crate::sequences::catalog::Opened;
use crate::sequences::lookup;
use crate::sequences::watermark::{self, Floors, HolderRow};
use crate::sql::sqlfn::sql_functions;

sql_functions! {
    /// Below it, every ID of the sequence made on this server belongs to a transaction that
    /// has ended; every ID made after the call is at or above it.
    fn snowflake_watermark(seq: text) -> snowflake [volatile parallel_unsafe] |_| {
        let (node, _) = node::node_id(lookup::server());
        let v = watermark::watermark(SequenceName::Snowflake(seq), &SnowflakeFloors { node });
        i64::try_from(v).unwrap_or(i64::MAX)
    }

    /// As `snowflake_watermark`, for a gdid sequence.
    fn gdid_watermark(scope: text, sequence: text) -> gdid [volatile parallel_unsafe] |_| {
        let (authority, _, _) = node::gdid_authority();
        let floors = GdidFloors { authority };
        Gdid::from_order_value(watermark::watermark(SequenceName::Gdid { scope, sequence }, &floors))
    }

    /// Rows of the snowflake_watermark_holders view.
    fn snowflake_watermark_holders_rows() -> table(
        sequence: regclass, pid: integer, transaction: xid, prepared: boolean,
        first_id: bigint, since: timestamptz
    ) [volatile parallel_unsafe] |_, emit| {
        for r in watermark::holder_rows(Kind::Snowflake) {
            let first = r.value.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
            let (relid, pid, xid, prepared, since) = common(&r);
            emit((relid, pid, xid, prepared, first, since));
        }
    }

    /// Rows of the gdid_watermark_holders view.
    fn gdid_watermark_holders_rows() -> table(
        sequence: regclass, pid: integer, transaction: xid, prepared: boolean,
        first_gdid: gdid, since: timestamptz
    ) [volatile parallel_unsafe] |_, emit| {
        for r in watermark::holder_rows(Kind::Gdid) {
            let (relid, pid, xid, prepared, since) = common(&r);
            emit((relid, pid, xid, prepared, r.value.map(Gdid::from_order_value), since));
        }
    }
}

type Common = (
    Option<pgrx::pg_sys::Oid>,
    Option<i32>,
    Option<u32>,
    Option<bool>,
    Option<i64>,
);

fn common(r: &HolderRow) -> Common {
    (
        r.relid,
        r.pid,
        r.xid,
        Some(r.prepared),
        r.since_ms.map(unix_ms_to_pg_timestamp),
    )
}

/// The ID of tick `tick` under `node`, or the largest bigint past the layout's end.
fn floor_id(layout: &Layout, tick: u64, node: u32) -> Value {
    if tick > layout.max_tick() || node > layout.max_node() {
        return Value::from(i64::MAX as u64);
    }
    Value::from(layout.id_of_tick(tick, node))
}

/// Where a cached snowflake sequence stands, under the node number its IDs carry: its next ID
/// is of a later tick than its last, and of this node. A lower node would put the watermark
/// (or an entry in flight) below the last ID made, which nothing would move past while the
/// sequence is idle. Read by the watermark, and by a generator for the entry it publishes.
pub fn snowflake_floor(seq: &SnowflakeSeq<'_>, node: u32) -> Value {
    // Not yet brought up to its relation's lease (a first use under way, or a lease being
    // made): nobody can say where it stands, not even its relation (a fresh sequence
    // continues below its first lease). The lowest value.
    if seq.lease().end == 0 {
        return 0;
    }
    floor_id(&seq.layout(), seq.next_tick_floor(), node)
}

/// Where a cached gdid sequence stands, under the authority its gdids carry, as for a
/// snowflake sequence's node (the writers' authority: README, the authority must be the
/// server's, not set per role or session).
pub fn gdid_floor(seq: &GdidSeq<'_>, authority: u8) -> Value {
    // Not yet brought up to its relation's lease (see `snowflake_floor`; `gdid_advance` of a
    // fresh sequence continues below the lease it makes).
    if seq.lease() == lease::Lease::default() {
        return 0;
    }
    let (era, counter) = seq.state().floor();
    Gdid::from_parts(era, authority, counter).order_value()
}

struct SnowflakeFloors {
    node: u32,
}

impl Floors for SnowflakeFloors {
    fn cached(&self, cache: &Cache<'_>, at: SlotRef) -> Option<Value> {
        Some(snowflake_floor(
            &cache.seq::<SnowflakeState>(at)?,
            self.node,
        ))
    }

    fn durable(&self, opened: &Opened, stored: Option<i64>) -> Value {
        let layout = Layout::own(opened.layout.node_bits, opened.layout.epoch_ms);
        stored.map_or(0, |v| {
            let end_ms = lease::snowflake_from_value(layout.epoch_ms, v);
            floor_id(
                &layout,
                end_ms.saturating_mul(1 << layout.counter_bits),
                self.node,
            )
        })
    }
}

struct GdidFloors {
    authority: u8,
}

impl Floors for GdidFloors {
    fn cached(&self, cache: &Cache<'_>, at: SlotRef) -> Option<Value> {
        Some(gdid_floor(&cache.seq::<GdidState>(at)?, self.authority))
    }

    fn durable(&self, _: &Opened, stored: Option<i64>) -> Value {
        stored.and_then(lease::gdid_from_value).map_or(0, |l| {
            Gdid::from_parts(l.era, self.authority, l.end.min(MAX_COUNTER)).order_value()
        })
    }
}
