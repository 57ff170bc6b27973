"""The learned-agent page's index (benchmarks/agent_study_index.py): cells copied from the sections' tables."""

import pytest

from benchmarks import agent_study_index
from benchmarks.agent_study_index import PAGE, index_table, sections, slug

HEADER = ("| setting | variant | return | run std | minus best fixed | ratio to best fixed | minus best schedule |\n"
          "|---|---|---|---|---|---|---|")  # the columns the index reads, and one it does not

PAGE_TEXT = f"""# The page

intro

<!-- learned-agent-index:start -->
<!-- learned-agent-index:end -->

<!-- learned-agent:start -->
{HEADER}
| trained | a | 0.450 | 0.008 | +0.025 [+0.007, +0.043] better | 1.06x [1.02, 1.10] | +0.000 [-0.024, +0.026] level |
| 4x | a | 0.304 | 0.026 | -0.001 [-0.036, +0.035] level | 1.00x [0.89, 1.12] | -0.030 [-0.068, -0.001] worse |

| variant | minus | team return difference |
|---|---|---|
| a | b | +0.1 [0, 0.2] better |
<!-- learned-agent:end -->

## Learning from `stale-fastest`'s demonstrations, with the server's estimates

<!-- learned-agent-demo:start -->
{HEADER}
| trained | b | 0.492 | 0.001 | +0.068 [+0.050, +0.084] better | 1.16x [1.12, 1.20] | +0.043 [+0.013, +0.076] better |
| 8x | b | 0.299 | 0.005 | +0.041 [+0.015, +0.069] better | 1.16x [1.06, 1.28] | +0.047 [+0.010, +0.084] better |
| 8x | b +ft10 | 0.294 | 0.006 | +0.036 [+0.009, +0.061] better | 1.14x [1.03, 1.25] | +0.041 [-0.001, +0.085] level |
| epochs-1 | b | 0.440 | 0.003 | +0.062 [+0.050, +0.074] better | 1.17x [1.13, 1.20] | +0.052 [+0.026, +0.081] better |
| lenet5 | b | 0.413 | 0.034 | -0.020 [-0.077, +0.035] level | 0.95x [0.83, 1.09] | -0.042 [-0.081, -0.002] worse |
| lenet5 | b +ft10 | 0.420 | 0.030 | -0.013 [-0.070, +0.040] level | 0.97x [0.85, 1.10] | +0.004 [0, 0.1] level |
<!-- learned-agent-demo:end -->
"""


def test_each_sections_variants_get_their_own_cells_and_blanks_where_a_setting_was_not_evaluated():
    lines = index_table(PAGE_TEXT).splitlines()
    assert lines[0].endswith("| ratio to best fixed at 8x | ratio to best fixed in other settings |")
    assert lines[2:] == [
        "| [The page](#the-page) | a | 0.450 | +0.025 [+0.007, +0.043] better | +0.000 [-0.024, +0.026] level "
        "| 1.00x [0.89, 1.12] |  |  |",
        "| [Learning from `stale-fastest`'s demonstrations, with the server's estimates]"
        "(#learning-from-stale-fastests-demonstrations-with-the-servers-estimates) | b | 0.492 | "
        "+0.068 [+0.050, +0.084] better | +0.043 [+0.013, +0.076] better |  | 1.16x [1.06, 1.28] "
        "| epochs-1 1.17x [1.13, 1.20]; lenet5 0.95x [0.83, 1.09] |",  # the other settings in the table's order
        "|  | b +ft10 |  |  |  |  | 1.14x [1.03, 1.25] | lenet5 0.97x [0.85, 1.10] |",  # named on its first row only
    ]
    # the index's own markers are not a section; the ablation table under the main one is not read
    assert [(heading, name) for heading, name, _ in sections(PAGE_TEXT)] == [
        ("The page", ""), ("Learning from `stale-fastest`'s demonstrations, with the server's estimates", "demo")]


def test_a_heading_with_several_blocks_names_each_blocks_marker():
    second = PAGE_TEXT.split("## Learning")[1].split("\n", 1)[1].replace("learned-agent-demo:", "learned-agent-demo2:")
    rows = index_table(PAGE_TEXT + second).splitlines()[2:]
    heading = ("[Learning from `stale-fastest`'s demonstrations, with the server's estimates]"
               "(#learning-from-stale-fastests-demonstrations-with-the-servers-estimates)")
    assert rows[0].startswith("| [The page](#the-page) | a |")  # alone under its heading: no name
    assert rows[1].startswith(f"| {heading} (`demo`) | b |") and rows[2].startswith("|  | b +ft10 |")
    assert rows[3].startswith(f"| {heading} (`demo2`) | b |")


def test_the_anchors_are_mysts():
    slugify = pytest.importorskip("myst_parser.mdit_to_docutils.base").default_slugify
    for heading in ("Learning from `stale-fastest`'s demonstrations, with the server's estimates",
                    "K/T-normalised features under the demonstrations", "A second task: 100 clients, 10 candidates"):
        assert slug(heading) == slugify(heading)
    assert slug("K/T-normalised features") == "kt-normalised-features"


def test_a_section_without_its_end_marker_is_named():
    with pytest.raises(ValueError, match="<!-- learned-agent-demo:start --> has no <!-- learned-agent-demo:end -->"):
        index_table(PAGE_TEXT.replace("<!-- learned-agent-demo:end -->", ""))


def test_write_fills_the_markers_and_a_page_without_them_is_a_usage_error(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text(PAGE_TEXT)
    assert agent_study_index.main(["--page", str(page), "--write"]) == 0
    written = page.read_text()
    start = agent_study_index.START + "\n"
    assert written == PAGE_TEXT.replace(start, start + index_table(PAGE_TEXT) + "\n")  # nothing else changed
    assert agent_study_index.main(["--page", str(page), "--write"]) == 0 and page.read_text() == written  # idempotent
    page.write_text(PAGE_TEXT.replace("<!-- learned-agent-index:start -->\n", ""))
    with pytest.raises(SystemExit) as exit_:
        agent_study_index.main(["--page", str(page), "--write"])
    assert exit_.value.code == 2 and "learned-agent-index:start" in capsys.readouterr().err


def test_the_pages_index_is_the_one_its_command_writes():
    text = PAGE.read_text()
    start, end = text.index(agent_study_index.START), text.index(agent_study_index.END)
    assert text[start + len(agent_study_index.START):end].strip() == index_table(text)
