"""aspipe.py - what the Python scripts of pipelines/ share (a module, not a script; only the
standard library):

  - messages: one line "PROG: what went wrong" on standard error, control characters escaped
    (say, fail, usage); the exit codes: 1 input it cannot use, 2 usage, 3 an output that
    cannot be written (stdout_failed, emit: checked writes to standard output);
  - ArgumentParser: argparse's, but a usage error is one line "PROG: ..." and exit 2, and
    --help goes through emit (exit 3 when it cannot be written);
  - strict JSON (read_json, parse_json: bounded, UTF-8, no NaN, Infinity or numbers beyond a
    double) and THE model-config reader (read_config, with integer, enum and table_where for
    its fields, as as-convert reads them: lib/data/modelcfg.c);
  - autoshard's records (zstd msgpack streams) read through as-show: as_show() finds it
    (AS_SHOW, else PATH, else bin/ of this repository), records(kind, path) reads one kind;
  - make plan's input sums (input_sums; `python3 pipelines/aspipe.py input-sums ...`) and the
    check that an imported plan's label is not one of our planners' (own-labels).

A script sets PROG (set_prog). The plan JSON of `as-plan --format torchrec` has its one reader
in torchrec_plan.py (load_plans), which stays free of this module: it is installed alone, as
as-torchrec-plan.
"""
import argparse
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys

PROG = "plan"
CTRL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def safe(s):
    """s with its control characters escaped (\\n, \\x1b, \\u2028), for a message or a report"""
    return CTRL.sub(lambda m: repr(m.group())[1:-1], str(s))


def say(msg):
    if sys.stderr is not None:
        try:
            sys.stderr.write("%s: %s\n" % (PROG, safe(msg)))
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def fail(msg, code=1):
    say(msg)
    sys.exit(code)


def usage(msg):
    fail(msg, 2)


def stdout_failed(e):
    """standard output cannot be written: exit 3 (and no second error when Python flushes at exit)"""
    say("standard output: %s" % (getattr(e, "strerror", None) or e))
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass
    sys.exit(3)


def emit(text):
    """text to standard output, flushed: exit 3 when it cannot be written (closed, full)"""
    if sys.stdout is None:
        stdout_failed("closed")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as e:
        stdout_failed(e)


def show(v):
    """a JSON value as a message shows it: short, on one line"""
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "an array"
    return json.dumps(v)[:60]


def _no_constant(c):
    raise ValueError("%s is not JSON" % c)


def _finite(s):
    v = float(s)
    if not math.isfinite(v):
        raise ValueError("number %s out of range (beyond a double)" % s[:40])
    return v


