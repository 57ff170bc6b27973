"""Studies and measurements of the package, one command each (README lists them).

Each module runs from the repository root both as ``python benchmarks/NAME.py`` and as
``python -m benchmarks.NAME``. This file makes ``benchmarks`` a regular package, so that it is not merged
with another installed ``benchmarks`` folder (TorchRL's wheel installs one) into a namespace package.
"""
