"""The application ./run, the image and compose serve, with granian
(dashboard/serving/app.py)."""

from __future__ import annotations

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from dashboard.serving.startup import refuse_bad_configuration, refuse_insecure_key  # noqa: E402

refuse_insecure_key()
_django = get_wsgi_application()
refuse_bad_configuration()

from dashboard.serving.app import Console  # noqa: E402 (Django is set up above)
from dashboard.serving.fast import FastPath  # noqa: E402

# Every view imported now, as each worker starts, not by its first request (the API's
# imports are the slow part of a first call: bench/RESULTS.md, "Figures behind the code").
get_resolver().url_patterns  # noqa: B018
application = Console(
    _django, settings.RSMQ_WEB_THREADS, settings.RSMQ_BODY_TIMEOUT,
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE, FastPath(),
)  # fmt: skip
