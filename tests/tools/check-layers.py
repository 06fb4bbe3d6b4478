#!/usr/bin/env python3
"""check-layers.py [ROOT] [--stages] - the include rules of docs/ARCHITECTURE.md, checked on the tree.

Reads the numbered list under "## Layers" in docs/ARCHITECTURE.md: every `name` in
backquotes that is a module of lib/ (lib/FOLDER/NAME.c, .h or .cu) belongs to that item's
layer. Then, for every file of lib/ (a module is its .c, .h and .cu together):
  - every source file is in a folder of lib/, a module in one folder, a folder holds the
    modules of one layer (a .def file in it, an included list, is of that layer too);
  - every module of lib/ is in exactly one layer (a new module must be placed in the doc);
  - a module includes ("x.h") only modules of its own layer or below;
  - the stage folders of layer 3 have an order, the one in which the doc's item 3 first names
    them (`lib/data/`, `lib/bench/`, ...): a stage's module includes only modules of its own
    stage or an earlier one (so no two stage folders include each other);
  - the include graph between modules has no circle (a -> b -> ... -> a).
cmd/*/main.c is the top layer and may include anything. --stages: also a line of the include
arrows between stage folders, those against the order and the folders that include each other. Prints each violation, exit 1 when
there is one; exit 0 and a one-line summary otherwise.
"""
import os
import re
import sys


def layers_from_doc(root, modules):
    text = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    m = re.search(r"^## Layers.*?$(.*?)^## ", text, re.S | re.M)
    if not m:
        sys.exit("check-layers: docs/ARCHITECTURE.md has no '## Layers' section")
    layer_of, layer, stages = {}, None, []
    for line in m.group(1).splitlines():
        item = re.match(r"^(\d+)\. ", line)
        if item:
            layer = int(item.group(1))
        elif not line.strip() or not line.startswith(" "):
            if not line.strip():
                continue
            layer = None      # prose after the list
        if layer is None:
            continue
        # the stages' order: the folders of layer 3 in the order the doc first names them
        for folder in re.findall(r"`lib/([a-z_0-9]+)/`", line):
            if layer == 3 and folder not in stages:
                stages.append(folder)
        for name in re.findall(r"`([a-z_0-9]+)(?:\.(?:c|h|cu))?`", line):
            if name in modules:
                layer_of.setdefault(name, set()).add(layer)
    return layer_of, stages


