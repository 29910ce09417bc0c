"""The one table from an exception to what the web layer answers: (status, text).

The HTML pages, their htmx fragments (middleware.py) and the JSON API (api/calls.py) all say
the same thing about the same failure; the CLI words its own (it talks to a terminal).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis
from django.core.exceptions import PermissionDenied
from django.http import Http404

from dashboard.places.connections import Connection
from dashboard.web.security import redact_text
from queues import InvalidArgument, QueueNotFound, QueueUnreadable, RsmqError
from queues.urls import redacted

#: what the console answers when a queue's data can't be read: the request was fine and
#: Redis is up; the data conflicts with what RSMQ writes (never a 500, never a 503)
DATA_ERROR = 409


class NotAudited(Exception):
    """An action's audit row could not be written before it ran (the database is down or
    refused it): the action did not run. 503."""


@dataclass(frozen=True, slots=True)
class WebError:
    status: int
    text: str
    # Redis failures only: the page explains them at more length.
    url: str = ""
    error: str = ""


def web_error(exception: Exception, conn: Connection) -> WebError | None:
    """What to answer for ``exception`` raised while reading ``conn``; None: not ours to
    answer (Django's own handling applies)."""
    if isinstance(exception, NotAudited):
        return WebError(
            503, f"The audit log can't be written ({exception}): nothing was done. Try again."
        )
    if isinstance(exception, QueueUnreadable):
        return WebError(
            DATA_ERROR, f"Queue {exception.qname} has data the console can't read: {exception.why}."
        )
    if isinstance(exception, QueueNotFound):
        # Deleted under the operator's feet (or never there).
        return WebError(404, f"Queue {exception.qname} does not exist (any more).")
    if isinstance(exception, InvalidArgument) and exception.field == "url":
        return None  # a connection's URL: the configuration is wrong, a 500 (no secrets)
    if isinstance(exception, InvalidArgument):
        # Only URLs reach here with bad names or ids: forms are checked in the views.
        what = "queue name" if exception.field == "qname" else exception.field
        return WebError(404, f"{exception}: not a valid {what}.")
    if isinstance(exception, (Http404, RsmqError)):
        return WebError(404, str(exception))
    if isinstance(exception, PermissionDenied):
        return WebError(403, f"Not allowed: {exception} Nothing was changed.")
    if isinstance(exception, redis.ResponseError) and not isinstance(
        exception, (redis.exceptions.ReadOnlyError, redis.exceptions.OutOfMemoryError)
    ):
        # Redis is up and answered: about the data (WRONGTYPE, ...), not an outage.
        error = " ".join(str(exception).split()).rstrip(".")
        return WebError(DATA_ERROR, f"Redis refused a read of data the console can't use: {error}.")
    if isinstance(exception, redis.RedisError):
        url = redacted(conn.url)
        error = redact_text(" ".join(str(exception).split()).rstrip("."))
        return WebError(503, f"Redis is unavailable at {url}: {error}.", url=url, error=error)
    return None
