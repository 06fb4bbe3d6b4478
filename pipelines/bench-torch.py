#!/usr/bin/env python3
"""bench-torch.py - the PyTorch peer of build/tools/bench-kernel: the same shards (same
offsets and indices, read from the files `bench-kernel --dump DIR` writes) through one
torch.nn.EmbeddingBag(mode='sum') per table with fp16 weights (--dtype), on the GPU or with
--cpu on the CPU (the peer of `bench-kernel --cpu`), then loss = (out * grad).sum(),
loss.backward() and torch.optim.SGD(lr).step() (dense gradients, sparse=False, PyTorch's
default; --sparse: sparse=True, so SGD touches only the rows looked up, as our kernel does);
--optim adam: torch.optim.Adam (SparseAdam with --sparse), beside bench-kernel --optimizer adam.
Dimension letters: B batch, L pooling, D dim, E rows, T tables.

Protocol as bench-kernel (W, R and K are read from --kernel-tsv unless given): W warm-up
iterations, R timed ones, every iteration is
flush, forward, flush, backward+step. GPU: timed with torch.cuda.Event on the current
stream; the flush sums a buffer of >= 2x L2. CPU: timed with time.perf_counter; the flush
sums one float of every 64-byte line of a buffer of bench-kernel --cpu's size (read from
--kernel-tsv; else 2x the last-level cache, at least 64 MiB; --flush-mb sets it); --threads sets torch.set_num_threads (give
both tools the same count). Per phase: mean without the K highest and K lowest.
Forward = the T EmbeddingBag calls + torch.cat into [B, sumD]; backward = the loss
(out.float() * grad).sum(), loss.backward() and opt.step(). Weights and grad are random
(values do not change the timing); indices and offsets are the kernel's.

stdout: a tab-separated table; with --kernel-tsv FILE (bench-kernel's stdout) the kernel's
times and the ratio torch/kernel (how many times faster our kernel is) are joined in.
Exit: 0 ok, 2 usage, 3 environment (no torch, no CUDA device, missing files).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import aspipe


aspipe.set_prog("bench-torch")


def die(msg, code):
    """one line "bench-torch: msg" (aspipe.fail), exit code"""
    aspipe.fail(msg, code)


def read_raw(path, dtype, torch):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if len(data) == 0:
        return torch.empty(0, dtype=dtype)
    return torch.frombuffer(data, dtype=dtype)  # little-endian hosts only


def trimmed(v, drop):
    w = sorted(v)
    if len(w) > 2 * drop:
        w = w[drop:len(w) - drop]
    return sum(w) / len(w)


def median(v):
    w = sorted(v)
    n = len(w)
    return w[n // 2] if n % 2 else 0.5 * (w[n // 2 - 1] + w[n // 2])


def read_kernel_tsv(path):
    rows = {}
    header = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if header is None:
                header = cols
                continue
            rows[cols[0]] = dict(zip(header, cols))
    return rows


def bench_shard(torch, desc, d, args, flush):
    dev = torch.device("cpu") if args.cpu else torch.device("cuda", args.device)
    wdtype = {"float16": torch.float16, "float32": torch.float32}[args.dtype]
    T, B = desc["T"], desc["B"]
    rows, dims = desc["rows"], desc["dims"]
    offsets = read_raw(os.path.join(d, desc["offsets"]), torch.int64, torch)
    indices = read_raw(os.path.join(d, desc["indices"]), torch.int32, torch)
    if offsets.numel() != T * B + 1:
        die("%s: offsets has %d entries, expected %d" % (desc["name"], offsets.numel(), T * B + 1), 1)
    torch.manual_seed(desc.get("seed", 0) & 0x7FFFFFFF)
    bags, inp, offs = [], [], []
    for t in range(T):
        s, e = int(offsets[t * B]), int(offsets[(t + 1) * B])
        bag = torch.nn.EmbeddingBag(rows[t], dims[t], mode="sum", sparse=args.sparse).to(device=dev, dtype=wdtype)
        with torch.no_grad():
            bag.weight.uniform_(-1.0, 1.0)
        bags.append(bag)
        inp.append(indices[s:e].to(device=dev, dtype=torch.int64))
        offs.append((offsets[t * B:(t + 1) * B] - s).to(device=dev, dtype=torch.int64))
    sumD = sum(dims)
    grad = (torch.rand(B, sumD, device=dev) * 2.0 - 1.0)
    params = [p for b in bags for p in b.parameters()]
    lr = desc.get("lr", args.lr)
    if args.optim == "adam":   # eps 1e-8, betas (0.9, 0.999): ours (lib/kernels/ebopt.h)
        opt = torch.optim.SparseAdam(params, lr=lr) if args.sparse else torch.optim.Adam(params, lr=lr)
    else:
        opt = torch.optim.SGD(params, lr=lr)
    fwd, bwd, tot = [], [], []
    if args.cpu:
        for it in range(args.warmup + args.iters):
            opt.zero_grad(set_to_none=True)
            flush()
            t0 = time.perf_counter()
            out = torch.cat([bags[t](inp[t], offs[t]) for t in range(T)], dim=1)
            t1 = time.perf_counter()
            flush()
            t2 = time.perf_counter()
            loss = (out.float() * grad).sum()
            loss.backward()
            opt.step()
            t3 = time.perf_counter()
            if it >= args.warmup:
                f, b = (t1 - t0) * 1e3, (t3 - t2) * 1e3
                fwd.append(f)
                bwd.append(b)
                tot.append(f + b)
        return fwd, bwd, tot
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    for it in range(args.warmup + args.iters):
        opt.zero_grad(set_to_none=True)
        flush()
        ev[0].record()
        out = torch.cat([bags[t](inp[t], offs[t]) for t in range(T)], dim=1)
        ev[1].record()
        flush()
        ev[2].record()
        loss = (out.float() * grad).sum()
        loss.backward()
        opt.step()
        ev[3].record()
        torch.cuda.synchronize(dev)
        if it >= args.warmup:
            f, b = ev[0].elapsed_time(ev[1]), ev[2].elapsed_time(ev[3])
            fwd.append(f)
            bwd.append(b)
            tot.append(f + b)
    del bags, inp, offs, grad, params, opt, out, loss
    torch.cuda.empty_cache()
    return fwd, bwd, tot


def cpu_flush_bytes(kernel_tsv):
    """bench-kernel --cpu's sweep (its '# flush_mib:' line) when its TSV is given, else
    2x the last-level cache as getconf reports it (bench-kernel's rule), at least 64 MiB"""
    if kernel_tsv:
        with open(kernel_tsv) as f:
            for line in f:
                if line.startswith("# flush_mib:"):
                    return int(float(line.split(":", 1)[1])) << 20
    llc = 0
    for name in ("LEVEL3_CACHE_SIZE", "LEVEL2_CACHE_SIZE"):
        try:
            llc = int(subprocess.run(["getconf", name], capture_output=True, text=True).stdout.strip() or 0)
        except (OSError, ValueError):
            llc = 0
        if llc > 0:
            break
    return max(2 * (llc if llc > 0 else 32 << 20), 64 << 20)


def main():
    ap = argparse.ArgumentParser(description="PyTorch nn.EmbeddingBag peer of bench-kernel (see the module doc).")
    ap.add_argument("--dir", required=True, help="directory bench-kernel --dump wrote")
    ap.add_argument("--kernel-tsv", help="bench-kernel's stdout, to join and print ratios")
    ap.add_argument("--warmup", type=int, help="warm-up iterations (bench-kernel's, from --kernel-tsv; else 5)")
    ap.add_argument("--iters", type=int, help="timed iterations (bench-kernel's; else 10)")
    ap.add_argument("--drop", type=int, help="drop K highest and K lowest (bench-kernel's; else 2)")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--device", type=int, default=0, help="CUDA device (GPU only)")
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (the peer of bench-kernel --cpu)")
    ap.add_argument("--threads", type=int, default=0, help="CPU: torch.set_num_threads (0: torch's default)")
    ap.add_argument("--flush-mb", type=int, default=0, help="CPU: cache-flush sweep in MiB (2x the LLC, >= 64)")
    ap.add_argument("--dtype", choices=["float16", "float32"], default="float16", help="weight dtype (float16)")
    ap.add_argument("--sparse", action="store_true", help="EmbeddingBag(sparse=True): SGD updates touched rows only")
    ap.add_argument("--optim", choices=["sgd", "adam"], default="sgd",
                    help="the optimizer: sgd (torch.optim.SGD) or adam (Adam; SparseAdam with --sparse); row-wise "
                         "Adagrad has no PyTorch optimizer (FBGEMM's only)")
    ap.add_argument("--only", help="only shards whose name contains this")
    args = ap.parse_args()
    # the kernel's protocol unless given: "# protocol: W warm-up, R timed, ... without K highest ..."
    proto = {"warmup": 5, "iters": 10, "drop": 2}
    if args.kernel_tsv and os.path.exists(args.kernel_tsv):
        with open(args.kernel_tsv) as f:
            for line in f:
                m = re.match(r"# protocol: (\d+) warm-up, (\d+) timed, .* without (\d+) highest", line)
                if m:
                    proto = {"warmup": int(m.group(1)), "iters": int(m.group(2)), "drop": int(m.group(3))}
                    break
    for k, v in proto.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.iters < 1 or args.warmup < 0 or args.drop < 0 or args.threads < 0 or args.flush_mb < 0:
        ap.error("--iters >= 1, --warmup >= 0, --drop >= 0, --threads >= 0, --flush-mb >= 0")
    try:
        import torch
    except ImportError:
        die("PyTorch is not installed", 3)
    if not args.cpu and not torch.cuda.is_available():
        die("no CUDA device for PyTorch (--cpu runs on the CPU)", 3)
    index = os.path.join(args.dir, "index.txt")
    if not os.path.exists(index):
        die("%s: no index.txt (run bench-kernel --dump %s first)" % (args.dir, args.dir), 3)
    with open(index) as f:
        names = [l.strip() for l in f if l.strip()]
    kern = read_kernel_tsv(args.kernel_tsv) if args.kernel_tsv else {}

    if args.cpu:
        if args.threads:
            torch.set_num_threads(args.threads)
        fbytes = (args.flush_mb << 20) if args.flush_mb else cpu_flush_bytes(args.kernel_tsv)
        flush_buf = torch.ones(fbytes // 4, dtype=torch.float32)
        lines = flush_buf[::16]          # one float of every 64-byte line
        flush = lambda: lines.sum()
        model = "unknown cpu"
        try:
            with open("/proc/cpuinfo") as f:
                model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), model)
        except OSError:
            pass
        devname = "cpu: %s (%d threads); flush %d MiB" % (model, torch.get_num_threads(), fbytes >> 20)
    else:
        dev = torch.device("cuda", args.device)
        props = torch.cuda.get_device_properties(dev)
        l2 = getattr(props, "L2_cache_size", 0) or (128 << 20)
        flush_buf = torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device=dev).fill_(1.0)
        flush = flush_buf.sum
        devname = props.name

    print("# torch %s  device: %s  weights: %s, %s gradients, %s" % (torch.__version__, devname, args.dtype,
                                                                    "sparse" if args.sparse else "dense", args.optim))
    print("# protocol: %d warm-up, %d timed, each phase after a cache flush; ms = mean without %d highest and "
          "%d lowest; ratio = torch total / kernel total" % (args.warmup, args.iters, args.drop, args.drop))
    cols = ["name", "torch_fwd_ms", "torch_bwd_ms", "torch_total_ms", "torch_total_med", "kernel_fwd_ms",
            "kernel_bwd_ms", "kernel_total_ms", "kernel_total_gbps", "ratio_fwd", "ratio_bwd", "ratio_total"]
    print("\t".join(cols))
    sys.stdout.flush()
    for name in names:
        if args.only and args.only not in name:
            continue
        with open(os.path.join(args.dir, name + ".json")) as f:
            desc = json.load(f)
        print("bench-torch: %s" % name, file=sys.stderr)
        fwd, bwd, tot = bench_shard(torch, desc, args.dir, args, flush)
        tf, tb, tt = trimmed(fwd, args.drop), trimmed(bwd, args.drop), trimmed(tot, args.drop)
        k = kern.get(name)
        if k:
            kf, kb, kt = float(k["fwd_ms"]), float(k["bwd_ms"]), float(k["total_ms"])
            kg = k.get("total_gbps", "")
            rf = "%.2f" % (tf / kf) if kf > 0 else "-"
            rb = "%.2f" % (tb / kb) if kb > 0 else "-"
            rt = "%.2f" % (tt / kt) if kt > 0 else "-"
            kcols = ["%.4f" % kf, "%.4f" % kb, "%.4f" % kt, kg, rf, rb, rt]
        else:
            kcols = ["-"] * 7
        print("\t".join([name, "%.4f" % tf, "%.4f" % tb, "%.4f" % tt, "%.4f" % median(tot)] + kcols))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
