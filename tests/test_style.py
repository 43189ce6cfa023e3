"""flake8 finds nothing to complain about (configuration in setup.cfg)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CHECKED = ["sklearn_dplssgd", "tests", "benchmarks", "docs/examples"]


def test_flake8_is_clean():
    pytest.importorskip("flake8")
    paths = [path for path in CHECKED if (REPO_ROOT / path).exists()]
    result = subprocess.run(
        [sys.executable, "-m", "flake8", *paths],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
    )
    assert result.returncode == 0, (
        "flake8 complaints (configuration in setup.cfg):\n" + result.stdout + result.stderr
    )
