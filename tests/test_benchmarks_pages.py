"""Pages written between markers: only the text between them changes; missing or swapped markers are errors."""

import pytest

from benchmarks.pages import replace_between_markers, write_between_markers


def test_only_the_text_between_the_markers_is_replaced():
    text = "head\n<!-- a:start -->\nold\nlines\n<!-- a:end -->\ntail\n"
    assert replace_between_markers(text, "new", "<!-- a:start -->", "<!-- a:end -->") == (
        "head\n<!-- a:start -->\nnew\n<!-- a:end -->\ntail\n")


@pytest.mark.parametrize("text", ["no markers here", "<!-- a:end -->\n<!-- a:start -->\n", "<!-- a:start -->\n"])
def test_missing_or_swapped_markers_are_an_error(text):
    with pytest.raises(ValueError, match=r"<!-- a:start --> \.\.\. <!-- a:end --> markers"):
        replace_between_markers(text, "new", "<!-- a:start -->", "<!-- a:end -->")


def test_a_page_without_the_markers_is_named_and_left_as_it_was(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("nothing to replace\n")
    with pytest.raises(ValueError, match=r"page\.md"):
        write_between_markers(page, "new", "<!-- a:start -->", "<!-- a:end -->")
    assert page.read_text() == "nothing to replace\n"
