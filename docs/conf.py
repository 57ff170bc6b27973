"""Sphinx configuration of the fedenv documentation: MyST Markdown pages, the API by autodoc (the
docstrings hold Sphinx roles and Google-style sections, read by napoleon), the Furo theme.

    pip install -e ".[docs]" && sphinx-build -W -b html docs docs/_build/html

``_ext/fedenv_reference.py`` writes the generated reference (EnvConfig fields, every command's flags)
from the code at build time.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "fedenv"
author = "fedenv developers"
copyright = "2026, fedenv developers"
release = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "fedenv_reference",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]  # links to repository files outside docs/ (e.g. ../../agents/vdn.py)

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "fedenv"
