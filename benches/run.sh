#!/usr/bin/env bash
# Prints, for PostgreSQL 15 and then 18, the time of 1,000,000 values from each generator in
# one session, beside the bare loop that calls nothing, with each one's ratio to nextval with
# CACHE 1; then draws the same figures as a chart (benches/generators.png, by
# benches/chart.gnuplot). Not a test: it checks nothing, it reports.
#
# Each round times every generator once, in an order rotated from round to round, so that
# drift (CPU frequency, the other core's load) falls on all of them alike; figures are medians
# over RUNS rounds (default 11), after one warm-up round, with the spread (the middle half of
# the rounds) beside them. Batches and blocks are per value: 1,000 calls of 1,000, which
# replace the loop rather than run inside it, so their time is their whole cost per value.
# Then the cost of one watermark (snowflake_watermark, gdid_watermark), which a consumer takes
# once per page, and of the conversions of IDs for outside the database (text forms, UUIDs)
# beside snowflake_next and PostgreSQL's own decimal text, per 1,000,000 IDs, rotated and
# taken as medians as above.
#
# Targets: snowflake_next at most 30 ns above the bare loop and at most 0.5 x nextval CACHE 1;
# gdid_next at most 0.5 x nextval CACHE 1 and at most twice snowflake_next's cost above the
# loop; gdid_next_block no slower per gdid than gdid_next.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pgversions.sh
RUNS=${RUNS:-11}
N=1000000
out=${BENCH_OUT:-benches}
csv="$out/generators.csv"
echo "pg,generator,median_ms,q1_ms,q3_ms,ns_above_bare,vs_nextval_cache1" >"$csv"

for pg_config in "${PG_CONFIGS[@]}"; do
    export PG_CONFIG=$pg_config
    PG_BINDIR=$("$PG_CONFIG" --bindir)
    source scripts/pgcluster.sh
    pg=$(pg_major_of "$pg_config")
    dir=$(mktemp -d /tmp/snowflake_id_bench.XXXXXX)
    trap 'pg_stop "$dir/node" immediate; rm -rf "$dir"' EXIT
    chmod 755 "$dir"
    pg_init "$dir/node" 55499 "shared_preload_libraries = 'snowflake_id'" "work_mem = '64MB'" \
        "snowflake.node_id = 1" "gdid.authority = 1" "jit = off"
    pg_start "$dir/node"
    uuidv7=$([ "$pg" -ge 18 ] && echo "(9, 'uuidv7()', 'SELECT count(uuidv7()) FROM generate_series(1, $N) g')," || true)
    pg_psql "$dir/node" -d postgres -q -v runs="$RUNS" -v n="$N" -v pg="$pg" <<SQL
\\pset footer off
CREATE EXTENSION snowflake_id;
CREATE SEQUENCE seq_cache1 CACHE 1;
CREATE SEQUENCE seq_cache100 CACHE 100;
CREATE TEMP TABLE gens (ord int, label text, query text);
INSERT INTO gens VALUES
    (1, 'bare generate_series loop', 'SELECT count(g) FROM generate_series(1, $N) g'),
    (2, 'snowflake_next', 'SELECT count(snowflake_next(''bench'')) FROM generate_series(1, $N) g'),
    (3, 'snowflake_next_batch, per ID', 'SELECT count(*) FROM generate_series(1, $N / 1000) g, snowflake_next_batch(''bench_batch'', 1000) b'),
    (4, 'gdid_next', 'SELECT count(gdid_next(''bench'', ''g'')) FROM generate_series(1, $N) g'),
    (5, 'gdid_next_block, per gdid', 'SELECT count(*) FROM generate_series(1, $N / 1000) g, gdid_next_block(''bench'', ''block'', 1000) b'),
    (6, 'nextval, CACHE 1', 'SELECT count(nextval(''seq_cache1'')) FROM generate_series(1, $N) g'),
    (7, 'nextval, CACHE 100', 'SELECT count(nextval(''seq_cache100'')) FROM generate_series(1, $N) g'),
    $uuidv7
    (8, 'gen_random_uuid()', 'SELECT count(gen_random_uuid()) FROM generate_series(1, $N) g');
