"""The code examples of the documentation run as written.

Every ``.. code-block:: python`` block of the ``.rst`` pages under ``docs/``
(``docs/user_guide/`` included) is extracted and
executed; the blocks of one page run in order in one namespace, as a reader
would run them in one session. Blocks that must not run (shell commands,
pseudo-code) use another language (``bash``, ``text``). Tracebacks point at
the line of the ``.rst`` file.
"""

import re
import textwrap
import warnings
from pathlib import Path

import pytest

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor

DOCS = Path(__file__).resolve().parent.parent / "docs"

# The languages a code block may declare. ``python`` blocks are executed; the
# others are never run, so a typo such as ``pyhton`` would silently skip an
# example: it fails ``test_code_block_languages_are_known`` instead.
RUN_LANGUAGES = {"python", "python3"}
SKIP_LANGUAGES = {"bash", "console", "shell", "text", "none", "rst"}

_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)\.\. (?:code-block|code|sourcecode)::[ \t]*(?P<lang>\S*)[ \t]*$"
)


def _code_blocks(path):
    """``(language, first_line_number, source)`` of each code block in ``path``.

    The body of a block is the indented text after the directive and its
    option lines (``:caption:`` and the like), up to the first non-blank line
    indented no deeper than the directive. Line numbers are 1-based.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match:
            i += 1
            continue
        indent = len(match["indent"].expandtabs())
        language = match["lang"].lower()
        i += 1
        # Options directly below the directive.
        while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):
            i += 1
        body_start = i
        while i < len(lines):
            line = lines[i]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            i += 1
        body = lines[body_start:i]
        while body and not body[0].strip():
            body.pop(0)
            body_start += 1
        while body and not body[-1].strip():
            body.pop()
        blocks.append((language, body_start + 1, textwrap.dedent("\n".join(body))))
    return blocks


# The pages written by hand: docs/*.rst and the user guide's docs/user_guide/
# (the build's outputs and generated stubs are not sources).
_NOT_SOURCES = {"_build", "generated", "auto_examples", "_templates", "examples"}
PAGES = sorted(
    page for page in DOCS.rglob("*.rst")
    if not _NOT_SOURCES & set(page.relative_to(DOCS).parts[:-1])
)


def _page_id(page):
    return page.relative_to(DOCS).as_posix()


PAGES_WITH_EXAMPLES = [
    page for page in PAGES
    if any(language in RUN_LANGUAGES for language, _, _ in _code_blocks(page))
]


def test_docs_are_found():
    names = {page.relative_to(DOCS).as_posix() for page in PAGES}
    assert {"index.rst", "user_guide.rst", "privacy.rst", "api.rst",
            "user_guide/getting_started.rst", "user_guide/search.rst"} <= names
    assert {"index.rst", "user_guide/getting_started.rst", "user_guide/epsilon.rst",
            "privacy.rst"} <= {
        page.relative_to(DOCS).as_posix() for page in PAGES_WITH_EXAMPLES
    }


def test_the_index_shows_the_readmes_quick_start():
    # One quick start: the landing page's python example is the README's
    # (run by tests/test_readme.py), line for line.
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    before, after = readme.split("```python\n", 1)
    assert before.rstrip().endswith("## Quick start")
    quick_start = after.split("```", 1)[0].strip()
    blocks = [source for language, _, source in _code_blocks(DOCS / "index.rst")
              if language in RUN_LANGUAGES]
    assert blocks == [quick_start]


# Development bookkeeping has no place in what users read: internal names of
# the source papers ("seeds 000 and 002"), issue numbers, commit hashes. The
# changelog keeps the history.
_BOOKKEEPING = re.compile(
    r"\bseeds?\s+0\d|\bissues?\s+\d|\bissue's\b"
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b",
    re.IGNORECASE,
)


@pytest.mark.parametrize(
    "page", [DOCS.parent / "README.md"] + [page for page in PAGES if page.name != "changelog.rst"]
    + sorted((DOCS / "examples").glob("*.py")),
    ids=lambda page: page.relative_to(DOCS.parent).as_posix(),
)
def test_no_bookkeeping_outside_the_changelog(page):
    text = page.read_text(encoding="utf-8")
    found = [(text.count("\n", 0, match.start()) + 1, match[0])
             for match in _BOOKKEEPING.finditer(text)]
    assert not found, f"{page.name}: {found}"


def test_the_bookkeeping_check_finds_what_it_looks_for():
    text = "The mechanisms of seeds 000 and 002; see issue 30 and 842cfc4; the issue's cell."
    assert [match[0] for match in _BOOKKEEPING.finditer(text)] == [
        "seeds 00", "issue 3", "842cfc4", "issue's"]
    assert not _BOOKKEEPING.findall("1e-5 at epsilon 1; 2,500 rows; deadbeef is a word")


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_code_block_languages_are_known(page):
    for language, line, _ in _code_blocks(page):
        assert language in RUN_LANGUAGES | SKIP_LANGUAGES, (
            f"{page.name}:{line}: code block language {language!r} is neither run "
            f"({sorted(RUN_LANGUAGES)}) nor known to be skipped ({sorted(SKIP_LANGUAGES)})"
        )


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_no_untested_doctest_blocks(page):
    # Examples are written as ``.. code-block:: python`` so that they run
    # here; a ``>>>`` doctest block in the pages would not be run.
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        assert not line.lstrip().startswith(">>>"), (
            f"{page.name}:{number}: write examples as '.. code-block:: python'"
        )


def test_block_extraction(tmp_path):
    page = textwrap.dedent(
        """\
        Title
        =====

        .. code-block:: python
           :caption: an example

           x = 1

           if x:
               x += 1

        Some text.

        .. code-block:: bash

           pip install .

        * item

          .. code-block:: python

             y = x
        done
        """
    )
    path = tmp_path / "probe.rst"
    path.write_text(page, encoding="utf-8")
    assert _code_blocks(path) == [
        ("python", 7, "x = 1\n\nif x:\n    x += 1"),
        ("bash", 16, "pip install ."),
        ("python", 22, "y = x"),
    ]


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=_page_id)
def test_examples_run(page, tmp_path, monkeypatch):
    # Run where the examples cannot litter the repository, with the page's
    # module-level names in a fresh namespace.
    monkeypatch.chdir(tmp_path)
    page_name = "_".join(page.relative_to(DOCS).with_suffix("").parts)
    namespace = {"__name__": f"docs_{page_name}"}
    with warnings.catch_warnings():
        # The examples follow their own advice: a PrivacyLeakWarning that an
        # example does not catch itself is a mistake in the documentation.
        from sklearn_dplssgd import PrivacyLeakWarning

        warnings.simplefilter("error", PrivacyLeakWarning)
        for language, line, source in _code_blocks(page):
            if language not in RUN_LANGUAGES:
                continue
            # Pad with newlines so that tracebacks show the .rst line numbers.
            code = compile("\n" * (line - 1) + source, str(page), "exec")
            exec(code, namespace)


@pytest.mark.parametrize("estimator", [DPLSSGDClassifier, DPLSSGDRegressor])
def test_shared_docs_are_filled_in(estimator):
    # The shared texts are written once (_docstrings) and filled into each
    # estimator's docstring and its methods' (partial_fit's was once left as
    # a "{partial_fit_release}" placeholder).
    for doc in (estimator.__doc__, estimator.fit.__doc__, estimator.partial_fit.__doc__):
        assert not re.findall(r"\{[a-z_]+\}", doc)
    assert "Each call is a release" in estimator.partial_fit.__doc__


def _inventory(name):
    """``{name: uri}`` of a committed intersphinx inventory (``docs/_inventories``)."""
    import zlib

    data = (DOCS / "_inventories" / name).read_bytes()
    body = zlib.decompress(data.split(b"\n", 4)[4]).decode()
    entries = {}
    for line in body.splitlines():
        target, _role, _priority, uri, _label = line.split(" ", 4)
        entries[target] = uri[:-1] + target if uri.endswith("$") else uri
    return entries


@pytest.mark.parametrize("inventory, name, uri", [
    # The built-in types documented on the "Built-in Types" page, the
    # functions and the other types on "Built-in Functions".
    ("python.inv", "dict", "library/stdtypes.html#dict"),
    ("python.inv", "list", "library/stdtypes.html#list"),
    ("python.inv", "str", "library/stdtypes.html#str"),
    ("python.inv", "int", "library/functions.html#int"),
    ("python.inv", "isinstance", "library/functions.html#isinstance"),
    ("python.inv", "ValueError", "library/exceptions.html#ValueError"),
    ("python.inv", "warnings", "library/warnings.html#module-warnings"),
    # NumPy's generator has a page of its own; legacy functions one each.
    ("numpy.inv", "numpy.random.Generator",
     "reference/random/generator.html#numpy.random.Generator"),
    ("numpy.inv", "numpy.random.default_rng",
     "reference/random/generator.html#numpy.random.default_rng"),
    ("numpy.inv", "numpy.ndarray", "reference/generated/numpy.ndarray.html#numpy.ndarray"),
])
def test_committed_inventories_point_at_the_documented_pages(inventory, name, uri):
    assert _inventory(inventory)[name] == uri
