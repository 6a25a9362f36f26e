#!/usr/bin/env bash
# The SQL examples of README.md and docs/*.md, run against a fresh server of the installed
# extension, each compared with the output the documentation shows: no example drifts from
# the code.
#
#   tests/docs.sh [FILE...]   (default: README.md docs/*.md; PG_CONFIG selects the major,
#                              default Debian's 15; DOCS_SHOW=1 prints what each example
#                              printed, for writing new ones)
#
# An example is marked runnable by an HTML comment, which GitHub does not show, right before
# its ```sql block; the ```text block right after it, if any, is what psql prints for it:
#
#   <!-- runnable -->
#   ```sql
#   SELECT gdid_to_hex(gdid(2852170240, 15, 1));
#   ```
#   ```text
#          gdid_to_hex
#   --------------------------
#    aa00aa00f000000000000001
#   (1 row)
#   ```
#
# - Output is psql's (aligned, quiet: no command tags such as CREATE TABLE); errors as psql
#   shows them, with the SQLSTATE: "ERROR:  2BP01: cannot drop ...", then DETAIL and HINT
#   (VERBOSITY verbose without the fields only it adds, LOCATION, SCHEMA NAME and the like;
#   SHOW_CONTEXT never). Trailing blanks do not count.
# - A runnable block without a ```text block must print nothing (no rows, no error, no notice).
# - `<!-- runnable on PostgreSQL 16+ -->` limits an example to some majors.
# - `<!-- runnable: client -->` marks the examples of docs/clients.md, which
#   tests/cluster/clients.sh runs with the client libraries (tests/clients/run_docs.py): not here.
# - The examples of one file run in order, in one psql session, in a fresh database of their
#   own with `CREATE EXTENSION snowflake_id` done: an example may use what earlier examples of
#   its file made. Roles they create are dropped afterwards (they are the cluster's).
# - The server is configured by the README's configuration block, marked
#   `<!-- runnable: postgresql.conf -->`, with TimeZone UTC and the C locale besides.
# - Values that vary (IDs, timestamps) are not masked: an example shows a stable property of
#   them instead (`snowflake_node(id)`, `now() - snowflake_timestamp(id) < '1 minute'`).
#
# Prints how many examples ran per file (and the ```sql blocks left unmarked, which need
# several servers or packages); on a difference, the example and a diff of what the docs show
# against what psql printed. Exit status: 0 when every example printed what the docs show.
set -euo pipefail
# The extraction, the runs and the comparison (python3): `conf FILE` prints the marked
# configuration block; `run FILE...` runs the examples (DOCS_* from below).
read -r -d '' DOCS_PY <<'PY' || true
import difflib, os, re, subprocess, sys

FENCE = re.compile(r'^(\s*)(```+)\s*(\S*)')
MARKER = re.compile(r'^\s*<!--\s*runnable\b(.*?)-->\s*$')
# What VERBOSITY verbose adds besides the SQLSTATE: not shown in the docs.
VERBOSE_ONLY = ('LOCATION:  ', 'SCHEMA NAME:  ', 'TABLE NAME:  ', 'COLUMN NAME:  ',
                'DATATYPE NAME:  ', 'CONSTRAINT NAME:  ')


def blocks(path):
    """Every fenced block of a markdown file: (line, indent, info, lines, marker or None)."""
    lines = open(path, encoding='utf-8').read().split('\n')
    found, marker, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            if marker is not None:
                sys.exit(f'{path}:{marker[1]}: runnable marker without a fenced block after it')
            marker = (m.group(1).strip(' :'), i + 1)
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            indent, ticks, info = f.group(1), f.group(2), f.group(3).lower()
            body, j = [], i + 1
            while j < len(lines) and not (lines[j].strip().startswith(ticks) and lines[j].strip().strip('`') == ''):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
                j += 1
            if j == len(lines):
                sys.exit(f'{path}:{i + 1}: fenced block never closed')
            found.append((i + 1, j + 1, info, body, marker))
            marker, i = None, j + 1
            continue
        if marker is not None and line.strip():
            sys.exit(f'{path}:{marker[1]}: runnable marker not right before a fenced block')
        i += 1
    if marker is not None:
        sys.exit(f'{path}:{marker[1]}: runnable marker at the end of the file')
    return found, lines


def examples(path):
    """The runnable examples of a file: (line, sql, expected, minimum major); and the lines of
    the ```sql blocks left unmarked."""
    found, lines = blocks(path)
    out, unmarked = [], []
    for k, (line, end, info, body, marker) in enumerate(found):
        if info != 'sql':
            continue
        if marker is not None and marker[0].startswith('client'):
            continue  # docs/clients.md: run with the client libraries by tests/cluster/clients.sh
        if marker is None:
            unmarked.append(line)
            continue
        what = marker[0]
        m = re.fullmatch(r'(?:on )?(?:PostgreSQL )?(\d+)\+', what)
        if what and not m:
            sys.exit(f'{path}:{marker[1]}: unknown marker "runnable {what}" before ```sql')
        expected = None
        if k + 1 < len(found):
            nline, _, ninfo, nbody, nmarker = found[k + 1]
            between = lines[end:nline - 1]
            if ninfo == 'text' and nmarker is None and not any(s.strip() for s in between):
                expected = nbody
        code = [c for c in (b.split('--', 1)[0].strip() for b in body) if c]
        if not code or not (code[-1].endswith(';') or code[-1].startswith('\\')):
            sys.exit(f'{path}:{line}: a runnable example must end with a complete statement (;)')
        out.append((line, '\n'.join(body), expected or [], int(m.group(1)) if m else 0))
    return out, unmarked


