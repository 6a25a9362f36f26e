#!/usr/bin/env bash
# Builds pg_partman 5 for the PostgreSQL of a pg_config from Debian's source package
# pg-partman, once (run again, it finds it installed and does nothing):
#
#   partman.sh PG_CONFIG
#
# Only the upstream tarball of the source package is taken (`apt-get source --tar-only`,
# checked by apt against the archive's signed index): Debian's packaging part is not needed
# to build an extension with PGXS, and the archive's pool lacked it for this version in
# November 2026. The deb-src entry is scripts/pgsource.sh's, for sid.
set -euo pipefail
PG_CONFIG=$1
VERSION=5.5.0
PACKAGE_VERSION=$VERSION-1
control="$("$PG_CONFIG" --sharedir)/extension/pg_partman.control"
if grep -qs "default_version = '$VERSION'" "$control"; then
    exit 0
fi
list=/etc/apt/sources.list.d/snowflake-id-source.sources
grep -qsw sid "$list" || { echo "partman: no deb-src entry for sid ($list): run scripts/setup.sh" >&2; exit 1; }
work=$(mktemp -d /var/tmp/snowflake_id_partman.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "partman: building pg_partman $VERSION for $("$PG_CONFIG" --version)"
apt-get source -qq --tar-only --only-source "pg-partman=$PACKAGE_VERSION" >apt.log 2>&1 ||
    { cat apt.log >&2; exit 1; }
tar xzf "pg-partman_$VERSION.orig.tar.gz"
src=$(find . -maxdepth 1 -mindepth 1 -type d | head -n 1)
unset MAKELEVEL MAKEFLAGS MFLAGS
# The server's compiler flags, less those this machine's compiler does not know (19's
# binary packages were built by a newer gcc), and no LLVM bitcode (no JIT here).
cflags=()
for flag in $("$PG_CONFIG" --cflags); do
    if echo 'int x;' | ${CC:-gcc} -Werror "$flag" -x c -c -o /dev/null - 2>/dev/null; then
        cflags+=("$flag")
    fi
done
# PGXS puts the server headers under --pkgincludedir, which for these builds is not where
# Debian's layout (and pg_config --includedir-server) has them.
make -s -C "$src" PG_CONFIG="$PG_CONFIG" CFLAGS="${cflags[*]}" with_llvm=no \
    includedir_server="$("$PG_CONFIG" --includedir-server)" install >build.log 2>&1 || { tail -n 30 build.log >&2; exit 1; }
grep -q "default_version = '$VERSION'" "$control" || { echo "partman: $control is not $VERSION" >&2; exit 1; }
