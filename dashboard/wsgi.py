"""The WSGI application, for any WSGI server (./run and the image serve dashboard/asgi.py
with granian)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from dashboard.serving.chunked import ChunkedBodies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from dashboard.serving.startup import refuse_bad_configuration, refuse_insecure_key  # noqa: E402

refuse_insecure_key()
_full = get_wsgi_application()
refuse_bad_configuration()
# API token calls take a lean path (dashboard/serving/fast.py): no session, CSRF, messages or axes.
from dashboard.serving.fast import dispatch  # noqa: E402 (Django is set up above)

# Bodies sent chunked (no Content-Length) read first, within the size limit (chunked.py),
# so both paths see them.
application = ChunkedBodies(dispatch(_full))
