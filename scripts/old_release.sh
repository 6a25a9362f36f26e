#!/usr/bin/env bash
# An earlier release of the extension, installed into a private copy of a PostgreSQL
# installation, for the tests that start from it (tests/cluster/update_from_0_3.sh,
# pg_upgrade_majors.sh). Prints the copy's pg_config; its bindir runs servers with that
# release's library and scripts, while the PostgreSQL it was copied from keeps the current one.
#
#   old_release.sh VERSION PG_CONFIG
#
# VERSION is a release below (its commit in this repository's history), PG_CONFIG the
# PostgreSQL to copy (pgversions.sh). Everything is cached under .build/releases/VERSION/:
#   src/             the release's tree (git archive of its commit)
#   ../target-pgrxV-PGVER/  the cargo target directory of every release on pgrx V for a
#                    PostgreSQL version (15.20, 15.18, ...), kept (about 1 GB); seeded from
#                    the current build's when the current release is on pgrx V too
#   pg-PGVER/        the private installation: PG_CONFIG's directories copied to the same
#                    absolute paths below it (PostgreSQL finds its files relative to its
#                    bindir, so the copy is self-contained; Debian's split layout included),
#                    the current release's files of the extension replaced by VERSION's
# A second run finds pg-PGVER/ complete and only prints its pg_config. Stale copies (the
# PostgreSQL they were copied from since rebuilt to another version) are never reused: the
# version is part of the name.
#
# The release's library is built with the original PG_CONFIG, so that pgrx's bindings are
# those the current build's target directory already holds (when the release's pgrx is the
# current one's; otherwise they are built once, into its own target directory).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# The commit of each release that tests start from.
declare -A releases=(
    [0.3.0]=52809a412ed7efb54ac03ad351182303960d8f63
    [0.4.0]=2f47eb25eb88be16ad43733c6210869d88fe40fd
)

