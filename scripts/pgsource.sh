#!/usr/bin/env bash
# Builds a PostgreSQL release from Debian's source package and installs it, once: run again
# with the same arguments, it finds the installation and does nothing.
#
#   pgsource.sh PACKAGE SUITE VERSION PREFIX
#
# PACKAGE is a Debian source package (postgresql-17), SUITE the Debian suite that has it
# (trixie, sid, bookworm), VERSION the Debian version to build. PREFIX is where it goes:
# /usr/lib/postgresql/NN puts it in Debian's layout (bin and lib there, shared files in
# /usr/share/postgresql/NN, headers where `pg_config --includedir-server` says,
# /usr/include/postgresql/NN/server); any other prefix holds everything below itself.
#
# The source comes from the archive this machine already uses: a deb-src entry is derived
# from the URIs of its apt sources for Debian's main archive, with the suites needed, in a
# file of its own, and `apt-get source` fetches and checks it. An archive's index can name a
# version its pool no longer holds, or the pool can hold a version the index no longer
# names (seen in November 2026: trixie's index named postgresql-17 17.12, whose files were
# not in the pool, while 17.11's were); then the .dsc is taken from the pool directly and
# accepted only with a good signature from the Debian keyring (package debian-keyring),
# and dpkg-source checks every file against it. Debian's patches are applied (dpkg-source), the server, the
# contrib modules and pg_regress built and installed; libpq goes below PREFIX too, so that
# the system's libpq is never touched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

package=$1
suite=$2
version=$3
prefix=$4
major=$(sed 's/^postgresql-//' <<<"$package")

# A build in Debian's layout is made known to dpkg as providing postgresql-NN.
provide() {
    [ "$prefix" = "/usr/lib/postgresql/$major" ] || return 0
    bash "$here/pgprovide.sh" "$major" scripts/pgsource.sh "built from Debian's source package"
}

if [ -x "$prefix/bin/pg_config" ]; then
    provide
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
build_deps=(dpkg-dev debian-keyring curl bison flex libreadline-dev zlib1g-dev libicu-dev libssl-dev
    pkg-config)
missing=()
for p in "${build_deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A deb-src entry for the suite: the same URIs and keyring as the machine's entry for the
# Debian main archive (the one that lists this release's own suite, not -security).
list=/etc/apt/sources.list.d/snowflake-id-source.sources
if ! grep -qsw "$suite" "$list"; then
    python3 - "$suite" "$list" <<'PY'
import glob, os, re, sys
suite, out = sys.argv[1], sys.argv[2]
codename = dict(l.strip().split("=", 1) for l in open("/etc/os-release") if "=" in l)["VERSION_CODENAME"].strip('"')
entries = []  # (uris, signed_by)


def debian_keyring(signed_by):
    # Debian's archive: no keyring of its own named (apt's trusted ones), or Debian's. A
    # third-party repository for the same codename (its own keyring, its own components)
    # holds no PostgreSQL sources, and apt would fail on a deb-src entry made from it.
    return signed_by is None or "debian-archive" in signed_by


for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    if path == out:
        continue
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.strip()
        if ("deb" in fields.get("types", "").split() and codename in fields.get("suites", "").split()
                and "main" in fields.get("components", "").split()
                and debian_keyring(fields.get("signed-by"))):
            entries.append((fields["uris"].split(), fields.get("signed-by")))
for path in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list"):
    if not os.path.exists(path):
        continue
    for line in open(path):
        m = re.match(r"\s*deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)", line)
        if m and m.group(3) == codename and "main" in m.group(4).split():
            opts = m.group(1) or ""
            sb = re.search(r"signed-by=(\S+?)[\]\s]", opts)
            if debian_keyring(sb.group(1) if sb else None):
                entries.append(([m.group(2)], sb.group(1) if sb else None))
entries = [e for i, e in enumerate(entries) if e not in entries[:i]]
if not entries:
    sys.exit(f"no apt source for Debian {codename} to derive a deb-src entry from")
suites = set()
if os.path.exists(out):
    for line in open(out):
        if line.startswith("Suites:"):
            suites.update(line.split(":", 1)[1].split())
