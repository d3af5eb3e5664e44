"""Problems and solutions in the forms Python users hold them: xcover's
arguments turned into a StructuredProblem, and packed solution batches
decoded."""

from __future__ import annotations

import array
import sys
from typing import Any, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple

from .v1 import solver_pb2

_TYPECODES = {1: "B", 2: "H", 4: "I" if array.array("I").itemsize == 4 else "L"}


def problem_message(problem: Any) -> Any:
    """A Problem message from DLX text, a Problem or a StructuredProblem."""
    if isinstance(problem, str):
        return solver_pb2.Problem(dlx=problem)
    if isinstance(problem, solver_pb2.Problem):
        return problem
    if isinstance(problem, solver_pb2.StructuredProblem):
        return solver_pb2.Problem(structured=problem)
    raise TypeError(
        f"a problem is DLX text, a Problem or a StructuredProblem, not {type(problem).__name__}"
    )


def _xcover_items(
    all_entries: List[Any],
    primary: Optional[Iterable[Hashable]],
    secondary: Optional[Iterable[Hashable]],
    colored: bool,
) -> Tuple[List[Hashable], List[Hashable]]:
    """The primary and secondary items as xcover.covers infers them."""
    if primary is None and secondary is None:
        return list(dict.fromkeys(all_entries)), []
    universe = list(dict.fromkeys(all_entries))
    if primary is None:
        assert secondary is not None
        second = list(dict.fromkeys(secondary))
        excluded = set(second)
        return [e for e in universe if e not in excluded], second
    first = list(dict.fromkeys(primary))
    if secondary is None:
        excluded = set(first)
        rest = [e for e in universe if e not in excluded]
        if colored:
            rest = list(dict.fromkeys(str(e).split(":")[0] for e in rest))
        return first, rest
    return first, list(dict.fromkeys(secondary))


def covers_problem(
    options: Sequence[Sequence[Hashable]],
    primary: Optional[Iterable[Hashable]] = None,
    secondary: Optional[Iterable[Hashable]] = None,
    colored: bool = False,
) -> Any:
    """The StructuredProblem of xcover.covers's arguments: options as lists
    of items (any hashable; with `colored`, strings where a secondary item's
    color follows a colon, "q:RED"), and the primary and secondary items,
    inferred as xcover infers them when not given. Items and colors are
    renamed for the wire, so any hashable item can be sent."""
    all_entries = [entry for option in options for entry in option]
    first, second = _xcover_items(all_entries, primary, secondary, colored)
    names: Dict[Hashable, str] = {}
    items = []
    for i, name in enumerate(first):
        names[name] = f"p{i}"
        items.append(solver_pb2.Item(name=f"p{i}", kind=solver_pb2.ITEM_KIND_PRIMARY))
    for i, name in enumerate(second):
        if name in names:
            raise ValueError(f"item {name!r} is both primary and secondary")
        names[name] = f"s{i}"
        items.append(solver_pb2.Item(name=f"s{i}", kind=solver_pb2.ITEM_KIND_SECONDARY))
    colors: Dict[str, str] = {}
    messages = []
    for index, option in enumerate(options):
        entries = []
        for entry in option:
            item: Hashable = entry
            color = ""
            if colored and ":" in str(entry):
                text = str(entry)
                item = text.split(":")[0]
                color = colors.setdefault(text.split(":")[-1], f"c{len(colors)}")
            if item not in names:
                raise ValueError(f"option {index}: item {item!r} is neither primary nor secondary")
            entries.append(solver_pb2.OptionEntry(item=names[item], color=color))
        messages.append(solver_pb2.ProblemOption(entries=entries))
    return solver_pb2.StructuredProblem(items=items, options=messages)


def decode_batch(batch: Any) -> List[List[int]]:
    """The solutions of a SolutionBatch, packed or not, as lists of option
    indices (ascending)."""
    if not batch.packed_index_bytes:
        return [list(s.option_indices) for s in batch.solutions]
    typecode = _TYPECODES.get(batch.packed_index_bytes)
    if typecode is None:
        raise ValueError(f"packed_index_bytes {batch.packed_index_bytes} is not 1, 2 or 4")
    indices = array.array(typecode)
    indices.frombytes(batch.packed_indices)
    if sys.byteorder == "big" and indices.itemsize > 1:
        indices.byteswap()
    solutions = []
    start = 0
    for length in batch.packed_lengths:
        solutions.append(indices[start : start + length].tolist())
        start += length
    if start != len(indices):
        raise ValueError(f"packed batch: {len(indices)} indices, lengths add up to {start}")
    return solutions