def main():
    args = [a for a in sys.argv[1:] if a != "--stages"]
    show_stages = "--stages" in sys.argv[1:]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    lib = os.path.join(root, "lib")
    bad = []
    # lib/FOLDER/NAME.{c,h,cu}: a folder per layer and stage; a source file directly in lib/
    # is out of place
    files = []
    for entry in sorted(os.listdir(lib)):
        path = os.path.join(lib, entry)
        if os.path.isdir(path):
            files += [(entry, f) for f in sorted(os.listdir(path)) if re.match(r"^[a-z_0-9]+\.(c|h|cu)$", f)]
        elif re.match(r"^[a-z_0-9]+\.(c|h|cu)$", entry):
            bad.append(f"lib/{entry}: not in a folder of lib/ (one per layer and stage: docs/ARCHITECTURE.md)")
    modules = sorted({f.rsplit(".", 1)[0] for _, f in files})
    folder_of = {}
    for d, f in files:
        folder_of.setdefault(f.rsplit(".", 1)[0], set()).add(d)
    for mod, ds in sorted(folder_of.items()):
        if len(ds) > 1:
            bad.append(f"lib/{mod}: in folders {sorted(ds)}")
    layer_of, stages = layers_from_doc(root, modules)
    stage = {d: i for i, d in enumerate(stages)}
    for mod in modules:
        if mod not in layer_of:
            bad.append(f"lib/{mod}: in no layer of docs/ARCHITECTURE.md")
        elif len(layer_of[mod]) > 1:
            bad.append(f"lib/{mod}: in layers {sorted(layer_of[mod])} of docs/ARCHITECTURE.md")
    level = {m: min(ls) for m, ls in layer_of.items()}
    # a folder holds the modules of one layer
    by_folder = {}
    for mod, ds in folder_of.items():
        for d in ds:
            if mod in level:
                by_folder.setdefault(d, set()).add(level[mod])
    for d, ls in sorted(by_folder.items()):
        if len(ls) > 1:
            bad.append(f"lib/{d}/: modules of layers {sorted(ls)} (a folder holds one layer's)")
    # a .def file (an include of lists, e.g. the planner registry) is of its folder's layer
    def_layer = {}
    for entry in sorted(os.listdir(lib)):
        path = os.path.join(lib, entry)
        if os.path.isdir(path):
            for f in os.listdir(path):
                if f.endswith(".def") and entry in by_folder and len(by_folder[entry]) == 1:
                    def_layer[f] = (entry, min(by_folder[entry]))
    edges = {m: set() for m in modules}
    for d, f in files:
        mod = f.rsplit(".", 1)[0]
        for line in open(os.path.join(lib, d, f), encoding="utf-8", errors="replace"):
            dinc = re.match(r'^\s*#\s*include\s+"([a-z_0-9]+\.def)"', line)
            if dinc and dinc.group(1) in def_layer and mod in level and def_layer[dinc.group(1)][1] > level[mod]:
                dd, dl = def_layer[dinc.group(1)]
                bad.append(f"lib/{d}/{f} (layer {level[mod]}) includes lib/{dd}/{dinc.group(1)} (layer {dl}): up a layer")
            inc = re.match(r'^\s*#\s*include\s+"([a-z_0-9]+)\.h"', line)
            if not inc or inc.group(1) == mod or inc.group(1) not in edges:
                continue
            dep = inc.group(1)
            edges[mod].add(dep)
            if mod in level and dep in level and level[dep] > level[mod]:
                bad.append(f"lib/{d}/{f} (layer {level[mod]}) includes {dep}.h (layer {level[dep]}): up a layer")
            # a stage includes only its own and earlier stages' modules (a module in two
            # folders, an error above, is left out)
            dd = next(iter(folder_of[dep])) if len(folder_of[dep]) == 1 else None
            if d in stage and dd in stage and stage[dd] > stage[d]:
                bad.append(f"lib/{d}/{f} (stage {d}) includes lib/{dd}/{dep}.h (stage {dd}, a later one): against the "
                           f"stages' order ({' -> '.join(stages)})")
    # circles: depth-first search over the module graph
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(edges[m]):
            if state.get(d) == 1:
                bad.append("circle: " + " -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in modules:
        if m not in state:
            visit(m)
    if show_stages:
        # the includes between stage folders, as folder arrows (A -> B: a module of A includes
        # one of B), the ones against the stages' order, and the folder pairs that include
        # each other
        one = {m: next(iter(ds)) for m, ds in folder_of.items() if len(ds) == 1}
        arrows = sorted({(d, one[dep]) for d, f in files if d in stage
                         for dep in edges[f.rsplit(".", 1)[0]] if one.get(dep) in stage and one[dep] != d})
        back = [(a, b) for a, b in arrows if stage[b] > stage[a]]
        loops = sorted({tuple(sorted(x)) for x in arrows if (x[1], x[0]) in arrows})
        fmt = lambda xs, sep: ", ".join(f"{a}{sep}{b}" for a, b in xs) or "none"
        print(f"check-layers: stage arrows: {len(arrows)} ({fmt(arrows, '->')}); against the order: {len(back)} "
              f"({fmt(back, '->')}); folder loops: {len(loops)} ({fmt(loops, '<->')})")
    for b in bad:
        print(f"check-layers: {b}")
    if bad:
        return 1
    print(f"check-layers: {len(modules)} modules in {len(by_folder)} folders of {len(set(level.values()))} layers, "
          f"{sum(len(e) for e in edges.values())} includes between them: none up a layer, none against the order of "
          f"{len(stages)} stages, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
