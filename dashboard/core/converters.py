"""URL path segments for queue names and prefixes, which may contain '/'.

A '/' cannot travel percent-encoded (the server decodes it before routing), so
it is written as ``~s`` and a literal ``~`` as ``~~``; names without either
character look exactly like themselves in the URL.
"""

from __future__ import annotations

import re

_ESCAPED = re.compile(r"~(.)")
_UNESCAPE = {"~": "~", "s": "/"}


class SegmentConverter:
    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        # An unknown escape ("~x") is left as is; lookup then decides it is not a queue.
        return _ESCAPED.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(0)), value)

    def to_url(self, value: str) -> str:
        return value.replace("~", "~~").replace("/", "~s")
