"""The learned-agent study's page (:mod:`benchmarks.agent_study`): the Markdown block of
docs/results/learned-agent.md (:func:`markdown`: the variants' rows, the differences between variants, the
fine-tuning tables, each variant's bars, the all-policies tables) and README's short table
(:func:`readme_table`), rendered from the rows of :mod:`benchmarks.agent_study_rows` and written between a
section's markers (:func:`write_pages`)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.agent_study_rows import POLICY_METRICS, bars, ratio_text, signed_interval
from benchmarks.agent_study_settings import SETTINGS
from benchmarks.pages import ROOT, write_between_markers

START, END = "<!-- learned-agent:start -->", "<!-- learned-agent:end -->"
"""The markers of the default ``--section``; ``--section NAME`` writes between ``learned-agent-NAME:start/end``."""
PAGE = ROOT / "docs" / "results" / "learned-agent.md"
README = ROOT / "README.md"
"""``--write`` puts the full tables between the markers of the page and :func:`readme_table` between the
same markers of README."""
BAR_STATES = {True: "met", False: "not met", None: "not measured"}
"""How the page writes a bar's state (:func:`benchmarks.agent_study_rows.bars`)."""


def variants_of(rows: dict[str, dict[str, dict]]) -> list[str]:
    """Every variant of ``rows`` (setting -> variant -> row), in the order they first appear."""
    return list(dict.fromkeys(v for by_variant in rows.values() for v in by_variant))


def markers(section: str | None) -> tuple[str, str]:
    """The page's start and end markers of ``section`` (None: :data:`START`, :data:`END`)."""
    name = "learned-agent" if section is None else f"learned-agent-{section}"
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def fine_tune_table(setting: str, by_variant: dict[str, dict]) -> list[str]:
    """The lines of one setting's "fine-tuned minus zero-shot" table (the zero-shot rows of ``by_variant``
    that carry ``ft_minus_zero_shot``, with ``zero_shot_minus_scratch`` where a scratch variant ran), under
    a heading line; no lines when no variant of the setting was fine-tuned."""
    tuned = {variant: r for variant, r in by_variant.items() if "ft_minus_zero_shot" in r}
    if not tuned:
        return []
    how = next(iter(tuned.values()))["ft_minus_zero_shot"]  # one fine-tuning per study
    episodes, initial_eps = how["episodes"], how.get("initial_eps")
    reannealed = ("" if initial_eps is None else f", exploration re-annealed from epsilon {initial_eps:g}") + (
        ", only the Q-network's output layer trained" if how.get("head_only") else "")
    validated = (", its fine-tuned weights kept only where they beat its zero-shot weights on validation seeds "
                 "there" if any("runs" in r["ft_minus_zero_shot"] for r in tuned.values()) else "")
    lines = [f"**Fine-tuned minus zero-shot, setting `{setting}`** ({SETTINGS[setting].description}; "
             f"each run fine-tuned there for {episodes} episode{'' if episodes == 1 else 's'}"
             f"{reannealed}{validated}; team "
             "return, paired on the seeds, both sides' runs resampled):", "",
             "| fine-tuned | zero-shot | fine-tuned minus zero-shot | zero-shot minus scratch |", "|---|---|---|---|"]
    for variant, r in tuned.items():
        d, z = r["ft_minus_zero_shot"], r.get("zero_shot_minus_scratch")
        scratch = (f"{signed_interval(z['difference'], z['low'], z['high'])} {z['label'] or ''} ({z['reference']})"
                   if z else "not measured")
        kept = f" ({d['kept_runs']} of {d['runs']} runs kept their fine-tuned weights)" if "runs" in d else ""
        lines.append(f"| {d['variant']}{kept} | {variant} | {signed_interval(d['difference'], d['low'], d['high'])} "
                     f"{d['label'] or ''} | {scratch} |")
    if not any("zero_shot_minus_scratch" in r for r in tuned.values()):
        better = [r["ft_minus_zero_shot"]["variant"] for r in tuned.values() if r["ft_minus_zero_shot"]["low"] > 0]
        held = (f", except for {', '.join(better)}: better than zero-shot, it meets that half whether or not "
                "zero-shot trails scratch" if better else "")
        lines += ["", f"No agent trained from scratch at `{setting}` (`--scratch {setting}:NAME=GLOB`): the bar's "
                  f"second half (fine-tuned better than zero-shot where zero-shot trails scratch) is not measured"
                  f"{held}."]
    return lines