suites.add(suite)
with open(out, "w") as f:
    f.write("# Written by snowflake_id's scripts/pgsource.sh: source packages of PostgreSQL,\n")
    f.write("# from the archive the entries of this machine name.\n")
    for uris, signed_by in entries:
        f.write("Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\n" % (" ".join(uris), " ".join(sorted(suites))))
        if signed_by:
            f.write("Signed-By: %s\n" % signed_by)
        f.write("\n")
PY
    # An entry apt cannot use would break every later apt-get update on this machine.
    apt-get update -qq || { rm -f "$list"; apt-get update -qq || true; echo "pgsource: apt could not use the deb-src entry derived from this machine's sources" >&2; exit 1; }
fi

work=$(mktemp -d /var/tmp/snowflake_id_pgsource.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cd "$work"
echo "pgsource: fetching $package $version ($suite)"
if ! apt-get source -qq --only-source "$package=$version" >apt.log 2>&1; then
    # Not in the index, or not in the pool: the signed .dsc from the pool of each URI.
    dsc="${package}_${version#*:}.dsc"
    fetched=""
    for uri in $(sed -n 's/^URIs: //p' "$list"); do
        pool="$uri/pool/main/${package:0:1}/$package"
        if curl -sfL -o "$dsc" "$pool/${dsc//+/%2b}" &&
            gpgv --keyring /usr/share/keyrings/debian-keyring.gpg "$dsc" 2>/dev/null; then
            for f in $(awk '/^Files:/{f=1; next} /^[^ ]/{f=0} f{print $3}' "$dsc"); do
                curl -sfL -o "$f" "$pool/${f//+/%2b}" || { fetched=""; break; }
                fetched=yes
            done
        fi
        [ -n "$fetched" ] && break
    done
    if [ -z "$fetched" ]; then
        cat apt.log >&2
        echo "pgsource: $package $version is neither in the index nor, signed, in the pool" >&2
        exit 1
    fi
    dpkg-source --require-valid-signature -x "$dsc" >/dev/null
fi
src=$(find . -maxdepth 1 -mindepth 1 -type d -name "$package-*" | head -n 1)
[ -n "$src" ] || { echo "pgsource: no $package directory after fetching" >&2; exit 1; }
cd "$src"
got=$(dpkg-parsechangelog -S Version)
echo "pgsource: building $package $got into $prefix (about 5 minutes on 2 cores)"

layout=()
paths=()
if [ "$prefix" = "/usr/lib/postgresql/$major" ]; then
    # Debian's layout: the server's headers in /usr/include/postgresql/NN/server; the client
    # headers, which Debian's libpq-dev owns in /usr/include/postgresql, stay below PREFIX.
    layout=(--datadir="/usr/share/postgresql/$major" --includedir="$prefix/include"
        --libdir="$prefix/lib" --docdir="/usr/share/doc/postgresql-doc-$major")
    paths=(includedir_server="/usr/include/postgresql/$major/server")
fi
# PostgreSQL refuses to build as root only in its tests; the build itself is fine.
./configure --prefix="$prefix" "${layout[@]}" --with-icu --with-openssl \
    --with-system-tzdata=/usr/share/zoneinfo --with-extra-version=" (Debian $got, snowflake_id build)" \
    CFLAGS="-O2 -g" >configure.log 2>&1 || { tail -n 30 configure.log; exit 1; }
jobs=$(nproc)
# Run from `make test`, this script inherits the outer make's level: PostgreSQL's makefiles
# generate their headers only at level 0.
unset MAKELEVEL MAKEFLAGS MFLAGS
make -s -j"$jobs" "${paths[@]}" >build.log 2>&1 || { grep -m 20 -B 2 -A 8 'error' build.log; exit 1; }
make -s -j"$jobs" -C contrib "${paths[@]}" >>build.log 2>&1 || { grep -m 20 -B 2 -A 8 'error' build.log; exit 1; }
make -s install "${paths[@]}" >>build.log 2>&1
make -s -C contrib install "${paths[@]}" >>build.log 2>&1
make -s -C src/test/regress install "${paths[@]}" >>build.log 2>&1
provide
"$prefix/bin/pg_config" --version
