# The two commands of the README, and a few helpers. Each installs what it needs.
.PHONY: demo demo-stop test bench bench-insert bench-gdid bench-detection bench-table fuzz install lint package dist

demo:            ## build, install, start a local PostgreSQL 15 with snowflake_id, show it working
	bash scripts/demo.sh start

demo-stop:       ## stop the demo server and remove its data
	bash scripts/demo.sh stop

test:            ## the whole test suite: cargo test, pg_regress, cluster tests
	bash scripts/test.sh

bench:           ## every generator against nextval, uuids and a bare loop, PostgreSQL 15 and 18; a chart
	bash scripts/setup.sh && bash scripts/demo.sh stop && bash scripts/install.sh && \
	PG_CONFIG=/usr/lib/postgresql/18/bin/pg_config bash scripts/install.sh && \
	bash benches/run.sh

bench-insert:    ## INSERT ... DEFAULT with each key: pgbench (2 and 8 clients, sync and async commit), bulk
	bash scripts/setup.sh && bash scripts/demo.sh stop && bash scripts/install.sh && bash benches/insert.sh

bench-gdid:      ## gdid against uuid, bigint, bytea on 10M rows: sort, index build, size
	bash scripts/setup.sh && bash scripts/demo.sh stop && bash scripts/install.sh && bash benches/gdid.sh

bench-table:     ## snowflake, gdid, bigserial, UUIDv4, UUIDv7 keys on a large table: inserts while reading, sizes, WAL; a chart
	bash scripts/setup.sh && bash scripts/demo.sh stop && PG_CONFIG=/usr/lib/postgresql/18/bin/pg_config bash scripts/install.sh && bash benches/table.sh

bench-detection: ## what noticing shared node numbers costs: the trigger on the apply path and on local inserts
	bash scripts/setup.sh && bash scripts/demo.sh stop && bash scripts/install.sh && bash benches/detection.sh

fuzz:            ## the gdid parsers under mutated input for FUZZ_SECONDS (default 600)
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} cargo test --release --lib fuzz_gdid_parsers -- --ignored --nocapture

package:         ## Debian packages, one per major: .build/packages/postgresql-NN-snowflake-id_VERSION_amd64.deb
	bash scripts/setup.sh && bash scripts/package.sh

dist:            ## the source archive PGXN takes, .build/snowflake_id-VERSION.zip, with META.json checked
	bash scripts/dist.sh

install:         ## build and install into Debian's PostgreSQL 15
	bash scripts/setup_demo.sh && bash scripts/install.sh

lint:            ## formatting, clippy (PostgreSQL 15, 17 and 18 builds), module layering, as the code habits require
	cargo fmt --check && cargo clippy --release --all-targets -- -D warnings && \
	CARGO_TARGET_DIR=target/pg17 cargo clippy --release --lib --no-default-features --features pg17 -- -D warnings && \
	CARGO_TARGET_DIR=target/pg18 cargo clippy --release --lib --no-default-features --features pg18 -- -D warnings && \
	python3 scripts/check_layers.py
