#!/usr/bin/env python3
"""MacMahon's 24 three-colour squares in a 4x6 rectangle, as an XCC problem (colours).

Each square has its four edges (top, right, bottom, left) coloured from {0, 1, 2}; the 24
squares are every such colouring up to rotation. They fill a 4x6 rectangle so that touching
edges have the same colour and the whole border has colour 0.

Items: one primary item per square (s0..s23) and per cell (rRcC); one secondary item per
inner edge, h<r><c> between cells (r, c) and (r, c+1), v<r><c> between (r, c) and (r+1, c),
coloured by the colour of that edge. An option places a square, in one of its distinct
rotations, on a cell whose border sides it colours 0.

    python3 examples/macmahon_squares.py > examples/macmahon_squares.dlx
"""
ROWS, COLS = 4, 6

def rotations(e):
    seen = []
    for k in range(4):
        r = e[k:] + e[:k]
        if r not in seen:
            seen.append(r)
    return seen

squares = []
for code in range(81):
    e = (code // 27, code // 9 % 3, code // 3 % 3, code % 3)
    if min(rotations(e)) == e:
        squares.append(e)
assert len(squares) == 24

cells = [f"r{r}c{c}" for r in range(ROWS) for c in range(COLS)]
h = [f"h{r}{c}" for r in range(ROWS) for c in range(COLS - 1)]
v = [f"v{r}{c}" for r in range(ROWS - 1) for c in range(COLS)]
print(__doc__.strip().splitlines()[0].join(["| ", ""]))
print(" ".join([f"s{i}" for i in range(len(squares))] + cells + ["|"] + h + v))
for i, sq in enumerate(squares):
    for top, right, bottom, left in rotations(sq):
        for r in range(ROWS):
            for c in range(COLS):
                sides = []
                ok = True
                for colour, border, name in (
                    (top, r == 0, f"v{r - 1}{c}"),
                    (right, c == COLS - 1, f"h{r}{c}"),
                    (bottom, r == ROWS - 1, f"v{r}{c}"),
                    (left, c == 0, f"h{r}{c - 1}"),
                ):
                    if border:
                        ok = ok and colour == 0
                    else:
                        sides.append(f"{name}:{colour}")
                if ok:
                    print(" ".join([f"s{i}", f"r{r}c{c}"] + sides))
