#!/usr/bin/env bash
# The source archive PGXN takes: .build/snowflake_id-VERSION.zip, every file of the commit
# checked out (git archive), below a directory snowflake_id-VERSION/, with META.json at its
# top. META.json is checked first against PGXN's meta-spec 1.0.0 (the mandatory fields and
# their forms) and against the tree: its version and the version it gives the extension are
# Cargo.toml's, its license is Cargo.toml's, and the files it names exist.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml)
python3 - "$version" <<'PY'
import json, os, re, sys
version = sys.argv[1]
meta = json.load(open("META.json"))
errors = []
def need(cond, msg):
    if not cond:
        errors.append(msg)
semver = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+)?$")
for field in ("name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"):
    need(field in meta, f"mandatory field {field!r} missing")
need(isinstance(meta.get("name"), str) and re.fullmatch(r"[^/\\\s]{2,}", meta.get("name", "")) is not None,
     "name: at least two characters, no slash, backslash or space")
need(semver.match(str(meta.get("version", ""))) is not None, "version: not a semantic version")
need(meta.get("version") == version, f"version {meta.get('version')} is not Cargo.toml's {version}")
need(isinstance(meta.get("abstract"), str) and meta["abstract"].strip() != "", "abstract: a non-empty string")
m = meta.get("maintainer")
need(isinstance(m, str) or (isinstance(m, list) and m and all(isinstance(x, str) for x in m)),
     "maintainer: a string or a list of strings")
licenses = {"agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd", "gfdl_1_2",
            "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1",
            "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
            "restricted", "unrestricted", "unknown"}
lic = meta.get("license")
need(lic in licenses or (isinstance(lic, list) and all(l in licenses for l in lic)) or isinstance(lic, dict),
     f"license: {lic!r} is not a license name of the spec")
cargo_license = re.search(r'^license = "(.*)"', open("Cargo.toml").read(), re.M).group(1)
need(lic == cargo_license.lower(), f"license {lic!r} is not Cargo.toml's {cargo_license!r}")
provides = meta.get("provides", {})
need(isinstance(provides, dict) and provides, "provides: at least one extension")
for ext, p in provides.items():
    need(isinstance(p, dict) and semver.match(str(p.get("version", ""))) is not None,
         f"provides.{ext}.version: not a semantic version")
    need(p.get("version") == version, f"provides.{ext}.version is not Cargo.toml's {version}")
    for f in ("file", "docfile"):
        if f in p:
            need(os.path.isfile(p[f]), f"provides.{ext}.{f}: no file {p[f]}")
spec = meta.get("meta-spec", {})
need(isinstance(spec, dict) and spec.get("version") == "1.0.0", "meta-spec.version must be 1.0.0")
need(meta.get("release_status", "stable") in ("stable", "testing", "unstable"), "release_status: stable, testing or unstable")
for kind, phases in meta.get("prereqs", {}).items():
    need(kind in ("configure", "build", "test", "runtime", "develop"), f"prereqs: unknown phase {kind}")
    for rel, reqs in phases.items():
        need(rel in ("requires", "recommends", "suggests", "conflicts"), f"prereqs.{kind}: unknown relation {rel}")
        for name, v in reqs.items():
            need(isinstance(v, str) and v != "", f"prereqs.{kind}.{rel}.{name}: a version string")
control = open("snowflake_id.control").read()
need("snowflake_id" in provides, "provides must name the extension of snowflake_id.control")
if errors:
    print("dist: META.json is invalid:\n  " + "\n  ".join(errors), file=sys.stderr)
    sys.exit(1)
print(f"dist: META.json is valid (meta-spec 1.0.0), version {version}")
PY
[ -z "$(git status --porcelain -- META.json Cargo.toml)" ] ||
    echo "dist: note: uncommitted changes are not in the archive (git archive takes HEAD)"
mkdir -p .build
archive=".build/snowflake_id-$version.zip"
git archive --format=zip --prefix="snowflake_id-$version/" -o "$archive" HEAD
listing=$(unzip -l "$archive")
grep -q " snowflake_id-$version/META.json$" <<<"$listing" || { echo "dist: no META.json in $archive" >&2; exit 1; }
echo "dist: $archive ($(du -k "$archive" | cut -f1) KiB, $(tail -n 1 <<<"$listing" | awk '{print $2}') files)"
