"""The original rsmq error names, as exception classes under one base."""

from __future__ import annotations

from redis.exceptions import ConnectionError


class RsmqError(Exception):
    """Base of every error the RSMQ core raises on purpose."""

    #: the original rsmq 0.12.4 error name (``err.name`` in Node)
    name = "rsmqError"


class QueueNotFound(RsmqError):
    name = "queueNotFound"

    def __init__(self, qname: str) -> None:
        super().__init__(f"Queue not found: {qname}")
        self.qname = qname


class QueueExists(RsmqError):
    name = "queueExists"

    def __init__(self, qname: str) -> None:
        super().__init__(f"Queue exists: {qname}")
        self.qname = qname


class MessageTooLong(RsmqError):
    name = "messageTooLong"

    def __init__(self, size: int, maxsize: int) -> None:
        super().__init__(f"Message too long: {size} bytes, the queue's maxsize is {maxsize}")
        self.size = size
        self.maxsize = maxsize


class QueueUnreadable(RsmqError):
    """The queue's record holds data no RSMQ client wrote as it is (a counter that is not
    a number, a key of the wrong type): a data error, not Redis failing."""

    name = "queueUnreadable"

    def __init__(self, qname: str, why: str) -> None:
        super().__init__(f"Queue {qname} has data that can't be read: {why}")
        self.qname = qname
        self.why = why


class MessageGone(RsmqError):
    """A message an operation needed is no longer in its queue: nothing was changed."""

    name = "messageNotFound"

    def __init__(self, qname: str, id: str) -> None:
        super().__init__(f"Message {id} is no longer in queue {qname}: nothing was changed")
        self.qname = qname
        self.id = id


class MessageNotString(RsmqError):
    name = "messageNotString"


class NoAttributeSupplied(RsmqError):
    name = "noAttributeSupplied"

    def __init__(self) -> None:
        super().__init__("No attribute was supplied: give at least one of vt, delay, maxsize")


class InvalidArgument(RsmqError, ValueError):
    """missingParameter / invalidFormat / invalidValue of the original, with the field named."""

    name = "invalidArgument"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class NotReplicated(RsmqError):
    """A send written on the master but not confirmed by enough replicas (``WAIT``) in
    time: not acknowledged, it may be lost if the master fails now."""

    def __init__(self, acked: int, wanted: int, timeout: int) -> None:
        self.acked, self.wanted = acked, wanted
        super().__init__(
            f"notReplicated: {acked} of {wanted} replicas confirmed the send within "
            f"{timeout} ms; it is on the master only and may be lost in a failover"
        )


class ApiRefused(RsmqError):
    """An audited API call refused by its own script before the operation ran (nothing
    changed, nothing recorded): ``why`` is "rateLimited" (the token's calls of this
    window are spent) or "tokensChanged" (a token changed since the caller read it:
    ``generation`` is the new one)."""

    name = "apiRefused"

    def __init__(self, why: str, generation: str = "") -> None:
        super().__init__(f"{why} {generation}".strip())
        self.why, self.generation = why, generation


class UndoNotFound(RsmqError):
    """An undo token that names no stash (never opened, or expired: its time is past)."""

    def __init__(self, token: str) -> None:
        super().__init__(f"Nothing to undo for {token}: expired or never kept")
        self.token = token


class NotSent(ConnectionError):
    """A round trip of the asyncio client that never reached Redis: its connection could
    not be made, or ended before the round trip was written. Nothing of it ran, so it
    may be made again."""
