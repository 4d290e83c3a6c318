"""OSWorld's ``compare_images``: the structural similarity (SSIM) of two images, in grey.

Source of the semantics: OSWorld's ``desktop_env/evaluators/metrics/vlc.py`` (Apache-2.0), which calls
scikit-image's ``structural_similarity`` with its defaults; the code here is ours. Both images are converted to 8-bit
grey and resized (Lanczos) to the smaller size (the smaller ``(width, height)`` tuple, as OSWorld compares them);
SSIM uses a 7x7 uniform window, ``K1 = 0.01``, ``K2 = 0.03``, data range 255, sample covariances, and is the mean of
the SSIM map over the pixels whose window lies inside the image. A missing or unreadable image scores 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["compare_images", "ssim"]

_WIN = 7


def _box_mean(a: Any) -> Any:
    """The mean of every 7x7 window lying inside ``a`` (shape ``(H - 6, W - 6)``)."""
    import numpy as np

    c = np.cumsum(np.cumsum(np.pad(a, ((1, 0), (1, 0))), axis=0), axis=1)
    total = c[_WIN:, _WIN:] - c[:-_WIN, _WIN:] - c[_WIN:, :-_WIN] + c[:-_WIN, :-_WIN]
    return total / _WIN**2


def ssim(one: Any, two: Any, *, data_range: float = 255.0) -> float:
    """SSIM of two equally shaped grey images (2-D arrays at least 7x7; module docstring)."""
    import numpy as np

    x, y = np.asarray(one, dtype=np.float64), np.asarray(two, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2 or min(x.shape) < _WIN:
        raise ValueError(f"ssim needs two equal 2-D images of at least {_WIN}x{_WIN}, got {x.shape} and {y.shape}")
    n = _WIN**2
    cov = n / (n - 1)  # sample covariances, as scikit-image's default
    ux, uy = _box_mean(x), _box_mean(y)
    vx = cov * (_box_mean(x * x) - ux * ux)
    vy = cov * (_box_mean(y * y) - uy * uy)
    vxy = cov * (_box_mean(x * y) - ux * uy)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux**2 + uy**2 + c1) * (vx + vy + c2))
    return float(s.mean())


def compare_images(result: Any, expected: Any) -> float:
    """SSIM of the result image and the expected one (module docstring)."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    if not result or not expected or not Path(str(result)).is_file() or not Path(str(expected)).is_file():
        return 0.0
    try:
        one, two = Image.open(str(result)).convert("L"), Image.open(str(expected)).convert("L")
    except (UnidentifiedImageError, OSError):
        return 0.0
    size = min(one.size, two.size)
    if min(size) < _WIN:
        return 0.0
    one = one.resize(size, Image.Resampling.LANCZOS)
    two = two.resize(size, Image.Resampling.LANCZOS)
    return max(0.0, ssim(np.array(one), np.array(two)))
