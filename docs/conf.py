"""Sphinx configuration of the sklearn-dplssgd documentation.

Build with::

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

(what ``.ci/run`` does). The build runs the examples of ``docs/examples/``
with sphinx-gallery (about a minute); ``-D plot_gallery=0`` skips running
them.

The build needs no network: the intersphinx inventories of Python, NumPy,
SciPy, pandas and scikit-learn are kept in ``_inventories/`` (written by
``tools/make_inventories.py`` from the installed packages).
"""

import os
import re
import sys
from importlib import metadata

# Import the package from this checkout, installed or not.
sys.path.insert(0, os.path.abspath(".."))

import sklearn_dplssgd  # noqa: E402

# -- Project information (from the package) ---------------------------------

project = "sklearn-dplssgd"
try:
    _metadata = metadata.metadata(project)
    author = _metadata.get("Author") or _metadata.get("Author-email") or ""
    summary = _metadata.get("Summary") or ""
except metadata.PackageNotFoundError:  # imported from the checkout only
    author = ""
    summary = ""
author = author or "sklearn-dplssgd developers"
copyright = author
release = sklearn_dplssgd.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration --------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# Links to the documentation of Python, NumPy, SciPy, pandas and
# scikit-learn through intersphinx, with no network at build time: the
# inventories are files of this repository, written from the installed
# packages by tools/make_inventories.py (the links still point at each
# project's online documentation).
extensions.append("sphinx.ext.intersphinx")
intersphinx_mapping = {
    name: (url, os.path.join("_inventories", f"{name}.inv"))
    for name, url in {
        "python": "https://docs.python.org/3/",
        "numpy": "https://numpy.org/doc/stable/",
        "scipy": "https://docs.scipy.org/doc/scipy/",
        "pandas": "https://pandas.pydata.org/docs/",
        "sklearn": "https://scikit-learn.org/stable/",
    }.items()
}
intersphinx_timeout = 1

# A nitpicky build (``sphinx-build -n``, as tests/test_docs_build.py runs it)
# resolves every reference: none is ignored.
nitpick_ignore = []

# Stub pages of the API reference are generated at build time into
# docs/generated/ (ignored by git, see docs/.gitignore).
autosummary_generate = True
autodoc_typehints = "none"
# "On this page" lists a class's methods by their own names (predict_proba),
# not prefixed by the class's (DPLSSGDClassifier.predict_proba), which the
# narrow secondary sidebar would cut.
toc_object_entries_show_parents = "hide"

# numpydoc renders the Parameters / Attributes sections itself; a second,
# autosummary-generated table of every member would duplicate them (and
# the methods inherited from scikit-learn's base classes).
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
# numpydoc's docstring validation is off during the build; run it on its
# own (``python -m numpydoc validate sklearn_dplssgd.DPLSSGDClassifier``).
numpydoc_validation_checks = set()

# _templates/autosummary/class.rst documents each class with all its public
# methods, those inherited from scikit-learn's base classes and mixins
# (score, get_params, set_params, set_score_request, ...) included.
templates_path = ["_templates"]
# examples/ holds the gallery's sources; their pages are auto_examples/.
exclude_patterns = ["_build", "examples", "Thumbs.db", ".DS_Store"]

# -- Example gallery (sphinx-gallery) ----------------------------------------

# docs/examples/plot_*.py run at build time; their pages, figures and
# notebooks are written to docs/auto_examples/ (ignored by git, see
# docs/.gitignore).
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    # A failing example fails the build.
    "only_warn_on_example_error": False,
    "show_memory": False,
    # The per-example run-time table (sg_execution_times.rst) is not written
    # into the source folder.
    "write_computation_times": False,
    # "Examples using ..." on each API page: the examples that use a name of
    # the package are listed there (_templates/autosummary/*.rst include
    # them with the minigallery directive).
    "doc_module": ("sklearn_dplssgd",),
    "backreferences_dir": os.path.join("generated", "backreferences"),
    "reference_url": {"sklearn_dplssgd": None},
}
default_role = "literal"
highlight_language = "python3"

# -- HTML output ------------------------------------------------------------

# pydata-sphinx-theme, as scikit-learn, NumPy, SciPy and pandas use: a top
# navigation bar, a section menu that stays in view, an "on this page" menu
# and a wide text column, so that code written to 88 columns fits.
html_theme = "pydata_sphinx_theme"
html_title = f"{project} {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "logo": {"text": project},
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_depth": 3,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
    # No icon links, search-as-you-type service or version switcher: each
    # would need the network.
    "navigation_with_keys": False,
}
html_sidebars = {
    # The landing page and the changelog need no section menu.
    "index": [],
    "changelog": [],
}


# -- Docstring fixes applied at build time ------------------------------------


_SKLEARN_ROLE = re.compile(r":(?:ref|term):`(?:([^`<]*?)\s*<[^`>]*>|([^`]*))`")


def _sklearn_cross_references(app, what, name, obj, options, lines):
    """Render scikit-learn's ``:ref:`` and ``:term:`` roles as plain text.

    The methods inherited from scikit-learn (``score``, ``get_params``,
    ``set_score_request``, ...) keep scikit-learn's docstrings, which refer
    to labels and glossary terms of scikit-learn's own documentation; here
    they would be unknown targets.
    """
    if not getattr(obj, "__module__", "").startswith("sklearn."):
        return
    for i, line in enumerate(lines):
        lines[i] = _SKLEARN_ROLE.sub(lambda m: m.group(1) or m.group(2), line)


def _literal_shapes(app, what, name, obj, options, lines):
    """Render ``(n_features_in_,)`` in shape descriptions as literal text.

    Outside of literal markup, reStructuredText reads a word ending in an
    underscore as a hyperlink reference (an "Unknown target name" error).
    """
    for i, line in enumerate(lines):
        lines[i] = re.sub(r"(?<![`\w])(n_features_in_)(?![`\w])", r"``\1``", line)


def setup(app):
    app.connect("autodoc-process-docstring", _sklearn_cross_references)
    app.connect("autodoc-process-docstring", _literal_shapes)
