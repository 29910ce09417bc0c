"""Logging filters (settings.LOGGING imports this before the apps are ready)."""

from __future__ import annotations

import logging


class OneLineRefusals(logging.Filter):
    """A 403 is an answer, not a failure: logged as its one line, without the traceback
    of the PermissionDenied that made it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
