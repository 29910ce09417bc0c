"""The HTTP API, under /api/: reading (reads.py), the console's actions
for machines (native.py), rest-rsmq's routes (rest_rsmq.py), and its OpenAPI document at
/api/schema/ — django-ninja makes that document from the typed handlers.

Auth: an API token (``Authorization: Bearer rsmq_…``, made at /tokens/) bound to a role;
reading also takes RSMQ_METRICS_TOKEN or a logged-in viewer. Only a token can act: no
session cookie does, so the API needs no CSRF token (ninja's views are CSRF-exempt)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, QueryDict
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.parser import Parser

from dashboard.api import annotate, native, rest_rsmq
from dashboard.api import flow as flow  # pause / throttle / resume, due: on native's router
from dashboard.api import jobs as jobs  # act on every match: its routes are on native's router
from dashboard.api.bodies import refusal, unstorable
from dashboard.api.calls import BadInput, answer_error


class JsonOrForm(Parser):
    """JSON bodies, and form-encoded ones as rest-rsmq took them too (express'
    bodyParser): its clients on PHP or .NET post forms. A field given twice is a list."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        """The body's fields; BadInput (400, naming it) for a field holding text a
        database can't store (a NUL, a lone surrogate): refused before anything runs."""
        if request.content_type == "application/x-www-form-urlencoded":
            form = QueryDict(request.body, encoding=request.encoding)
            data: dict[str, Any] = {k: vs if len(vs) > 1 else vs[0] for k, vs in form.lists()}
        else:
            data = super().parse_body(request)
        found = unstorable(data)
        if found is not None:  # ninja answers 400; calls.failure says this
            raise BadInput(refusal(*found))
        return data


api = NinjaAPI(
    title="RSMQ Console API",
    version="1",
    description=__doc__ or "",
    urls_namespace="rsmq-api",
    openapi_url="/schema/",
    docs_url=None,  # Swagger UI would load its script from a CDN: the CSP forbids it
    parser=JsonOrForm(),
)
# Every failure through the one table (calls.failure), ninja's own kinds too; what it does
# not know is a 500.
for _kind in (Exception, Http404, HttpError, ValidationError):
    api.add_exception_handler(_kind, answer_error)
api.add_router("/", native.router)
api.add_router("/", rest_rsmq.router)
api.add_router("/", annotate.router)
