"""The shared RSMQ core: a Python client wire-compatible with the original Node rsmq 0.12.4."""

from __future__ import annotations

from .aio import AsyncRedisSMQ
from .client import RedisSMQ
from .errors import (
    InvalidArgument,
    MessageGone,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    NotReplicated,
    QueueExists,
    QueueNotFound,
    QueueUnreadable,
    RsmqError,
)
from .models import (
    DeadLetterPolicy,
    Failure,
    FailureGroup,
    FailureGroups,
    Message,
    MessageInfo,
    Page,
    QueueAttributes,
    QueueStats,
)

__all__ = [
    "AsyncRedisSMQ",
    "DeadLetterPolicy",
    "Failure",
    "FailureGroup",
    "FailureGroups",
    "InvalidArgument",
    "Message",
    "MessageInfo",
    "MessageGone",
    "MessageNotString",
    "MessageTooLong",
    "NoAttributeSupplied",
    "NotReplicated",
    "Page",
    "QueueAttributes",
    "QueueExists",
    "QueueNotFound",
    "QueueStats",
    "QueueUnreadable",
    "RedisSMQ",
    "RsmqError",
]
