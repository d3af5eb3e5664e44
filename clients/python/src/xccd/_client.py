"""The Client: a channel to an xccd server and its calls, each checked to
have done what was asked (a search that ended early raises)."""

from __future__ import annotations

import random
import time
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
from .v1 import puzzles_pb2, puzzles_pb2_grpc, solver_pb2, solver_pb2_grpc

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
    ) -> SolveResult:
        """Up to `limit` solutions of `problem` (DLX text, a Problem or a
        StructuredProblem): `limit=2` tells whether a solution is unique.
        The server answers at most 100,000 (use enumerate beyond)."""
        request = solver_pb2.SolveRequest(
            problem=problem_message(problem),
            limit=limit,
            max_nodes=max_nodes,
            engine=_ENGINES[engine],
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
        self, problem: ProblemLike, *, max_nodes: int = 0, engine: Optional[str] = None
    ) -> int:
        """How many solutions `problem` has (counted by the server, none
        transmitted)."""
        request = solver_pb2.EnumerateRequest(
            problem=problem_message(problem),
            count_only=True,
            max_nodes=max_nodes,
            engine=_ENGINES[engine],
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
    ) -> Iterator[List[int]]:
        """Every solution of `problem` (or the first `limit`), each a list
        of option indices (ascending), as the server finds them. Breaking
        out of the loop cancels the search."""
        request = solver_pb2.EnumerateRequest(
            problem=problem_message(problem),
            limit=limit,
            max_nodes=max_nodes,
            engine=_ENGINES[engine],
            batch_size=batch_size,
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
            puzzles_pb2.PuzzleKind.Value("PUZZLE_KIND_" + kind.upper())
            if isinstance(kind, str)
            else kind
        )
        return puzzles_pb2.Puzzle(kind=kind_value, text=str(puzzle), weak=weak)

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

    # Jobs (create_job, watch, solutions, cancel, delete) come here once the
    # jobs API is redesigned as resources (issue 26, point 2); they are not
    # written against the SubmitJob API that is being replaced.
