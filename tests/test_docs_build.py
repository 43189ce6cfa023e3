"""The HTML documentation as a reader sees it (skipped unless Sphinx is installed).

The documentation is built once for this module, in nitpicky mode with
warnings as errors (so a cross-reference that does not resolve fails), the
gallery's examples not run (``-D plot_gallery=0``: ``.ci/run`` runs them in
its full build). The built pages are then checked for what a reader at a
1,400 px window would meet: code blocks wider than the text column, internal
bookkeeping in user-facing text, headings rendered as links, and the links
to scikit-learn's documentation and to the gallery.
"""

import html
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# The longest line of a code block that fits without scrolling. With
# pydata-sphinx-theme and docs/_static/custom.css at a 1,400 px window, the
# text column's code blocks are 839 px wide inside their padding (795 px in
# a list item) and a character of their monospace font is 8.43 px: 99 (94)
# characters. 90 leaves a margin for fonts that run wider.
MAX_CODE_LINE = 90

# Pages where the project's history may name its issues and commits.
HISTORY_PAGES = {"changelog.html", "developers.html"}

# Development bookkeeping that has no place in user-facing text: internal
# names of the source papers ("seed 002"), issue numbers and commit hashes.
BOOKKEEPING = re.compile(
    r"\bseed\s+0\d|\bissues?\s+\d|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b",
    re.IGNORECASE,
)

# API pages whose docstrings (under sklearn_dplssgd/, fixed separately) still
# carry such bookkeeping. Remove a page once its docstrings are fixed; a page
# not listed here fails.
KNOWN_DOCSTRING_BOOKKEEPING = set()


class _PageText(HTMLParser):
    """The text of a page (without scripts and styles) and its ``pre`` blocks."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.pre_blocks = [], []
        self._skip = 0
        self._pre = None
        self._pre_depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "pre":
            self._pre_depth += 1
            if self._pre_depth == 1:
                self._pre = []

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag == "pre" and self._pre_depth:
            self._pre_depth -= 1
            if not self._pre_depth:
                self.pre_blocks.append("".join(self._pre))
                self._pre = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._pre is not None:
            self._pre.append(data)


def _parse(path):
    parser = _PageText()
    parser.feed(path.read_text(encoding="utf-8"))
    return " ".join(parser.text), parser.pre_blocks


@pytest.fixture(scope="module")
def html_dir(tmp_path_factory):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("pydata_sphinx_theme")
    from sphinx.cmd.build import build_main

    root = tmp_path_factory.mktemp("docs_build")
    # A copy of the sources, so that the generated stub pages do not land in
    # the repository; the figures of the benchmarks page come along.
    shutil.copytree(DOCS, root / "docs", ignore=shutil.ignore_patterns(
        "_build", "generated", "auto_examples"))
    shutil.copytree(ROOT / "benchmarks" / "results", root / "benchmarks" / "results",
                    ignore=lambda folder, names: [n for n in names if not n.endswith(".png")])
    out = root / "html"
    saved_path = list(sys.path)
    try:
        status = build_main(["-b", "html", "-W", "--keep-going", "-n", "-q",
                             "-D", "plot_gallery=0", str(root / "docs"), str(out)])
    finally:
        sys.path[:] = saved_path
    assert status == 0, "sphinx-build -W -n failed; see the warnings above"
    return out


def _pages(html_dir):
    return sorted(page for page in html_dir.rglob("*.html")
                  if not page.name.startswith(("genindex", "search", "py-modindex"))
                  and "_sources" not in page.parts)


def test_build_has_no_warnings_and_no_broken_references(html_dir):
    # The fixture asserts the status of ``sphinx-build -W -n``.
    assert (html_dir / "index.html").exists()
    assert (html_dir / "user_guide" / "getting_started.html").exists()


def test_code_blocks_fit_the_text_column(html_dir):
    too_wide = []
    for page in _pages(html_dir):
        _, blocks = _parse(page)
        for block in blocks:
            for line in block.splitlines():
                if len(line.rstrip()) > MAX_CODE_LINE:
                    too_wide.append(f"{page.relative_to(html_dir)}: {line.rstrip()!r}")
    assert not too_wide, (
        f"code lines longer than {MAX_CODE_LINE} characters scroll sideways:\n"
        + "\n".join(too_wide)
    )


def test_no_bookkeeping_in_user_facing_pages(html_dir):
    found = {}
    for page in _pages(html_dir):
        name = page.relative_to(html_dir).as_posix()
        if name in HISTORY_PAGES:
            continue
        text, _ = _parse(page)
        hits = sorted({match.group(0) for match in BOOKKEEPING.finditer(text)})
        if hits:
            found[name] = hits
    unexpected = {name: hits for name, hits in found.items()
                  if name not in KNOWN_DOCSTRING_BOOKKEEPING}
    assert not unexpected, f"internal bookkeeping in user-facing pages: {unexpected}"


def test_headings_are_not_links(html_dir):
    for page in _pages(html_dir):
        source = page.read_text(encoding="utf-8")
        assert "toc-backref" not in source, f"{page.name}: a heading links back to a contents list"


def test_other_projects_names_are_linked(html_dir):
    # The inventories of docs/_inventories/ resolve scikit-learn and NumPy names.
    search = (html_dir / "user_guide" / "search.html").read_text(encoding="utf-8")
    name = "sklearn.model_selection.GridSearchCV"
    url = f"https://scikit-learn.org/stable/modules/generated/{name}.html#{name}"
    assert url in html.unescape(search)


def test_api_pages_list_the_examples_using_them(html_dir):
    page = (html_dir / "generated" / "sklearn_dplssgd.DPLSSGDClassifier.html").read_text(
        encoding="utf-8")
    assert "Examples using" in page
    assert "auto_examples/plot_" in page
