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


def main():
    env = {"arr": arr, "u64": u64, "nils": nils, "nan": float("nan"), "inf": float("inf")}
    out = bytearray()
    for expr in sys.argv[1:]:
        enc(eval(expr, env), out)
    sys.stdout.buffer.write(out)


if __name__ == "__main__":
    main()
