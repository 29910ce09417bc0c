"""The HTTP API, under /api/: reading (reads.py, as it always was), the console's actions
for machines (native.py), rest-rsmq's routes (rest_rsmq.py), and its OpenAPI document at
/api/schema/ — django-ninja makes that document from the typed handlers.

Auth: an API token (``Authorization: Bearer rsmq_…``, made at /tokens/) bound to a role;
reading also takes RSMQ_METRICS_TOKEN or a logged-in viewer. Only a token can act: no
session cookie does, so the API needs no CSRF token (ninja's views are CSRF-exempt)."""

from __future__ import annotations

from ninja import NinjaAPI

from . import native, rest_rsmq
from .calls import HANDLERS

api = NinjaAPI(
    title="RSMQ Console API",
    version="1",
    description=__doc__ or "",
    urls_namespace="rsmq-api",
    openapi_url="/schema/",
    docs_url=None,  # Swagger UI would load its script from a CDN: the CSP forbids it
)
for exception, handler in HANDLERS:
    api.add_exception_handler(exception, handler)
api.add_router("/", native.router)
api.add_router("/", rest_rsmq.router)
