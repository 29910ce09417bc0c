"""API tokens: an admin makes one (shown once, kept hashed) or revokes one; both audited."""

from __future__ import annotations

import datetime as dt
from typing import Any, NotRequired, TypedDict

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from dashboard.access import grants, tokens
from dashboard.access.grants import require
from dashboard.access.roles import Role
from dashboard.audit import log as audit
from dashboard.models import ApiToken, AuditEntry
from dashboard.views.common import context
from dashboard.web.htmx import HtmxHttpRequest

MAX_PER_MINUTE = 1_000_000
MAX_DAYS = 3650


class TokenForm(forms.Form):
    name = forms.SlugField(
        max_length=100, label="Name", help_text="who uses it, e.g. billing-worker"
    )
    role = forms.ChoiceField(choices=ApiToken.Role.choices, initial=ApiToken.Role.OPERATOR)
    per_minute = forms.IntegerField(
        label="Requests a minute", initial=600, min_value=1, max_value=MAX_PER_MINUTE,
        help_text=f"1 to {MAX_PER_MINUTE}; past it the API answers 429",
    )  # fmt: skip
    connection = forms.CharField(
        max_length=100, initial="*", required=False, help_text="a name, or a glob: * every one"
    )
    namespace = forms.CharField(
        max_length=200, initial="*", required=False, help_text="a name, or a glob: * every one"
    )
    queues = forms.CharField(
        max_length=500, initial="*", label="Queues", required=False,
        help_text="globs of queue names, comma-separated, e.g. billing-*,invoices",
    )  # fmt: skip
    expires_days = forms.IntegerField(
        label="Expires in (days)", required=False, min_value=1, max_value=MAX_DAYS,
        help_text=f"1 to {MAX_DAYS}; blank: never (then revoke it)",
    )  # fmt: skip

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if ApiToken.objects.filter(name=name).exists():
            raise forms.ValidationError(f"A token named {name} exists already.")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for key in ("connection", "namespace", "queues"):  # left blank: every one
            if key in data:
                data[key] = data[key].strip() or "*"
        if all(k in data for k in ("connection", "namespace", "queues")):
            try:
                grants.check_scope(data["connection"], data["namespace"], data["queues"], many=True)
            except ValidationError as e:
                for field, errors in e.message_dict.items():
                    self.add_error(field, errors)
        return data


class TokenParams(TypedDict):
    """A token's audit params: its role, its scope and expiry and its rate when it is
    made."""

    role: str
    scope: str
    expires_at: str | None
    per_minute: NotRequired[int]


def _params(row: ApiToken) -> TokenParams:
    expires = row.expires_at.isoformat(timespec="seconds") if row.expires_at else None
    return {"role": row.role, "scope": row.scope_text, "expires_at": expires}


def _audit(request: HtmxHttpRequest, action: str, name: str, params: TokenParams) -> None:
    # A token belongs to no connection or namespace: no place.
    audit.write(None, action, AuditEntry.Outcome.OK, user=request.user, params=params,
                detail=f"API token {name}")  # fmt: skip


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def token_list(request: HtmxHttpRequest) -> HttpResponse:
    # a token may reach any queue: only for an admin of every queue
    require(request.user, Role.ADMIN, overall=True)
    form, made, status = TokenForm(), "", 200
    if request.method == "POST" and "revoke" in request.POST:
        raw = request.POST.get("revoke", "")
        live = ApiToken.objects.filter(revoked_at=None)
        row = live.filter(pk=int(raw)).first() if raw.isdigit() else None
        if row is not None:
            row.revoked_at = timezone.now()
            row.save(update_fields=["revoked_at"])
            _audit(request, "revoke_token", row.name, _params(row))
    elif request.method == "POST":
        form = TokenForm(request.POST)
        if form.is_valid():
            d = form.cleaned_data
            days, globs = d["expires_days"], [g.strip() for g in d["queues"].split(",")]
            row, made = tokens.mint(
                d["name"], d["role"], request.user.get_username(), d["per_minute"],
                d["connection"], d["namespace"], ",".join(globs),
                timezone.now() + dt.timedelta(days=days) if days else None,
            )  # fmt: skip
            _audit(
                request, "create_token", row.name, {**_params(row), "per_minute": row.per_minute}
            )
            form = TokenForm()
        else:
            status = 422
    ctx = context(None, form=form, made=made, tokens=ApiToken.objects.all())
    return render(request, "tokens.html", ctx, status=status)
