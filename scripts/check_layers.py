#!/usr/bin/env python3
"""Checks the shape of src/: every module under src/core/ is marked PURE; modules marked PURE
import nothing of pgrx and only other PURE modules (so nothing of PostgreSQL reaches them
through another module either); every module is in one of the LAYERS below and imports
only from its own layer and those below it; and no two modules import each other, directly
or through others (dependencies run one way, CONTRIBUTING.md "Layout of the source"). Run
by `make lint`."""
import collections
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "src")

# The folders (and the two top-level files of their own) from the bottom up: what knows
# nothing of PostgreSQL, its plumbing, the settings, this server's numbers, what replication
# brings, the life of a named sequence, the SQL face, 0.3.0's remains, the hooks; lib.rs
# (`crate`) wires them all. A module imports its own layer and those below, never one above.
LAYERS = ["core", "pg", "guc", "node", "detection", "sequences", "sql", "legacy", "hooks"]


def module_name(path):
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, "::")
    if rel == "lib":
        return "crate"
    return rel[: -len("::mod")] if rel.endswith("::mod") else rel


def code_of(text):
    """The module's code without comments, string literals and test modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return re.split(r"#\[cfg\(test\)\]\s*(?:pub(?:\(crate\))?\s+)?mod\s+\w+\s*\{", text)[0]


sources = {}
for root, _, files in os.walk(ROOT):
    for f in files:
        if f.endswith(".rs"):
            path = os.path.join(root, f)
            sources[module_name(path)] = open(path, encoding="utf-8").read()


def resolve(module, path):
    parts = path.split("::")
    if parts[0] == "crate":
        parts = parts[1:]
    elif parts[0] in ("super", "self"):
        base = module.split("::")
        if parts[0] == "self":
            parts = parts[1:]
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
        parts = base + parts
    else:
        return None
    for i in range(len(parts), 0, -1):
        candidate = "::".join(parts[:i])
        if candidate in sources:
            return candidate
    return None


graph = collections.defaultdict(set)
problems = []
pure = {m for m, text in sources.items() if re.search(r"^//!.*\bPURE\b", text, re.M)}
for module, text in sources.items():
    code = code_of(text)
    if module in pure and re.search(r"\bpgrx\b", code):
        problems.append(f"{module} is marked PURE but uses pgrx")
    for base, group in re.findall(r"\buse\s+((?:crate|super|self)(?:::\w+)*)(?:::\{([^;]*)\})?", code):
        items = [base] if not group else [f"{base}::{g.strip().split(' ')[0].strip('{}')}" for g in re.split(r"[,{}]", group) if g.strip()]
        for item in items:
            target = resolve(module, item.replace("::self", ""))
            if target and target != module and not module.startswith(target + "::") and target != "crate":
                graph[module].add(target)
    for path in re.findall(r"\b(crate::\w+(?:::\w+)*|super::\w+(?:::\w+)*)", code):
        target = resolve(module, path)
        if target and target != module and not module.startswith(target + "::") and target != "crate":
            graph[module].add(target)

for module in sorted(sources):
    if (module == "core" or module.startswith("core::")) and module not in pure:
        problems.append(f"{module} is in src/core/ but not marked PURE")


def layer(module):
    """The index of a module's layer in LAYERS (lib.rs above them all), or None."""
    if module == "crate":
        return len(LAYERS)
    top = module.split("::")[0]
    return LAYERS.index(top) if top in LAYERS else None


upward = 0
for module in sorted(sources):
    if layer(module) is None:
        problems.append(f"{module} is in no layer: add its folder to LAYERS in {os.path.basename(__file__)}")
        continue
    for target in sorted(graph[module]):
        if layer(target) is not None and layer(target) > layer(module):
            upward += 1
            problems.append(f"{module} imports {target}, a layer above it "
                            f"({LAYERS[layer(module)]} below {LAYERS[layer(target)]})")

for module in sorted(pure):
    for target in sorted(graph[module]):
        if target not in pure:
            problems.append(f"{module} is marked PURE but imports {target}, which is not")

state = {}


def visit(node, stack):
    state[node] = "open"
    for nxt in sorted(graph[node]):
        if state.get(nxt) == "open":
            problems.append("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
        elif nxt not in state:
            visit(nxt, stack + [nxt])
    state[node] = "done"


for node in sorted(sources):
    if node not in state:
        visit(node, [node])

for p in problems:
    print(p, file=sys.stderr)
print(f"check_layers: {len(sources)} modules in {len(LAYERS)} layers, "
      f"{sum(len(v) for v in graph.values())} imports, {upward} of them upward, "
      f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
