"""The Python examples of the package's README and of the repository's
README run as shown: each ```python block, against a server of this test
at a free port in place of the address it names, prints the ```text block after it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any, List, Tuple

import pytest
from conftest import ROOT

READMES = [ROOT / "clients" / "python" / "README.md", ROOT / "README.md"]
EXAMPLE = re.compile(r"```python\n(.*?)```\s*\n(?:[^`\n][^\n]*\n)*?\s*```text\n(.*?)```", re.S)


def examples() -> List[Tuple[str, str, str]]:
    found = []
    for readme in READMES:
        for n, match in enumerate(EXAMPLE.finditer(readme.read_text())):
            found.append((f"{readme.relative_to(ROOT)}#{n}", match.group(1), match.group(2)))
    return found


def test_each_readme_has_an_example() -> None:
    names = {name.split("#")[0] for name, _, _ in examples()}
    assert names == {str(r.relative_to(ROOT)) for r in READMES}


@pytest.mark.parametrize("name,code,expected", examples(), ids=lambda v: v if "#" in v else "")
def test_readme_example_prints_what_it_shows(
    own_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    name: str,
    code: str,
    expected: str,
) -> None:
    # Paths in the examples are the repository's.
    monkeypatch.chdir(ROOT)
    # The block's server is this test's, on a free port, with a job store
    # as a server has by default (the jobs example reads it).
    (addr,) = set(re.findall(r'Client\("([^"]+)"', code))
    server = own_server("--threads", "2", data_dir=tmp_path / "data")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace(addr, server.addr), name, "exec"), {})
    assert out.getvalue() == expected
    server.stop()
