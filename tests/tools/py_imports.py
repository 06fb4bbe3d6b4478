#!/usr/bin/env python3
"""py_imports.py [ROOT] - every Python module the tests and pipelines import is one a fresh
machine has after `make deps`.

Scans ROOT/tests and ROOT/pipelines (ROOT: the current directory when not given) for Python:
  - .py files, parsed with ast (imports inside functions and try blocks count too);
  - in shell files (.bats, .bash, .sh, .mk, and files whose first line is a sh or bash
    shebang): the string after `python3 -c` (any python interpreter, "$py" included), any
    quoted string that begins with an import statement (code kept in a shell variable such
    as need='import torch'), and heredocs fed to a python interpreter; strings inside
    double-quoted strings (sh -c "... python3 -c '...'") are scanned the same way.
Each imported module (its first dotted part; relative imports are skipped) must be one of
  - Python's standard library: sys.stdlib_module_names of the interpreter running this
    (the tests run it with /usr/bin/python3, Debian's python3);
  - a module of the repository: a .py file, or a folder with __init__.py, under tests/ or
    pipelines/ (torchrec_plan, mp, standin_check, the test double of torchrec, ...);
  - one of MAKE_DEPS_MODULES below, which the Debian packages of `make deps` provide.
Prints each other import as `py_imports: FILE:LINE: imports 'MODULE': ...` and exits 1;
otherwise prints a one-line summary and exits 0. When ROOT has a Makefile, each package of
MAKE_DEPS_MODULES must be in its DEB_PKGS or DEB_PKGS_NOREC (exit 1 naming it otherwise).
Standard library only, so that it runs where nothing but python3 is installed.
"""
import ast
import os
import re
import sys

# The third-party modules the tests may import, and the Debian package of the Makefile's
# `deps` target (DEB_PKGS / DEB_PKGS_NOREC) that brings each one. The two lists must agree:
# a module added here needs its package in the Makefile (this script checks that the
# package is there), and a package dropped from the Makefile takes its modules off this
# list. Only what the tests use is listed, not everything a package happens to pull in
# (python3-torch also depends on python3-yaml, but nothing may rely on that).
MAKE_DEPS_MODULES = {
    "torch": "python3-torch",   # Debian's PyTorch 1.13 for the CPU
    "numpy": "python3-torch",   # python3-numpy, a Depends of python3-torch
}

SHELL_EXTS = (".bats", ".bash", ".sh", ".mk")
SHEBANG = re.compile(r"#!\s*\S*/(?:env\s+)?(?:ba)?sh\b")
# a python interpreter word: python3, /usr/bin/python3, python3.11, "$py", ${PY}, "$PYTHON"
INTERP = r"""(?:(?<![\w$/.-])[\w/.-]*\bpython[\d.]*|"?\$\{?(?:py|PY|python|PYTHON)\w*\}?"?)"""
DASH_C = re.compile(INTERP + r"(?:[ \t]+-[A-Za-z]+)*[ \t]+-c[ \t]*$")
HEREDOC_CMD = re.compile(INTERP + r"(?:[ \t]+\S+)*[ \t]*$")
STARTS_WITH_IMPORT = re.compile(r"\s*(?:import[ \t]+[A-Za-z_]|from[ \t]+[\w.]+[ \t]+import\b)")
IMPORT_RE = re.compile(r"(?m)(?:^|;)[ \t]*(?:import[ \t]+([\w.][\w. \t,]*?)[ \t]*(?=$|;|#)"
                       r"|from[ \t]+([\w.]+)[ \t]+import\b)")


