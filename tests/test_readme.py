"""The README is a front door that works: short, its commands sound, its code runs.

The README's ```python blocks run in order in one namespace, as a reader
pasting them into one session would; the two commands (run the main job,
pass the tests) are near the top, each in its own environment folder, and
CI (``.ci/run``) runs the test command as the README writes it.
"""

import re
import warnings
from pathlib import Path

import pytest

from sklearn_dplssgd import PrivacyLeakWarning

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
MAX_LINES = 150

_FENCE = re.compile(r"^```(?P<lang>\S*)\s*$")


def _fenced_blocks(text):
    """``(language, first_line_number, source)`` of each fenced block of a Markdown text."""
    blocks, language, start, body = [], None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if language is None and match:
            language, start, body = match["lang"].lower(), number + 1, []
        elif language is not None and line.strip() == "```":
            blocks.append((language, start, "\n".join(body)))
            language = None
        elif language is not None:
            body.append(line)
    assert language is None, "a code fence of the README is not closed"
    return blocks


def _readme():
    return README.read_text(encoding="utf-8")


def _commands():
    """The README's two commands: (main job, tests), each a shell line."""
    lines = [source.strip() for language, _, source in _fenced_blocks(_readme())
             if language == "bash"]
    demo = [line for line in lines if "python -m sklearn_dplssgd" in line]
    tests = [line for line in lines if "python -m pytest" in line]
    assert len(demo) == 1 and len(tests) == 1, lines
    return demo[0], tests[0]


def _environment_folder(command):
    match = re.match(r"^python3 -m venv (\S+) && ", command)
    assert match, f"the command does not start by making its environment: {command!r}"
    folder = match[1]
    # Everything it runs comes from that environment.
    for step in command.split("&&")[1:]:
        assert step.strip().startswith(f"{folder}/bin/"), (folder, step)
    return folder


def test_block_extraction():
    text = "intro\n```python\nx = 1\n\ny = x\n```\ntext\n```bash\nls\n```\n"
    assert _fenced_blocks(text) == [("python", 3, "x = 1\n\ny = x"), ("bash", 9, "ls")]


def test_readme_is_short():
    assert len(_readme().splitlines()) <= MAX_LINES


def test_two_commands_near_the_top_in_their_own_environments():
    text = _readme()
    demo, tests = _commands()
    demo_folder, test_folder = _environment_folder(demo), _environment_folder(tests)
    assert demo_folder != test_folder
    assert '-e ".[test]"' in tests
    # Near the top: both within the first third of the README.
    lines = text.splitlines()
    for command in (demo, tests):
        line = next(number for number, text_line in enumerate(lines, 1) if command in text_line)
        assert line <= len(lines) / 3, (line, command)
    # The folders are ignored by git (and by flake8).
    ignored = (REPO_ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".venv-*/" in ignored and {demo_folder, test_folder} <= {".venv-demo", ".venv-test"}


def test_ci_runs_the_readme_test_command():
    demo, tests = _commands()
    folder = _environment_folder(tests)
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"python3 -m venv {folder}\n" in ci
    install = re.search(r"pip install (-e \S+)", tests)[1]
    assert re.search(rf"^{re.escape(folder)}/bin/python -m pip install --quiet "
                     rf"{re.escape(install)}$", ci, re.M), ci
    # The command itself, after the fresh machine's environment variables.
    assert re.search(rf"(^|\s){re.escape(folder)}/bin/python -m pytest$", ci, re.M), ci


def test_ci_runs_the_tests_on_a_fresh_machine():
    # New, empty temporary, home and cache folders inside the clone, ignored by git.
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "rm -rf .ci-fresh\n" in ci
    command = ci[ci.index("rm -rf .ci-fresh\n"):ci.index("bin/python -m pytest\n")]
    for variable in ("TMPDIR", "HOME", "XDG_CACHE_HOME", "NUMBA_CACHE_DIR"):
        assert re.search(rf'\b{variable}="\$PWD/\.ci-fresh/[\w-]+"', command), variable
    assert ".ci-fresh/" in (REPO_ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_links_to_files_exist():
    for target in re.findall(r"\]\(([^)#]+)\)", _readme()):
        if "://" not in target:
            assert (REPO_ROOT / target).exists(), target


def test_python_blocks_run(tmp_path, monkeypatch, capsys):
    blocks = [(line, source) for language, line, source in _fenced_blocks(_readme())
              if language == "python"]
    assert blocks, "the README has no python example"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme"}
    with warnings.catch_warnings():
        # The README follows its own advice: a PrivacyLeakWarning would be a
        # mistake in it.
        warnings.simplefilter("error", PrivacyLeakWarning)
        for line, source in blocks:
            # Pad with newlines so that tracebacks show the README's line numbers.
            exec(compile("\n" * (line - 1) + source, str(README), "exec"), namespace)
    output = capsys.readouterr().out
    # The quick start prints its accuracy and the model's privacy report.
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", output)[1])
    assert 0.5 < accuracy <= 1.0
    assert "Privacy report for DPLSSGDClassifier" in output
    assert "Guarantee: (1" in output or "Guarantee: (0.99" in output


@pytest.mark.parametrize("name", ["docs/benchmarks.rst", "docs/sklearn_compatibility.rst"])
def test_moved_pages_are_in_the_table_of_contents(name):
    index = (REPO_ROOT / "docs" / "index.rst").read_text(encoding="utf-8")
    assert f"\n   {Path(name).stem}\n" in index
