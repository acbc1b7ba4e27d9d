"""The package passes ruff's checks for unused and undefined names, complexity and shadowed
builtins (the rules are in pyproject.toml). A function may stay past a complexity of 12
only with a reason on its ``def`` line (``# noqa: C901 - why``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ruff() -> list[str]:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is a test dependency (pip install -e '.[test]')")
    return [exe]


def test_the_package_passes_ruff():
    run = subprocess.run([*ruff(), "check", "--output-format", "concise", "loom_nb"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_complexity_exception_says_why():
    bare = []
    for path in (ROOT / "loom_nb").rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"noqa: (C901|A002)\b", line) and not re.search(r"noqa: [A-Z0-9, ]+ - \w", line):
                bare.append(f"{path.relative_to(ROOT)}:{number}")
    assert bare == []


def test_the_check_catches_a_tangled_function(tmp_path):
    branches = "\n".join(f"    if x == {k}:\n        return {k}" for k in range(14))
    (tmp_path / "tangled.py").write_text(f"def tangled(x, type=None):\n{branches}\n    return -1\n")
    run = subprocess.run([*ruff(), "check", "--output-format", "concise", "--config", str(ROOT / "pyproject.toml"), str(tmp_path)],
                         capture_output=True, text=True)
    assert "C901" in run.stdout and "A002" in run.stdout
