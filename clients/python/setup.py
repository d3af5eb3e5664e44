"""The build hook: generates the gRPC stubs (package xccd.v1) from the
repository's proto/ with grpcio-tools into the build, so that the wheel
holds them and the source tree never does.

The protos are read from XCCD_PROTO_DIR, else from ../../proto (this
package's place in the repository).
"""

import importlib.metadata
import os
import re
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROTOS = ("puzzle.proto", "solver.proto", "puzzles.proto")


class BuildWithStubs(build_py):
    def run(self) -> None:
        super().run()
        import importlib.resources

        from grpc_tools import protoc

        proto_root = Path(os.environ.get("XCCD_PROTO_DIR", HERE.parent.parent / "proto"))
        sources = [proto_root / "xccd" / "v1" / name for name in PROTOS]
        missing = [str(s) for s in sources if not s.is_file()]
        if missing:
            raise SystemExit(f"the protos are missing: {', '.join(missing)} (set XCCD_PROTO_DIR)")
        out = Path(self.build_lib)
        well_known = importlib.resources.files("grpc_tools") / "_proto"
        args = [
            "grpc_tools.protoc",
            f"-I{proto_root}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            *map(str, sources),
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed on " + " ".join(map(str, sources)))
        (out / "xccd" / "v1" / "__init__.py").write_text(
            '"""gRPC stubs generated from proto/xccd/v1 at build time."""\n'
        )


def runtime_requirements() -> list:
    """grpcio at least the version of the grpcio-tools that generates the
    stubs, and the protobuf range that grpcio-tools asks for: the generated
    code refuses older runtimes."""
    tools = importlib.metadata.version("grpcio-tools")
    protobuf = [
        r for r in importlib.metadata.requires("grpcio-tools") or [] if re.match(r"protobuf\b", r)
    ]
    return [f"grpcio>={tools}", "grpcio-status", *(protobuf or ["protobuf"])]


setup(cmdclass={"build_py": BuildWithStubs}, install_requires=runtime_requirements())
