"""The package's tests run against a live xccd server: XCCD_ADDR names it
(host:port), XCCD_CA_CERT the CA of its certificate (TLS) and XCCD_API_KEY
the key to send. Tests that stop a server start their own, from XCCD_BIN
(default: the repository's target/ci/xccd)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, List, Optional

# Python 3.9's subprocess forks (3.10 and later vfork, which runs no fork
# handlers): grpcio's fork handlers (1.80 and later, grpc/grpc#43055) then
# restart its poller in the child, which dies on a closed epoll descriptor
# before it execs, so that a server these tests start while a channel is
# open exits at once. They are off unless the environment says otherwise,
# set before grpc is imported.
if sys.version_info < (3, 10):
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import pytest

import xccd

ROOT = Path(__file__).resolve().parents[3]
INSTANCES = Path(os.environ.get("XCCD_INSTANCES", ROOT / "bench" / "instances"))
XCCD_BIN = Path(os.environ.get("XCCD_BIN", ROOT / "target" / "ci" / "xccd"))


@pytest.fixture(scope="session")
def client() -> Iterator[xccd.Client]:
    addr = os.environ.get("XCCD_ADDR")
    if not addr:
        pytest.fail("XCCD_ADDR must name a running xccd server (host:port)")
    with xccd.Client(
        addr,
        api_key=os.environ.get("XCCD_API_KEY"),
        ca_cert=os.environ.get("XCCD_CA_CERT"),
        timeout=120,
    ) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnServer:
    """An `xccd serve` process of this test (plaintext, no API keys),
    stopped when the test ends. Without `data_dir` it keeps no job store
    (`--data-dir none`); with one, its durable jobs outlive it, for a
    server started again on the same folder."""

    def __init__(
        self, tmp: Path, args: List[str], port: int = 0, data_dir: Optional[Path] = None
    ) -> None:
        if not XCCD_BIN.is_file():
            pytest.fail(f"no xccd binary at {XCCD_BIN} (set XCCD_BIN)")
        self.port = port or free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.data_dir = data_dir
        # A server started again on the same port appends to the same log.
        self.log = tmp / f"xccd-serve-{self.port}.log"
        store = str(data_dir) if data_dir is not None else "none"
        self.process = subprocess.Popen(
            [str(XCCD_BIN), "serve", "--listen", self.addr, "--data-dir", store, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("ab"),
        )

    def wait_ready(self, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"xccd serve exited: {self.log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        pytest.fail(f"xccd serve does not listen on {self.addr}")

    def terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[object]:
    """start(*args, port=0, wait=True, data_dir=None): an OwnServer of the
    test, ready unless `wait` is false."""
    servers: List[OwnServer] = []

    def start(
        *args: str, port: int = 0, wait: bool = True, data_dir: Optional[Path] = None
    ) -> OwnServer:
        server = OwnServer(tmp_path, list(args), port, data_dir)
        servers.append(server)
        if wait:
            server.wait_ready()
        return server

    yield start
    for server in servers:
        server.stop()


def queens_dlx(n: int) -> str:
    """The n-queens problem in DLX format: rows and columns primary,
    diagonals secondary."""
    rows = [f"r{i}" for i in range(n)]
    cols = [f"c{j}" for j in range(n)]
    diagonals = [f"a{k}" for k in range(2 * n - 1)] + [f"b{k}" for k in range(2 * n - 1)]
    lines = [" ".join(rows + cols) + " | " + " ".join(diagonals)]
    for i in range(n):
        for j in range(n):
            lines.append(f"r{i} c{j} a{i + j} b{i - j + n - 1}")
    return "\n".join(lines) + "\n"