def policy_table(setting: str, rows: list[dict]) -> list[str]:
    """The lines of one setting's all-policies table (:func:`benchmarks.agent_study_rows.policy_rows`), under a
    heading line; with the rows' ratios to the best fixed policy (``policy_rows(..., best_fixed=...)``) in a
    column after the team return."""
    ratios = any("ratio" in r for r in rows)
    headings = [h for _, h, _ in POLICY_METRICS]
    if ratios:
        headings.insert(1, f"ratio to best fixed ({rows[0]['best_fixed']})")
    lines = [f"**All policies, setting `{setting}`** ({SETTINGS[setting].description}):", "",
             "| policy | kind | probing | runs x seeds | " + " | ".join(headings) + " |",
             "|---|---|---|---|" + "---|" * len(headings)]
    for r in rows:
        cells = [f"{r[m]:.{d}f} [{r[f'{m}_low']:.{d}f}, {r[f'{m}_high']:.{d}f}]" for m, _, d in POLICY_METRICS]
        if ratios:
            cells.insert(1, ratio_text(r))
        lines.append(f"| {r['policy']} | {r['kind']} | {r['probing']} | {r['runs']} x {r['seeds']} | "
                     + " | ".join(cells) + " |")
    return lines


def margin_cells(row: dict, role: str) -> str:
    """Two cells of a variant's row: the best policy of ``role`` (``schedule`` or ``reference``) with its return,
    and the variant minus it with its interval and label; two empty cells when the row has none."""
    if f"best_{role}" not in row:
        return " | "
    return (f"{row[f'best_{role}']} ({row[f'best_{role}_return']:.3f}) | "
            f"{signed_interval(row[f'minus_{role}'], row[f'minus_{role}_low'], row[f'minus_{role}_high'])} "
            f"{row[f'minus_{role}_label'] or ''}")


