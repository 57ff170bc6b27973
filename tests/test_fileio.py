"""Standard JSON for every JSON file, and output folders that are not overwritten silently (fedenv.fileio)."""

import math

import pytest

from fedenv.fileio import atomic_write_json, claim_output_folder, earlier_outputs, json_text
from tests.helpers import strict_json_loads


def test_json_text_writes_nan_and_infinities_as_null_in_nested_values():
    value = {"a": math.inf, "b": [math.nan, 1.5], "c": (-math.inf, "x"), "d": {"e": 2}}
    assert json_text(value) == '{"a": null, "b": [null, 1.5], "c": [null, "x"], "d": {"e": 2}}'


def test_a_written_json_file_parses_with_a_strict_reader(tmp_path):
    atomic_write_json(tmp_path / "x.json", {"deadline_s": math.inf, "loss": [math.nan]})
    assert strict_json_loads((tmp_path / "x.json").read_text()) == {"deadline_s": None, "loss": [None]}


def test_the_strict_reader_of_these_tests_refuses_what_json_dumps_writes_by_default():
    with pytest.raises(ValueError, match="Infinity is not standard JSON"):
        strict_json_loads('{"round_deadline_s": Infinity}')


def test_an_output_folder_with_earlier_outputs_is_refused_or_cleared_of_them_only(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    (tmp_path / "events.out.tfevents.1").write_text("")
    (tmp_path / "notes.txt").write_text("mine")
    patterns = ("results.json", "events.out.tfevents.*")
    assert [p.name for p in earlier_outputs(tmp_path, patterns)] == ["events.out.tfevents.1", "results.json"]
    with pytest.raises(ValueError, match=r"^taken \(it holds events.out.tfevents.1, results.json\)$"):
        claim_output_folder(tmp_path, patterns, overwrite=False, refusal="taken")
    assert (tmp_path / "results.json").exists()
    claim_output_folder(tmp_path, patterns, overwrite=True, refusal="taken")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    claim_output_folder(tmp_path / "new", patterns, overwrite=False, refusal="taken")  # no folder yet: fine
