"""Text a database can store: no NUL (Postgres refuses it in text and in JSON, where
SQLite takes it) and no lone surrogate (UTF-8 can't encode it). What the API refuses in
any input (dashboard/api/bodies.py), what a job refuses in its filter, and the words of
that refusal."""

from __future__ import annotations


def storable(text: str) -> bool:
    """Whether ``text`` is text every database stores: no NUL, no lone surrogate."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def refusal(field: str, value: str) -> str:
    """The 400's words for ``field`` holding ``value``, which ``storable`` refuses."""
    if "\x00" in value:
        return (
            f"{field} must not hold a NUL character (\\u0000): no database stores one;"
            " nothing changed"
        )
    return (
        f"{field} must be valid Unicode text: it holds a lone surrogate (\\ud800 to"
        " \\udfff), which UTF-8 can't encode; nothing changed"
    )