def markdown(rows: dict[str, dict[str, dict]], command: str, commit: str, differences: list[dict],
             policies: dict[str, list[dict]]) -> str:
    """The page block: one table row per setting and variant (with the best reference policy's columns when
    the rows have one), the differences between variants (``--compare``, per setting), each variant's bars, then per
    setting the all-policies table (``setting -> rows`` of :func:`benchmarks.agent_study_rows.policy_rows`)."""
    referenced = any("best_reference" in r for by_variant in rows.values() for r in by_variant.values())
    lines = [f"Generated by `{command}` at commit `{commit}`; team return, mean over training runs x held-out "
             "seeds; differences and ratios paired on the same seeds with 95 % bootstrap intervals (over seeds "
             "and whole runs); `run std`: standard deviation of the per-run mean returns.", "",
             "| setting | variant | runs x seeds | return | run std | best fixed | minus best fixed | "
             "ratio to best fixed | best schedule | minus best schedule |" + (
                 " best reference | minus best reference |" if referenced else ""),
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if referenced else "")]
    for setting, by_variant in rows.items():
        for variant, r in by_variant.items():
            lines.append(
                f"| {setting} | {variant} | {r['runs']} x {r['seeds']} | {r['return']:.3f} | {r['run_std']:.3f} | "
                f"{r['best_fixed']} ({r['best_fixed_return']:.3f}) | "
                f"{signed_interval(r['minus_fixed'], r['minus_fixed_low'], r['minus_fixed_high'])} "
                f"{r['minus_fixed_label'] or ''} | {ratio_text(r)} | "
                f"{margin_cells(r, 'schedule')} |" + (f" {margin_cells(r, 'reference')} |" if referenced else ""))
    if differences:
        lines += ["", ("**Ablation** (`--compare A:B`): variant A minus variant B in each setting where both were "
                   "evaluated, each pair one lever against the variant without it (paired on the seeds, both "
                   "sides' runs resampled):"),
                  "", "| setting | variant | minus | team return difference |", "|---|---|---|---|"]
        lines += [f"| {d['setting']} | {d['variant']} | {d['reference']} | "
                  f"{signed_interval(d['difference'], d['low'], d['high'])} {d['label'] or ''} |"
                  for d in differences]
    for setting, by_variant in rows.items():
        table = fine_tune_table(setting, by_variant)
        lines += ["", *table] if table else []
    variants = variants_of(rows)
    for variant in variants:
        lines += ["", f"Bars for `{variant}`:", ""]
        lines += [f"- {BAR_STATES[met]}: {text}" for text, met in bars(rows, variant)]
    if policies:
        lines += ["", "Every policy's metrics per setting: the learned variants, the fixed policies and the open-loop "
                  f"schedules{' (and the reference policies)' if referenced else ''}, each in the probing mode it "
                  "played in; per episode (latency, upload and download "
                  "summed over its rounds), mean over training runs x held-out seeds with the 95 % bootstrap "
                  "interval (over seeds and whole runs); the team return's ratio to the setting's best fixed "
                  "policy is paired on the seeds, as the variants' are."]
    for setting, setting_rows in policies.items():
        lines += ["", *policy_table(setting, setting_rows)]
    return "\n".join(lines)


def readme_table(rows: dict[str, dict[str, dict]], variants: list[str] | None = None) -> str:
    """README's short form: per variant (those of ``variants``, in their order; default every variant of
    ``rows``), the margins of the trained setting, the transfer ratios and how many bars it meets."""
    lines = ["| learned variant | minus best fixed | minus best schedule | ratio to best fixed at 4x / 8x | bars met |",
             "|---|---|---|---|---|"]
    if variants is None:
        variants = variants_of(rows)
    for variant in variants:
        trained = rows.get("trained", {}).get(variant, {})
        cells = []
        for role in ("fixed", "schedule"):
            key = f"minus_{role}"
            cells.append(f"{signed_interval(trained[key], trained[f'{key}_low'], trained[f'{key}_high'])} "
                         f"{trained[f'{key}_label']} ({trained[f'best_{role}']})" if key in trained else "")
        cells.append(" / ".join(ratio_text(rows[s][variant]) for s in ("4x", "8x") if variant in rows.get(s, {})))
        met = [ok for _, ok in bars(rows, variant) if ok is not None]
        cells.append(f"{sum(met)} of {len(met)}")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines)



def write_pages(page: Path, readme: Path | None, section: str | None, block: str, rows: dict[str, dict[str, dict]],
                command: str, commit: str, readme_variants: list[str] | None = None) -> None:
    """Write ``block`` (:func:`markdown`) between the markers of ``section`` (:func:`markers`) in ``page``, and
    :func:`readme_table` of ``rows`` (its ``readme_variants``) with ``command`` and ``commit`` between the
    same markers of ``readme`` (None: the page only); neither file is written unless both have the start marker.

    Raises:
        ValueError: a file without the section's markers (naming it). FileNotFoundError: no such file.
    """
    start, end = markers(section)
    paths = [page] if readme is None else [page, readme]
    for path in paths:
        if start not in path.read_text():
            raise ValueError(f"{path} has no {start} marker")
    write_between_markers(page, block, start, end)
    if readme is not None:
        write_between_markers(readme, f"{readme_table(rows, readme_variants)}\n\n(`{command}`, commit `{commit}`; "
                              "[the bars and all settings](docs/results/learned-agent.md))", start, end)
