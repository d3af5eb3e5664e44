"""The Python stubs of xccd's gRPC API, generated from proto/ when a client starts.

grpcio-tools compiles proto/xccd/v1/solver.proto (with puzzle.proto, which it imports) into a
folder the caller gives (a temporary one), so that the examples always follow the contract in the
repository and nothing generated is kept in it. Needs grpcio and grpcio-tools (tests/python/requirements.txt).
"""
import importlib
import importlib.resources
import sys
from pathlib import Path

from grpc_tools import protoc

PROTO = Path(__file__).resolve().parents[1] / "proto"


def load(out):
    """Compiles the solver's protos into the folder `out`; returns (solver_pb2, solver_pb2_grpc)."""
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    rc = protoc.main(
        ["protoc", f"-I{PROTO}", f"-I{well_known}", f"--python_out={out}",
         f"--grpc_python_out={out}", str(PROTO / "xccd" / "v1" / "puzzle.proto"),
         str(PROTO / "xccd" / "v1" / "solver.proto")]
    )
    if rc != 0:
        sys.exit("protoc failed on proto/xccd/v1/solver.proto and puzzle.proto")
    sys.path.insert(0, str(out))
    return (importlib.import_module("xccd.v1.solver_pb2"),
            importlib.import_module("xccd.v1.solver_pb2_grpc"))
