#!/usr/bin/env python3
"""Counts the functions whose errors are bare strings: `Result<_, String>` in a fn's return
type, in non-test code under src/, split by whether the fn crosses a module boundary.

    python3 scripts/seam-figures.py [--list] [ROOT]

How it counts (a reading of the text, not of the compiler's view, so it can be fooled by
macros; it reads every file the same way, so figures before and after a change compare):
- Comments, string and char literals are blanked first, so braces inside them do not count.
- `#[cfg(test)]` items (test modules, test-only fns) are dropped, brace-matched.
- A fn "returns a string error" when its return type holds `Result<…, String>` at any depth
  (`Option<Result<Value, String>>` counts). `type X = Result<_, String>` aliases are listed
  apart.
- It "crosses a module boundary" when it is `pub`, `pub(crate)` or `pub(super)` (an inherent
  method counts by its own visibility), or is declared in a trait (its callers are elsewhere
  by design). Methods of `impl Trait for Type` blocks are not counted again: the trait's
  declaration is the seam. Everything else is private to its module.
"""
import os
import re
import sys


def blank_literals(text):
    """Comments, strings and chars replaced by spaces (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif re.match(r'b?r(#*)"', text[i:i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^'\\])'", text[i:])
            if m:  # a char literal; otherwise a lifetime
                out.append("' '" + " " * (m.end() - 3))
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, open_at):
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def drop_cfg_test(text):
    """Every item under `#[cfg(test)]` blanked (a module or fn: up to its matching brace)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        brace = text.find("{", m.end())
        semi = text.find(";", m.end())
        end = semi if 0 <= semi < brace or brace < 0 else matching_brace(text, brace)
        text = text[: m.start()] + re.sub(r"[^\n]", " ", text[m.start(): end + 1]) + text[end + 1:]


def blocks(text):
    """(kind, start, end) of every `trait` and `impl … for` block."""
    out = []
    for m in re.finditer(r"\b(trait\s+\w+[^{;]*?|impl\b[^{;]*?\bfor\b[^{;]*?)\{", text):
        kind = "trait" if m.group(1).startswith("trait") else "impl-for"
        out.append((kind, m.start(), matching_brace(text, m.end() - 1)))
    return out


FN = re.compile(r"((?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)[^{;]*?)[{;]", re.S)
STRING_ERR = re.compile(r"Result<[^;{]*,\s*String\s*>", re.S)


def return_type(sig):
    """What follows the parameter list's closing parenthesis (a closure or fn pointer among the
    parameters is not the fn's return type)."""
    open_at = sig.find("(", sig.find("fn "))
    depth = 0
    for j in range(open_at, len(sig)):
        depth += {"(": 1, ")": -1}.get(sig[j], 0)
        if depth == 0:
            rest = sig[j + 1:]
            return rest.split("->", 1)[1] if "->" in rest else ""
    return ""


def scan(path):
    text = drop_cfg_test(blank_literals(open(path, encoding="utf-8").read()))
    spans = blocks(text)
    found = []
    for m in FN.finditer(text):
        sig = m.group(1)
        ret = return_type(sig)
        if not STRING_ERR.search(ret):
            continue
        inside = [k for k, s, e in spans if s < m.start() < e]
        kind = inside[-1] if inside else None
        if kind == "impl-for":
            continue
        vis = re.match(r"pub(\([^)]*\))?", sig.lstrip())
        crosses = kind == "trait" or bool(vis)
        line = text.count("\n", 0, m.start()) + 1
        found.append((path, line, m.group(2), crosses, "trait" if kind == "trait" else (vis.group(0) if vis else "private")))
    aliases = [(path, text.count("\n", 0, a.start()) + 1) for a in re.finditer(r"\btype\s+\w+[^=;]*=\s*[^;]*Result<[^;]*,\s*String\s*>\s*;", text)]
    return found, aliases


def main():
    args = [a for a in sys.argv[1:] if a != "--list"]
    listing = "--list" in sys.argv
    os.chdir(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk("src") for f in fs if f.endswith(".rs"))
    found, aliases = [], []
    for f in files:
        a, b = scan(f)
        found += a
        aliases += b
    crossing = [x for x in found if x[3]]
    print(f"fns returning Result<_, String> (non-test code): {len(found)}")
    print(f"  crossing a module boundary: {len(crossing)} "
          f"(pub {sum(x[4] == 'pub' for x in crossing)}, pub(crate)/pub(super) "
          f"{sum(x[4].startswith('pub(') for x in crossing)}, trait methods {sum(x[4] == 'trait' for x in crossing)})")
    print(f"  private to their module: {len(found) - len(crossing)}")
    print(f"type aliases of Result<_, String>: {len(aliases)}")
    layers = {}
    for path, _, _, crosses, _ in found:
        parts = path.split(os.sep)
        layer = "/".join(parts[1:3]) if parts[1] == "protocols" and len(parts) > 3 else parts[1].removesuffix(".rs")
        c = layers.setdefault(layer, [0, 0])
        c[0 if crosses else 1] += 1
    print("by layer (crossing / private):")
    for layer in sorted(layers, key=lambda k: (-layers[k][0], k)):
        print(f"  {layer:32} {layers[layer][0]:4} / {layers[layer][1]}")
    if listing:
        for path, line, name, crosses, vis in found:
            if crosses:
                print(f"{path}:{line}: {vis} fn {name}")
        for path, line in aliases:
            print(f"{path}:{line}: type alias")


if __name__ == "__main__":
    main()
