"""API tokens: an admin makes one (shown once, kept hashed) or revokes one; both audited."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from dashboard.access import tokens
from dashboard.access.grants import require
from dashboard.access.roles import Role
from dashboard.audit import log as audit
from dashboard.models import ApiToken, AuditEntry
from dashboard.views.common import context
from dashboard.web.htmx import HtmxHttpRequest

MAX_PER_MINUTE = 1_000_000


class TokenForm(forms.Form):
    name = forms.SlugField(
        max_length=100, label="Name", help_text="who uses it, e.g. billing-worker"
    )
    role = forms.ChoiceField(choices=ApiToken.Role.choices, initial=ApiToken.Role.OPERATOR)
    per_minute = forms.IntegerField(
        label="Requests a minute", initial=600, min_value=1, max_value=MAX_PER_MINUTE,
        help_text=f"1 to {MAX_PER_MINUTE}; past it the API answers 429",
    )  # fmt: skip

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if ApiToken.objects.filter(name=name).exists():
            raise forms.ValidationError(f"A token named {name} exists already.")
        return name


class TokenParams(TypedDict):
    """A token's audit params: its role, and its rate when it is made."""

    role: str
    per_minute: NotRequired[int]


def _audit(request: HtmxHttpRequest, action: str, name: str, params: TokenParams) -> None:
    # A token belongs to no connection or namespace: no place.
    audit.write(None, action, AuditEntry.Outcome.OK, user=request.user, params=params,
                detail=f"API token {name}")  # fmt: skip


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def token_list(request: HtmxHttpRequest) -> HttpResponse:
    require(request.user, Role.ADMIN)
    form, made, status = TokenForm(), "", 200
    if request.method == "POST" and "revoke" in request.POST:
        raw = request.POST.get("revoke", "")
        live = ApiToken.objects.filter(revoked_at=None)
        row = live.filter(pk=int(raw)).first() if raw.isdigit() else None
        if row is not None:
            row.revoked_at = timezone.now()
            row.save(update_fields=["revoked_at"])
            _audit(request, "revoke_token", row.name, {"role": row.role})
    elif request.method == "POST":
        form = TokenForm(request.POST)
        if form.is_valid():
            d = form.cleaned_data
            row, made = tokens.mint(
                d["name"], d["role"], request.user.get_username(), d["per_minute"]
            )
            _audit(
                request, "create_token", row.name, {"role": row.role, "per_minute": row.per_minute}
            )
            form = TokenForm()
        else:
            status = 422
    ctx = context(None, form=form, made=made, tokens=ApiToken.objects.all())
    return render(request, "tokens.html", ctx, status=status)
