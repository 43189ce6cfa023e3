"""Every measured figure a reader meets is read from a committed results file.

The README and the documentation pages quote accuracies, timings and ratios.
A quoted figure must come from a file of ``benchmarks/results/`` that the text
cites (``benchmarks/results/accuracy.md``, or ``accuracy.md`` for short): in the
same paragraph or list item, or, where that cites none, in the same section.
A figure may instead be asserted by a
Python code block of its section, which ``tests/test_docs.py`` runs. The
test finds each figure of the prose (numbers with a decimal point, and
numbers followed by a unit: ms, s, %, x, points, ...) and fails if it occurs
in none of the files its text cites, so that a page cannot drift from the
numbers a benchmark committed. Code blocks (run by ``tests/test_docs.py``
and ``tests/test_readme.py``), inline literals and math are not prose;
the gallery's figures are computed by the documentation build itself. The
changelog, which keeps the history, is exempt.

A number that is not a measurement (a setting such as ``epsilon 0.5``, a
version, a mathematical constant) is told apart by the words before it; the
few that words cannot tell are listed in :data:`NOT_MEASUREMENTS` with the
reason.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

PAGES = sorted(
    [ROOT / "README.md"]
    + [page for page in (ROOT / "docs").glob("*.rst") if page.name != "changelog.rst"]
    + list((ROOT / "docs" / "user_guide").glob("*.rst")),
)

# A decimal number, or a whole number followed by a unit of measurement (a
# whole number alone, such as 8,000 rows, is a setting of the example).
_WHOLE = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
# (a ratio's "x" follows its number directly: "1.19x"; "14 x 14" is a shape)
_UNIT = r"(?:\s*(?:ms|s|us|ns|%|MiB|GiB|MB|GB|min|points?)|x)(?![\w])"
_FIGURE = re.compile(
    rf"(?<![\w.:+-])[+-]?(?:{_WHOLE}\.\d+|{_WHOLE}(?={_UNIT}))(?![\w.]*\d)(?!e-?\d)"
)

# Words after which a number is a setting, a size or a version, not a figure.
_SETTING_BEFORE = re.compile(
    r"(?:default|epsilon|epsilons|delta|sigma|sigmas|eta0|clip(?:_norm)?|alpha|power_t|"
    r"rate|q|z|weight|threshold|bound|bounds|density|dim|version|versions|"
    r"python|numpy|scipy|scikit-learn|numba|pytorch|torch|pandas|dask|"
    r"dp-accounting|arxiv|=|<=|>=|<|>)\w*(?:\s+(?:of|is|at|from))?\s*=?\s*$",
    re.IGNORECASE,
)

# Figures that words cannot tell apart from a measurement, with the reason
# each is not one: (page name, figure) -> reason.
NOT_MEASUREMENTS = {
    ("preprocessing.rst", "1,080"): "the public rule's row count (4 k) for an example setting",
    ("preprocessing.rst", "0.6"): "the public epsilon='auto' rule at 331 rows, one feature",
    ("output_perturbation.rst", "12"): "a property of the default batch rule, derived",
    ("output_perturbation.rst", "20,000"): "a cap on the number of steps, a setting",
    ("privacy_argument.rst", "0.3"): "the smallest variance a test of the bound uses, a setting",
    ("privacy_argument.rst", "0.38"): "a Gaussian tail probability of the counterexample, computed",
    ("hyperparameters.rst", "0.44"): "the averaging share's formula at 4 features, computed",
    ("hyperparameters.rst", "0.24"): "the averaging share's formula at 13 features, computed",
    ("hyperparameters.rst", "0.16"): "the averaging share's formula at 30 features, computed",
    ("hyperparameters.rst", "0.11"): "the averaging share's formula at 64 features, computed",
    ("hyperparameters.rst", "0.447"): "the smoothing operator's variance factor, computed",
    ("hyperparameters.rst", "0.333"): "the smoothing operator's variance factor, computed",
    ("hyperparameters.rst", "0.277"): "the smoothing operator's variance factor, computed",
    ("hyperparameters.rst", "3.5"): "the step rule's constant, 2 x 1.75 logits, a setting",
    ("hyperparameters.rst", "0.52"): "sqrt(beta) of the smoothing at sigma 1, computed",
    ("privacy.rst", "0.6"): "the calibration's threshold for switching accountants, a setting",
    ("sklearn_compatibility.rst", "0.83"): "scikit-learn's check thresholds, settings of its tests",
    ("sklearn_compatibility.rst", "0.5"): "scikit-learn's check thresholds, settings of its tests",
}

_CITATION = re.compile(r"(?:benchmarks/results/)?([\w.-]+\.(?:md|json))")
_HEADING_RST = re.compile(r"^[^\n]+\n[=\-~^\"'`#*+]{3,}[ \t]*$", re.MULTILINE)
_HEADING_MD = re.compile(r"^#{1,6} ", re.MULTILINE)
_CODE_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)\.\. (?:code-block|code|sourcecode|math|figure|image|"
    r"literalinclude|doctest|testcode|plot)::"
)


def _cited_files(text):
    """The results files a text cites (those that exist)."""
    names = set()
    for name in _CITATION.findall(text):
        if (RESULTS / name).is_file():
            names.add(name)
    return names


def _prose(block):
    """``block`` without inline literals, math, roles and link targets."""
    # An inline literal keeps its words (``epsilon_end`` before a number makes
    # that number a setting) but not its numbers, which are code.
    block = re.sub(
        r"``(.*?)``", lambda literal: " " + re.sub(r"[^A-Za-z_=]", " ", literal[1]) + " ",
        block, flags=re.DOTALL,
    )
    block = re.sub(r"`[^`]*`_*", " ", block)
    block = re.sub(r"\$[^$]*\$", " ", block)
    return block


_CHECKED_CODE = "CHECKED-CODE:"


def _without_code(text, markdown):
    """``text`` with its code blocks and literal blocks blanked out.

    The lines of a Python code block, which ``tests/test_docs.py`` runs,
    stay as lines marked :data:`_CHECKED_CODE`: a figure its code asserts
    is checked by running it.
    """
    if markdown:
        return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    lines = text.splitlines()
    kept = []
    skip_indent = None
    checked = False
    for line in lines:
        if skip_indent is not None:
            indent = len(line) - len(line.lstrip())
            if not line.strip() or indent > skip_indent:
                if checked and line.strip():
                    kept.append(_CHECKED_CODE + line)
                    continue
                # Keep the citations of a code block's comments (``# accuracy.md``)
                # and a figure's caption visible as citations only.
                kept.append(" ".join(f"``{name}``" for name in _cited_files(line)))
                continue
            skip_indent = None
        directive = _CODE_DIRECTIVE.match(line)
        if directive:
            skip_indent = len(directive["indent"])
            checked = re.search(r"code-block::\s*python3?\s*$", line) is not None
            kept.append("")
            continue
        checked = False
        if line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            kept.append(line.rstrip()[:-1])
            skip_indent = len(line) - len(line.lstrip())
            continue
        kept.append(line)
    return "\n".join(kept)


def _sections(text, markdown):
    """The text split at its headings."""
    heading = _HEADING_MD if markdown else _HEADING_RST
    starts = [0] + [match.start() for match in heading.finditer(text)] + [len(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:]) if text[a:b].strip()]


def _paragraphs(section):
    """The paragraphs and list items of a section."""
    pieces = []
    for paragraph in re.split(r"\n[ \t]*\n", section):
        pieces.extend(re.split(r"\n(?=[ \t]*(?:[*-]|\d+\.|#\.) )", paragraph))
    return pieces


def _digits(figure):
    return figure.replace(",", "").lstrip("+-")


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def _numbers(files_text):
    """Every number written in ``files_text`` (thousands separators removed)."""
    return [float(number) for number in _NUMBER.findall(files_text.replace(",", ""))]


def _occurs(figure, numbers):
    """Whether a number of ``numbers``, rounded as ``figure`` is, gives ``figure``.

    A page rounds what a results file holds (``77.4 %`` for ``77.35``), and
    may write a fraction as a percentage or the reverse (``88.2 %`` for
    ``0.882``).
    """
    digits = _digits(figure)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    value = float(digits)
    half_step = 0.5 * 10.0 ** -decimals + 1e-9
    return any(
        abs(abs(number) * scale - value) <= half_step
        for number in numbers
        for scale in (1.0, 100.0, 0.01)
    )


def _untraced(page):
    """``(figure, context)`` of each figure of ``page`` no cited file holds."""
    markdown = page.suffix == ".md"
    text = _without_code(page.read_text(encoding="utf-8"), markdown)
    problems = []
    for section in _sections(text, markdown):
        section_files = _cited_files(section)
        code_lines = [line for line in section.splitlines() if line.startswith(_CHECKED_CODE)]
        code_numbers = _numbers("\n".join(code_lines))
        prose_section = "\n".join(
            line for line in section.splitlines() if not line.startswith(_CHECKED_CODE))
        for paragraph in _paragraphs(prose_section):
            files = _cited_files(paragraph) or section_files
            numbers = code_numbers + _numbers("\n".join(
                (RESULTS / name).read_text(encoding="utf-8") for name in sorted(files)
            ))
            prose = _prose(paragraph)
            for match in _FIGURE.finditer(prose):
                figure = match.group(0)
                before = prose[max(0, match.start() - 30):match.start()]
                if _SETTING_BEFORE.search(before):
                    continue
                if (page.name, figure) in NOT_MEASUREMENTS:
                    continue
                if _occurs(figure, numbers):
                    continue
                context = " ".join(prose[max(0, match.start() - 60):match.end() + 20].split())
                problems.append((figure, context, sorted(files)))
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_figures_come_from_committed_results(page):
    problems = _untraced(page)
    assert not problems, "\n".join(
        f"{figure!r} in '... {context} ...' is in none of {files or 'the (no) cited files'}"
        for figure, context, files in problems
    )


def test_the_check_finds_a_figure_no_file_holds(tmp_path):
    page = tmp_path / "page.rst"
    page.write_text(
        "Title\n=====\n\nAt epsilon 1 the defaults reach 0.4321 on MNIST\n"
        "(``benchmarks/results/accuracy.md``), in 97,531 ms.\n\n"
        "Code is not prose::\n\n    print(0.123)\n",
        encoding="utf-8",
    )
    figures = [figure for figure, _, _ in _untraced(page)]
    assert figures == ["0.4321", "97,531"]


def test_the_check_accepts_figures_of_the_cited_file(tmp_path):
    accuracy = (RESULTS / "accuracy.md").read_text(encoding="utf-8")
    figure = re.search(r"\b0\.\d{3}\b", accuracy).group(0)
    page = tmp_path / "page.rst"
    page.write_text(
        f"Title\n=====\n\nThe model reaches {figure} on MNIST "
        "(``accuracy.md``), at epsilon 0.5.\n",
        encoding="utf-8",
    )
    assert _untraced(page) == []


def _printed_paragraphs(path):
    """The text of each ``print(...)`` call of a module, its literal parts joined."""
    import ast

    def literal_text(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(literal_text(value) for value in node.values)
        if isinstance(node, ast.BinOp):
            return literal_text(node.left) + literal_text(node.right)
        return " "

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        " ".join(literal_text(argument) for argument in node.args)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"
    ]


def test_the_demo_prints_no_quoted_figure(tmp_path):
    # ``python -m sklearn_dplssgd`` prints what it measures itself; the
    # package cites no results file (they live outside the installed
    # package), so its fixed words may quote no measured figure at all.
    paragraphs = _printed_paragraphs(ROOT / "sklearn_dplssgd" / "__main__.py")
    assert paragraphs
    assert not any(_CITATION.search(paragraph) or "benchmarks/results" in paragraph
                   for paragraph in paragraphs)
    page = tmp_path / "demo.rst"
    page.write_text("Demo\n====\n\n" + "\n\n".join(" ".join(p.split()) for p in paragraphs),
                    encoding="utf-8")
    assert _cited_files(page.read_text(encoding="utf-8")) == set()
    assert _untraced(page) == []


def test_the_demo_check_finds_a_quoted_figure(tmp_path):
    # The check above fails on a closing sentence that quotes a measurement.
    module = tmp_path / "demo.py"
    module.write_text('print("Smoothing adds 1 to 3.5 points at small epsilon.")\n',
                      encoding="utf-8")
    page = tmp_path / "demo.rst"
    page.write_text("Demo\n====\n\n" + "\n\n".join(_printed_paragraphs(module)),
                    encoding="utf-8")
    assert [figure for figure, _, _ in _untraced(page)] == ["3.5"]


def test_the_headline_accuracies_come_from_the_accuracy_runner():
    # The README's and the benchmarks page's accuracies are those of
    # benchmarks/accuracy.py's one results file: each page cites it, and
    # every figure of the paragraphs that cite it is in it (or, for a
    # paragraph citing a second file, in that one).
    assert (RESULTS / "accuracy.md").is_file()
    for page in (ROOT / "README.md", ROOT / "docs" / "benchmarks.rst"):
        text = page.read_text(encoding="utf-8")
        assert "accuracy.md" in text, page.name
        assert _untraced(page) == [], page.name
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = next(p for p in readme.split("\n\n") if "accuracy.md" in p)
    accuracy = _numbers((RESULTS / "accuracy.md").read_text(encoding="utf-8"))
    percents = re.findall(r"(\d+\.\d) %", paragraph)
    assert percents and all(_occurs(figure, accuracy) for figure in percents)
