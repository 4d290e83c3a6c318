"""Numerical constants shared by every formula in the library.

One named epsilon (the reference implementation scatters 1e-8, 1e-6 and 1e-4 across files): a group whose population
standard deviation is at most ``EPS`` is treated as degenerate and standardizes to 0.
"""

__all__ = ["EPS", "FORMAT_PENALTY"]

EPS: float = 1e-8
"""Standard deviations at or below this are degenerate (the group standardizes to all zeros)."""

FORMAT_PENALTY: float = -2.0
"""Raw reward of an unparseable judge output (vote or unit test), as in the authors' code."""
