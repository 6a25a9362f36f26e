#!/usr/bin/env bash
# The Debian package of one major (PG_CONFIG), as a user installs it: the extension's files
# that a build from this tree installed are removed first, so that the server has only what
# the package brings; `apt-get install ./postgresql-NN-snowflake-id_VERSION_amd64.deb`; the
# pg_regress specification against the installed files (installcheck, scripts/regress.sh);
# `apt-get remove`, after which none of the package's files is left.
#
# Debian's postgresql-15 satisfies the package's dependency on postgresql-15; for 17 and 18,
# built from source by scripts/pgsource.sh, a marker package provides postgresql-NN.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pgversions.sh
PG_CONFIG=${PG_CONFIG:-$PG15_CONFIG}
export PG_CONFIG
major=$(pg_major_of "$PG_CONFIG")
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml)
name="postgresql-$major-snowflake-id"
deb="$PWD/.build/packages/${name}_${version}_$(dpkg --print-architecture).deb"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

bash scripts/package.sh "$PG_CONFIG"
[ -f "$deb" ] || fail "no $deb"
dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Architecture\|Depends\|Installed-Size\):/  \1:/p'
contents=$(dpkg-deb --contents "$deb" | awk '{print $6}')
for want in "$("$PG_CONFIG" --pkglibdir)/snowflake_id.so" \
    "$("$PG_CONFIG" --sharedir)/extension/snowflake_id.control" \
    "$("$PG_CONFIG" --sharedir)/extension/snowflake_id--$version.sql" \
    "/usr/share/doc/$name/copyright"; do
    grep -qx ".$want" <<<"$contents" || fail "the package lacks $want"
done
for script in sql/snowflake_id--*.sql; do
    grep -qx ".$("$PG_CONFIG" --sharedir)/extension/$(basename "$script")" <<<"$contents" ||
        fail "the package lacks $(basename "$script")"
done
echo "ok: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB, $(grep -c . <<<"$contents") entries"

# What a build from the tree installed goes; the package brings its own. Not from under a
# server that has the library loaded (scripts/machine.sh; make test stops the demo first).
source scripts/machine.sh
[ -z "$(machine_users "$("$PG_CONFIG" --pkglibdir)")" ] ||
    fail "running servers have $("$PG_CONFIG" --pkglibdir)/snowflake_id.so loaded: $(machine_users "$("$PG_CONFIG" --pkglibdir)")"
# Only what scripts/machine.sh saves and puts back; run outside make test (no saved copy), it
# refuses rather than take a build away for good.
[ -n "${MACHINE_KEPT:-}" ] || fail "run through make test or scripts/machine.sh run: it removes the installed build"
rm -f "$("$PG_CONFIG" --pkglibdir)/snowflake_id.so" "$("$PG_CONFIG" --sharedir)"/extension/snowflake_id.control \
    "$("$PG_CONFIG" --sharedir)"/extension/snowflake_id--*.sql
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "$deb" >/dev/null 2>&1 || apt-get install -y "$deb" || fail "apt-get install failed"
dpkg-query -W -f='${Status} ${Version}\n' "$name" | grep -q "install ok installed $version" || fail "$name is not installed"
echo "ok: apt-get install ./$(basename "$deb")"

bash scripts/regress.sh || fail "pg_regress against the installed package"
echo "ok: installcheck against the package's files"

apt-get remove -y -qq "$name" >/dev/null 2>&1 || fail "apt-get remove failed"
left=$(ls "$("$PG_CONFIG" --pkglibdir)/snowflake_id.so" "$("$PG_CONFIG" --sharedir)"/extension/snowflake_id* \
    "/usr/share/doc/$name" 2>/dev/null || true)
[ -z "$left" ] || fail "left after removal: $left"
dpkg-query -W -f='${Status}\n' "$name" 2>/dev/null | grep -q "install ok installed" && fail "still installed"
echo "ok: apt-get remove $name left nothing behind"
echo "packages ($major): ok"
