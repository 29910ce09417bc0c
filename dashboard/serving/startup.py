"""What a served console refuses before it answers anything (dashboard/wsgi.py and
dashboard/asgi.py run it): the web server runs no system check of its own."""

from __future__ import annotations

import sys

from django.conf import settings


def refuse_insecure_key() -> None:
    """Served with DEBUG off, the key that signs sessions must not be the one in the code."""
    if not settings.DEBUG and settings.SECRET_KEY == settings.INSECURE_SECRET_KEY:
        print(
            "RSMQ Console: DEBUG is off and SECRET_KEY is unset (the built-in key signs "
            "nobody's sessions in production): set SECRET_KEY, or DEBUG=1 on a laptop",
            file=sys.stderr,
        )
        sys.exit(1)


def refuse_bad_configuration() -> None:
    """The configuration's system check, one line each."""
    from dashboard.serving.checks import problems

    found = problems()
    for problem in found:
        print(f"RSMQ Console: {problem}", file=sys.stderr)
    if found:
        sys.exit(1)
