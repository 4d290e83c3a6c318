"""A fused advantage + consistency pass (numba loops in :mod:`._kernels`, a torch fallback) and its benchmark.

Not part of the library: the training loop composes :mod:`rlanything_core.advantages` and
:mod:`rlanything_core.rewards`; :mod:`.fused` computes the same values in one validated pass and ``bench`` measures it
against that composition and the plain-Python reference (``python -m benchmarks.fused_advantages.bench``; the
compiled loops need numba, ``pip install 'rlanything[fast]'``). The tests (``tests/benchmarks``) check it equals both.
"""
