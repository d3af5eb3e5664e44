"""Jobs as the client hands them out: Job (what the server reports of a
job), JobSolution (one solution of a job, with its grid for a puzzle job)
and Progress (a snapshot of a running job), each made from its message.
The names of enum values lose their prefixes ("SUCCEEDED", "sudoku"), so
that a program compares them with plain strings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, List, Optional

from .v1 import puzzle_pb2, solver_pb2

#: The states in which a job has ended: nothing about it changes after.
FINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


def _time(message: Any, name: str) -> Optional[datetime]:
    if not message.HasField(name):
        return None
    return getattr(message, name).ToDatetime(tzinfo=timezone.utc)  # type: ignore[no-any-return]


def state_name(value: int) -> str:
    """A JobState value's name without JOB_STATE_ ("SUCCEEDED")."""
    return str(solver_pb2.JobState.Name(value)).removeprefix("JOB_STATE_")


def kind_name(value: int) -> Optional[str]:
    """A PuzzleKind value as solve_puzzle takes it ("sudoku"); None for
    PUZZLE_KIND_UNSPECIFIED (a job on a plain problem)."""
    if value == puzzle_pb2.PUZZLE_KIND_UNSPECIFIED:
        return None
    return str(puzzle_pb2.PuzzleKind.Name(value)).removeprefix("PUZZLE_KIND_").lower()


def summary_error(summary: Any) -> str:
    """The message of Summary.error, whether a string or a google.rpc.Status."""
    error = getattr(summary, "error", "")
    return error if isinstance(error, str) else str(getattr(error, "message", ""))


@dataclass(frozen=True)
class Progress:
    """A snapshot of a running job (WatchJob's progress event):
    solutions and search-tree nodes so far, Knuth's estimate of the share
    of the tree explored (0 to 1), seconds since it started and estimated
    seconds left (negative when unknown), and what it waits for ("" when
    it is not waiting)."""

    solutions: int
    nodes: int
    fraction_done: float
    elapsed_seconds: float
    eta_seconds: float
    waiting_for: str

    @classmethod
    def from_message(cls, message: Any) -> "Progress":
        return cls(
            solutions=int(message.solutions),
            nodes=int(message.nodes),
            fraction_done=float(message.fraction_done),
            elapsed_seconds=float(message.elapsed_seconds),
            eta_seconds=float(message.eta_seconds),
            waiting_for=str(message.waiting_for),
        )


@dataclass(frozen=True)
class JobSolution:
    """One solution of a job: its index in the order the job found them
    (from 0), the option indices it chooses (ascending), and for a puzzle
    job the solved grid in the puzzle's text layout (None otherwise)."""

    index: int
    options: List[int]
    grid: Optional[str] = None


@dataclass(frozen=True)
class Job:
    """What the server reports of a job.

    `name` is its resource name (`jobs/7`); `state` one of "QUEUED",
    "RUNNING" (live) and "SUCCEEDED", "FAILED", "CANCELLED" (final; see
    `done`). `solutions` counts the solutions found so far (all of them
    once the job has ended), `nodes` the search-tree nodes explored.
    A `durable` job is kept in the server's store: it survives a restart,
    and `stored_solutions` of its solutions can be read now with
    Client.solutions. `create_time` and `end_time` are aware datetimes
    (UTC; `end_time` None while the job runs). `puzzle_kind` is the kind
    of a puzzle job ("sudoku", ...), None for a plain problem. Once the job
    has ended, `end_reason` names its summary's EndReason
    ("END_REASON_COMPLETE", ...), `exhausted` tells whether the whole tree
    was explored, and `error` says why a FAILED job failed. `message` is
    the Job message itself (statistics and the rest).
    """

    name: str
    state: str
    solutions: int
    nodes: int
    durable: bool
    stored_solutions: int
    create_time: Optional[datetime]
    end_time: Optional[datetime]
    puzzle_kind: Optional[str]
    end_reason: Optional[str]
    exhausted: bool
    error: str
    message: Any = field(repr=False, compare=False)

    @property
    def done(self) -> bool:
        """The job has ended (SUCCEEDED, FAILED or CANCELLED)."""
        return self.state in FINAL_STATES

    @classmethod
    def from_message(cls, message: Any) -> "Job":
        ended = message.HasField("summary")
        summary = message.summary
        return cls(
            name=str(message.name),
            state=state_name(message.state),
            solutions=int(summary.solutions if ended else message.progress.solutions),
            nodes=int(summary.statistics.nodes if ended else message.progress.nodes),
            durable=bool(message.durable),
            stored_solutions=int(message.stored_solutions),
            create_time=_time(message, "create_time"),
            end_time=_time(message, "end_time"),
            puzzle_kind=kind_name(message.puzzle_kind),
            end_reason=str(solver_pb2.EndReason.Name(summary.reason)) if ended else None,
            exhausted=bool(summary.exhausted) if ended else False,
            error=summary_error(summary) if ended else "",
            message=message,
        )
