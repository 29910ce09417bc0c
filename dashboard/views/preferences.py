"""A user's own settings: the live refresh interval."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRefresh

from dashboard.models import Preference
from dashboard.views.common import back
from dashboard.views.forms import RefreshForm
from dashboard.web.htmx import HtmxHttpRequest


@login_required
@require_POST
def set_refresh(request: HtmxHttpRequest) -> HttpResponse:
    form = RefreshForm(request.POST)
    if form.is_valid():
        Preference.objects.update_or_create(
            user=request.user, defaults={"refresh_seconds": form.cleaned_data["refresh_seconds"]}
        )
    if request.htmx:
        # Every live part of the page polls at the old interval: load it again.
        response = HttpResponseClientRefresh()
        response.status_code = 204
        return response
    return redirect(back(request, "/"))
