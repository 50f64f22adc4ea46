"""Log records trimmed to what the reader needs: a request refused by an
exception (a 403, a 400) was logged with thirty lines of traceback; its one line
says it all, and an ERROR (a 5xx, a bug) keeps its traceback.
"""

from __future__ import annotations

import logging


class OneLineRefusals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            record.exc_info = None
            record.exc_text = None
        return True