def imports_of(code, path, line0):
    """[(line, module)] of Python source code whose first line is line0 of path"""
    try:
        tree = ast.parse(code, path)
    except (SyntaxError, ValueError):
        tree = None
    found = []
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(line0 + node.lineno - 1, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((line0 + node.lineno - 1, node.module))
        return found
    # not Python as it stands (shell expansions in a double-quoted snippet): the statements
    for m in IMPORT_RE.finditer(code):
        line = line0 + code.count("\n", 0, m.start())
        if m.group(2):
            if not m.group(2).startswith("."):
                found.append((line, m.group(2)))
        else:
            for part in m.group(1).split(","):
                words = part.split()
                if words:
                    found.append((line, words[0]))
    return found


class Shell:
    """the Python snippets of a shell text: self.snippets, [(line, code)]"""

    def __init__(self, text, line0=1):
        self.t, self.line0, self.snippets = text, line0, []
        self.heredocs = []    # (delimiter, strip tabs, python?) waiting for the next newline
        self.scan(0, None)

    def line(self, i):
        return self.line0 + self.t.count("\n", 0, i)

    def prefix(self, i):
        """the command text before offset i: back to a newline not continued by a backslash"""
        j = i
        while True:
            k = self.t.rfind("\n", 0, j)
            if k <= 0 or self.t[k - 1] != "\\":
                return self.t[k + 1:i]
            j = k

    def string(self, start, body, dq):
        """a quoted string's body beginning at offset start"""
        if dq:
            body = re.sub(r'\\([\\"$`])', r"\1", body)
        line = self.line(start)
        if DASH_C.search(self.prefix(start - 1)) or STARTS_WITH_IMPORT.match(body):
            if (line, body) not in self.snippets:
                self.snippets.append((line, body))
        else:    # sh -c "... python3 -c '...'": the string's own strings
            self.snippets += [s for s in Shell(body, line).snippets if s not in self.snippets]

    def scan(self, i, close):
        """scan from offset i to the character close (None: the end); the offset after it"""
        t, n, word_start = self.t, len(self.t), True
        while i < n:
            c = t[i]
            if close is not None and c == close:
                return i + 1
            if c == "\\":
                i += 2
            elif c == "#" and word_start:
                while i < n and t[i] != "\n":
                    i += 1
                continue
            elif c == "'" or (c == "$" and t.startswith("$'", i)):
                ansi = c == "$"
                j = i + 2 if ansi else i + 1
                k = j
                while k < n and t[k] != "'":
                    k += 2 if ansi and t[k] == "\\" else 1
                self.string(j, t[j:k], False)
                i = k + 1
            elif c == '"':
                k = self.dquote(i + 1)
                self.string(i + 1, t[i + 1:k - 1], True)
                i = k
            elif c == "$" and t.startswith("$(", i):
                i = self.scan(i + 2, ")")
            elif c == "$" and t.startswith("${", i):    # ${#a[@]}: no comment
                k = t.find("}", i)
                i = n if k < 0 else k + 1
            elif c == "(" and close == ")":
                i = self.scan(i + 1, ")")
            elif c == "`":
                k = t.find("`", i + 1)
                i = n if k < 0 else k + 1
            elif t.startswith("<<", i) and not t.startswith("<<<", i):
                m = re.compile(r"<<(-?)[ \t]*(['\"]?)([\w.-]+)\2").match(t, i)
                if m:
                    py = HEREDOC_CMD.search(self.prefix(i)) is not None
                    self.heredocs.append((m.group(3), m.group(1) == "-", py))
                    i = m.end()
                else:
                    i += 2
            elif c == "\n" and self.heredocs:
                i = self.heredoc_bodies(i + 1)
            else:
                i += 1
            word_start = c in " \t\n;|&(){}"
        return n

    def dquote(self, i):
        """offset after the closing quote of a double-quoted string whose body starts at i"""
        t, n = self.t, len(self.t)
        while i < n:
            c = t[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif t.startswith("$(", i):
                i = self.scan(i + 2, ")")
            elif c == "`":
                k = t.find("`", i + 1)
                i = n if k < 0 else k + 1
            else:
                i += 1
        return n

    def heredoc_bodies(self, i):
        t = self.t
        for delim, tabs, py in self.heredocs:
            start, body = i, []
            while i < len(t):
                k = t.find("\n", i)
                k = len(t) if k < 0 else k
                line = t[i:k]
                i = k + 1
                if (line.lstrip("\t") if tabs else line) == delim:
                    break
                body.append(line)
            if py:
                self.snippets.append((self.line(start), "\n".join(body)))
        self.heredocs = []
        return i


def is_shell(path):
    if path.endswith(SHELL_EXTS):
        return True
    if "." in os.path.basename(path):
        return False
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return SHEBANG.match(first.decode("utf-8", "replace")) is not None


def read_text(path):
    with open(path, "rb") as f:
        b = f.read()
    if b"\0" in b:
        return None
    return b.decode("utf-8", "replace")


def make_deps_packages(root):
    """the packages of the Makefile's DEB_PKGS and DEB_PKGS_NOREC, or None without a Makefile"""
    path = os.path.join(root, "Makefile")
    if not os.path.exists(path):
        return None
    text = read_text(path).replace("\\\n", " ")
    pkgs = set()
    for m in re.finditer(r"(?m)^(?:DEB_PKGS|DEB_PKGS_NOREC)[ \t]*:?=(.*)$", text):
        pkgs.update(m.group(1).split())
    return pkgs


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        print("usage: py_imports.py [ROOT]", file=sys.stderr)
        return 2
    if not hasattr(sys, "stdlib_module_names"):
        print("py_imports: needs Python 3.10 or later (sys.stdlib_module_names)", file=sys.stderr)
        return 2
    root = sys.argv[1] if len(sys.argv) == 2 else "."
    files, own = [], set()
    for top in ("tests", "pipelines"):
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x not in ("__pycache__", ".git"))
            if "__init__.py" in names:
                own.add(os.path.basename(d))
            for name in sorted(names):
                p = os.path.join(d, name)
                if name.endswith(".py"):
                    own.add(name[:-3])
                    files.append((p, "py"))
                elif is_shell(p):
                    files.append((p, "sh"))
    bad, nsrc, nimp = [], 0, 0
    for p, kind in files:
        text = read_text(p)
        if text is None:
            continue
        rel = os.path.relpath(p, root)
        sources = [(1, text)] if kind == "py" else Shell(text).snippets
        for line0, code in sources:
            nsrc += 1
            for line, mod in imports_of(code, rel, line0):
                nimp += 1
                top = mod.split(".")[0]
                if top in sys.stdlib_module_names or top in own or top in MAKE_DEPS_MODULES:
                    continue
                bad.append("py_imports: %s:%d: imports '%s': not the standard library, a module of "
                           "the repository or one that make deps installs (%s)"
                           % (rel, line, mod, ", ".join(sorted(MAKE_DEPS_MODULES))))
    pkgs = make_deps_packages(root)
    if pkgs is not None:
        for mod, pkg in sorted(MAKE_DEPS_MODULES.items()):
            if pkg not in pkgs:
                bad.append("py_imports: Makefile: make deps does not install %s, which brings '%s'"
                           % (pkg, mod))
    for b in bad:
        print(b)
    if bad:
        return 1
    print("py_imports: %d files, %d Python sources, %d imports: all from the standard library, "
          "the repository or make deps" % (len(files), nsrc, nimp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
