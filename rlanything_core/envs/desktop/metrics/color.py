"""Colour difference for OSWorld's colour checks: sRGB -> CIE Lab (D65) and the CIEDE2000 difference.

The formulas are the standard ones (CIE 15; Sharma, Wu and Dalal 2005, "The CIEDE2000 color-difference formula");
OSWorld computes the same quantities with scikit-image's ``rgb2lab`` and ``deltaE_ciede2000``.
"""

from __future__ import annotations

import math

__all__ = ["delta_e_2000", "srgb_to_lab"]

_WHITE = (0.95047, 1.0, 1.08883)  # D65, 2-degree observer


def srgb_to_lab(rgb: tuple[int, int, int] | tuple[float, float, float]) -> tuple[float, float, float]:
    """CIE Lab of an 8-bit sRGB colour.

    Examples:
        >>> [round(v, 2) + 0.0 for v in srgb_to_lab((255, 255, 255))]
        [100.0, 0.0, 0.0]
    """
    linear = []
    for channel in rgb:
        c = float(channel) / 255.0
        linear.append(((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92)
    r, g, b = linear
    xyz = (
        0.412453 * r + 0.357580 * g + 0.180423 * b,
        0.212671 * r + 0.715160 * g + 0.072169 * b,
        0.019334 * r + 0.119193 * g + 0.950227 * b,
    )

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    fx, fy, fz = (f(v / w) for v, w in zip(xyz, _WHITE))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e_2000(lab1: tuple[float, float, float], lab2: tuple[float, float, float]) -> float:
    """CIEDE2000 difference of two Lab colours (``kL = kC = kH = 1``).

    Examples:
        >>> round(delta_e_2000((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485)), 4)  # Sharma et al., pair 1
        2.0425
    """
    l1, a1, b1 = lab1
    l2, a2, b2 = lab2
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar**7 / (c_bar**7 + 25**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = l2 - l1, c2p - c1p
    dh = 0.0
    if c1p * c2p:
        dh = h2p - h1p
        if dh > 180:
            dh -= 360
        elif dh < -180:
            dh += 360
    d_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_bar, cp_bar = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_bar = (h1p + h2p) / 2
    else:
        h_bar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(h_bar - 30))
        + 0.24 * math.cos(math.radians(2 * h_bar))
        + 0.32 * math.cos(math.radians(3 * h_bar + 6))
        - 0.20 * math.cos(math.radians(4 * h_bar - 63))
    )
    sl = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    sc = 1 + 0.045 * cp_bar
    sh = 1 + 0.015 * cp_bar * t
    rt = (
        -2
        * math.sqrt(cp_bar**7 / (cp_bar**7 + 25**7))
        * math.sin(math.radians(60 * math.exp(-(((h_bar - 275) / 25) ** 2))))
    )
    return math.sqrt((dl / sl) ** 2 + (dc / sc) ** 2 + (d_h / sh) ** 2 + rt * (dc / sc) * (d_h / sh))
