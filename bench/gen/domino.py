#!/usr/bin/env python3
"""Domino tilings of an m x n board as an exact cover problem, in DLX format.

Primary items:   one per cell, "RC" with R and C base-36 digits (row, column).
Secondary items: none, unless --colored (see below).
Options:         one per domino: "RC R'C'" for two neighbouring cells, the
                 horizontal ones of a cell before its vertical one, cells in
                 row-major order.

--colored adds a secondary item "hR" per row R, and colours each horizontal
domino's option with "hR:a" or "hR:b" by the parity of its left column: a row's
horizontal dominoes must then all start on columns of one parity, a colour
constraint whose subproblems repeat (the memoized search's colored benchmark).

Usage: domino.py M N [--colored]
Counts (no colour): 2x2:2 4x4:36 6x6:6728 8x8:12988816 10x10:258584046368
"""
import sys

DIG = "0123456789abcdefghijklmnopqrstuvwxyz"


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    m, n = int(args[0]), int(args[1])
    colored = "--colored" in args
    if not (1 <= m <= 36 and 1 <= n <= 36):
        sys.exit("m and n must be in 1..36 (names use one base-36 digit)")
    cell = lambda r, c: DIG[r] + DIG[c]
    print(f"| domino tilings of a {m}x{n} board{' (colored rows)' if colored else ''}:"
          f" python3 bench/gen/domino.py {' '.join(args)}")
    items = [cell(r, c) for r in range(m) for c in range(n)]
    if colored:
        print(" ".join(items) + " | " + " ".join("h" + DIG[r] for r in range(m)))
    else:
        print(" ".join(items))
    for r in range(m):
        for c in range(n):
            if c + 1 < n:
                color = f" h{DIG[r]}:{'ab'[c % 2]}" if colored else ""
                print(f"{cell(r, c)} {cell(r, c + 1)}{color}")
            if r + 1 < m:
                print(f"{cell(r, c)} {cell(r + 1, c)}")


if __name__ == "__main__":
    main()
