"""The shared RSMQ core: a Python client wire-compatible with the original Node rsmq 0.12.4."""

from __future__ import annotations

from .client import RedisSMQ
from .errors import (
    InvalidArgument,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    QueueExists,
    QueueNotFound,
    RsmqError,
)
from .models import Message, MessageInfo, Page, QueueAttributes, QueueStats, SearchResult

__all__ = [
    "InvalidArgument",
    "Message",
    "MessageInfo",
    "MessageNotString",
    "MessageTooLong",
    "NoAttributeSupplied",
    "Page",
    "QueueAttributes",
    "QueueExists",
    "QueueNotFound",
    "QueueStats",
    "RedisSMQ",
    "RsmqError",
    "SearchResult",
]
