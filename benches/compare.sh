#!/usr/bin/env bash
# The generators of an earlier release beside the current build's, in one run: two servers
# of the same PostgreSQL (15), one with each library, taking turns round by round (which
# goes first alternates), so that drift and the other core's load fall on both alike. Each
# round times 1,000,000 values of each generator in one session, in an order rotated from
# round to round, beside the bare loop and nextval CACHE 1 of the same server. What a
# generator costs above the loop is taken within each round (its time less the bare loop's of
# that round and session) and the two builds' costs compared round by round: medians of RUNS
# rounds (default 11) with the middle half. Not a test: it reports.
#
#   compare.sh [VERSION]    (default 0.3.0; scripts/old_release.sh builds it, cached)
#
# PG_CONFIG names another installation of PostgreSQL 15 to compare on (a private copy with
# this build installed); by default Debian's, where `make bench-compare` installs it.
#
# Targets (issue 22): snowflake_next <= 0.4 x nextval CACHE 1, gdid_next <= 0.5 x, no worse
# than the earlier release.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-0.3.0}
RUNS=${RUNS:-11}
N=1000000
current=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
old=$(bash scripts/old_release.sh "$version" "$current" | tail -n 1)
dir=$(mktemp -d /tmp/snowflake_id_compare.XXXXXX)
chmod 755 "$dir"
servers=(before after)
declare -A bindir=([before]="$("$old" --bindir)" [after]="$("$current" --bindir)")
declare -A port=([before]=55496 [after]=55497)
cleanup() {
    for s in "${servers[@]}"; do
        PG_BINDIR=${bindir[$s]} bash -c "source scripts/pgcluster.sh; pg_stop '$dir/$s' immediate"
    done
    rm -rf "$dir"
}
trap cleanup EXIT
psql_to() { # SERVER psql-args...
    local s=$1
    shift
    PG_BINDIR=${bindir[$s]} bash -c 'source scripts/pgcluster.sh; d=$1; shift; pg_psql "$d" "$@"' _ "$dir/$s" "$@"
}
for s in "${servers[@]}"; do
    PG_BINDIR=${bindir[$s]} bash -c "source scripts/pgcluster.sh
        pg_init '$dir/$s' ${port[$s]} \"shared_preload_libraries = 'snowflake_id'\" \
            'snowflake.node_id = 1' 'gdid.authority = 1' 'jit = off'
        pg_start '$dir/$s'"
    psql_to "$s" -d postgres -q <<SQL
CREATE EXTENSION snowflake_id;
CREATE SEQUENCE seq_cache1 CACHE 1;
SELECT snowflake_next('bench'), gdid_next('bench', 'g');
CREATE FUNCTION bench_round(r int) RETURNS TABLE (label text, ms float8) LANGUAGE plpgsql AS \$\$
DECLARE
    labels text[] := ARRAY['bare loop', 'snowflake_next', 'gdid_next', 'nextval CACHE 1'];
    qs text[] := ARRAY[
        'SELECT count(g) FROM generate_series(1, $N) g',
        'SELECT count(snowflake_next(''bench'')) FROM generate_series(1, $N) g',
        'SELECT count(gdid_next(''bench'', ''g'')) FROM generate_series(1, $N) g',
        'SELECT count(nextval(''seq_cache1'')) FROM generate_series(1, $N) g'];
    t0 timestamptz;
    k int;
BEGIN
    FOR i IN 1..4 LOOP
        k := (i + r - 1) % 4 + 1;
        t0 := clock_timestamp();
        EXECUTE qs[k];
        label := labels[k];
        ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
        RETURN NEXT;
    END LOOP;
END
\$\$;
SQL
done
csv="$dir/timings.csv"
for r in $(seq 0 "$RUNS"); do
    order=("${servers[@]}")
    [ $((r % 2)) -eq 1 ] && order=(after before)
    for s in "${order[@]}"; do
        rows=$(psql_to "$s" -d postgres -At -F, -c "SELECT label, ms FROM bench_round($r)")
        [ "$r" -eq 0 ] && continue # warm-up
        sed "s/^/$s,$r,/" <<<"$rows" >>"$csv"
    done
done
python3 - "$csv" "$version" "$RUNS" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
version, runs = sys.argv[2], sys.argv[3]
def q(xs, p):
    xs = sorted(xs); k = (len(xs) - 1) * p; f = int(k); c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)
def spread(xs):
    return f"{q(xs, .5):.1f} ({q(xs, .25):.1f} .. {q(xs, .75):.1f})"
t = {}
for server, r, label, ms in rows:
    t[(server, int(r), label)] = float(ms)
rounds = sorted({r for (_, r, _) in t})
def above(s, label):
    # Paired within a round: the generator against the bare loop the same session timed
    # in the same round, so that drift between rounds cancels out.
    return [t[(s, r, label)] - t[(s, r, "bare loop")] for r in rounds]
print(f"\nPostgreSQL 15, 1,000,000 values per generator, {runs} rounds, {version} ('before') and "
      f"this build ('after') in alternating turns: medians (middle half)")
labels = ["bare loop", "snowflake_next", "gdid_next", "nextval CACHE 1"]
print(f"{'generator':<16}" + "".join(f"{s + ' ms':>24}{s + ' ns above loop':>26}" for s in ("before", "after"))
      + f"{'after - before, ns':>26}")
for label in labels:
    line = f"{label:<16}"
    for s in ("before", "after"):
        ms = [t[(s, r, label)] for r in rounds]
        line += f"{spread(ms):>24}" + (f"{spread(above(s, label)):>26}" if label != "bare loop" else " " * 26)
    if label != "bare loop":
        diff = [a - b for a, b in zip(above("after", label), above("before", label))]
        line += f"{spread(diff):>26}"
    print(line)
for s in ("before", "after"):
    ratio = lambda label: q([t[(s, r, label)] / t[(s, r, "nextval CACHE 1")] for r in rounds], .5)
    print(f"{s}: snowflake_next {ratio('snowflake_next'):.2f} x nextval CACHE 1's time, "
          f"gdid_next {ratio('gdid_next'):.2f} x")
print("Targets: snowflake_next <= 0.40 x nextval CACHE 1, gdid_next <= 0.50 x (the whole time, "
      "loop included); after - before <= 0, read beside nextval's after - before (the same code "
      "in both: the noise of the run). ms per 1,000,000 values = ns per value.")
PY
