#!/usr/bin/env python3
"""check-functions.py [ROOT] - no function of lib/ or cmd/ longer than 80 lines.

A function is a body between a line '{' and a line '}' at the start of a line (the tree's
style: a function's braces alone on their lines, nothing else at column 0 inside); its
length counts the lines of code in it, not blank lines or comment lines. Prints each
function over the limit (file, first line of its signature, length), exit 1 when there is
one; exit 0 and a one-line summary otherwise.
"""
import glob
import os
import re
import sys

LIMIT = 80


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    files = sorted(glob.glob(os.path.join(root, "lib", "**", "*.c"), recursive=True) +
                   glob.glob(os.path.join(root, "lib", "**", "*.cu"), recursive=True) +
                   glob.glob(os.path.join(root, "cmd", "*", "*.c")))
    bad, nfun = [], 0
    for path in files:
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        start = None
        for i, line in enumerate(lines):
            if line == "{":
                start = i
            elif line == "}" and start is not None:
                nfun += 1
                body = [x for x in lines[start + 1:i] if x.strip() and not x.strip().startswith(("/*", "*", "//"))]
                if len(body) > LIMIT:
                    j = start - 1
                    while j > 0 and not re.match(r"^[A-Za-z_]", lines[j]):
                        j -= 1
                    bad.append(f"{os.path.relpath(path, root)}:{j + 1}: {lines[j].strip()[:60]}: {len(body)} lines")
                start = None
    for b in bad:
        print(f"check-functions: {b}")
    if bad:
        return 1
    print(f"check-functions: {nfun} functions in {len(files)} files, none over {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
