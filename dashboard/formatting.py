"""Numbers for humans, shared by the presenters and the charts."""

from __future__ import annotations


def thousands(value: object) -> str:
    """1204331 -> "1,204,331"."""
    try:
        return f"{int(value):,}"  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return ""


def compact(value: object) -> str:
    """1204331 -> "1.2M", 3200 -> "3.2k" (the exact value goes in a title)."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return ""
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(number) >= size:
            return f"{number / size:.1f}".rstrip("0").rstrip(".") + unit
    return str(number)
