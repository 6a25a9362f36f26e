//! The life of a named sequence. Its durable state is a PostgreSQL sequence relation of its
//! database (`catalog`), made the first time a name is used (`creator`, in a transaction of
//! its own) and read and written as a lease (`durable`); shared memory caches what
//! generating needs between two lease extensions (`core::cache`, `pg::shmem`). Generating is
//! one loop for both kinds (`generate`). A name is resolved to its relation and its cache
//! entry once per call site and transaction (`resolve`, `callsite`), with PostgreSQL's
//! privileges on the relation (`privileges`), and the column defaults that name it (`naming`)
//! are recorded as its dependents (`depend`, `defaults`). The values each transaction holds
//! in flight are published for the watermarks (`inflight_xact`, `watermark`).
pub mod callsite;
pub mod catalog;
pub mod creator;
pub mod ddl;
pub mod defaults;
pub mod depend;
pub mod durable;
pub mod fallback;
pub mod generate;
pub mod inflight_xact;
pub mod lifecycle;
pub mod lookup;
pub mod name_floors_xact;
pub mod naming;
pub mod prerequisites;
pub mod privileges;
pub mod resolve;
pub mod subscriptions;
pub mod watermark;
