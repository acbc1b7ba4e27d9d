"""What ``pip install loom-nb`` gives: the wheel built from this tree holds every file an
installed loom-nb reads at run time (the ready samples, the tokenizer, the recorded chat)
and the licence, and an installed copy opens a sample from outside the source tree.

Why: the samples lived beside the package (``sample_sessions/``), so a wheel had none and
``open_sample`` and ``loom-nb demo`` failed after ``pip install`` while every test, run from
the source tree, passed.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools", minversion="77")  # the test extra installs it
    out = tmp_path_factory.mktemp("wheel")
    # no build isolation: the build backend is the one installed, so nothing is downloaded
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                    "--quiet", "--wheel-dir", str(out)], check=True, capture_output=True, timeout=300)
    (built,) = out.glob("loom_nb-*.whl")
    return built


def _data_files() -> list[str]:
    """Every file under ``loom_nb/_data`` that git tracks (or, without git, that is there)."""
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "loom_nb/_data"], check=True,
                                capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        listed = [str(p.relative_to(ROOT)) for p in (ROOT / "loom_nb" / "_data").rglob("*") if p.is_file()]
    return sorted(listed)


def test_the_wheel_holds_every_data_file_and_the_licence(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = _data_files()
    assert any(name.startswith("loom_nb/_data/samples/loom-nb-code/") for name in data)
    missing = [name for name in data if name not in names]
    assert not missing, f"{len(missing)} data files are not in the wheel, e.g. {missing[:3]}"
    licences = {Path(name).name for name in names if ".dist-info/licenses/" in name}
    assert {"LICENSE", "NOTICE"} <= licences
    assert not [name for name in names if name.startswith(("tests/", "benchmarks/", "datasets/", "notebooks/"))]


def test_an_installed_copy_opens_a_sample_from_outside_the_source_tree(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:  # a wheel is installed by unpacking it
        archive.extractall(site)
    script = ("import loom_nb.demo as d; print(d.__file__); print(d.sample_names()); "
              "print(d.open_sample('sourdough-notes').query('when is bulk fermentation done?', budget=600).loaded[:1])")
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LOOM_NB_CONFIG_DIR": str(tmp_path / "config")}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    where, names, loaded = run.stdout.splitlines()[:3]
    assert where.startswith(str(site))
    assert names == "['auth-debugging', 'loom-nb-code', 'sourdough-notes']"
    assert loaded.startswith("['n")


def test_the_sdist_holds_the_package_and_licence_and_no_tests_it_cannot_run(tmp_path):
    """setuptools puts ``tests/test_*.py`` in an sdist by default, without the conftest, tools
    and datasets they import, so a user who unpacked it had tests that fail on import."""
    pytest.importorskip("setuptools", minversion="77")
    try:
        tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True, capture_output=True,
                                 text=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs the git checkout to copy the tracked files from")
    tree = tmp_path / "tree"
    for name in tracked:  # a copy, so the build's egg-info is not written into the checkout
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes((ROOT / name).read_bytes())
    build = ("import sys; from setuptools import build_meta; "
             "print(build_meta.build_sdist(sys.argv[1]))")
    subprocess.run([sys.executable, "-c", build, str(tmp_path / "dist")], cwd=tree, check=True,
                   capture_output=True, timeout=300)
    (sdist,) = (tmp_path / "dist").glob("loom_nb-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "NOTICE", "README.md", "pyproject.toml", "loom_nb/__init__.py"} <= names
    assert not [name for name in _data_files() if name not in names]
    assert not [name for name in names if name.startswith("tests/")]