[ $# -eq 2 ] || { echo "usage: $0 VERSION PG_CONFIG" >&2; exit 2; }
version=$1
pg_config=$2
commit=${releases[$version]:-}
[ -n "$commit" ] || { echo "old_release: no release $version (known: ${!releases[*]})" >&2; exit 2; }
[ -x "$pg_config" ] || { echo "old_release: no pg_config at $pg_config" >&2; exit 2; }
pgver=$("$pg_config" --version | sed 's/^PostgreSQL \([0-9.]*\).*/\1/')
major=${pgver%%.*}

cache=$root/.build/releases/$version
install=$cache/pg-$pgver
bindir=$("$pg_config" --bindir)
pkglibdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

if [ -f "$install/.complete" ]; then
    echo "$install$bindir/pg_config"
    exit 0
fi
start=$SECONDS
log=$cache/build-$pgver.log
: >"$log"

# The release's source.
src=$cache/src
if [ "$(cat "$src/.commit" 2>/dev/null)" != "$commit" ]; then
    git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null ||
        { echo "old_release: commit $commit ($version) is not in this clone (a shallow clone? fetch its history)" >&2; exit 1; }
    rm -rf "$src"
    mkdir -p "$src"
    git -C "$root" archive "$commit" | tar -x -C "$src"
    echo "$commit" >"$src/.commit"
fi

# A release on an older pgrx is built on the current one, when its code builds there as it
# is (0.3.0 and 0.4.0, on 0.18.1, need no change for 0.19): the same code, and a build that
# reuses the current build's dependencies (seconds, where building an older pgrx for each
# PostgreSQL version takes minutes) and needs only the current cargo-pgrx's toolchain.
pgrx_of() { sed -n 's/^pgrx = "=\(.*\)"/\1/p' "$1/Cargo.toml"; }
if [ "$(pgrx_of "$src")" != "$(pgrx_of "$root")" ]; then
    sed -i "s/^pgrx = \"=.*\"/pgrx = \"=$(pgrx_of "$root")\"/" "$src/Cargo.toml"
    cp "$root/Cargo.lock" "$src/Cargo.lock"
fi

# Its target directory: one per pgrx version and PostgreSQL version, shared by the releases
# on that pgrx and kept (about 1 GB each), since its dependencies take minutes to build.
# Seeded from the current build's for this major (scripts/install.sh: target/ for 15,
# target/pgNN otherwise) when the release's pgrx is the current one's, without the current
# crate's own artifacts. A plain copy, not hard links: the build writes into it.
target=$root/.build/releases/target-pgrx$(pgrx_of "$src")-$pgver
main_target=$root/target
[ "$major" = 15 ] || main_target=$root/target/pg$major
if [ ! -d "$target/release" ] && [ -d "$main_target/release/deps" ] && [ "$(pgrx_of "$src")" = "$(pgrx_of "$root")" ]; then
    seed=$SECONDS
    mkdir -p "$target/release"
    for d in .fingerprint build deps; do
        [ -d "$main_target/release/$d" ] || continue
        mkdir -p "$target/release/$d"
        find "$main_target/release/$d" -mindepth 1 -maxdepth 1 ! -name '*snowflake_id*' ! -name 'pgrx_embed*' \
            -exec cp -a --reflink=auto -t "$target/release/$d" {} +
    done
    echo "old_release: target directory seeded from $main_target in $((SECONDS - seed)) s ($(du -sh "$target" | cut -f1))" >&2
fi

# The library, built by cargo as cargo-pgrx would build it (a release's pgrx may not be the
# cargo-pgrx installed here: only the current release's is), and its control file; its install
# script is the one the current tree's sql/ keeps for every release.
stage=$cache/stage-$pgver
rm -rf "$stage"
mkdir -p "$stage"
build=$SECONDS
echo "old_release: building snowflake_id $version for PostgreSQL $pgver (log: $log)" >&2
(cd "$src" && CARGO_TARGET_DIR=$target PGRX_PG_CONFIG_PATH=$pg_config \
    cargo build --ignore-rust-version --release --lib --no-default-features --features "pg$major") >>"$log" 2>&1 ||
    { tail -n 40 "$log" >&2; echo "old_release: building $version failed" >&2; exit 1; }
built=$((SECONDS - build))
cp "$target/release/libsnowflake_id.so" "$stage/snowflake_id.so"
sed "s/@CARGO_VERSION@/$version/" "$src/snowflake_id.control" >"$stage/snowflake_id.control"
[ -f "$root/sql/snowflake_id--$version.sql" ] ||
    { echo "old_release: sql/ has no install script of $version" >&2; exit 1; }

# The private installation: every directory of PG_CONFIG's installation at its own absolute
# path below $install. The tree around bindir (Debian: /usr/lib/postgresql/NN, with lib/;
# a prefix of its own: all of it) and the shared files if they lie outside it (Debian:
# /usr/share/postgresql/NN). Libraries outside both (Debian 15's libpq in the system's
# libdir) are found where they are.
rm -rf "$install"
tmp=$cache/.pg-$pgver.tmp
rm -rf "$tmp"
home=$(dirname "$bindir")
for dir in "$home" "$sharedir"; do
    case $dir/ in "$home"/?*) continue ;; esac
    mkdir -p "$tmp$(dirname "$dir")"
    cp -a "$dir" "$tmp$dir"
done
[ -d "$tmp$pkglibdir" ] || { echo "old_release: $pkglibdir is outside $home and $sharedir" >&2; exit 1; }
# The current release's files out, the old release's in: its library, control file, and the
# scripts up to it (install scripts of every release to it, update scripts between them).
rm -f "$tmp$pkglibdir"/snowflake_id*.so "$tmp$sharedir/extension"/snowflake_id*
cp "$stage/snowflake_id.so" "$tmp$pkglibdir/"
cp "$stage/snowflake_id.control" "$tmp$sharedir/extension/"
cp "$src"/sql/snowflake_id--*.sql "$tmp$sharedir/extension/"
cp "$root/sql/snowflake_id--$version.sql" "$tmp$sharedir/extension/"
rm -rf "$stage"
# The copy must find its own files (relocation), and servers run as postgres.
[ "$("$tmp$bindir/pg_config" --pkglibdir)" = "$tmp$pkglibdir" ] ||
    { echo "old_release: the copy of $bindir does not find its own libraries" >&2; exit 1; }
chmod -R a+rX "$tmp"
mv "$tmp" "$install"
[ "$("$install$bindir/pg_config" --sharedir)" = "$install$sharedir" ] ||
    { echo "old_release: the copy of $bindir does not find its shared files" >&2; exit 1; }
if ! runuser -u postgres -- test -x "$install$bindir/postgres"; then
    echo "old_release: postgres cannot run $install$bindir/postgres (a directory above it not searchable?)" >&2
    exit 1
fi
touch "$install/.complete"
echo "figures: old_release: snowflake_id $version for PostgreSQL $pgver built in $built s, ready in $((SECONDS - start)) s" >&2
echo "$install$bindir/pg_config"
