"""JSON someone sent: a request body, or data typed into the job editor. One
reader for both, stricter than the standard library where a writer cannot
have meant what it would read: NaN and Infinity (not JSON), a number past a
double's range (1e400 reads as infinity), and a key twice in one object,
which ``json.loads`` settles silently by keeping the last
(``{"id": "11", "id": "nope"}`` acted on job "nope")."""

from __future__ import annotations

import json
import math
from typing import Any


class JsonRefused(ValueError):
    """Why the text is refused, in plain words."""


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise JsonRefused(f"The number {text[:20]} is too large for JSON data")
    return number


def _no_constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not a number JSON allows")  # NaN, Infinity, -Infinity


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise JsonRefused(f"The key {key[:50]!r} appears twice in one object")
        found[key] = value
    return found


def loads(text: str | bytes, what: str) -> Any:
    """``text`` read as JSON, or :class:`JsonRefused` saying why not; ``what``
    names it in the words ("The body", "The data")."""
    try:
        return json.loads(
            text, parse_float=_finite, parse_constant=_no_constant, object_pairs_hook=_object
        )
    except JsonRefused:
        raise
    except RecursionError:
        raise JsonRefused(f"{what} is nested too deeply") from None
    except json.JSONDecodeError as error:
        raise JsonRefused(
            f"{what} is not valid JSON (line {error.lineno}, column {error.colno})"
        ) from None
    except ValueError:  # UnicodeDecodeError, integers over 4300 digits
        raise JsonRefused(f"{what} is not valid JSON") from None
