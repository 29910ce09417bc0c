"""The WSGI application that gunicorn (./run, the image) or any WSGI server serves."""

from __future__ import annotations

import os
import sys

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from dashboard.chunked import ChunkedBodies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


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
    """gunicorn runs no system check: the configuration's is run here, one line each."""
    from dashboard.checks import problems

    found = problems()
    for problem in found:
        print(f"RSMQ Console: {problem}", file=sys.stderr)
    if found:
        sys.exit(1)


refuse_insecure_key()
_full = get_wsgi_application()
refuse_bad_configuration()
# API token calls take a lean path (dashboard/lean.py): no session, CSRF, messages or axes.
from dashboard.lean import dispatch  # noqa: E402 (Django is set up above)

# Bodies sent chunked (no Content-Length) read first, within the size limit (chunked.py),
# so both paths see them.
application = ChunkedBodies(dispatch(_full))
