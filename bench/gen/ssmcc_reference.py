#!/usr/bin/env python3
"""Runs Knuth's SSMCC on every bench/instances/mcc_*.dlx (the instances with
multiplicities) and writes bench/ssmcc-reference.tsv: solutions, nodes and
updates (exact, machine-independent) and seconds (the fastest of three runs).

  ssmcc_reference.py SSMCC_BINARY [BENCH_DIR]

SSMCC is built from Knuth's ssmcc.w with ctangle and gcc -O3 outside this
repository; its path is the first argument. Its last line reads
"Altogether N solutions, ... U updates, B bytes, M nodes, ccost C%."
"""
import glob
import os
import re
import subprocess
import sys
import time

HEADER = """\
# Knuth's SSMCC (Algorithm M on sparse sets: SSXCC-BINARY with DLX3's multiplicities, by Filip
# Stappers), ctangle'd from ssmcc.w, gcc -O3, one core of a 2-core machine like yours, count-only
# runs, default options; made by bench/gen/ssmcc_reference.py.
# nodes and updates are exact and machine-independent: a program that follows SSMCC's steps and
# branching rule gets the same numbers (the cells engine in Order::Ssxcc does, from the root).
# seconds are indicative (the fastest of three runs, the machine shared): compare only times
# measured side by side (xccd bench --engine ssxcc --filter mcc_ runs SSMCC's counts).
case\tsolutions\tnodes\tupdates\tseconds
"""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    bench = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..")
    rows = []
    for path in sorted(glob.glob(os.path.join(bench, "instances", "mcc_*.dlx"))):
        name = os.path.basename(path)[:-4]
        best = None
        for _ in range(3):
            with open(path) as f:
                start = time.time()
                done = subprocess.run([binary], stdin=f, capture_output=True, text=True,
                                      check=True)
                seconds = time.time() - start
            best = seconds if best is None else min(best, seconds)
        last = done.stderr.strip().splitlines()[-1]
        m = re.match(r"Altogether (\d+) solutions?, .* (\d+) updates, \d+ bytes, (\d+) nodes",
                     last)
        if not m:
            sys.exit("%s: unexpected output %r" % (name, last))
        rows.append("%s\t%s\t%s\t%s\t%.2f" % (name, m.group(1), m.group(3), m.group(2), best))
    with open(os.path.join(bench, "ssmcc-reference.tsv"), "w") as out:
        out.write(HEADER + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