-- Conversions for outside the database, timed in the same rounds: 1,000,000 IDs per query,
-- beside the decimal text PostgreSQL writes and reads. A round trip is the form and back:
-- reading alone costs the round trip less the writing.
INSERT INTO gens VALUES
    (101, 'bare loop over bigint IDs', 'SELECT count(g) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (102, 'id::text (decimal)', 'SELECT count(g::text) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (103, 'id::text::bigint (decimal round trip)', 'SELECT count(g::text::bigint) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (104, 'snowflake_to_base32', 'SELECT count(snowflake_to_base32(g)) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (105, 'base32 round trip', 'SELECT count(snowflake_from_base32(snowflake_to_base32(g))) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (106, 'snowflake_to_base62', 'SELECT count(snowflake_to_base62(g)) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (107, 'base62 round trip', 'SELECT count(snowflake_from_base62(snowflake_to_base62(g))) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (108, 'snowflake_to_uuid', 'SELECT count(snowflake_to_uuid(g)) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (109, 'uuid round trip', 'SELECT count(snowflake_from_uuid(snowflake_to_uuid(g))) FROM generate_series(383233962442493957, 383233962442493957 + $N - 1) g'),
    (110, 'gdid_to_uuid (of gdid(0, 1, g))', 'SELECT count(gdid_to_uuid(gdid(0, 1, g))) FROM generate_series(1, $N) g'),
    (111, 'gdid(0, 1, g) alone', 'SELECT count(gdid(0, 1, g)) FROM generate_series(1, $N) g');
CREATE TEMP TABLE timings (ord int, ms float8);
DO \$\$
DECLARE
    t0 timestamptz;
    qs text[] := (SELECT array_agg(query ORDER BY ord) FROM gens);
    ords int[] := (SELECT array_agg(ord ORDER BY ord) FROM gens);
    k int;
BEGIN
    FOR r IN 0..$RUNS LOOP
        FOR i IN 1..array_length(qs, 1) LOOP
            k := (i + r - 1) % array_length(qs, 1) + 1;   -- rotated order
            t0 := clock_timestamp();
            EXECUTE qs[k];
            IF r > 0 THEN
                INSERT INTO timings VALUES (ords[k], extract(epoch FROM clock_timestamp() - t0) * 1000);
            END IF;
        END LOOP;
    END LOOP;
END \$\$;
CREATE TEMP TABLE results AS
    SELECT g.ord, g.label,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms) AS median_ms,
           percentile_cont(0.25) WITHIN GROUP (ORDER BY t.ms) AS q1_ms,
           percentile_cont(0.75) WITHIN GROUP (ORDER BY t.ms) AS q3_ms
      FROM timings t JOIN gens g USING (ord) GROUP BY g.ord, g.label;
\\echo
\\echo 'PostgreSQL' :pg ': time of 1,000,000 values in one session; median and middle half of' :runs 'rounds'
SELECT label AS generator, round(median_ms::numeric, 1) AS median_ms,
       round(q1_ms::numeric, 1) || ' .. ' || round(q3_ms::numeric, 1) AS middle_half_ms,
       CASE WHEN ord NOT IN (3, 5) THEN   -- batches and blocks replace the loop
       round(((median_ms - (SELECT median_ms FROM results WHERE ord = 1)) * 1e6 / :n)::numeric, 1)
       END AS ns_above_bare,
       round((median_ms / (SELECT median_ms FROM results WHERE ord = 6))::numeric, 2)
           AS vs_nextval_cache1
  FROM results WHERE ord < 100 ORDER BY ord;
\\echo 'Targets: snowflake_next <= 30 ns above the loop and <= 0.5 x nextval CACHE 1; gdid_next <= 0.5 x'
\\echo 'nextval CACHE 1 and <= 2 x snowflake_next above the loop; gdid_next_block <= gdid_next per gdid'
SELECT round(((sf.median_ms - bare.median_ms) * 1e6 / :n)::numeric, 1) AS snowflake_ns_above,
       round((sf.median_ms / nv.median_ms)::numeric, 2) AS snowflake_vs_nextval,
       round((gd.median_ms / nv.median_ms)::numeric, 2) AS gdid_vs_nextval,
       round(((gd.median_ms - bare.median_ms) / nullif(sf.median_ms - bare.median_ms, 0))::numeric, 2)
           AS gdid_cost_vs_snowflake,
       round((gb.median_ms / gd.median_ms)::numeric, 2) AS block_vs_gdid_next
  FROM results bare, results sf, results nv, results gd, results gb
 WHERE bare.ord = 1 AND sf.ord = 2 AND nv.ord = 6 AND gd.ord = 4 AND gb.ord = 5;
-- The watermark, which a consumer takes once per page: reads the sequence and every backend's
-- values in flight (none here; the scan is the same). Per call, 10,000 calls per round.
CREATE TEMP TABLE wm_timings (label text, us float8);
DO \$\$
DECLARE
    t0 timestamptz;
BEGIN
    FOR r IN 0..$RUNS LOOP
        t0 := clock_timestamp();
        PERFORM count(snowflake_watermark('bench')) FROM generate_series(1, 10000);
        IF r > 0 THEN
            INSERT INTO wm_timings VALUES ('snowflake_watermark', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 10000);
        END IF;
        t0 := clock_timestamp();
        PERFORM count(gdid_watermark('bench', 'g')) FROM generate_series(1, 10000);
        IF r > 0 THEN
            INSERT INTO wm_timings VALUES ('gdid_watermark', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 10000);
        END IF;
    END LOOP;
END \$\$;
SELECT current_setting('max_connections') AS max_connections \\gset
\\echo 'The watermark, per call; it reads every backend''s entries (max_connections =' :max_connections '):'
SELECT label AS function,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY us))::numeric, 2) AS median_us,
       round((percentile_cont(0.25) WITHIN GROUP (ORDER BY us))::numeric, 2) || ' .. ' ||
       round((percentile_cont(0.75) WITHIN GROUP (ORDER BY us))::numeric, 2) AS middle_half_us
  FROM wm_timings GROUP BY label ORDER BY label DESC;
