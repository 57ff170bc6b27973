"""Every public module of fedenv and agents has an automodule entry in the API reference (docs/reference/api/),
and every entry there names a module that exists; the generated reference covers every EnvConfig field and
every flag of the documented commands."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import sys
from pathlib import Path

import agents
import fedenv
from fedenv.config import EnvConfig

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "reference" / "api"


def public_modules() -> set[str]:
    """Every module of fedenv and agents whose dotted name has no part starting with an underscore."""
    names = set()
    for package in (fedenv, agents):
        names.add(package.__name__)
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not any(part.startswith("_") for part in module.name.split(".")):
                names.add(module.name)
    return names


def documented_modules() -> set[str]:
    return {m for page in API.glob("*.md") for m in re.findall(r"^\.\. automodule:: (\S+)$", page.read_text(), re.M)}


def test_every_public_module_is_in_the_api_reference():
    missing = public_modules() - documented_modules()
    assert not missing, f"add to docs/reference/api/: {sorted(missing)}"


def test_every_api_reference_entry_is_an_importable_module():
    for name in documented_modules():
        assert importlib.import_module(name).__name__ == name


def test_every_api_page_is_in_the_api_index():
    index = (API / "index.md").read_text()
    for page in API.glob("*.md"):
        if page.name != "index.md":
            assert f"\n{page.stem}\n" in index, page.name


def generated_reference():
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        return importlib.import_module("fedenv_reference")
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))


def test_the_generated_configuration_tables_have_a_row_per_envconfig_field():
    tables = generated_reference().generate("envconfig", None)
    rows = re.findall(r"^\| `(--[a-z0-9-]+)` \| `([a-z0-9_]+)` \|", tables, re.M)
    assert [field for _, field in rows] == [f.name for f in dataclasses.fields(EnvConfig)]
    assert all(flag == "--" + field.replace("_", "-") for flag, field in rows)


def test_the_generated_flag_tables_list_every_flag_of_each_command_but_the_config_fields():
    reference = generated_reference()
    config_fields = {f.name for f in dataclasses.fields(EnvConfig)}
    for name in reference.COMMANDS:
        parser = reference.command_parser(name)
        text = reference.generate("flags", name)
        listed = set(re.findall(r"`(--[a-z0-9-]+)`", text))
        for action in parser._actions:
            if not action.option_strings or action.dest.startswith("vdn_") or action.dest in config_fields:
                continue
            assert action.option_strings[-1] in listed, (name, action.option_strings)
