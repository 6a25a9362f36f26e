#!/usr/bin/env bash
# The generators of an earlier release beside the current build's, in one run: two servers
# of the same PostgreSQL (15), one with each library, taking turns round by round (which
# goes first alternates), so that drift and the other core's load fall on both alike. Each
# round times 1,000,000 values of each generator in one session, in an order rotated from
# round to round, beside the bare loop and nextval CACHE 1 of the same server; figures are
# medians of RUNS rounds (default 11) with the middle half. Not a test: it reports.
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
        sed "s/^/$s,/" <<<"$rows" >>"$csv"
    done
done
python3 - "$csv" "$version" "$RUNS" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
version, runs = sys.argv[2], sys.argv[3]
def q(xs, p):
    xs = sorted(xs); k = (len(xs) - 1) * p; f = int(k); c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)
t = {}
for server, label, ms in rows:
    t.setdefault((server, label), []).append(float(ms))
print(f"\nPostgreSQL 15, 1,000,000 values per generator; medians of {runs} rounds (middle half), "
      f"{version} ('before') and this build ('after') in alternating turns")
labels = ["bare loop", "snowflake_next", "gdid_next", "nextval CACHE 1"]
print(f"{'generator':<18}" + "".join(f"{s + ' ms':>26}{'ns above loop':>15}{'vs nextval':>12}" for s in ("before", "after")))
for label in labels:
    line = f"{label:<18}"
    for s in ("before", "after"):
        m = q(t[(s, label)], 0.5)
        bare = q(t[(s, "bare loop")], 0.5)
        nv = q(t[(s, "nextval CACHE 1")], 0.5)
        spread = f"{m:.1f} ({q(t[(s, label)], .25):.1f} .. {q(t[(s, label)], .75):.1f})"
        above = "" if label == "bare loop" else f"{(m - bare):.1f}"
        line += f"{spread:>26}{above:>15}{m / nv:>12.2f}"
    print(line)
print("Targets: snowflake_next <= 0.40 x nextval CACHE 1, gdid_next <= 0.50 x. (ms per 1,000,000 values = ns per value)")
PY
