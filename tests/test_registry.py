"""The name -> implementation tables of fedenv.registry."""

from __future__ import annotations

import json

import pytest

from fedenv.registry import Registry


def test_entry_point_is_imported_on_first_lookup_and_kept():
    registry = Registry("thing")
    registry.register("dumps", "json:dumps")
    assert registry.names() == ("dumps",) and "dumps" in registry and len(registry) == 1
    assert registry.get("dumps") is json.dumps
    assert registry["dumps"] is json.dumps


def test_objects_register_directly_and_unregister():
    registry = Registry("thing")
    marker = object()
    assert registry.register("a", marker) is marker
    assert list(registry) == ["a"]
    registry.unregister("a")
    assert "a" not in registry


def test_unknown_and_duplicate_names_are_refused_with_the_allowed_names():
    registry = Registry("aggregation rule")
    registry.register("fedavg", object())
    with pytest.raises(ValueError, match=r"aggregation rule 'median' is not known; allowed: fedavg"):
        registry.get("median")
    with pytest.raises(ValueError, match="already registered"):
        registry.register("fedavg", object())
    with pytest.raises(ValueError, match="non-empty string"):
        registry.register("", object())
