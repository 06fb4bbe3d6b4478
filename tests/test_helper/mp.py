#!/usr/bin/env python3
"""mp.py - write msgpack records for tests that craft hostile streams (no msgpack module needed).

Each argument is a Python expression for one record (usually a dict); the encoded records are
written to stdout one after another. Helpers usable in the expressions:
  arr(dtype, shape, values)   an autoshard array map {"dtype","shape","data": bin}
  u64(x)                      force a uint64 encoding (x may exceed int64)
  nils(n)                     an array of n nils, encoded without building a list
  nan, inf                    floats
Example:
  python3 mp.py '{"kind":"task","id":0,"shards":10**8,"tables":[0,1]}' | ...

  python3 mp.py --edit 'CODE' < RAW > RAW
reads raw msgpack records (a decompressed stream, header included) into the list `recs`
(maps as dicts, bin as bytes, arrays as lists), runs the Python statements CODE on it and
writes the records of `recs` again. Besides the helpers above, CODE may use
  kind(k)                     the records of kind k (the same dicts, to change in place)
  getarr(a) / setarr(a, v)    the values of an array map / replace them (same dtype; a 1-d
                              array takes the length of v)
Example: mp.py --edit 'kind("policy")[0]["adam_t"] = -1; recs += kind("rl_buffer")'
"""
import struct
import sys

DT = {"int8": "b", "uint8": "B", "int16": "h", "int32": "i", "int64": "q", "uint32": "I", "uint64": "Q",
      "float32": "f", "float64": "d"}


class u64(int):
    pass


class nils:
    def __init__(self, n):
        self.n = n


class Arr:
    def __init__(self, dtype, shape, values):
        self.dtype, self.shape, self.values = dtype, list(shape), list(values)


def arr(dtype, shape, values):
    return Arr(dtype, shape, values)


def enc(o, out):
    if o is None:
        out += b"\xc0"
    elif o is True:
        out += b"\xc3"
    elif o is False:
        out += b"\xc2"
    elif isinstance(o, u64):
        out += b"\xcf" + struct.pack(">Q", int(o))
    elif isinstance(o, int):
        if 0 <= o < 128:
            out += bytes([o])
        elif -32 <= o < 0:
            out += struct.pack(">b", o)
        elif 0 <= o < 2**64:
            out += b"\xcf" + struct.pack(">Q", o) if o >= 2**63 else b"\xd3" + struct.pack(">q", o)
        elif -2**63 <= o < 0:
            out += b"\xd3" + struct.pack(">q", o)
        else:
            raise ValueError("integer out of msgpack range: %d" % o)
    elif isinstance(o, float):
        out += b"\xcb" + struct.pack(">d", o)
    elif isinstance(o, str):
        b = o.encode()
        out += b"\xdb" + struct.pack(">I", len(b)) + b
    elif isinstance(o, (bytes, bytearray)):
        out += b"\xc6" + struct.pack(">I", len(o)) + bytes(o)
    elif isinstance(o, nils):
        out += b"\xdd" + struct.pack(">I", o.n) + b"\xc0" * o.n
    elif isinstance(o, Arr):
        data = struct.pack("<%d%s" % (len(o.values), DT[o.dtype]), *o.values)
        enc({"dtype": o.dtype, "shape": o.shape, "data": data}, out)
    elif isinstance(o, (list, tuple)):
        out += b"\xdd" + struct.pack(">I", len(o))
        for x in o:
            enc(x, out)
    elif isinstance(o, dict):
        out += b"\xdf" + struct.pack(">I", len(o))
        for k, v in o.items():
            enc(k, out)
            enc(v, out)
    else:
        raise TypeError("cannot encode %r" % (o,))
    return out


def dec(b, i):
    """the object at b[i:], and the offset after it"""
    t = b[i]
    i += 1
    if t <= 0x7f:
        return t, i
    if t >= 0xe0:
        return t - 256, i
    if 0x80 <= t <= 0x8f:
        return dec_map(b, i, t & 15)
    if 0x90 <= t <= 0x9f:
        return dec_list(b, i, t & 15)
    if 0xa0 <= t <= 0xbf:
        n = t & 31
        return b[i:i + n].decode(), i + n
    if t == 0xc0:
        return None, i
    if t in (0xc2, 0xc3):
        return t == 0xc3, i
    if t in (0xc4, 0xc5, 0xc6):
        w = {0xc4: 1, 0xc5: 2, 0xc6: 4}[t]
        n = int.from_bytes(b[i:i + w], "big")
        return bytes(b[i + w:i + w + n]), i + w + n
    if t == 0xca:
        return struct.unpack(">f", b[i:i + 4])[0], i + 4
    if t == 0xcb:
        return struct.unpack(">d", b[i:i + 8])[0], i + 8
    if 0xcc <= t <= 0xcf:
        w = 1 << (t - 0xcc)
        return int.from_bytes(b[i:i + w], "big"), i + w
    if 0xd0 <= t <= 0xd3:
        w = 1 << (t - 0xd0)
        return int.from_bytes(b[i:i + w], "big", signed=True), i + w
    if t in (0xd9, 0xda, 0xdb):
        w = {0xd9: 1, 0xda: 2, 0xdb: 4}[t]
        n = int.from_bytes(b[i:i + w], "big")
        return b[i + w:i + w + n].decode(), i + w + n
    if t in (0xdc, 0xdd):
        w = 2 if t == 0xdc else 4
        return dec_list(b, i + w, int.from_bytes(b[i:i + w], "big"))
    if t in (0xde, 0xdf):
        w = 2 if t == 0xde else 4
        return dec_map(b, i + w, int.from_bytes(b[i:i + w], "big"))
    raise ValueError("msgpack type byte 0x%02x not decoded" % t)


def dec_list(b, i, n):
    v = []
    for _ in range(n):
        x, i = dec(b, i)
        v.append(x)
    return v, i


def dec_map(b, i, n):
    v = {}
    for _ in range(n):
        k, i = dec(b, i)
        v[k], i = dec(b, i)
    return v, i


def getarr(a):
    n = len(a["data"]) // struct.calcsize(DT[a["dtype"]])
    return list(struct.unpack("<%d%s" % (n, DT[a["dtype"]]), a["data"]))


def setarr(a, values):
    if len(a["shape"]) == 1:
        a["shape"] = [len(values)]
    a["data"] = struct.pack("<%d%s" % (len(values), DT[a["dtype"]]), *values)


def edit(code, env):
    b = sys.stdin.buffer.read()
    recs, i = [], 0
    while i < len(b):
        r, i = dec(b, i)
        recs.append(r)
    env = dict(env, recs=recs, getarr=getarr, setarr=setarr,
               kind=lambda k: [r for r in recs if isinstance(r, dict) and r.get("kind") == k])
    exec(code, env)
    out = bytearray()
    for r in env["recs"]:
        enc(r, out)
    sys.stdout.buffer.write(out)


def main():
    env = {"arr": arr, "u64": u64, "nils": nils, "nan": float("nan"), "inf": float("inf")}
    if len(sys.argv) == 3 and sys.argv[1] == "--edit":
        edit(sys.argv[2], env)
        return
    out = bytearray()
    for expr in sys.argv[1:]:
        enc(eval(expr, env), out)
    sys.stdout.buffer.write(out)


if __name__ == "__main__":
    main()
