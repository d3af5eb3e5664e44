"""Failed calls raise XccdError with the gRPC code and the ErrorInfo
reason; a stream that the server's shutdown cuts short raises, naming it;
calls are retried while the server is UNAVAILABLE."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest
from conftest import queens_dlx

import xccd


def test_a_bad_problem_raises_invalid_argument_with_its_details(client: xccd.Client) -> None:
    with pytest.raises(xccd.XccdError) as raised:
        client.solve("a b\na c\n")
    error = raised.value
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "c" in error.message
    # The status details come along (BadRequest names the field).
    assert any(d.TypeName() == "google.rpc.BadRequest" for d in error.details), error.details


def test_a_refused_call_carries_its_error_info_reason(own_server: Any) -> None:
    server = own_server("--threads", "1", "--max-jobs", "1")
    with xccd.Client(server.addr, timeout=60) as c:
        running = c.enumerate(queens_dlx(20))
        next(running)
        with pytest.raises(xccd.XccdError) as raised:
            c.count(queens_dlx(8))
        running.close()
    error = raised.value
    assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error.reason == "TOO_MANY_JOBS", error
    assert error.domain
    assert "TOO_MANY_JOBS" in str(error)


def test_sigterm_in_the_middle_of_a_stream_raises_naming_the_shutdown(own_server: Any) -> None:
    server = own_server("--threads", "2")
    with xccd.Client(server.addr, timeout=60) as c:
        stream = c.enumerate(queens_dlx(20))
        next(stream)
        server.terminate()
        with pytest.raises(xccd.IncompleteError) as raised:
            for _ in stream:
                pass
    error = raised.value
    assert error.end_reason == "END_REASON_SHUTDOWN"
    assert error.code == grpc.StatusCode.UNAVAILABLE
    assert error.reason == "SHUTTING_DOWN"
    assert error.retry_delay and error.retry_delay > 0
    assert "SHUTDOWN" in str(error)
    assert server.process.wait(timeout=30) == 0


def test_solve_is_retried_while_the_server_is_unavailable(own_server: Any) -> None:
    from conftest import free_port

    port = free_port()
    starter = threading.Timer(0.5, lambda: own_server("--threads", "1", port=port, wait=False))
    with xccd.Client(f"127.0.0.1:{port}", timeout=30, retries=10) as c:
        started = time.monotonic()
        starter.start()
        try:
            answer = c.solve(queens_dlx(6), limit=10)
        finally:
            starter.join()
        assert len(answer.solutions) == 4
        assert time.monotonic() - started >= 0.5


def test_without_retries_an_unavailable_server_raises_unavailable() -> None:
    from conftest import free_port

    with xccd.Client(f"127.0.0.1:{free_port()}", timeout=10, retries=0) as c:
        with pytest.raises(xccd.XccdError) as raised:
            c.solve(queens_dlx(4))
    assert raised.value.code == grpc.StatusCode.UNAVAILABLE
