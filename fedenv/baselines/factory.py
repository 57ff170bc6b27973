"""Build a registered policy by name (:data:`fedenv.registry.POLICIES`) with the options it takes."""

from __future__ import annotations

import inspect

from fedenv.baselines.base import Policy
from fedenv.registry import POLICIES

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def policy_options(name: str) -> tuple[str, ...] | None:
    """The options policy ``name`` takes: the keyword parameters of its registered class (or factory),
    e.g. ``("select_fraction",)`` for ``fastest``; ``None`` when it takes any (``**kwargs``).

    Raises:
        ValueError: ``name`` is not registered (the message lists the registered names).
    """
    parameters = inspect.signature(POLICIES.get(name)).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return tuple(p.name for p in parameters if p.kind in _KEYWORD_KINDS)


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
    accepted = policy_options(name)
    unknown = [key for key in options if accepted is not None and key not in accepted]
    if unknown:
        raise ValueError(f"policy {name!r} takes no option {', '.join(map(repr, unknown))}; "
                         f"it takes: {', '.join(accepted) or 'none'}")
    return POLICIES.get(name)(**options)


def compared_policies() -> tuple[str, ...]:
    """The registered policies that ``--policies all`` compares: those whose class does not set
    ``compared = False`` (:attr:`~fedenv.baselines.base.Policy.compared`), in registration order."""
    return tuple(name for name in POLICIES if getattr(POLICIES.get(name), "compared", True))