\\echo 'Conversions, 1,000,000 IDs; ns per ID above each loop (bigint IDs, or gdid(0, 1, g) for gdid_to_uuid),'
\\echo 'beside snowflake_next above its loop (from the table above):'
SELECT conversion, median_ms, middle_half_ms, ns_above_loop FROM (
    SELECT ord, label AS conversion, round(median_ms::numeric, 1) AS median_ms,
           round(q1_ms::numeric, 1) || ' .. ' || round(q3_ms::numeric, 1) AS middle_half_ms,
           round(((median_ms - CASE WHEN ord = 110 THEN (SELECT median_ms FROM results WHERE ord = 111)
                                    ELSE (SELECT median_ms FROM results WHERE ord = 101) END) * 1e6 / :n)::numeric, 1)
               AS ns_above_loop
      FROM results WHERE ord > 100 AND ord NOT IN (101, 111)
    UNION ALL
    SELECT 0, 'snowflake_next (for comparison)', NULL, NULL,
           round(((sf.median_ms - bare.median_ms) * 1e6 / :n)::numeric, 1)
      FROM results sf, results bare WHERE sf.ord = 2 AND bare.ord = 1) c
 ORDER BY ord;
\\copy (SELECT $pg, label, round(median_ms::numeric, 1), round(q1_ms::numeric, 1), round(q3_ms::numeric, 1), CASE WHEN ord NOT IN (3, 5) THEN round(((median_ms - (SELECT median_ms FROM results WHERE ord = 1)) * 1e6 / $N)::numeric, 1) END, round((median_ms / (SELECT median_ms FROM results WHERE ord = 6))::numeric, 3) FROM results WHERE ord < 100 ORDER BY ord) TO STDOUT WITH CSV
SQL
    pg_stop "$dir/node" immediate
    rm -rf "$dir"
    trap - EXIT
done >"$out/generators.log"
# The CSV lines went to the log with the tables: move them to the CSV file.
grep -E '^[0-9]+,' "$out/generators.log" >>"$csv"
grep -vE '^[0-9]+,' "$out/generators.log"
rm -f "$out/generators.log"
# Wide form for the chart: one row per generator, one column per PostgreSQL major.
wide=$(mktemp /tmp/snowflake_id_chart.XXXXXX)
python3 - "$csv" "$wide" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
majors = sorted({r["pg"] for r in rows}, key=int)
labels = list(dict.fromkeys(r["generator"] for r in rows))
value = {(r["pg"], r["generator"]): r["median_ms"] for r in rows}  # ms per 1,000,000 = ns each
with open(sys.argv[2], "w") as out:
    out.write("generator;" + ";".join(f"PostgreSQL {m}" for m in majors) + "\n")
    for label in labels:
        out.write(label + ";" + ";".join(value.get((m, label), "NaN") for m in majors) + "\n")
PY
gnuplot -e "wide='$wide'; png='$out/generators.png'" benches/chart.gnuplot
rm -f "$wide"
echo
echo "chart: $out/generators.png (data: $csv)"
