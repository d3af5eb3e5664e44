"""The Client: a channel to an xccd server and its calls, each checked to
have done what was asked (a search that ended early raises), jobs
included."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    Hashable,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import grpc

from ._errors import IncompleteError, XccdError, from_rpc_error, read_details, status_code
from ._problems import covers_problem, decode_batch, problem_message
from ._jobs import Job, JobSolution, Progress
from .v1 import puzzle_pb2, puzzles_pb2, puzzles_pb2_grpc, solver_pb2, solver_pb2_grpc

ProblemLike = Any  # DLX text (str), a Problem or a StructuredProblem message

_ENGINES = {None: 0, "links": 1, "cells": 2}


@dataclass(frozen=True)
class SolveResult:
    """The answer of Client.solve: up to `limit` solutions (lists of option
    indices, ascending), whether the search explored the whole tree (so
    that they are all there are), its EndReason's name and its Statistics
    message."""

    solutions: List[List[int]]
    exhausted: bool
    reason: str
    statistics: Any


class _BearerKey(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """`authorization: Bearer KEY` on every call of a plaintext channel
    (where grpcio refuses call credentials)."""

    def __init__(self, key: str) -> None:
        self._metadata = (("authorization", f"Bearer {key}"),)

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=tuple(details.metadata or ()) + self._metadata)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)


def _end_reason(value: int) -> str:
    return str(solver_pb2.EndReason.Name(value))


def _summary_error(summary: Any) -> Tuple[str, Dict[str, Any]]:
    """The message, code and details of Summary.error (a google.rpc.Status,
    unset when the search did what was asked), as keyword arguments of
    IncompleteError."""
    if not summary.HasField("error"):
        return "", {}
    error = summary.error
    return str(error.message), dict(code=status_code(error.code), **read_details(list(error.details)))


class Client:
    """A connection to an xccd server.

    `target` is host:port. With `ca_cert` (a path or the PEM bytes of the
    CA that signed the server's certificate) or `tls=True` (the system's
    roots) it speaks TLS. `api_key` is sent as `authorization: Bearer KEY`.
    `compression=True` compresses requests with gzip (the server's answers
    come gzip-compressed whenever it is asked, as grpcio always asks).
    `timeout` is the deadline of every call in seconds (None: none), and
    `retries` how many times a call that got UNAVAILABLE before any answer
    is sent again, after a backoff (the server's RetryInfo delay when it
    gives one). Use it as a context manager, or call close().
    """

    def __init__(
        self,
        target: str,
        api_key: Optional[str] = None,
        ca_cert: Union[str, Path, bytes, None] = None,
        *,
        tls: Optional[bool] = None,
        compression: bool = False,
        timeout: Optional[float] = None,
        retries: int = 4,
        channel_options: Sequence[Tuple[str, Any]] = (),
    ) -> None:
        self.timeout = timeout
        self.retries = retries
        options = [("grpc.max_receive_message_length", 64 << 20), *channel_options]
        gzip = grpc.Compression.Gzip if compression else None
        if ca_cert is not None or tls:
            root = ca_cert if isinstance(ca_cert, bytes) or ca_cert is None else Path(ca_cert).read_bytes()
            credentials = grpc.ssl_channel_credentials(root_certificates=root)
            if api_key:
                credentials = grpc.composite_channel_credentials(
                    credentials, grpc.access_token_call_credentials(api_key)
                )
            channel = grpc.secure_channel(target, credentials, options, compression=gzip)
        else:
            channel = grpc.insecure_channel(target, options, compression=gzip)
            if api_key:
                channel = grpc.intercept_channel(channel, _BearerKey(api_key))
        self._channel: Any = channel
        self._solver: Any = solver_pb2_grpc.SolverServiceStub(channel)
        self._puzzles: Any = puzzles_pb2_grpc.PuzzleServiceStub(channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Calls, retried while the server is UNAVAILABLE.

    def _backoff(self, attempt: int, error: XccdError) -> None:
        delay = error.retry_delay if error.retry_delay else 0.1 * 2**attempt
        time.sleep(min(delay, 10.0) * random.uniform(0.8, 1.2))

    def _unary(self, method: Callable[..., Any], request: Any) -> Any:
        attempt = 0
        while True:
            try:
                return method(request, timeout=self.timeout)
            except grpc.RpcError as e:
                error = from_rpc_error(e)
                if error.code != grpc.StatusCode.UNAVAILABLE or attempt >= self.retries:
                    raise error from None
                self._backoff(attempt, error)
                attempt += 1

    def _stream(
        self,
        method: Callable[..., Any],
        request: Any,
        accepted: Iterable[int],
        summaries: Optional[List[Any]] = None,
    ) -> Iterator[Any]:
        """The events of a streaming call before its summary (which goes
        to `summaries`); raises unless the summary's reason is one of
        `accepted` and the call ends OK. A call that got UNAVAILABLE before
        any event is sent again."""
        accepted = set(accepted)
        attempt = 0
        while True:
            call = method(request, timeout=self.timeout)
            received = False
            summary = None
            try:
                for response in call:
                    received = True
                    if response.WhichOneof("event") == "summary":
                        summary = response.summary
                        if summaries is not None:
                            summaries.append(summary)
                    else:
                        yield response
            except grpc.RpcError as e:
                if summary is not None and summary.reason not in accepted:
                    raise self._incomplete(summary, e) from None
                error = from_rpc_error(e)
                if received or error.code != grpc.StatusCode.UNAVAILABLE or attempt >= self.retries:
                    raise error from None
                self._backoff(attempt, error)
                attempt += 1
                continue
            finally:
                call.cancel()
            if summary is None:
                raise IncompleteError("the stream ended without a summary")
            if summary.reason not in accepted:
                raise self._incomplete(summary, None)
            return

    @staticmethod
    def _incomplete(summary: Any, rpc_error: Optional[grpc.RpcError]) -> IncompleteError:
        reason = _end_reason(summary.reason)
        message, fields = _summary_error(summary)
        if rpc_error is not None:
            made = from_rpc_error(
                rpc_error, IncompleteError, end_reason=reason
            )
            assert isinstance(made, IncompleteError)
            if message and message not in made.message:
                made.message = f"{made.message} ({message})"
                made.args = (made.message,)
            return made
        return IncompleteError(
            message or f"the search ended with {reason}", end_reason=reason, **fields
        )

    @staticmethod
    def _accepted(limit: int, max_nodes: int) -> List[int]:
        accepted = [solver_pb2.END_REASON_COMPLETE]
        if limit:
            accepted.append(solver_pb2.END_REASON_LIMIT)
        if max_nodes:
            accepted.append(solver_pb2.END_REASON_NODE_LIMIT)
        return accepted

    # Problems.

    def solve(
        self,
        problem: ProblemLike,
        limit: int = 1,
        *,
        max_nodes: int = 0,
        engine: Optional[str] = None,
        preprocess: bool = False,
    ) -> SolveResult:
        """Up to `limit` solutions of `problem` (DLX text, a Problem or a
        StructuredProblem): `limit=2` tells whether a solution is unique.
        The server answers at most 100,000 (use enumerate beyond).
        `preprocess` has the server reduce the problem first (Knuth's
        DLX-PRE): the same solutions, named by this problem's options;
        statistics.preprocessing says what was removed."""
        request = solver_pb2.SolveRequest(
            problem=problem_message(problem),
            limit=limit,
            max_nodes=max_nodes,
            engine=_ENGINES[engine],
            preprocess=preprocess,
        )
        response = self._unary(self._solver.Solve, request)
        if response.reason not in self._accepted(limit, max_nodes):
            raise IncompleteError(
                "Solve ended early", end_reason=_end_reason(response.reason)
            )
        return SolveResult(
            solutions=[list(s.option_indices) for s in response.solutions],
            exhausted=response.exhausted,
            reason=_end_reason(response.reason),
            statistics=response.statistics,
        )

    def count(
        self,
        problem: ProblemLike,
        *,
        max_nodes: int = 0,
        engine: Optional[str] = None,
        preprocess: bool = False,
    ) -> int:
        """How many solutions `problem` has (counted by the server, none
        transmitted; `preprocess` as for solve)."""
        request = solver_pb2.EnumerateRequest(
            problem=problem_message(problem),
            count_only=True,
            max_nodes=max_nodes,
            engine=_ENGINES[engine],
            preprocess=preprocess,
        )
        summaries: List[Any] = []
        for _ in self._stream(self._solver.Enumerate, request, self._accepted(0, max_nodes), summaries):
            pass
        return int(summaries[-1].solutions)

    def enumerate(
        self,
        problem: ProblemLike,
        limit: int = 0,
        *,
        max_nodes: int = 0,
        engine: Optional[str] = None,
        batch_size: int = 0,
        preprocess: bool = False,
    ) -> Iterator[List[int]]:
        """Every solution of `problem` (or the first `limit`), each a list
        of option indices (ascending), as the server finds them. Breaking
        out of the loop cancels the search. `preprocess` as for solve."""
        request = solver_pb2.EnumerateRequest(
            problem=problem_message(problem),
            limit=limit,
            max_nodes=max_nodes,
            engine=_ENGINES[engine],
            batch_size=batch_size,
            preprocess=preprocess,
            packed_solutions=True,
            progress_interval_seconds=60,
        )
        for event in self._stream(self._solver.Enumerate, request, self._accepted(limit, max_nodes)):
            if event.WhichOneof("event") == "solutions":
                yield from decode_batch(event.solutions)

    def covers(
        self,
        options: Sequence[Sequence[Hashable]],
        primary: Optional[Iterable[Hashable]] = None,
        secondary: Optional[Iterable[Hashable]] = None,
        colored: bool = False,
    ) -> Iterator[List[int]]:
        """xcover.covers on the server: the same arguments (options as
        lists of items; the primary and secondary items, inferred as xcover
        does when not given; with `colored`, "item:COLOR" entries) and the
        same solutions, each a list of option indices (here ascending)."""
        return self.enumerate(covers_problem(options, primary, secondary, colored))

    # Puzzles.

    @staticmethod
    def _puzzle(kind: Union[str, int], puzzle: Union[str, int], weak: bool) -> Any:
        kind_value = (
            puzzle_pb2.PuzzleKind.Value("PUZZLE_KIND_" + kind.upper())
            if isinstance(kind, str)
            else kind
        )
        return puzzle_pb2.Puzzle(kind=kind_value, text=str(puzzle), weak=weak)

    def solve_puzzle(
        self,
        kind: Union[str, int],
        puzzle: Union[str, int],
        limit: int = 1,
        *,
        weak: bool = False,
        engine: Optional[str] = None,
    ) -> List[str]:
        """Up to `limit` solved grids (each in the kind's text layout) of a
        puzzle in its kind's text format: kind "sudoku", "latin",
        "futoshiki", "hitori", "hidato", "slitherlink" or "queens"
        (docs/puzzles.md). At most 10,000 (use enumerate_puzzle beyond)."""
        request = puzzles_pb2.SolvePuzzleRequest(
            puzzle=self._puzzle(kind, puzzle, weak), limit=limit, engine=_ENGINES[engine]
        )
        response = self._unary(self._puzzles.SolvePuzzle, request)
        return [s.text for s in response.solutions]

    def enumerate_puzzle(
        self,
        kind: Union[str, int],
        puzzle: Union[str, int],
        limit: int = 0,
        *,
        weak: bool = False,
        engine: Optional[str] = None,
    ) -> Iterator[str]:
        """Every solved grid of a puzzle (or the first `limit`), as the
        server finds them."""
        request = puzzles_pb2.EnumeratePuzzleRequest(
            puzzle=self._puzzle(kind, puzzle, weak),
            limit=limit,
            engine=_ENGINES[engine],
            progress_interval_seconds=60,
        )
        for event in self._stream(self._puzzles.EnumeratePuzzle, request, self._accepted(limit, 0)):
            if event.WhichOneof("event") == "solutions":
                for solution in event.solutions.solutions:
                    yield str(solution.text)

    # Jobs: searches that run on the server without a client attached and,
    # on a server with a data directory (durable jobs), survive its restarts.

    def _create_job(self, request: Any, request_id: Union[str, uuid.UUID, None]) -> Job:
        # The idempotency key (AIP-155) is chosen once, before the first
        # attempt, so that _unary's retries of an UNAVAILABLE create (the
        # first may have made the job before the answer was lost) return
        # that job rather than making a second one.
        request.request_id = str(request_id if request_id is not None else uuid.uuid4())
        return Job.from_message(self._unary(self._solver.CreateJob, request).job)

    def create_job(
        self,
        problem: ProblemLike,
        limit: int = 0,
        *,
        keep_solutions: int = 0,
        max_nodes: int = 0,
        count_only: bool = False,
        include_option_text: bool = False,
        engine: Optional[str] = None,
        request_id: Union[str, uuid.UUID, None] = None,
        preprocess: bool = False,
    ) -> Job:
        """Creates a job searching `problem` (DLX text, a Problem or a
        StructuredProblem, as for solve; or a Puzzle message) for every
        solution, or the first `limit`; returns it as created (QUEUED or
        RUNNING). The job keeps its first `keep_solutions` solutions for
        get_job and watch (0: the server's default, 100); a durable job
        stores them all (see solutions). `count_only` keeps none.

        `request_id` (a UUID) makes the create idempotent: a create with the
        request_id of a job the server still remembers returns that job
        (and one with the same request_id but a different request raises
        XccdError with reason REQUEST_ID_REUSED). When none is given one is
        made up, so that the retries of this call are safe. `preprocess`
        as for solve (a problem, not a Puzzle)."""
        request = solver_pb2.CreateJobRequest(
            limit=limit,
            keep_solutions=keep_solutions,
            max_nodes=max_nodes,
            count_only=count_only,
            include_option_text=include_option_text,
            engine=_ENGINES[engine],
            preprocess=preprocess,
        )
        if isinstance(problem, puzzle_pb2.Puzzle):
            request.puzzle.CopyFrom(problem)
        else:
            request.problem.CopyFrom(problem_message(problem))
        return self._create_job(request, request_id)

    def create_puzzle_job(
        self,
        kind: Union[str, int],
        puzzle: Union[str, int],
        limit: int = 0,
        *,
        weak: bool = False,
        keep_solutions: int = 0,
        max_nodes: int = 0,
        count_only: bool = False,
        engine: Optional[str] = None,
        request_id: Union[str, uuid.UUID, None] = None,
    ) -> Job:
        """Creates a job solving a puzzle given as to solve_puzzle (its kind
        and its text; `weak` for hitori's and slitherlink's weak solutions):
        the puzzle's side conditions are kept, and each of its solutions
        carries its solved grid (JobSolution.grid). The other arguments are
        create_job's."""
        request = solver_pb2.CreateJobRequest(
            puzzle=self._puzzle(kind, puzzle, weak),
            limit=limit,
            keep_solutions=keep_solutions,
            max_nodes=max_nodes,
            count_only=count_only,
            engine=_ENGINES[engine],
        )
        return self._create_job(request, request_id)

    def get_job(self, name: str) -> Job:
        """The job `name` (`jobs/7`) as the server knows it now. A job the
        server does not know (or no longer: deleted, or expired) raises
        XccdError with reason JOB_NOT_FOUND."""
        # One kept solution at most: the Job is what is asked, and 0 would
        # copy every kept solution.
        request = solver_pb2.GetJobRequest(name=name, max_solutions=1)
        return Job.from_message(self._unary(self._solver.GetJob, request).job)

    def cancel(self, name: str) -> Job:
        """Stops the job `name`; returns it (CANCELLED once it has stopped,
        which may be a moment later: watch or get_job tell). A job that has
        already ended is left as it is. Its solutions so far stay readable."""
        request = solver_pb2.CancelJobRequest(name=name)
        return Job.from_message(self._unary(self._solver.CancelJob, request).job)

    def delete(self, name: str) -> None:
        """Forgets the job `name` (stopping it first if it runs), its
        stored solutions with it: get_job then raises JOB_NOT_FOUND."""
        self._unary(self._solver.DeleteJob, solver_pb2.DeleteJobRequest(name=name))

    def list_jobs(self, filter: Optional[str] = None, *, page_size: int = 0) -> Iterator[Job]:
        """The caller's jobs, oldest first, read a page (`page_size`, 0: the
        server's 100) at a time. `filter` picks some, in AIP-160's syntax:
        `state = SUCCEEDED`, `create_time > "2026-12-01T00:00:00Z"`,
        `durable = true`, with AND, OR, NOT and parentheses (solver.proto's
        ListJobsRequest.filter)."""
        token = ""
        while True:
            request = solver_pb2.ListJobsRequest(
                page_size=page_size, page_token=token, filter=filter or ""
            )
            page = self._unary(self._solver.ListJobs, request)
            for message in page.jobs:
                yield Job.from_message(message)
            token = page.next_page_token
            if not token:
                return

    @staticmethod
    def _job_solutions(messages: Iterable[Any], start: int) -> Iterator[JobSolution]:
        for index, message in enumerate(messages, start):
            grid = message.grid.text if message.HasField("grid") else None
            yield JobSolution(index=index, options=list(message.option_indices), grid=grid)

    @staticmethod
    def _packed_solutions(batch: Any, start: int) -> Iterator[JobSolution]:
        for index, options in enumerate(decode_batch(batch), start):
            yield JobSolution(index=index, options=options)

    def solutions(
        self,
        name: str,
        *,
        page_size: int = 0,
        follow: bool = True,
        poll_interval: float = 0.5,
    ) -> Iterator[JobSolution]:
        """Every solution of the durable job `name`, in the order it found
        them, read from the server's store a page (`page_size`, 0: the
        server's 1,000) at a time. While the job runs, the generator waits
        for more (asking again every `poll_interval` seconds, up to 5 s
        apart while nothing comes), and ends once the job has ended and
        every solution was read; with `follow=False` it ends at the last
        solution stored so far instead. A server without a data directory
        raises XccdError with reason NO_JOB_STORE (and a job that is not
        durable, JOB_NOT_STORED): its kept solutions come with watch."""
        # Plain problems' solutions come packed (one copy per page); puzzle
        # jobs' one message each, since only those carry the grid.
        packed = self.get_job(name).puzzle_kind is None
        token = ""
        delay = poll_interval
        while True:
            request = solver_pb2.ListJobSolutionsRequest(
                name=name, page_size=page_size, page_token=token, packed_solutions=packed
            )
            page = self._unary(self._solver.ListJobSolutions, request)
            start = int(page.first_index)
            if packed:
                found = list(self._packed_solutions(page.packed, start))
            else:
                found = list(self._job_solutions(page.solutions, start))
            yield from found
            token = page.next_page_token
            if not token:
                return
            if found:
                delay = poll_interval
                continue
            if not follow:
                return
            time.sleep(delay)
            delay = min(delay * 2, max(poll_interval, 5.0))

    def _final_job(self, name: str) -> Job:
        """The job once its watch saw it end (its record may trail the
        summary by a moment)."""
        deadline = time.monotonic() + 5
        while True:
            job = self.get_job(name)
            if job.done or time.monotonic() > deadline:
                return job
            time.sleep(0.05)

    def watch(
        self,
        name: str,
        include_solutions: bool = False,
        *,
        from_solution: int = 0,
        progress_interval: float = 1.0,
    ) -> Iterator[Union[Progress, JobSolution, Job]]:
        """Follows the job `name` until it ends: yields a Progress every
        `progress_interval` seconds, with `include_solutions` its kept
        solutions (a durable job's: all of them, from `from_solution` on) as
        JobSolutions as they are found, and last the final Job (SUCCEEDED,
        FAILED or CANCELLED: check its `state`). A watch that ends before
        the job does (the server shutting down, the client's timeout)
        raises IncompleteError naming the reason; a durable job goes on
        after the server's restart, and can be watched again (from the
        index of the next solution wanted). The call is sent again while
        the server is UNAVAILABLE before it answered anything."""
        job = self.get_job(name)
        packed = include_solutions and job.puzzle_kind is None
        request = solver_pb2.WatchJobRequest(
            name=name,
            include_solutions=include_solutions,
            progress_interval_seconds=progress_interval,
            from_solution=from_solution,
            packed_solutions=packed,
        )
        # Reasons with which the summary tells that the job itself ended
        # (CANCELLED only when the call ended OK: CancelJob stopped the job,
        # rather than this call being cut).
        ended = {
            solver_pb2.END_REASON_COMPLETE,
            solver_pb2.END_REASON_LIMIT,
            solver_pb2.END_REASON_NODE_LIMIT,
            solver_pb2.END_REASON_FAILED,
        }
        attempt = 0
        index = from_solution
        while True:
            call = self._solver.WatchJob(request, timeout=self.timeout)
            received = False
            summary = None
            rpc_error: Optional[grpc.RpcError] = None
            try:
                for response in call:
                    received = True
                    event = response.WhichOneof("event")
                    if event == "summary":
                        summary = response.summary
                    elif event == "progress":
                        yield Progress.from_message(response.progress)
                    elif event == "solutions":
                        batch = response.solutions
                        if batch.packed_index_bytes:
                            found = list(self._packed_solutions(batch, index))
                        else:
                            found = list(self._job_solutions(batch.solutions, index))
                        index += len(found)
                        yield from found
            except grpc.RpcError as e:
                rpc_error = e
            finally:
                call.cancel()
            if summary is not None:
                if summary.reason in ended or (
                    summary.reason == solver_pb2.END_REASON_CANCELLED and rpc_error is None
                ):
                    yield self._final_job(name)
                    return
                raise self._incomplete(summary, rpc_error)
            if rpc_error is None:
                raise IncompleteError("the watch ended without a summary")
            if received:
                made = from_rpc_error(rpc_error, IncompleteError)
                assert isinstance(made, IncompleteError)
                raise made from None
            error = from_rpc_error(rpc_error)
            if error.code != grpc.StatusCode.UNAVAILABLE or attempt >= self.retries:
                raise error from None
            self._backoff(attempt, error)
            attempt += 1

    def wait(self, name: str, *, progress_interval: float = 60.0) -> Job:
        """The job `name` once it has ended (SUCCEEDED, FAILED or
        CANCELLED), watched to its end; raises as watch does when the watch
        ends first."""
        for event in self.watch(name, progress_interval=progress_interval):
            if isinstance(event, Job):
                return event
        # Unreachable: watch ends with the Job or raises.
        raise IncompleteError("the watch ended without the job")