def conf(path):
    found, _ = blocks(path)
    marked = [b for b in found if b[4] is not None and b[4][0] == 'postgresql.conf']
    if len(marked) != 1:
        sys.exit(f'{path}: {len(marked)} blocks marked <!-- runnable: postgresql.conf -->, expected 1')
    for line in marked[0][3]:
        line = line.split('#', 1)[0].strip()
        if line:
            print(line)


def tidy(text_lines):
    """Lines as compared: without trailing blanks, without blank lines around them."""
    out = [s.rstrip() for s in text_lines]
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def psql(db, script=None, command=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith('PG')}
    args = [os.environ['DOCS_PSQL'], '-X', '-q', '-h', os.environ['DOCS_HOST'],
            '-p', os.environ['DOCS_PORT'], '-U', 'postgres', '-d', db,
            '-v', 'VERBOSITY=verbose', '-v', 'SHOW_CONTEXT=never']
    if command:
        args += ['-v', 'ON_ERROR_STOP=1', '-Atc', command]
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
        if r.returncode:
            sys.exit(f'docs: {command}: {r.stderr}')
    else:
        r = subprocess.run(args + ['-f', '-'], input=script, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    return r.stdout


def run(paths):
    major = int(os.environ['DOCS_MAJOR'])
    failed, counts, skipped = 0, [], 0
    show = os.environ.get('DOCS_SHOW')
    for path in paths:
        runnable, unmarked = examples(path)
        todo = [e for e in runnable if e[3] <= major]
        skipped += len(runnable) - len(todo)
        counts.append((path, len(todo), unmarked))
        if not todo:
            continue
        db = 'docs_' + re.sub(r'\W', '_', os.path.basename(path).lower().removesuffix('.md'))
        roles = psql('postgres', command='SELECT rolname FROM pg_roles').split()
        psql('postgres', command=f'CREATE DATABASE {db}')
        psql(db, command='CREATE EXTENSION snowflake_id')
        script = ''.join(f'\\echo <<<docs example {n}>>>\n{sql}\n' for n, (_, sql, _, _) in enumerate(todo))
        script += f'\\echo <<<docs example {len(todo)}>>>\n'
        out = psql(db, script=script)
        parts = re.split(r'^<<<docs example (\d+)>>>\n', out, flags=re.M)
        got = {}
        for n, text in zip(parts[1::2], parts[2::2]):
            got[int(n)] = text
        for n, (line, sql, expected, _) in enumerate(todo):
            text = got.get(n)
            if text is None:
                print(f'{path}:{line}: no output at all (psql stopped before it?):\n{out}')
                failed += 1
                continue
            actual = []
            for s in text.split('\n'):
                s = re.sub(r'^psql:<stdin>:\d+: ', '', s)
                if not s.startswith(VERBOSE_ONLY):
                    actual.append(s)
            actual, want = tidy(actual), tidy(expected)
            if show:
                print(f'--- {path}:{line}\n' + '\n'.join(actual))
            if actual != want:
                failed += 1
                print(f'FAIL: {path}:{line}: the example prints something else than the docs show')
                print('  ' + sql.replace('\n', '\n  '))
                if not want:
                    print('  (the docs show no output: add a ```text block after the example, or make it silent)')
                for d in difflib.unified_diff(want, actual, 'the docs', 'psql', lineterm='', n=2):
                    print('  ' + d)
        psql('postgres', command=f'DROP DATABASE {db} WITH (FORCE)')
        for role in psql('postgres', command='SELECT rolname FROM pg_roles').split():
            if role not in roles:
                psql('postgres', command=f'DROP ROLE "{role}"')
    total = sum(c[1] for c in counts)
    for path, n, unmarked in counts:
        note = f' (```sql not marked runnable: line {", ".join(map(str, unmarked))})' if unmarked else ''
        print(f'docs: {path}: {n} example{"" if n == 1 else "s"}{note}')
    also = f', {skipped} for other majors not run' if skipped else ''
    print(f"docs: PostgreSQL {major}: {total} example{'' if total == 1 else 's'} run, {failed} failed{also}")
    return 1 if failed else 0


if sys.argv[1] == 'conf':
    conf(sys.argv[2])
else:
    sys.exit(run(sys.argv[2:]))
PY
cd "$(dirname "$0")/.."
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
source scripts/pgcluster.sh
major=$("$PG_CONFIG" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
if [ $# -gt 0 ]; then files=("$@"); else files=(README.md docs/*.md); fi

work=$(mktemp -d /tmp/snowflake_id_docs.XXXXXX)
chmod 755 "$work"
trap 'pg_stop "$work/server" immediate; rm -rf "$work"' EXIT

# The server's configuration, from the README.
conf=$(python3 -c "$DOCS_PY" conf README.md) || exit 1
mapfile -t conf_lines <<<"$conf"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PG_INITDB_ARGS="--no-locale --encoding=UTF8" pg_init "$work/server" "$port" \
    "${conf_lines[@]}" "timezone = 'UTC'" "lc_messages = 'C'"
pg_start "$work/server"

start=$SECONDS
DOCS_MAJOR=$major DOCS_PSQL="$PG_BINDIR/psql" DOCS_HOST="$work/server" DOCS_PORT=$port \
    python3 -c "$DOCS_PY" run "${files[@]}" && status=0 || status=$?
echo "docs: PostgreSQL $major, $((SECONDS - start)) s"
exit $status
