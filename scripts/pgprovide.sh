#!/usr/bin/env bash
# Makes a PostgreSQL major installed in Debian's layout (/usr/lib/postgresql/NN) by this
# project's scripts known to dpkg as providing postgresql-NN, so that a package that depends
# on that major (ours, from `make package`) installs with apt. The marker package holds no
# files; run again, it does nothing.
#
#   pgprovide.sh MAJOR SCRIPT WHAT
#
# SCRIPT names the script that installed the server, WHAT how ("built from Debian's source
# package", "unpacked from Debian's binary packages").
set -euo pipefail
major=$1
script=$2
what=$3
prefix=/usr/lib/postgresql/$major
marker="postgresql-$major-snowflake-id-build"
for old in "postgresql-$major-built-from-source" "$marker"; do
    dpkg-query -W -f='${Status}' "$old" 2>/dev/null | grep -q "install ok installed" && exit 0
done
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$dir.deb"' EXIT
mkdir -p "$dir/DEBIAN"
{
    echo "Package: $marker"
    echo "Version: $("$prefix/bin/pg_config" --version | sed 's/^PostgreSQL \([0-9.]*\).*/\1/')"
    echo "Architecture: all"
    echo "Maintainer: snowflake_id's $script <root@localhost>"
    echo "Provides: postgresql-$major"
    echo "Section: database"
    echo "Priority: optional"
    echo "Description: PostgreSQL $major $what"
    echo " A marker holding no files: the server in $prefix was $what"
    echo " by snowflake_id's $script."
} >"$dir/DEBIAN/control"
dpkg-deb --root-owner-group --build "$dir" "$dir.deb" >/dev/null
dpkg -i "$dir.deb" >/dev/null