def read_json(path, max_bytes):
    """the JSON document of file path, read strictly, or ValueError saying what is wrong with
    it (without the path): unreadable, larger than max_bytes, not UTF-8, not JSON"""
    try:
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise ValueError(e.strerror or str(e)) from None
    if len(raw) > max_bytes:
        raise ValueError("larger than %d bytes" % max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError("not UTF-8 text (byte %d)" % (e.start + 1)) from None
    return parse_json(text)


def parse_json(text):
    """one JSON document, strictly (no NaN / Infinity, no number beyond a double), or
    ValueError saying why not"""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("not JSON: nested too deeply") from None
    except ValueError as e:
        raise ValueError("not JSON: %s" % e) from None


def set_prog(name):
    """the name messages start with ("plan_scale: ...")"""
    global PROG
    PROG = name


# ---- arguments ---------------------------------------------------------------------------

class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, as our scripts answer: a usage error is one line "PROG: what" and exit
    2 (error_hook(message) may say it in the script's own words first: a string, or None for
    argparse's), the help through emit (exit 3 when it cannot be written), no abbreviated
    options. hint: a line written after a usage error's (e.g. the usage in one line)."""

    def __init__(self, *args, error_hook=None, hint=None, **kw):
        kw.setdefault("allow_abbrev", False)
        kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kw)
        self.error_hook, self.hint = error_hook, hint

    def print_help(self, file=None):
        emit(self.format_help())

    def print_usage(self, file=None):
        emit(self.format_usage())

    def error(self, message):
        msg = self.error_hook(message) if self.error_hook else None
        say(msg if msg is not None else message)
        if self.hint and sys.stderr is not None:
            try:
                sys.stderr.write(self.hint + "\n")
            except (OSError, ValueError):
                pass
        sys.exit(2)


def missing_value(message):
    """the option argparse says lacks its value ("argument --tie: expected one argument"), or None"""
    m = re.match(r"argument (-[^:/ ]+)(/[^:]*)?: expected (one|\d+) argument", message)
    return m.group(1) if m else None


# ---- the model config --------------------------------------------------------------------

MAX_CONFIG = 64 << 20     # a config's bytes at most (as-convert's MCFG_MAX_FILE)


def read_config(path):
    """THE model config reader (docs/FORMAT.md "Model configs"): the config at path read
    strictly (read_json) and shaped as as-convert needs it: an object whose topology is an
    object and whose tables are an array of 1 or more objects. Returns the object; ValueError
    saying what is wrong (without the path). Its fields: integer, enum, table_where."""
    c = read_json(path, MAX_CONFIG)
    if not isinstance(c, dict):
        raise ValueError("the config must be a JSON object, not %s" % show(c))
    topo, tables = c.get("topology"), c.get("tables")
    if not isinstance(topo, dict):
        raise ValueError("topology: %s" % ("missing (required)" if topo is None else "must be an object, not " + show(topo)))
    if not isinstance(tables, list) or not tables:
        raise ValueError("tables: %s" % ("missing (required)" if tables is None else "must be an array of 1 or more tables, "
                                         "not " + ("an empty one" if tables == [] else show(tables))))
    for i, t in enumerate(tables):
        if not isinstance(t, dict):
            raise ValueError("table %d: must be an object, not %s" % (i, show(t)))
    return c


def table_where(i, t):
    """how a message names table i of a config: 'table 3 ("name"): '"""
    return "table %d%s: " % (i, " (%s)" % json.dumps(t["name"]) if isinstance(t.get("name"), str) else "")


def integer(d, key, where, lo=1, default=None):
    """d[key]: a JSON integer >= lo (as-convert's get_int: 64.0 and 1e3 are not integers), or
    ValueError 'WHEREkey: ...'; default when absent and given"""
    if key not in d and default is not None:
        return default
    if key not in d:
        raise ValueError("%s%s: missing (required)" % (where, key))
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError("%s%s: must be an integer of at least %d, not %s" % (where, key, lo, show(v)))
    return v


def _lower(s):
    """ASCII lower case, as strcasecmp compares"""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def enum(d, key, where, names, default, maxlen):
    """d[key] as as-convert's get_enum reads it: absent the default; a string of at most maxlen
    bytes without NUL, one of names in any (ASCII) case; returned lower case. ValueError
    'WHEREkey: ...' otherwise"""
    if key not in d:
        return default
    v = d[key]
    if not isinstance(v, str):
        raise ValueError("%s%s: must be a string, not %s" % (where, key, show(v)))
    lv = _lower(v)
    if "\0" in v or len(v.encode("utf-8", "surrogatepass")) > maxlen or lv not in names:
        raise ValueError("%s%s: unknown value %s (one of %s)" % (where, key, show(v), ", ".join(names)))
    return lv


def lookups_files(path):
    """the lookups files a config names (tables[].lookups.file, each once, as written), [] when
    it cannot be read (the stage that reads it says why)"""
    try:
        c = read_config(path)
    except ValueError:
        return []
    files = []
    for t in c["tables"]:
        lk = t.get("lookups")
        if isinstance(lk, dict) and isinstance(lk.get("file"), str) and lk["file"] not in files:
            files.append(lk["file"])
    return files


# ---- autoshard's records, through as-show ------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))


def as_show(here=HERE):
    """as-show: AS_SHOW, else as-show on PATH (the tests put the tools under test there), else
    bin/as-show of the repository `here` (pipelines/) is in; None when none is there"""
    exe = os.environ.get("AS_SHOW")
    if exe:
        return exe
    exe = shutil.which("as-show")
    if exe:
        return exe
    cand = os.path.join(os.path.dirname(here), "bin", "as-show")
    return cand if os.path.isfile(cand) and os.access(cand, os.X_OK) else None


class ShowError(ValueError):
    """as-show could not run (its OSError in .os_error) or failed (its last line)"""

    def __init__(self, msg, os_error=None):
        super().__init__(msg)
        self.os_error = os_error


def show_text(path, kind=None, full=False, data=None, exe=None):
    """as-show's JSON lines of the records of path ("-": data, or standard input) as bytes:
    kind only that kind (--kind), full every field (--full). ShowError when it cannot run or
    fails"""
    exe = exe or as_show()
    if exe is None:
        raise ShowError("as-show not found (not on PATH, not in %s; build with make, or set AS_SHOW)"
                        % os.path.join(os.path.dirname(HERE), "bin"))
    cmd = [exe] + (["--full"] if full else []) + (["--kind", kind] if kind else []) + [path]
    try:
        if data is not None:
            p = subprocess.run(cmd, input=data, capture_output=True)
        else:
            p = subprocess.run(cmd, stdin=sys.stdin.buffer if path == "-" and sys.stdin is not None
                               else subprocess.DEVNULL, capture_output=True)
    except OSError as e:
        raise ShowError("cannot run %s: %s" % (exe, e), e) from None
    if p.returncode:
        raise ShowError(p.stderr.decode("utf-8", "replace").strip(), None)
    return p.stdout


def parse_lines(text, where):
    """the JSON objects of as-show's JSON lines (one record a line, split at "\\n" alone:
    str.splitlines() would also split inside a name holding U+2028, U+0085 or \\x1c..\\x1e,
    which JSON strings may carry unescaped); ValueError 'WHERE: line N: ...'"""
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            raise ValueError("%s: line %d: not JSON (%s)" % (where, n, e)) from None
        if not isinstance(r, dict):
            raise ValueError("%s: line %d: not a record (a JSON object)" % (where, n))
        out.append(r)
    return out


def records(kind, path, full=True, exe=None):
    """the records of one kind ("features", "cost", "plan", "shard", "table", "task"; None:
    every kind) of an autoshard stream, as dicts, through as-show (--full unless full=False).
    ValueError (ShowError when as-show fails) naming the file"""
    try:
        out = show_text(path, kind, full, exe=exe)
    except ShowError as e:
        raise ShowError("%s: %s" % (path, e), e.os_error) from None
    return parse_lines(out.decode("utf-8", "replace"), path)


# ---- make plan's helpers (plan.mk) ----------------------------------------------------------

def input_sums(cache_path, config, own):
    """"CONFIG LOOKUPS OWN": the SHA-256 of the config, one over its lookups files' ("none": it
    names none), of OWN_JSON ("none": not given); "missing" for a file it cannot read. Each
    sum is kept in cache_path (JSON) with the file's device, inode, size, mtime and ctime, and
    read again only when one of them changed."""
    try:
        with open(cache_path) as f:
            cache = json.load(f)
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}

    def digest(p):
        try:
            st = os.stat(p)
        except OSError:
            return "missing"
        key = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        full = os.path.abspath(p)
        c = cache.get(full)
        if isinstance(c, list) and len(c) == 2 and c[0] == key:
            return c[1]
        h = hashlib.sha256()
        try:
            with open(p, "rb") as f:
                for b in iter(lambda: f.read(1 << 20), b""):
                    h.update(b)
        except OSError:
            return "missing"
        cache[full] = [key, h.hexdigest()]
        return h.hexdigest()

    files = lookups_files(config)
    lk = hashlib.sha256()
    for p in sorted(files):
        lk.update(("%s=%s\n" % (p, digest(p if p.startswith("/") else os.path.join(os.path.dirname(config), p)))).encode())
    line = "%s %s %s\n" % (digest(config), lk.hexdigest() if files else "none", digest(own) if own else "none")
    try:
        os.makedirs(os.path.dirname(cache_path) or ".", exist_ok=True)
        with open(cache_path + ".tmp", "w") as f:
            json.dump(cache, f)
        os.replace(cache_path + ".tmp", cache_path)
    except OSError:
        pass
    return line


