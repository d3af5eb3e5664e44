"""solve, count and enumerate on problems whose answers are known."""

from __future__ import annotations

import pytest
from conftest import INSTANCES, queens_dlx

import xccd


def test_enumerate_queens12_gives_14200_distinct_solutions(client: xccd.Client) -> None:
    solutions = list(client.enumerate((INSTANCES / "queens12.dlx").read_text()))
    assert len(solutions) == 14_200
    assert len({tuple(s) for s in solutions}) == 14_200
    # Each is 12 queens, one per row.
    assert all(len(s) == 12 for s in solutions)


def test_count_and_limits(client: xccd.Client) -> None:
    assert client.count(queens_dlx(8)) == 92
    first = list(client.enumerate(queens_dlx(8), limit=10))
    assert len(first) == 10
    answer = client.solve(queens_dlx(8), limit=2)
    assert len(answer.solutions) == 2 and answer.reason == "END_REASON_LIMIT"
    answer = client.solve(queens_dlx(6), limit=100)
    assert len(answer.solutions) == 4 and answer.exhausted


def test_a_node_limit_asked_is_not_an_error_and_one_not_asked_is_absent(
    client: xccd.Client,
) -> None:
    assert client.count(queens_dlx(10), max_nodes=50) < 724


def test_preprocess_names_the_same_solutions_by_the_callers_options(
    client: xccd.Client,
) -> None:
    # DLX-PRE removes 237 of sudoku_hard17's options (bench/dlx-pre/).
    text = (INSTANCES / "sudoku_hard17.dlx").read_text()
    plain = {tuple(s) for s in client.enumerate(text)}
    assert len(plain) == 1
    assert {tuple(s) for s in client.enumerate(text, preprocess=True)} == plain
    assert client.count(text, preprocess=True) == 1
    answer = client.solve(text, preprocess=True)
    assert {tuple(s) for s in answer.solutions} == plain
    assert answer.statistics.preprocessing.removed_options == 237


def test_puzzles_come_back_as_grids(client: xccd.Client) -> None:
    grids = list(client.enumerate_puzzle("queens", 6))
    assert len(grids) == 4 and len(set(grids)) == 4
    assert all(grid.count("Q") == 6 for grid in grids), grids
    sudoku = "4.....8.5.3..........7......2.....6.....8.4......1.......6.3.7.5..2.....1.4......"
    (grid,) = client.solve_puzzle("sudoku", sudoku)
    digits = [c for c in grid if c.isdigit()]
    assert len(digits) == 81 and all(d != "0" for d in digits)
    assert [c for c in sudoku if c.isdigit()] == [
        g for g, c in zip(digits, sudoku) if c.isdigit()
    ]


def test_breaking_out_of_enumerate_cancels_the_search(client: xccd.Client) -> None:
    for n, _ in enumerate(client.enumerate(queens_dlx(16))):
        if n == 1000:
            break
    # The server took the cancellation: a new call is answered at once.
    assert client.count(queens_dlx(6)) == 4


@pytest.mark.parametrize("compression", [False, True])
def test_gzip_requests_are_accepted(compression: bool) -> None:
    import os

    with xccd.Client(
        os.environ["XCCD_ADDR"],
        api_key=os.environ.get("XCCD_API_KEY"),
        ca_cert=os.environ.get("XCCD_CA_CERT"),
        compression=compression,
        timeout=60,
    ) as c:
        assert c.count(queens_dlx(8)) == 92
        assert len(list(c.enumerate(queens_dlx(9)))) == 352
