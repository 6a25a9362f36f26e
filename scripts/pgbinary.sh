#!/usr/bin/env bash
# Installs a PostgreSQL major from Debian's *binary* packages into Debian's layout, for a
# major whose source package the archive's pool does not hold (November 2026: the
# experimental index names postgresql-19 19~beta2-1 and 19~rc1-1, the pool holds neither
# .dsc nor .orig.tar.bz2, but it does hold the 19~rc1-1 .debs), on a Debian older than the
# one the packages were built for (Debian 12: glibc 2.36; postgresql-19 19~rc1-1 needs glibc
# 2.43, ICU 78, libxml2.so.16, OpenSSL 3.4+).
#
#   pgbinary.sh PACKAGE SUITE VERSION [RUNTIME_SUITE]
#   pgbinary.sh postgresql-19 experimental 19~rc1-1 sid
#
# What it does, all checked against the archive's signed indexes (gpgv with Debian's archive
# keyring, then SHA256 of Packages.xz from InRelease, then SHA256 of every .deb from
# Packages):
#   - unpacks postgresql-NN, postgresql-client-NN and postgresql-server-dev-NN of VERSION into
#     /: /usr/lib/postgresql/NN/{bin,lib}, /usr/share/postgresql/NN,
#     /usr/include/postgresql/NN/server (exactly the layout pgsource.sh gives);
#   - unpacks the shared libraries they depend on (the Depends closure over library
#     packages, from RUNTIME_SUITE, libpq5 from SUITE) into /usr/lib/postgresql/NN/runtime,
#     never into the system's own library directories;
#   - points every executable of /usr/lib/postgresql/NN at that runtime: ELF interpreter
#     RUNTIME/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 and a DT_RPATH (which, unlike
#     DT_RUNPATH, also serves the libraries loaded later, our extension included).
# The machine's apt configuration is not touched. The mirror comes from the machine's own
# apt sources (never named here).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
package=$1
suite=$2
version=$3
runtime_suite=${4:-sid}
major=${package#postgresql-}
prefix=/usr/lib/postgresql/$major
runtime=$prefix/runtime
arch=$(dpkg --print-architecture)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

provide() {
    bash "$here/pgprovide.sh" "$major" scripts/pgbinary.sh "unpacked from Debian's binary packages"
}
if [ -x "$prefix/bin/pg_config" ] && "$prefix/bin/pg_config" --version >/dev/null 2>&1; then
    provide
    exit 0
fi
command -v patchelf >/dev/null || { apt-get install -y -qq --no-install-recommends patchelf >/dev/null; }

uri=$(python3 - <<'PY'
import glob, re
codename = dict(l.strip().split("=", 1) for l in open("/etc/os-release") if "=" in l)["VERSION_CODENAME"].strip('"')
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        f = dict((k.strip().lower(), v.strip()) for k, v in
                 (l.split(":", 1) for l in stanza.splitlines() if ":" in l and not l.startswith("#")))
        if "deb" in f.get("types", "").split() and codename in f.get("suites", "").split():
            print(f["uris"].split()[0]); raise SystemExit
for line in open("/etc/apt/sources.list") if glob.glob("/etc/apt/sources.list") else []:
    m = re.match(r"\s*deb\s+(\[[^\]]*\]\s+)?(\S+)\s+" + codename + r"\s", line)
    if m:
        print(m.group(2)); raise SystemExit
raise SystemExit("no apt source for Debian " + codename)
PY
)

work=$(mktemp -d /var/tmp/snowflake_id_pgbinary.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

index() { # SUITE: verified Packages of SUITE in $work/Packages-SUITE
    curl -sf -o "InRelease-$1" "$uri/dists/$1/InRelease"
    gpgv --keyring "$keyring" "InRelease-$1" 2>/dev/null || { echo "pgbinary: bad signature on $1" >&2; exit 1; }
    local want
    want=$(awk -v f="main/binary-$arch/Packages.xz" '/^SHA256:/{s=1;next} /^[A-Z]/{s=0} s&&$3==f{print $1}' "InRelease-$1")
    curl -sf -o "Packages-$1.xz" "$uri/dists/$1/main/binary-$arch/Packages.xz"
    echo "$want  Packages-$1.xz" | sha256sum -c --quiet
    xz -dc "Packages-$1.xz" >"Packages-$1"
}
index "$suite"
[ "$runtime_suite" = "$suite" ] || index "$runtime_suite"

# The .debs to fetch: the server's three at VERSION from SUITE, then the closure of their
# library dependencies (RUNTIME_SUITE; libpq5 at VERSION from SUITE).
python3 - "$suite" "$runtime_suite" "$package" "$version" >debs.txt <<'PY'
import re, sys
suite, rsuite, package, version = sys.argv[1:]
major = package.split("-")[1]
def parse(path):
    out = {}
    for st in open(path).read().split("\n\n"):
        f = {}
        for line in st.splitlines():
            if line and not line[0].isspace() and ":" in line:
                k, v = line.split(":", 1); f[k] = v.strip()
        if "Package" in f:
            out.setdefault(f["Package"], []).append(f)
    return out
main, rt = parse(f"Packages-{suite}"), parse(f"Packages-{rsuite}")
def pick(idx, name, ver=None):
    for f in idx.get(name, []):
        if ver is None or f["Version"] == ver:
            return f
want = [pick(main, p, version) for p in (package, f"postgresql-client-{major}", f"postgresql-server-dev-{major}", "libpq5")]
if None in want:
    sys.exit(f"{package} {version}: not every package in the {suite} index")
skip = re.compile(r"^(postgresql-common|postgresql-client-common|locales|locales-all|ssl-cert|tzdata|debconf|debconf-2.0|"
                  r"clang-.*|llvm-.*|libpq-dev|perl.*|sensible-utils|ucf|lsb-base|sysvinit-utils|adduser|readline-common|"
                  r"libc-bin|libc-dev-bin|libc6-dev|.*-dev|libllvm.*|libclang.*|debianutils|init-system-helpers)$")
seen, todo = {f["Package"]: f for f in want}, list(want)
while todo:
    f = todo.pop()
    for alt in re.split(r",\s*", f.get("Depends", "") + ("," + f["Pre-Depends"] if "Pre-Depends" in f else "")):
        if not alt.strip():
            continue
        name = alt.split("|")[0].strip().split()[0].split(":")[0]
        if name in seen or skip.match(name):
            continue
        g = pick(rt, name)
        if g is None:
            continue  # virtual or not a library: the system's
        seen[name] = g
        todo.append(g)
for f in seen.values():
    print(f["Package"], f["Version"], f["Filename"], f["SHA256"])
PY

mkdir -p debs
while read -r name ver file sha; do
    curl -sf -o "debs/$(basename "$file")" "$uri/$file" || { echo "pgbinary: $file not in the pool" >&2; exit 1; }
    echo "$sha  debs/$(basename "$file")" | sha256sum -c --quiet
done <debs.txt
echo "pgbinary: $(wc -l <debs.txt) packages verified: $(awk '{printf "%s=%s ", $1, $2}' debs.txt)"

server=(${package} postgresql-client-${major} postgresql-server-dev-${major})
mkdir -p "$runtime"
while read -r name ver file sha; do
    deb="debs/$(basename "$file")"
    if printf '%s\n' "${server[@]}" | grep -qx "$name"; then
        # Only the major's own directories: not /usr/bin links, docs or the system's libpq.
        mkdir -p x && dpkg-deb -x "$deb" x
    else
        dpkg-deb -x "$deb" "$runtime"
    fi
done <debs.txt
cp -a x/usr/lib/postgresql/"$major" /usr/lib/postgresql/
mkdir -p /usr/share/postgresql /usr/include/postgresql
cp -a x/usr/share/postgresql/"$major" /usr/share/postgresql/
cp -a x/usr/include/postgresql/"$major" /usr/include/postgresql/

ld=$runtime/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[ -e "$ld" ] || ld=$runtime/lib64/ld-linux-x86-64.so.2
rpath=$runtime/usr/lib/x86_64-linux-gnu:$runtime/lib/x86_64-linux-gnu:$prefix/lib
while IFS= read -r -d '' f; do
    head -c 4 "$f" | grep -q $'\x7fELF' || continue
    if readelf -l "$f" 2>/dev/null | grep -q 'Requesting program interpreter'; then
        patchelf --set-interpreter "$ld" "$f"
    fi
    patchelf --force-rpath --set-rpath "$rpath" "$f"
done < <(find "$prefix/bin" "$prefix/lib" -type f -print0)
"$prefix/bin/pg_config" --version
provide
