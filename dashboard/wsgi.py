"""The WSGI application, for any WSGI server (./run and the image serve dashboard/asgi.py
with granian)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from dashboard.startup import refuse_bad_configuration, refuse_insecure_key  # noqa: E402

refuse_insecure_key()
application = get_wsgi_application()
refuse_bad_configuration()
