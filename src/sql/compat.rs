//! The C symbols of release 0.1.0, kept so that a database still on 0.1.0 keeps working
//! with this library until `ALTER EXTENSION snowflake_id UPDATE` points its functions at
//! the new names (sql/snowflake_id--0.1.0--0.2.0.sql). Release 0.1.0 declared most
//! functions through pgrx's wrappers (`<name>_wrapper`); each is the same function now.

use pgrx::pg_sys::{Datum, FunctionCallInfo};

/// `$old` calls `$new`, the function that has the same SQL declaration.
macro_rules! same_as {
    ($($old:ident => $new:path;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $old(fcinfo: FunctionCallInfo) -> Datum {
            $new(fcinfo)
        }
        const _: () = {
            #[export_name = concat!("pg_finfo_", stringify!($old))]
            extern "C" fn finfo() -> &'static pgrx::pg_sys::Pg_finfo_record {
                static V1: pgrx::pg_sys::Pg_finfo_record =
                    pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
                &V1
            }
        };
    )*};
}

use crate::sql::gdid as g;
use crate::sql::snowflake as s;

same_as! {
    snowflake_next_fast => s::snowflake_next;
    snowflake_next_batch_wrapper => s::snowflake_next_batch;
    snowflake_timestamp_wrapper => s::snowflake_timestamp;
    snowflake_node_wrapper => s::snowflake_node;
    snowflake_counter_wrapper => s::snowflake_counter;
    snowflake_from_timestamp_wrapper => s::snowflake_from_timestamp;
    snowflake_timestamp_in_layout_wrapper => s::snowflake_timestamp_in_layout;
    snowflake_node_in_layout_wrapper => s::snowflake_node_in_layout;
    snowflake_counter_in_layout_wrapper => s::snowflake_counter_in_layout;
    snowflake_from_timestamp_in_layout_wrapper => s::snowflake_from_timestamp_in_layout;
    snowflake_sequences_rows_wrapper => released::snowflake_sequences_rows;
    gdid_in_wrapper => g::gdid_in;
    gdid_out_wrapper => g::gdid_out;
    gdid_recv_wrapper => g::gdid_recv;
    gdid_send_wrapper => g::gdid_send;
    gdid_make_wrapper => g::gdid_make;
    gdid_era_wrapper => g::gdid_era;
    gdid_authority_wrapper => g::gdid_authority;
    gdid_counter_wrapper => g::gdid_counter;
    gdid_to_hex_wrapper => g::gdid_to_hex;
    gdid_to_bytea_wrapper => g::gdid_to_bytea;
    gdid_from_bytea_wrapper => g::gdid_from_bytea;
    gdid_compress_wrapper => g::gdid_compress;
    gdid_decompress_wrapper => g::gdid_decompress;
    gdid_to_leb128_wrapper => g::gdid_to_leb128;
    gdid_from_leb128_wrapper => g::gdid_from_leb128;
    gdid_next_wrapper => g::gdid_next;
    gdid_next_block_wrapper => g::gdid_next_block;
    gdid_advance_wrapper => g::gdid_advance;
    gdid_sequences_rows_wrapper => released::gdid_sequences_rows;
}

/// Functions of released versions that the current one no longer declares.
#[allow(dead_code)]
mod released {
    crate::sql::sqlfn::sql_functions! {
        /// The check of the `snowflake` domain in 0.2.0, `VALUE >= 0` (0.2.0 also counted
        /// replicated node numbers here; the update to 0.3.0 replaces the check).
        fn snowflake_observe(id: bigint) -> boolean [volatile parallel_safe] |_| {
            id >= 0
        }

        /// The rows of 0.3.0's snowflake_sequences view, whose sequences lived in shared
        /// memory; a database whose extension is not updated yet has none (its generators
        /// refuse until ALTER EXTENSION ... UPDATE).
        fn snowflake_sequences_rows() -> table(
            name: text, layout: text, epoch: timestamptz, last_id: bigint,
            last_timestamp: timestamptz, issued: bigint, counter_exhausted: bigint,
            clock_ahead: interval, clock_regressions: bigint, lease_until: timestamptz,
            lease_extensions: bigint
        ) [volatile parallel_safe] |_, _emit| {}

        /// The rows of 0.3.0's gdid_sequences view: none, as above.
        fn gdid_sequences_rows() -> table(
            scope: text, sequence: text, era: bigint, last_counter: bigint, lease_end: bigint,
            issued: bigint, lease_extensions: bigint
        ) [volatile parallel_safe] |_, _emit| {}
    }
}
