#!/usr/bin/env python3
"""Runs Knuth's DLX5 on every bench/costs/*.dlx, and on some instances without
costs (where DLX5 searches much as DLX2 does), with k=1 and k=10, then on
some of them with its search parameters h (lenthresh), z (zgiven) and Z
(Zchars) set (PARAMS), and writes bench/dlx5-reference.tsv (figures) and
bench/dlx5-solutions.tsv (every solution DLX5 finds, in its order, printed
by its option m1); the last column of both, params, holds the parameters
(empty for DLX5's defaults).

  dlx5_reference.py DLX5_BINARY [BENCH_DIR]

DLX5 is built from Knuth's dlx5.w with ctangle and gcc -O3 outside this
repository; its path is the first argument. An option is written as its item
names sorted (DLX5 prints an option from its chosen item on, with
annotations), a solution as its options sorted, joined by "; ".
"""
import os
import re
import subprocess
import sys
import time

KS = (1, 10)
# Instances without costs: every solution costs 0, so DLX5 stops after k.
FREE = ["queens8", "langford8", "latin4", "color_torus4x4w2x2", "color_debruijn4",
        "pent3x20", "sudoku_hard17"]
# DLX5's parameters on instances they fit: Z (one primary item of each
# prefix per option) and z (so many other primary items per option) cut off
# nodes by a lower bound; h changes the branching choice. (Not where the
# bound is misapplied: with z > 1 and options of other sizes, DLX5 writes
# past its 32-entry sortbuf, undefined behaviour; cover40 with z2 then
# reports 0 solutions after printing some.)
PARAMS = [
    ("costs/assign8", "Zwj"), ("costs/assign8", "z1 Zw"), ("costs/assign16", "Zwj"),
    ("costs/assign12ties", "z2"), ("costs/domino6x8", "z2"), ("costs/domino12x12", "z2"),
    ("costs/rooms12", "z1"), ("costs/rooms12", "Zt"), ("costs/rooms12", "h1"),
    ("costs/cover40", "h2"), ("costs/cover46", "h30"),
]


def run(binary, path, k, params=""):
    with open(path) as f:
        start = time.time()
        done = subprocess.run([binary, "m1", "k%d" % k] + params.split(), stdin=f,
                              capture_output=True, text=True, check=True)
        seconds = time.time() - start
    sols, cur = [], None
    for line in done.stdout.splitlines():
        m = re.match(r"(\d+): \(total cost \$(\d+)\)$", line)
        if m:
            cur = (int(m.group(1)), int(m.group(2)), [])
            sols.append(cur)
        else:
            items = line.split("(")[0].split()
            cur[2].append(" ".join(sorted(items)))
    err = done.stderr
    alt = re.search(r"Altogether (\d+) solutions?, .* (\d+) updates, (\d+) cleansings, "
                    r".* (\d+) nodes\.", err)
    costs = []
    for m in re.finditer(r"\$(\d+)(?: \(repeated (\d+) times\))?", err.split("Altogether")[1]):
        costs += [int(m.group(1))] * int(m.group(2) or 1)
    return alt.groups(), costs, sols, seconds


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    bench = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..")
    cases = sorted("costs/" + f[:-4] for f in os.listdir(os.path.join(bench, "costs"))
                   if f.endswith(".dlx"))
    cases = [(case, "") for case in cases + ["instances/" + name for name in FREE]]
    cases += PARAMS
    made = ("# Knuth's DLX5 (min-cost exact cover), built from dlx5.w with ctangle and gcc -O3, "
            "run as `dlx5 m1 kK PARAMS < bench/CASE.dlx` (K = 1 and 10) by "
            "bench/gen/dlx5_reference.py.")
    figures = [made,
               "# solutions: how many DLX5 found (each cheaper than the K-th best before it); "
               "costs: the K best, ascending; nodes, updates, cleansings exact; seconds indicative; "
               "params: DLX5's h, z, Z given (none: its defaults).",
               "case\tk\tsolutions\tnodes\tupdates\tcleansings\tcosts\tseconds\tparams"]
    solutions = [made, "# one line per solution found, in DLX5's order: its number, its cost, "
                 "its options (item names sorted) sorted and joined by '; '; the params.",
                 "case\tk\tfound\tcost\toptions\tparams"]
    for case, params in cases:
        for k in KS:
            (count, updates, cleansings, nodes), costs, sols, seconds = run(
                binary, os.path.join(bench, case + ".dlx"), k, params)
            figures.append("\t".join([case, str(k), count, nodes, updates, cleansings,
                                      ",".join(map(str, costs)), "%.2f" % seconds, params]))
            for found, cost, options in sols:
                solutions.append("\t".join([case, str(k), str(found), str(cost),
                                            "; ".join(sorted(options)), params]))
    with open(os.path.join(bench, "dlx5-reference.tsv"), "w") as f:
        f.write("\n".join(figures) + "\n")
    with open(os.path.join(bench, "dlx5-solutions.tsv"), "w") as f:
        f.write("\n".join(solutions) + "\n")


if __name__ == "__main__":
    main()
