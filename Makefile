# The two commands of the README, and a few helpers. Each installs what it needs. `make`
# alone lists them (make help).
.PHONY: help demo demo-stop test check regress cluster docs-test bench bench-insert bench-gdid bench-detection bench-table bench-lease bench-compare fuzz loom install lint package dist
.DEFAULT_GOAL := help
PG ?= 15
# The preemption bound of `make loom` (src/core/loom_models): 2 keeps `make test` within a
# minute of model checking on two cores; 3 explores more schedules, for much longer.
LOOM_MAX_PREEMPTIONS ?= 2
# rustup's cargo, for every script of a target (a fresh shell after rustup may not have it).
export PATH := $(HOME)/.cargo/bin:$(PATH)

help:            ## this list
	@grep -E '^[a-z-]+:.*## ' $(firstword $(MAKEFILE_LIST)) | sed 's/:[^#]*## /\t/' | expand -t 18

demo:            ## install what the demo needs, build, start a local PostgreSQL 15 with snowflake_id, show it working
	bash scripts/demo.sh start

demo-stop:       ## stop the demo server and remove its data
	bash scripts/demo.sh stop

test:            ## the whole test suite: lint, cargo test, pg_regress, cluster tests, packages; what CI runs
	bash scripts/test.sh

check:           ## the quick loop: lint, cargo test, the build installed into PostgreSQL 15 and pg_regress on it
	bash scripts/dev.sh check

regress:         ## one pg_regress file: make regress T=decode [PG=18] (tests/pg_regress/sql/T.sql)
	PG=$(PG) bash scripts/dev.sh regress "$(T)"

cluster:         ## one cluster test: make cluster T=concurrency [PG=17] (tests/cluster/T.sh)
	PG=$(PG) bash scripts/dev.sh cluster "$(T)"

docs-test:       ## the SQL examples of README.md and docs/ against the installed build: make docs-test [PG=17]
	PG_CONFIG=/usr/lib/postgresql/$(PG)/bin/pg_config bash tests/docs.sh

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

bench-lease:     ## what one lease extension costs (setval and WAL flush), a name's first use, a new name
	bash scripts/setup.sh && bash scripts/demo.sh stop && bash scripts/install.sh && bash benches/lease.sh

bench-compare:   ## the generators of release 0.3.0 (or VERSION=) beside this build's, in one run, PostgreSQL 15
	bash scripts/setup.sh && bash scripts/demo.sh stop && bash scripts/install.sh && bash benches/compare.sh $(VERSION)

bench-detection: ## what noticing shared node numbers costs: the trigger on the apply path and on local inserts
	bash scripts/setup.sh && bash scripts/demo.sh stop && bash scripts/install.sh && bash benches/detection.sh

fuzz:            ## the gdid parsers under mutated input for FUZZ_SECONDS (default 600)
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} cargo test --ignore-rust-version --release --lib fuzz_gdid_parsers -- --ignored --nocapture

loom:            ## model checks of the lock-free core under loom: make loom [T=tick] [LOOM_MAX_PREEMPTIONS=3]
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$${CARGO_TARGET_DIR:-target}/loom \
	CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
	LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	cargo test --ignore-rust-version --release --lib core::loom_models::$(T) -- --nocapture

package:         ## Debian packages, one per major: .build/packages/postgresql-NN-snowflake-id_VERSION_amd64.deb
	bash scripts/setup.sh && bash scripts/package.sh

dist:            ## the source archive PGXN takes, .build/snowflake_id-VERSION.zip, with META.json checked
	bash scripts/dist.sh

install:         ## build and install into Debian's PostgreSQL 15
	bash scripts/setup_demo.sh && bash scripts/install.sh

lint:            ## formatting, clippy (PostgreSQL 15, 17, 18 and 19 builds), module layering, as the code habits require
	cargo fmt --check && cargo clippy --ignore-rust-version --release --all-targets -- -D warnings && \
	CARGO_TARGET_DIR=target/pg17 cargo clippy --ignore-rust-version --release --lib --no-default-features --features pg17 -- -D warnings && \
	CARGO_TARGET_DIR=target/pg18 cargo clippy --ignore-rust-version --release --lib --no-default-features --features pg18 -- -D warnings && \
	CARGO_TARGET_DIR=target/pg19 cargo clippy --ignore-rust-version --release --lib --no-default-features --features pg19 -- -D warnings && \
	python3 scripts/check_layers.py && python3 scripts/check_unwind.py && python3 scripts/check_map.py
