//! Against a server with the extension: DATABASE_URL names a database where `CREATE EXTENSION
//! snowflake_id` was run (tests/cluster/clients.sh makes one). Without DATABASE_URL these
//! tests say so and pass: `cargo test` alone runs the unit tests.

use postgres_types::{FromSql, ToSql, Type};
use snowflake_id_client::{Gdid, Snowflake};
use tokio_postgres::{Client, NoTls};

async fn connect() -> Option<Client> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL not set: skipped");
        return None;
    };
    let (client, conn) = tokio_postgres::connect(&url, NoTls).await.expect("connect");
    tokio::spawn(conn);
    Some(client)
}

/// Why the crate exists: a plain i64, and the newtype postgres-types's derive makes for the
/// domain, each fail one of the two ways a snowflake parameter is typed (the domain where it
/// goes into a column, int8 where it is compared).
#[tokio::test]
async fn i64_and_the_derived_newtype_each_fail_one_way() {
    let Some(c) = connect().await else { return };
    c.batch_execute(
        "CREATE TABLE t_plain (id snowflake PRIMARY KEY DEFAULT snowflake_next('t_plain'), item text)",
    )
    .await
    .unwrap();
    let err = c
        .execute("INSERT INTO t_plain (id, item) VALUES ($1, 'x')", &[&42i64])
        .await
        .unwrap_err();
    let why = std::error::Error::source(&err)
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        why.contains(
            "cannot convert between the Rust type `i64` and the Postgres type `snowflake`"
        ),
        "{err}: {why}"
    );

    #[derive(Debug, ToSql, FromSql)]
    #[postgres(name = "snowflake")]
    struct Derived(i64);
    c.execute(
        "INSERT INTO t_plain (id, item) VALUES ($1, 'x')",
        &[&Derived(42)],
    )
    .await
    .unwrap();
    let row = c.query_one("SELECT id FROM t_plain", &[]).await.unwrap();
    assert_eq!(
        row.columns()[0].type_(),
        &Type::INT8,
        "a domain's results arrive as its base type"
    );
    assert_eq!(
        row.get::<_, Derived>(0).0,
        42,
        "the derived FromSql takes int8 too"
    );
    assert_eq!(row.get::<_, i64>(0), 42);
    assert_eq!(row.get::<_, Snowflake>(0), Snowflake(42));
    let err = c
        .query("SELECT item FROM t_plain WHERE id = $1", &[&Derived(42)])
        .await
        .unwrap_err();
    let why = std::error::Error::source(&err)
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        why.contains("and the Postgres type `int8`"),
        "the derived ToSql takes the domain only: {why}"
    );
    let n = c
        .query("SELECT item FROM t_plain WHERE id = $1", &[&Snowflake(42)])
        .await
        .unwrap()
        .len();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn snowflake_everywhere_a_key_goes() {
    let Some(c) = connect().await else { return };
    c.batch_execute(
        "CREATE DOMAIN order_key AS snowflake;
         CREATE TABLE t_orders (id snowflake PRIMARY KEY DEFAULT snowflake_next('t_orders'), item text);
         CREATE TABLE t_lines (id order_key PRIMARY KEY, order_id snowflake REFERENCES t_orders)",
    )
    .await
    .unwrap();
    let id: Snowflake = c
        .query_one(
            "INSERT INTO t_orders (item) VALUES ($1) RETURNING id",
            &[&"tea"],
        )
        .await
        .unwrap()
        .get(0);
    assert!(id.0 > 0);
    let next = Snowflake(id.0 + 1);
    c.execute(
        "INSERT INTO t_orders (id, item) VALUES ($1, $2)",
        &[&next, &"cake"],
    )
    .await
    .unwrap();
    c.execute(
        "UPDATE t_orders SET id = $1 WHERE id = $2",
        &[&Snowflake(id.0 + 2), &next],
    )
    .await
    .unwrap();
    c.execute("INSERT INTO t_lines VALUES ($1, $2)", &[&Snowflake(7), &id])
        .await
        .unwrap();
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM t_orders WHERE id = ANY ($1)",
            &[&vec![id, Snowflake(id.0 + 2)]],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    // A comparison's parameter is int8: a plain i64 and a Snowflake both go.
    let item: String = c
        .query_one("SELECT item FROM t_orders WHERE id = $1", &[&id.0])
        .await
        .unwrap()
        .get(0);
    assert_eq!(item, "tea");
    let err = c
        .execute("INSERT INTO t_orders (id) VALUES ($1)", &[&Snowflake(-1)])
        .await
        .unwrap_err();
    assert_eq!(err.code().unwrap().code(), "23514");
    let null: Option<Snowflake> = c
        .query_one("SELECT NULL::snowflake", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(null, None);
}

#[tokio::test]
async fn gdid_binary_parameters_results_and_copy() {
    let Some(c) = connect().await else { return };
    c.batch_execute(
        "CREATE TABLE t_invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 't_invoices'), item text)",
    )
    .await
    .unwrap();
    let g: Gdid = c
        .query_one(
            "INSERT INTO t_invoices (item) VALUES ('rent') RETURNING id",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!((g.era(), g.authority(), g.counter()), (0, 1, 1));
    let given = Gdid::new(1293, 3, 57).unwrap();
    c.execute(
        "INSERT INTO t_invoices (id, item) VALUES ($1, 'given')",
        &[&given],
    )
    .await
    .unwrap();
    let row = c
        .query_one(
            "SELECT id::text, id::bytea, id FROM t_invoices WHERE id = $1",
            &[&given],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, &str>(0), "1293:3:57");
    assert_eq!(row.get::<_, Vec<u8>>(1), given.to_bytes());
    assert_eq!(row.get::<_, Gdid>(2), given);
    let later: bool = c
        .query_one(
            "SELECT id > $1 FROM t_invoices WHERE id = $2",
            &[&g, &given],
        )
        .await
        .unwrap()
        .get(0);
    assert!(later);
    // Binary COPY: the type is found by name (its OID is this database's).
    let gdid_type = c.prepare("SELECT NULL::gdid").await.unwrap().columns()[0]
        .type_()
        .clone();
    let sink = c
        .copy_in("COPY t_invoices (id, item) FROM STDIN (FORMAT binary)")
        .await
        .unwrap();
    let writer =
        tokio_postgres::binary_copy::BinaryCopyInWriter::new(sink, &[gdid_type, Type::TEXT]);
    futures_util::pin_mut!(writer);
    for n in 1..=1000u64 {
        let g = Gdid::new(5, 2, n).unwrap();
        writer
            .as_mut()
            .write(&[&g, &format!("copied {n}")])
            .await
            .unwrap();
    }
    assert_eq!(writer.finish().await.unwrap(), 1000);
    let row = c
        .query_one(
            "SELECT count(*), min(id), max(id) FROM t_invoices WHERE gdid_era(id) = 5",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1000);
    assert_eq!(row.get::<_, Gdid>(1), Gdid::new(5, 2, 1).unwrap());
    assert_eq!(row.get::<_, Gdid>(2).to_string(), "5:2:1000");
}

/// The crate reads text as the server's gdid input does: the same inputs accepted, with the
/// same value, and the same refused, as malformed (22P02) or out of range (22003).
#[tokio::test]
async fn text_is_read_as_the_server_reads_it() {
    let Some(c) = connect().await else { return };
    let mut inputs: Vec<String> = [
        "1293:3:57",
        "0:0:0",
        " 1:2:3 ",
        "\t1:2:3\n",
        "\u{b}1:2:3\u{c}",
        "1 :2:3",
        "1: 2:3",
        "+1:2:3",
        "-1:2:3",
        "1::3",
        "1:2",
        "1:2:3:4",
        "",
        " ",
        ":",
        "::",
        "01:02:03",
        "4294967295:15:1152921504606846975",
        "4294967296:0:0",
        "0:16:0",
        "0:0:1152921504606846976",
        "99999999999999999999999:0:0",
        "0x00000000100000000000004B",
        "0X00000000100000000000004b",
        "00000000100000000000004B",
        "0x0000000010000000000004B",
        "0x 00000000100000000000004B",
        "0x00000000100000000000004G",
        "aa00aa00f000000000000001",
        "1:2:3x",
        "１:2:3",
        "1:2:3\u{a0}",
        "0x",
        "1.0:2:3",
        "1e3:0:0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // And bytes around the edges of every part.
    for era in ["0", "4294967295", "4294967296", "007"] {
        for auth in ["0", "15", "16", "015"] {
            for counter in [
                "0",
                "1152921504606846975",
                "1152921504606846976",
                "18446744073709551616",
            ] {
                inputs.push(format!("{era}:{auth}:{counter}"));
            }
        }
    }
    for input in &inputs {
        let server = c.query_one("SELECT $1::text::gdid::text", &[input]).await;
        let ours = input.parse::<Gdid>();
        match (server, ours) {
            (Ok(row), Ok(g)) => assert_eq!(row.get::<_, String>(0), g.to_string(), "{input:?}"),
            (Err(e), Err(err)) => {
                let code = e.code().map(|c| c.code()).unwrap_or("?");
                let want = match err {
                    snowflake_id_client::GdidError::Malformed(_) => "22P02",
                    snowflake_id_client::GdidError::OutOfRange(_) => "22003",
                    snowflake_id_client::GdidError::Length(_) => unreachable!(),
                };
                assert_eq!(code, want, "{input:?}: {e}");
            }
            (s, o) => panic!("{input:?}: the server says {s:?}, the crate {o:?}"),
        }
    }
}
