"""Log records trimmed to what the reader needs.

Django logs every refused request on ``django.request`` at WARNING, and for
one refused by an exception (a 403 from a permission check, a 400 for a body
it could not parse) with that exception's whole traceback: thirty lines for a
viewer clicking a button they may not use. The request's line says it all;
an ERROR (a 5xx, a bug) keeps its traceback.
"""

from __future__ import annotations

import logging


class OneLineRefusals(logging.Filter):
    """Drops the traceback of a record below ERROR (the ``django.request``
    logger's 4xx lines; see settings.LOGGING)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            record.exc_info = None
            record.exc_text = None
        return True
