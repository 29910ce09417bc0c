"""Message ids: base36 of the Redis server's epoch microseconds (10 chars) + 22 random chars."""

from __future__ import annotations

import random
import string

ALPHABET = string.ascii_letters + string.digits
SUFFIX_LEN = 22
ID_LEN = 32

_choices = random.choices


def random_suffixes(n: int = 1) -> str:
    """n id suffixes, concatenated. The time prefix is added by the Lua script from TIME.

    Like the original's Math.random, this needs to be unique, not unguessable.
    """
    return "".join(_choices(ALPHABET, k=SUFFIX_LEN * n))


def sent_ms(message_id: str) -> float:
    """Epoch ms the message was sent, as the original computes ``sent``."""
    return int(message_id[:10], 36) / 1000