def own_labels(where, planners, text):
    """make plan: an imported plan (as-show's plan records, text) labelled as one of our
    planners (ALG or ALG+...) would share a label with one of our candidates: the message
    saying so, or None"""
    ours = planners.split()
    bad = [r.get("alg") for r in parse_lines(text, where) if str(r.get("alg")).split("+")[0] in ours]
    if not bad:
        return None
    return ("%s: its plan is labelled %s, as our planner %s labels its own plans: one of the candidates would share "
            "its label; label it as TorchRec's own planner's (\"alg\": \"torchrec-own\", as "
            "pipelines/torchrec_planner.py writes) or anything not starting with an algorithm's name"
            % (where, bad[0], bad[0].split("+")[0]))


def main(argv):
    """python3 pipelines/aspipe.py input-sums CACHE CONFIG OWN | own-labels WHERE PLANNERS < PLANS.jsonl"""
    global PROG
    ap = ArgumentParser(prog="aspipe.py", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    s = sub.add_parser("input-sums", help="make plan's input sums: CONFIG LOOKUPS OWN (input_sums)")
    s.add_argument("cache")
    s.add_argument("config")
    s.add_argument("own", help="OWN_JSON, or empty")
    s = sub.add_parser("own-labels", help="exit 1 when an imported plan (as-show's JSON lines on standard input) "
                                          "is labelled as one of our planners (own_labels)")
    s.add_argument("where", help="what the message names")
    s.add_argument("planners", help="our planners' names, separated by spaces")
    a = ap.parse_args(argv[1:])
    if a.cmd == "input-sums":
        emit(input_sums(a.cache, a.config, a.own))
        return 0
    if a.cmd == "own-labels":
        PROG = "make plan"
        try:
            msg = own_labels(a.where, a.planners, sys.stdin.read())
        except ValueError as e:
            fail(e)
        if msg:
            sys.stderr.write("make plan: %s\n" % msg)
            return 1
        return 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
