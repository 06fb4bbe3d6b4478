"""plan_io.py - what make plan's helper scripts (plan_scale.py, plan_train.py, plan_choose.py)
share: one-line messages "PROG: what went wrong" with control characters escaped, the exit
codes (1 input it cannot use, 2 usage, 3 standard output cannot be written), checked writes to
standard output, and a model config read strictly (bounded, UTF-8, JSON without NaN,
Infinity or numbers beyond a double). A script sets PROG. Only the standard library."""
import json
import math
import os
import re
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
