"""Numbers and texts for humans, shared by the presenters, buttons and charts."""

from __future__ import annotations


def thousands(value: object) -> str:
    """1204331 -> "1,204,331"."""
    try:
        return f"{int(value):,}"  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return ""


def failures(count: int) -> str:
    """1 -> "1 failure", 1204 -> "1,204 failures" (charts.FAILURES_MEANING)."""
    return f"{thousands(count)} failure{'' if count == 1 else 's'}"


def truncate(text: str, limit: int) -> str:
    """At most ``limit`` characters, "…" last when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def minute_label(ms: int) -> str:
    """ "07:31 UTC": the minute of a time. Arithmetic, not strftime: 61 labels a
    chart, strftime was two thirds of its rendering time."""
    minute = ms // 60_000
    return f"{minute // 60 % 24:02d}:{minute % 60:02d} UTC"


def percent(share: float) -> str:
    """0.0004 -> "0.04%", 0.048 -> "4.8%", 0.23 -> "23%": two figures at most."""
    value = share * 100
    if value == 0 or value >= 10:
        return f"{value:.0f}%"
    digits = 1 if value >= 1 else 2
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") + "%"


def format_ms(value: float | None) -> str:
    """812 -> "812 ms", 4300 -> "4.3 s", 300000 -> "5.0 min"; a dash for none."""
    if value is None:
        return "\u2013"
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 120_000:
        return f"{value / 1000:.1f} s"
    return f"{value / 60_000:.1f} min"


_YEAR_S = 365 * 86_400


def span(ms: int) -> str:
    """A duration for humans: "340 ms", "4.2 s", "3 min", "2 h", "5 d", "73 years"
    (not "26692 d": a year is 365 days here)."""
    seconds = abs(ms) / 1000
    if seconds < 1:
        return f"{abs(ms)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    if seconds >= 2 * _YEAR_S:
        return f"{int(seconds // _YEAR_S)} years"
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"  # pragma: no cover - unreachable, keeps mypy happy
