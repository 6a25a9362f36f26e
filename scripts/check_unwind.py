#!/usr/bin/env python3
"""Keeps calls that can raise out of the regions where an error cannot unwind.

PostgreSQL calls the library through C function pointers. A Rust panic (which is what pgrx
makes of a PostgreSQL error inside its wrappers) cannot unwind through an `extern "C"`
function: the process aborts, and the postmaster restarts every session. So:

1. every `extern "C" fn` runs its body through the error boundary (`errors::boundary`,
   `sqlfn::run`) or forwards to a function that does, or is a `pg_finfo` record;
2. every `extern "C-unwind" fn` that PostgreSQL calls carries `#[pg_guard]`, or says
   `// nothrow:` why it cannot fail and calls nothing of pgrx's `pg_sys`;
3. the body of `errors::no_unwind(...)` and of every `nothrow` SQL function calls nothing of
   pgrx's `pg_sys`, raises nothing (`.raise()`, `error(`) and does not panic on purpose.

Exit status 1, with file:line, on a violation.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "src"
RAISING = re.compile(r"pg_sys::[a-z_A-Z]+\s*\(|\.raise\(\)|\berror\(|panic!|unwrap\(\)|expect\(")


def body_at(text, start):
    """The text of the brace-delimited block starting at the first '{' at or after start."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i : j + 1]
    return text[i:]


def parens_at(text, start):
    """The text of the parenthesised argument list starting at the '(' at start."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[start : j + 1]
    return text[start:]


def strip_comments(text):
    return re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def main():
    problems = []
    for path in sorted(ROOT.rglob("*.rs")):
        raw = path.read_text()
        text = strip_comments(raw)
        rel = path.relative_to(ROOT.parent)
        for m in re.finditer(r'extern "C" fn\s+(\$?\w+)', text):
            name = m.group(1)
            if name == "finfo":
                continue
            body = body_at(text, m.end())
            if not re.search(r"boundary\(|sqlfn::run\(|\$\w+\(fcinfo\)|\brun\(", body):
                problems.append(f"{rel}:{line_of(text, m.start())}: extern \"C\" fn {name} "
                                "does not run its body through errors::boundary")
        for m in re.finditer(r'extern "C-unwind" fn\s+(\w+)', text):
            before = raw[max(0, m.start() - 300) : m.start()]
            attrs = before.split("\n\n")[-1]
            if "#[pg_guard]" in attrs or "#[pgrx::pg_guard]" in attrs:
                continue
            if "// nothrow:" in before.split("\n\n")[-1]:
                body = body_at(text, m.end())
                if re.search(r"pg_sys::[a-z_A-Z]+\s*\(", body):
                    problems.append(f"{rel}:{line_of(text, m.start())}: nothrow callback "
                                    f"{m.group(1)} calls pgrx's pg_sys")
                continue
            problems.append(f"{rel}:{line_of(text, m.start())}: extern \"C-unwind\" fn "
                            f"{m.group(1)} has neither #[pg_guard] nor a // nothrow: reason")
        for m in re.finditer(r"\bno_unwind\(", text):
            if text[max(0, m.start() - 7) : m.start()] == "pub fn ":
                continue
            args = parens_at(text, m.end() - 1)
            hit = RAISING.search(args)
            if hit:
                problems.append(f"{rel}:{line_of(text, m.start() + hit.start())}: "
                                f"no_unwind region calls {hit.group(0).strip()}")
        for m in re.finditer(r"\bfn\s+(\w+)[^\[]*\[[^\]]*\bnothrow\b[^\]]*\]\s*\|[^|]*\|", text):
            body = body_at(text, m.end())
            hit = RAISING.search(body)
            if hit:
                problems.append(f"{rel}:{line_of(text, m.start() + hit.start())}: nothrow "
                                f"function {m.group(1)} calls {hit.group(0).strip()}")
    for p in problems:
        print(p)
    print(f"check_unwind: {'FAILED' if problems else 'ok'} "
          f"({len(problems)} problem(s))", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
