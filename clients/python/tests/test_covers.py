"""Client.covers gives exactly xcover.covers's solutions, on random
problems with primary, secondary and colored items."""

from __future__ import annotations

import random
from typing import Any, Dict, List, Tuple

import pytest
import xcover

import xccd

PROBLEMS = 200


def random_problem(rng: random.Random) -> Dict[str, Any]:
    primary = [f"p{i}" for i in range(rng.randint(2, 6))]
    secondary = [f"s{i}" for i in range(rng.randint(0, 4))]
    colors = ["R", "G", "B"][: rng.randint(1, 3)]
    options: List[List[str]] = []
    for _ in range(rng.randint(1, 16)):
        option = rng.sample(primary, rng.randint(1, min(3, len(primary))))
        for item in rng.sample(secondary, rng.randint(0, len(secondary))):
            option.append(f"{item}:{rng.choice(colors)}" if rng.random() < 0.7 else item)
        rng.shuffle(option)
        options.append(option)
    return {"options": options, "primary": primary, "secondary": secondary, "colored": True}


def canonical(solutions: Any) -> List[Tuple[int, ...]]:
    return sorted(tuple(sorted(int(i) for i in s)) for s in solutions)


def test_covers_gives_xcovers_solutions_on_random_colored_problems(client: xccd.Client) -> None:
    rng = random.Random(26)
    with_solutions = 0
    for n in range(PROBLEMS):
        problem = random_problem(rng)
        expected = canonical(xcover.covers(**problem))
        got = list(client.covers(**problem))
        assert canonical(got) == expected, f"problem {n}: {problem}"
        assert all(s == sorted(s) for s in got)
        with_solutions += bool(expected)
    # The generator makes problems with and without solutions.
    assert PROBLEMS // 10 < with_solutions < PROBLEMS


@pytest.mark.parametrize(
    "primary,secondary",
    [(None, None), ([1, 2, 3, 4], None), (None, [5])],
)
def test_covers_infers_items_as_xcover_does(
    client: xccd.Client, primary: Any, secondary: Any
) -> None:
    options = [[1, 2], [3, 4], [1, 3], [2, 4], [1, 2, 5], [3, 4, 5], [2, 3], [1, 4]]
    expected = canonical(xcover.covers(options, primary=primary, secondary=secondary))
    assert expected
    assert canonical(client.covers(options, primary=primary, secondary=secondary)) == expected
