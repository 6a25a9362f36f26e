#!/usr/bin/env python3
"""Keeps CONTRIBUTING.md's map of the source true: the fenced block under "Layout of the source"
must list every file of src/ (Rust modules and SQL scripts), and every path it lists must
exist. Run by `make lint`.

The map is a tree: a line names a path (top level: from the repository's root) or, indented
by two spaces more than a folder's line, what is in that folder; several names of one folder
may share a line (`defaults.rs, depend.rs`). A name is followed by two spaces or more and its
description; a line indented as far as the descriptions continues the one above.
Exit status 1, with what is wrong, when the map and the tree differ."""
import os
import re
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MAP = os.path.join(REPO, "CONTRIBUTING.md")
# A line indented this far or more continues a description.
CONTINUATION = 16


def map_lines(text):
    """The lines of the fenced block that follows the "Layout of the source" heading."""
    section = re.search(r"^## Layout of the source\n(.*?)^## ", text, re.M | re.S)
    if not section:
        sys.exit("check_map: CONTRIBUTING.md has no section \"Layout of the source\"")
    block = re.search(r"^```\n(.*?)^```", section.group(1), re.M | re.S)
    if not block:
        sys.exit("check_map: the section \"Layout of the source\" has no fenced block")
    return block.group(1).splitlines()


def listed_paths(lines, problems):
    """Every path the map names, as paths from the repository's root."""
    paths = []
    folders = []  # (indent, path) of the folders enclosing the current line
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent >= CONTINUATION:
            continue
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        while folders and folders[-1][0] >= indent:
            folders.pop()
        if indent and not folders:
            problems.append(f"map line {number}: indented, but under no folder: {line.strip()}")
            continue
        if folders and indent != folders[-1][0] + 2:
            problems.append(f"map line {number}: indent {indent} under a folder indented {folders[-1][0]}")
        parent = folders[-1][1] if folders else ""
        for name in names.split(", "):
            path = parent + name
            paths.append((number, path))
            if name.endswith("/"):
                folders.append((indent, path))
    return paths


def main():
    lines = map_lines(open(MAP, encoding="utf-8").read())
    problems = []
    paths = listed_paths(lines, problems)
    listed = set()
    for number, path in paths:
        if not os.path.exists(os.path.join(REPO, path)):
            problems.append(f"map line {number}: {path} does not exist")
        if path in listed:
            problems.append(f"map line {number}: {path} is listed twice")
        listed.add(path)
    files = sorted(
        os.path.relpath(os.path.join(root, f), REPO)
        for root, _, names in os.walk(os.path.join(REPO, "src"))
        for f in names
        if f.endswith((".rs", ".sql"))
    )
    for f in files:
        if f not in listed:
            problems.append(f"{f} is not in CONTRIBUTING.md's map (\"Layout of the source\")")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"check_map: {len(files)} files of src/, {len(paths)} paths in the map, "
          f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
