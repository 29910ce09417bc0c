"""Message ids: base36 of the Redis server's epoch microseconds (10 chars) + 22 random chars."""

from __future__ import annotations

import os
import string

ALPHABET = string.ascii_letters + string.digits
SUFFIX_LEN = 22
ID_LEN = 32

# Random bytes to id characters; 256 % 62 leaves the first 8 characters a little more
# likely (5/256 vs 4/256), which costs nothing to uniqueness: 22 characters still carry
# about 130 bits, and ids already differ by their microsecond prefix.
_TABLE = bytes(ord(ALPHABET[i % len(ALPHABET)]) for i in range(256))


def random_suffixes(n: int = 1) -> str:
    """n id suffixes, concatenated. The time prefix is added by the Lua script from TIME.

    Like the original's Math.random, this needs to be unique, not unguessable.
    """
    return os.urandom(SUFFIX_LEN * n).translate(_TABLE).decode("ascii")


def sent_ms(message_id: str) -> float:
    """Epoch ms the message was sent, as the original computes ``sent``."""
    return int(message_id[:10], 36) / 1000
