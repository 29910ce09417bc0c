"""Django's WSGI application, for tools and any WSGI server. ./run and the image serve
dashboard/asgi.py: a WSGI server reads bodies in its threads (a slow client holds one),
and Django takes no chunked body (no Content-Length) from it."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from dashboard.serving.startup import refuse_bad_configuration, refuse_insecure_key  # noqa: E402

refuse_insecure_key()
application = get_wsgi_application()
refuse_bad_configuration()
