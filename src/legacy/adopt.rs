//! The step of `ALTER EXTENSION snowflake_id UPDATE` from 0.3.0 that gives every sequence of
//! the database its relation: `snowflake_id_adopt_sequences()`, which the update script
//! creates, calls once and drops again (it is no object of the extension).
//!
//! 1. Each sequence the lease file knows for this database becomes a relation whose value is
//!    its lease (snowflake sequences keep the layout they were made with).
//! 2. Each column or domain DEFAULT that names a sequence by constants gets its relation (a
//!    fresh one if the file did not know it: a table restored or copied from elsewhere) and
//!    its dependency, as `sequences::defaults` records them for new defaults.
//! 3. Every role may generate from them (USAGE to PUBLIC), as every role could before.
//!
//! All of it in the update's transaction: a failed update leaves nothing, and sessions that
//! generate meanwhile are refused until it commits (their database has no sequence schema
//! yet), so nothing is handed out under a lease twice.

use std::ffi::CString;

use pgrx::pg_sys::{self, Datum, FunctionCallInfo};

use crate::core::identity::Kind;
use crate::core::lease;
use crate::core::snowflake::layout::Layout;
use crate::legacy::store::Store;
use crate::pg::errors::{error, Code};
use crate::sequences::defaults::{self, Making};
use crate::sequences::{catalog, durable, resolve};
use crate::{pg::spi, sequences::lookup};

/// `snowflake_id_adopt_sequences() RETURNS integer`: how many sequences the lease file gave.
///
/// # Safety
/// Called by PostgreSQL's fmgr as a V1 function without arguments.
#[no_mangle]
pub unsafe extern "C" fn snowflake_id_adopt_sequences(fcinfo: FunctionCallInfo) -> Datum {
    // SAFETY: a V1 call; the body runs inside the sqlfn boundary.
    unsafe { crate::sql::sqlfn::run(fcinfo, 0, false, |_| Datum::from(adopt())) }
}

const _: () = {
    #[export_name = "pg_finfo_snowflake_id_adopt_sequences"]
    extern "C" fn finfo() -> &'static pg_sys::Pg_finfo_record {
        static V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
        &V1
    }
};

fn adopt() -> i32 {
    let server = lookup::server();
    let store = Store::in_data_dir();
    let loaded = store.load().unwrap_or_else(|e| {
        error(
            Code::ERRCODE_IO_ERROR,
            format!(
                "could not read lease file \"{}\": {e}",
                store.path().display()
            ),
        )
        .raise()
    });
    if let Some(d) = loaded.damaged.first() {
        error(
            Code::ERRCODE_DATA_CORRUPTED,
            format!(
                "lease file \"{}\": the record at byte {} is damaged ({})",
                store.path().display(),
                d.offset,
                d.what.describe()
            ),
        )
        .detail("The update carries every lease of the file into a sequence; it cannot guess one.")
        .hint("Restore the file from a backup of this data directory, then update again.")
        .raise();
    }
    let db = lookup::current_db();
    let mut adopted = 0;
    for rec in loaded.records.iter().filter(|r| r.key.db == db) {
        let Some(name) = rec.key.name() else { continue };
        let relname = name
            .relation_name()
            .unwrap_or_else(|bad| resolve::bad_name(bad));
        let kind = name.kind();
        let layout = match kind {
            Kind::Snowflake => Layout::own(rec.created_with.node_bits, rec.created_with.epoch_ms),
            Kind::Gdid => server.layout,
        };
        let schema = catalog::schema(kind);
        if catalog::find(schema.oid, &relname).is_none() {
            catalog::create_in_this_transaction(kind, schema.name, &relname, &layout);
        }
        let Some(relid) = catalog::find(schema.oid, &relname) else {
            continue;
        };
        let value = match kind {
            Kind::Snowflake => lease::snowflake_to_value(layout.epoch_ms, rec.lease.end),
            Kind::Gdid => lease::gdid_to_value(rec.lease),
        };
        if durable::read(relid).is_none_or(|v| v < value) {
            durable::write_and_flush(relid, value);
        }
        adopted += 1;
    }
    let (columns, domains) = defaults::all_defaults();
    for (table, attnum) in columns {
        defaults::bind_column(table, attnum, &server.layout, Making::ByTheUpdate);
    }
    for domain in domains {
        defaults::bind_domain(domain, &server.layout, Making::ByTheUpdate);
    }
    // The extension's two schemas, as they are named here (never a user's of the other name).
    let mut grant = b"GRANT USAGE ON ALL SEQUENCES IN SCHEMA ".to_vec();
    grant.extend_from_slice(&catalog::quoted_schema(
        catalog::schema(Kind::Snowflake).name,
    ));
    grant.extend_from_slice(b", ");
    grant.extend_from_slice(&catalog::quoted_schema(catalog::schema(Kind::Gdid).name));
    grant.extend_from_slice(b" TO PUBLIC");
    let grant = CString::new(grant).expect("no NUL");
    catalog::outside_extension(|| spi::connect(|conn| conn.execute(&grant)));
    adopted
}
