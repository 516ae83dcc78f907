"""What several algorithms share."""
from __future__ import annotations


def pof2_below(p: int) -> int:
    """Largest power of two <= p."""
    return 1 << (p.bit_length() - 1)
