"""The examples of docs/clients.md, run with the real client libraries against a server of the
extension; what each prints must be the ```text block the docs show after it.

    python3 tests/clients/run_docs.py DOC HOST PORT [SECTION...]

(tests/cluster/clients.sh starts the server and installs the libraries first.)

An example is a fenced block marked, right before it, by `<!-- runnable: client -->`; its
language is the fence's: sql (psql), python (the venv's), js (node, an ES module), java (one
source file, pgjdbc on the class path), rust (a program: fn main, built against clients/rust).
`<!-- runnable: client file=PATH -->` writes the block to PATH in the section's directory
instead of running it (a settings module, a model, a migration the next examples import).
A ```text block right after an example is what it must print (stdout); none: nothing. An
example must write nothing to stderr (a library's warning fails it).

Each `## ` section runs in order, in a directory and a database of its own (the extension
created in it), given as PGHOST, PGPORT, PGUSER, PGDATABASE and DATABASE_URL. A section
runs only if its libraries are there (.build/clients); missing ones fail the run.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, '.build', 'clients')
FENCE = re.compile(r'^(```+)\s*(\S*)\s*$')
MARKER = re.compile(r'^\s*<!--\s*runnable:\s*client\b(.*?)-->\s*$')
HEADING = re.compile(r'^## (.*)$')
LANGS = ('sql', 'python', 'js', 'java', 'rust')
TIMEOUT = 180


def parse(path):
    """[(section title, [(line, lang, code, file or None, expected lines)])]"""
    lines = open(path, encoding='utf-8').read().split('\n')
    sections, marker, pending, pending_end, i = [], None, None, 0, 0
    while i < len(lines):
        line = lines[i]
        h = HEADING.match(line)
        if h:
            sections.append((h.group(1).strip(), []))
        m = MARKER.match(line)
        if m:
            opts = dict(o.split('=', 1) for o in m.group(1).split() if '=' in o)
            marker = (i + 1, opts)
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            ticks, info = f.group(1), f.group(2).lower()
            j = i + 1
            while j < len(lines) and lines[j].strip() != ticks:
                j += 1
            if j == len(lines):
                sys.exit(f'{path}:{i + 1}: fenced block never closed')
            body = '\n'.join(lines[i + 1:j]) + '\n'
            if marker is not None:
                if info not in LANGS:
                    sys.exit(f'{path}:{marker[0]}: runnable block of unknown language "{info}"')
                if not sections:
                    sys.exit(f'{path}:{marker[0]}: runnable block before the first ## section')
                pending = [i + 1, info, body, marker[1].get('file'), []]
                sections[-1][1].append(pending)
                marker = None
            elif info == 'text' and pending is not None and not any(
                    s.strip() for s in lines[pending_end:i]):
                pending[4] = lines[i + 1:j]
                pending = None
            else:
                pending = None
            pending_end = j + 1
            i = j + 1
            continue
        if marker is not None and line.strip():
            sys.exit(f'{path}:{marker[0]}: runnable marker not right before a fenced block')
        i += 1
    return [(title, blocks) for title, blocks in sections if blocks]


def slug(title):
    return re.sub(r'[^a-z0-9]+', '_', title.lower()).strip('_')[:40]


def tidy(lines):
    out = [s.rstrip() for s in lines]
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


class Runner:
    def __init__(self, host, port, work):
        self.host, self.port, self.work = host, port, work
        self.psql = os.path.join(os.environ['PG_BINDIR'], 'psql')
        self.rust_bins = {}

    def env(self, db):
        env = {k: v for k, v in os.environ.items() if not k.startswith('PG')}
        env.update(PGHOST=self.host, PGPORT=str(self.port), PGUSER='postgres', PGDATABASE=db,
                   DATABASE_URL=f'postgresql://postgres@{self.host}:{self.port}/{db}',
                   PYTHONDONTWRITEBYTECODE='1')
        env['PATH'] = os.path.join(CACHE, 'venv', 'bin') + os.pathsep + env['PATH']
        return env

    def admin(self, sql):
        subprocess.run([self.psql, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', self.host,
                        '-p', str(self.port), '-U', 'postgres', '-d', 'postgres', '-c', sql],
                       check=True, capture_output=True, text=True)

    def command(self, lang, path, db):
        if lang == 'sql':
            return [self.psql, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=default',
                    '-h', self.host, '-p', str(self.port), '-U', 'postgres', '-d', db, '-f', path]
        if lang == 'python':
            return [os.path.join(CACHE, 'venv', 'bin', 'python'), path]
        if lang == 'js':
            return ['node', path]
        if lang == 'java':
            return ['java', '-cp', os.environ.get('PGJDBC_JAR', '/usr/share/java/postgresql.jar'),
                    path]
        if lang == 'rust':
            return [self.rust_bins[path]]
        raise ValueError(lang)

    def build_rust(self, programs):
        """Every rust example as a binary of one project depending on clients/rust, built once."""
        if not programs:
            return
        proj = os.path.join(CACHE, 'rust-docs')
        bins = os.path.join(proj, 'src', 'bin')
        shutil.rmtree(bins, ignore_errors=True)
        os.makedirs(bins)
        crate = os.path.join(ROOT, 'clients', 'rust')
        with open(os.path.join(crate, 'Cargo.toml')) as f:
            dev = f.read().split('[dev-dependencies]', 1)[1]
        with open(os.path.join(proj, 'Cargo.toml'), 'w') as f:
            f.write('[package]\nname = "snowflake-id-client-docs"\nversion = "0.0.0"\n'
                    'edition = "2021"\npublish = false\n\n[workspace]\n\n[dependencies]\n'
                    f'snowflake-id-client = {{ path = "{crate}" }}\n' + dev)
        # The crate's own lock: the same versions as its tests, nothing resolved anew.
        shutil.copy(os.path.join(crate, 'Cargo.lock'), os.path.join(proj, 'Cargo.lock'))
        for name, code in programs:
            with open(os.path.join(bins, name + '.rs'), 'w') as f:
                f.write(code)
        env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(CACHE, 'rust-target'))
        start = time.time()
        r = subprocess.run(['cargo', 'build', '--quiet', '--bins'],
                           cwd=proj, env=env, capture_output=True, text=True, timeout=900)
        if r.returncode:
            print(r.stderr)
            sys.exit('clients: the rust examples do not build')
        print(f'clients: rust examples built in {time.time() - start:.0f} s')
        for name, _ in programs:
            self.rust_bins[name] = os.path.join(env['CARGO_TARGET_DIR'], 'debug', name)

    def run(self, doc, only):
        sections = parse(doc)
        if only:
            sections = [s for s in sections if slug(s[0]) in only or s[0] in only]
        programs = []
        for title, blocks in sections:
            for n, b in enumerate(blocks):
                if b[1] == 'rust' and not b[3]:
                    programs.append((f'{slug(title)}_{n}', b[2]))
        self.build_rust(programs)
        failed = ran = 0
        for title, blocks in sections:
            s = slug(title)
            db = 'clients_' + s
            wd = os.path.join(self.work, s)
            os.makedirs(wd)
            nm = os.path.join(CACHE, 'node', 'node_modules')
            if os.path.isdir(nm):
                os.symlink(nm, os.path.join(wd, 'node_modules'))
            self.admin(f'DROP DATABASE IF EXISTS {db} WITH (FORCE)')
            self.admin(f'CREATE DATABASE {db}')
            self.admin(f'ALTER DATABASE {db} SET timezone = \'UTC\'')
            subprocess.run([self.psql, '-X', '-q', '-h', self.host, '-p', str(self.port),
                            '-U', 'postgres', '-d', db, '-c', 'CREATE EXTENSION snowflake_id'],
                           check=True)
            start = time.time()
            section_failed = 0
            for n, (line, lang, code, file, expected) in enumerate(blocks):
                if file:
                    path = os.path.join(wd, file)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, 'w') as f:
                        f.write(code)
                    continue
                ext = {'sql': 'sql', 'python': 'py', 'js': 'mjs', 'java': 'java', 'rust': 'rs'}[lang]
                path = os.path.join(wd, f'example_{n}.{ext}')
                with open(path, 'w') as f:
                    f.write(code)
                if lang == 'rust':
                    path = f'{s}_{n}'
                ran += 1
                try:
                    r = subprocess.run(self.command(lang, path, db), cwd=wd, env=self.env(db),
                                       capture_output=True, text=True, timeout=TIMEOUT)
                    out, err, rc = r.stdout, r.stderr, r.returncode
                except subprocess.TimeoutExpired as e:
                    out, err, rc = e.stdout or '', f'timed out after {TIMEOUT} s', -1
                if isinstance(out, bytes):
                    out = out.decode(errors='replace')
                if lang == 'sql':
                    out = re.sub(r'^psql:[^:]+:\d+: ', '', out + err, flags=re.M)
                    err = ''
                got, want = tidy(out.split('\n')), tidy(expected)
                # Nothing on stderr either: a library's warning (a deprecation) fails the example.
                if rc != 0 and lang != 'sql' or got != want or err.strip():
                    failed += 1
                    section_failed += 1
                    print(f'FAIL: {doc}:{line} ({title}, {lang}): '
                          + (f'exit status {rc}' if rc else 'prints something else than the docs show'
                             if got != want else 'writes to stderr'))
                    for d in difflib.unified_diff(want, got, 'the docs', 'printed', lineterm='', n=2):
                        print('  ' + d)
                    if err.strip():
                        print('  stderr:\n    ' + '\n    '.join(err.strip().split('\n')[-25:]))
            print(f'clients: {title}: {sum(1 for b in blocks if not b[3])} examples, '
                  f'{section_failed} failed ({time.time() - start:.1f} s)')
        print(f'clients: {ran} examples run, {failed} failed')
        return 1 if failed else 0


if __name__ == '__main__':
    doc, host, port = sys.argv[1:4]
    work = os.environ.get('CLIENTS_WORK') or os.path.join(CACHE, 'work')
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sys.exit(Runner(host, int(port), work).run(doc, set(sys.argv[4:])))
