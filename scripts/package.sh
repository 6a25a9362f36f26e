#!/usr/bin/env bash
# Builds the Debian package of the extension for each PostgreSQL major (or for the pg_configs
# given as arguments): postgresql-NN-snowflake-id_VERSION_amd64.deb in .build/packages. Each
# holds the library, the control file and every SQL script of sql/ (so that every released
# version stays installable and updatable), in the directories of that major's pg_config
# (Debian's layout), with a copyright file and a changelog; it depends on postgresql-NN and
# on the shared libraries the library needs (dpkg-shlibdeps).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pgversions.sh
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml)
out=$PWD/.build/packages
mkdir -p "$out"
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=("${PG_CONFIGS[@]}")
maintainer="$(git log -1 --format='%an <%ae>' 2>/dev/null || echo 'snowflake_id developers <root@localhost>')"

for pg_config in "${configs[@]}"; do
    major=$(pg_major_of "$pg_config")
    name="postgresql-$major-snowflake-id"
    stage=$(mktemp -d "$out/.stage-$major.XXXXXX")
    trap 'rm -rf "$stage"' EXIT
    if [ "$major" = 15 ]; then unset CARGO_TARGET_DIR; else export CARGO_TARGET_DIR="$PWD/target/pg$major"; fi
    CARGO="$PWD/scripts/cargo-ignoring-rust-version" cargo-pgrx pgrx package --pg-config "$pg_config" \
        --out-dir "$stage/root" >".build/package-$major.log" 2>&1 ||
        { tail -n 30 ".build/package-$major.log"; exit 1; }
    root=$stage/root
    ext="$root$("$pg_config" --sharedir)/extension"
    lib="$root$("$pg_config" --pkglibdir)"
    [ -f "$lib/snowflake_id.so" ] && [ -f "$ext/snowflake_id.control" ] ||
        { echo "package: cargo pgrx package gave no library or control file for $major" >&2; exit 1; }
    cp sql/snowflake_id--*.sql "$ext/"
    doc="$root/usr/share/doc/$name"
    mkdir -p "$doc" "$root/DEBIAN"
    {
        echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
        echo "Upstream-Name: snowflake_id"
        echo
        echo "Files: *"
        echo "Copyright: $(date +%Y) The snowflake_id developers"
        echo "License: PostgreSQL"
        sed 's/^$/./; s/^/ /' LICENSE
    } >"$doc/copyright"
    {
        echo "$name ($version) unstable; urgency=medium"
        echo
        echo "  * snowflake_id $version for PostgreSQL $major."
        echo
        echo " -- $maintainer  $(date -R)"
    } | gzip -9n >"$doc/changelog.gz"
    find "$root" -type d -exec chmod 755 {} +
    find "$root" -type f -exec chmod 644 {} +
    # The library's own dependencies, as dpkg-shlibdeps finds them (it wants a debian/control).
    mkdir -p "$stage/shlibs/debian"
    printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$name" "$name" >"$stage/shlibs/debian/control"
    shlibs=$(cd "$stage/shlibs" && dpkg-shlibdeps -O "$lib/snowflake_id.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
    cat >"$root/DEBIAN/control" <<EOF
Package: $name
Version: $version
Architecture: $(dpkg --print-architecture)
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: postgresql-$major${shlibs:+, $shlibs}
Section: database
Priority: optional
Description: time-ordered 64-bit IDs and a 12-byte gdid type for PostgreSQL $major
 snowflake_id generates 64-bit time-ordered IDs (snowflake_next) from lock-free
 shared memory with a durable lease, and provides gdid, a 12-byte type (era,
 authority, counter) with its generator, operators, indexes and compact
 encodings. The library must be in shared_preload_libraries, and every server
 needs its own snowflake.node_id and gdid.authority (see the README).
EOF
    (cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
    chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
    deb="$out/${name}_${version}_$(dpkg --print-architecture).deb"
    dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
    rm -rf "$stage"
    trap - EXIT
    echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"
done
