#!/usr/bin/env python3
"""Exact cover instances whose options have costs ("|n", Knuth's DLX5 format),
for the cheapest-solutions search (xccd solve --cheapest K). Deterministic: the
same arguments (seed included) write the same file. Names have at most 8
characters and colors one, so that DLX5 reads every instance.

  costs.py assign N MAXCOST SEED
      The assignment problem: N workers, N jobs. Items "wI" and "jJ"
      (base-36); one option "wI jJ |c" per pair, c uniform in 0..MAXCOST.
      N! solutions; small MAXCOST makes many ties.

  costs.py domino M N MAXCOST SEED
      Domino tilings of an M x N board (items "RC", as domino.py), each
      domino costing 1..MAXCOST: a minimum-weight perfect matching.

  costs.py cover ITEMS SETS SEED
      A random set partition: ITEMS items "iK", SETS random options of 2 to 4
      items costing their size times 10 minus a random discount of 0..9, plus
      each item alone at cost 12 (so a solution always exists).

  costs.py rooms TASKS ROOMS SLOTS TEACHERS SEED
      A timetable with colors: tasks "tI" (primary) each taught by a random
      teacher; an option "tI rR:S TqsS |c" puts task I in room R at slot S
      (a digit): a room is used at one slot only by all its tasks (the
      color), a teacher teaches once per slot (secondary "TqsS"); the cost
      is random, 0..19. Needs SLOTS <= 10, ROOMS and TEACHERS <= 36.

  costs.py all DIR
      Writes the benchmark set of bench/costs/ into DIR.
"""
import os
import random
import sys

DIG = "0123456789abcdefghijklmnopqrstuvwxyz"


def assign(n, maxcost, seed):
    rng = random.Random(seed)
    out = ["| assignment %dx%d, costs 0..%d (costs.py assign %d %d %d)"
           % (n, n, maxcost, n, maxcost, seed),
           " ".join(["w" + DIG[i] for i in range(n)] + ["j" + DIG[j] for j in range(n)])]
    for i in range(n):
        for j in range(n):
            out.append("w%s j%s |%d" % (DIG[i], DIG[j], rng.randint(0, maxcost)))
    return out


def domino(m, n, maxcost, seed):
    rng = random.Random(seed)
    out = ["| domino tilings %dx%d, costs 1..%d (costs.py domino %d %d %d %d)"
           % (m, n, maxcost, m, n, maxcost, seed),
           " ".join(DIG[r] + DIG[c] for r in range(m) for c in range(n))]
    for r in range(m):
        for c in range(n):
            if c + 1 < n:
                out.append("%s%s %s%s |%d" % (DIG[r], DIG[c], DIG[r], DIG[c + 1],
                                              rng.randint(1, maxcost)))
            if r + 1 < m:
                out.append("%s%s %s%s |%d" % (DIG[r], DIG[c], DIG[r + 1], DIG[c],
                                              rng.randint(1, maxcost)))
    return out


def cover(items, sets, seed):
    rng = random.Random(seed)
    out = ["| random set partition, %d items, %d sets (costs.py cover %d %d %d)"
           % (items, sets, items, sets, seed),
           " ".join("i%d" % k for k in range(items))]
    for _ in range(sets):
        size = rng.randint(2, 4)
        chosen = sorted(rng.sample(range(items), size))
        out.append(" ".join("i%d" % k for k in chosen)
                   + " |%d" % (10 * size - rng.randint(0, 9)))
    for k in range(items):
        out.append("i%d |12" % k)
    return out


def rooms(tasks, nrooms, slots, teachers, seed):
    if not (slots <= 10 and nrooms <= 36 and teachers <= 36):
        sys.exit("need SLOTS <= 10, ROOMS <= 36, TEACHERS <= 36")
    rng = random.Random(seed)
    teacher = [rng.randrange(teachers) for _ in range(tasks)]
    out = ["| timetable, %d tasks, %d rooms, %d slots, %d teachers (costs.py rooms %d %d %d %d %d)"
           % (tasks, nrooms, slots, teachers, tasks, nrooms, slots, teachers, seed),
           " ".join("t%d" % i for i in range(tasks)) + " | "
           + " ".join(["r" + DIG[r] for r in range(nrooms)]
                      + ["T%ss%d" % (DIG[q], s) for q in range(teachers) for s in range(slots)])]
    for i in range(tasks):
        for r in range(nrooms):
            for s in range(slots):
                out.append("t%d r%s:%d T%ss%d |%d"
                           % (i, DIG[r], s, DIG[teacher[i]], s, rng.randint(0, 19)))
    return out


# The benchmark set: (file name, generator, arguments).
SET = [
    ("assign8", assign, (8, 99, 1)),
    ("assign12ties", assign, (12, 3, 3)),
    ("assign16", assign, (16, 99, 8)),
    ("domino6x8", domino, (6, 8, 5, 5)),
    ("domino12x12", domino, (12, 12, 9, 4)),
    ("cover40", cover, (40, 120, 6)),
    ("cover46", cover, (46, 140, 6)),
    ("rooms12", rooms, (12, 4, 4, 5, 7)),
]


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    kinds = {"assign": assign, "domino": domino, "cover": cover, "rooms": rooms}
    if a[0] == "all" and len(a) == 2:
        for name, gen, args in SET:
            with open(os.path.join(a[1], name + ".dlx"), "w") as f:
                f.write("\n".join(gen(*args)) + "\n")
    elif a[0] in kinds:
        print("\n".join(kinds[a[0]](*map(int, a[1:]))))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
