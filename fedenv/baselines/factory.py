"""Build a registered policy by name (:data:`fedenv.registry.POLICIES`) with the options it takes."""

from __future__ import annotations

import ast
import inspect

from fedenv.baselines.base import Policy
from fedenv.registry import POLICIES

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def policy_options(name: str) -> tuple[str, ...] | None:
    """The options policy ``name`` takes: the keyword parameters of its registered class (or factory),
    e.g. ``("select_fraction",)`` for ``fastest``, but ``name`` (a policy is named by :func:`make_policy`'s
    ``name`` and by its spec, :func:`policy_from_spec`); ``None`` when it takes any (``**kwargs``).

    Raises:
        ValueError: ``name`` is not registered (the message lists the registered names).
    """
    parameters = inspect.signature(POLICIES.get(name)).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return tuple(p.name for p in parameters if p.kind in _KEYWORD_KINDS and p.name != "name")


def options_for(name: str, **settings) -> dict:
    """Those of ``settings`` that policy ``name`` takes: for a setting shared by several policies, such as
    ``evaluate.py --select-fraction``, which only the policies selecting a subset use.

    Raises:
        ValueError: ``name`` is not registered.
    """
    accepted = policy_options(name)
    return {key: value for key, value in settings.items() if accepted is None or key in accepted}


def make_policy(name: str, **options) -> Policy:
    """A new instance of the policy registered as ``name``, built with ``options``.

    Example: ``make_policy("oort", select_fraction=0.3)``; ``make_policy("fedavg")``.

    Raises:
        ValueError: ``name`` is not registered (the message lists the registered names), an option the
            policy does not take (the message lists those it takes), or a value the policy refuses
            (``select_fraction`` outside (0, 1]).
    """
    check_policy_options(name, options)
    return POLICIES.get(name)(**options)


def check_policy_options(name: str, options: dict) -> None:
    """Refuse option names that policy ``name`` does not take (:func:`policy_options`); the values are not checked.

    Raises:
        ValueError: ``name`` is not registered, or an option it does not take (the message lists those it takes).
    """
    accepted = policy_options(name)
    unknown = [key for key in options if accepted is not None and key not in accepted]
    if unknown:
        raise ValueError(f"policy {name!r} takes no option {', '.join(map(repr, unknown))}; "
                         f"it takes: {', '.join(accepted) or 'none'}")


def parse_policy_spec(spec: str) -> tuple[str, dict]:
    """A policy written as ``NAME`` or ``NAME:OPTION=VALUE,...`` (values Python literals, e.g.
    ``stale-fastest:k=2,drop=2``) -> ``(name, options)``: the form of ``agent_study --references`` and
    ``train_agents.py --vdn-demonstrator``. Options are split at commas, so a value holds none (numbers,
    strings and booleans). The name is not checked here (:func:`policy_from_spec` builds it).

    Raises:
        ValueError: an option that is not ``OPTION=VALUE`` with a literal value, naming it.
    """
    name, _, text = spec.partition(":")
    name, options = name.strip(), {}
    for part in filter(None, text.split(",")):
        key, sep, value = (piece.strip() for piece in part.partition("="))
        try:
            if not (sep and key):
                raise ValueError(part)
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"policy {spec!r}: option {part!r} is not OPTION=VALUE with a Python literal value "
                             "(a number, string or boolean; e.g. stale-fastest:drop=2)") from None
    return name, options


def policy_from_spec(spec: str, **settings) -> Policy:
    """The policy ``spec`` (:func:`parse_policy_spec`) built by :func:`make_policy` with its options and, where
    the policy takes them (:func:`options_for`), ``settings`` shared by several policies: ``num_rounds`` (a
    schedule-like policy counts the rounds left) or ``select_fraction``. A spec's own option wins over a
    setting, but ``num_rounds``, the federation's, is not the spec's to change. Named ``spec``
    (``stale-fastest:k=2``).

    Example: ``policy_from_spec("stale-fastest:k=2", num_rounds=10)``.

    Raises:
        ValueError: a malformed spec, a name that is not registered, an option the policy does not take, a
            ``num_rounds`` option other than the setting, or a value the policy refuses (with a hint where the
            policy's default options are refused).
    """
    name, options = parse_policy_spec(spec)
    check_policy_options(name, options)
    if "num_rounds" in settings and options.get("num_rounds", settings["num_rounds"]) != settings["num_rounds"]:
        raise ValueError(f"{name} num_rounds={options['num_rounds']!r} is not the federation's "
                         f"{settings['num_rounds']}, which it counts the rounds of (set last_rounds instead)")
    try:
        policy = make_policy(name, **{**options_for(name, **settings), **options})
    except (TypeError, ValueError) as error:
        hint = "" if options else f" (its default options; give others as {name}:OPTION=VALUE,...)"
        raise ValueError(f"{error}{hint}") from None
    policy.name = spec
    return policy


def compared_policies() -> tuple[str, ...]:
    """The registered policies that ``--policies all`` compares: those whose class does not set
    ``compared = False`` (:attr:`~fedenv.baselines.base.Policy.compared`), in registration order."""
    return tuple(name for name in POLICIES if getattr(POLICIES.get(name), "compared", True))
