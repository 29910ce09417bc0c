"""The alerts page: the rules (admins create, edit and delete them), what fires now, the
history of every alert, and the notifications still waiting for their receiver."""

from __future__ import annotations

import secrets
from typing import TypedDict

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from dashboard.access.guard import authorize
from dashboard.access.roles import Role, require
from dashboard.audit import log as audit
from dashboard.models import Alert, AlertEvent, AlertRule, AuditEntry, Notification
from dashboard.places.place import configured, resolve, resolve_or_first
from dashboard.views.common import UNPROCESSABLE, context
from dashboard.views.forms import AlertRuleForm
from dashboard.web.htmx import HtmxHttpRequest

HISTORY_SHOWN = 100
LIVE_SHOWN = 200
FAILED_SHOWN = 20


class RuleParams(TypedDict):
    """An alert rule's audit params (its create, edit and delete alike): what it watches,
    and whether it has each kind of receiver (never their URLs)."""

    rule: str
    pattern: str
    metric: str
    op: str
    threshold: float
    for_seconds: int
    enabled: bool
    webhook: bool
    slack: bool
    emails: str


def _params(rule: AlertRule) -> RuleParams:
    return {
        "rule": rule.name, "pattern": rule.pattern, "metric": rule.metric, "op": rule.op,
        "threshold": rule.threshold, "for_seconds": rule.for_seconds, "enabled": rule.enabled,
        "webhook": bool(rule.webhook_url), "slack": bool(rule.slack_url), "emails": rule.emails,
    }  # fmt: skip


@login_required
@require_safe
def alerts_page(request: HtmxHttpRequest) -> HttpResponse:
    # Rules span every place, so there is none to resolve: only the role.
    require(request.user, Role.VIEWER)
    live = Alert.objects.exclude(state=Alert.State.RESOLVED).select_related("rule")
    outbox = Notification.objects.filter(sent__isnull=True, gave_up__isnull=True)
    given_up = Notification.objects.filter(sent__isnull=True, gave_up__isnull=False)
    ctx = context(
        None,
        rules=AlertRule.objects.annotate(
            active=Count("alerts", filter=~Q(alerts__state=Alert.State.RESOLVED))
        ),
        live=live.order_by("state", "-changed")[:LIVE_SHOWN],
        live_count=live.count(),
        history=AlertEvent.objects.select_related("alert__rule")[:HISTORY_SHOWN],
        waiting=outbox.count(),
        failing=outbox.filter(attempts__gt=0).order_by("-attempts")[:FAILED_SHOWN],
        # Their errors are shown to admins only: they name addresses and ports (and
        # whether something answered there).
        given_up=given_up.order_by("-gave_up", "-pk")[:FAILED_SHOWN],
        given_up_count=given_up.count(),
    )
    return render(request, "alerts.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def rule_create(request: HtmxHttpRequest) -> HttpResponse:
    return _edit(request, AlertRule(), "alert_rule_create")


@login_required
@require_http_methods(["GET", "POST"])
def rule_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    return _edit(request, get_object_or_404(AlertRule, pk=pk), "alert_rule_edit")


def _edit(request: HtmxHttpRequest, rule: AlertRule, action: str) -> HttpResponse:
    where = resolve_or_first(rule.connection, rule.namespace) if rule.pk else resolve()
    if request.method == "GET":
        require(request.user, Role.ADMIN)
        form = AlertRuleForm(instance=rule, places=configured())
        return render(request, "alerts_rule.html", context(None, form=form, rule=rule))
    authorize(request, where, Role.ADMIN, action, queue=rule.target)
    form = AlertRuleForm(request.POST, instance=rule, places=configured())
    if not form.is_valid():
        errors = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in form.errors.items())
        audit.record(request, where, action, AuditEntry.Outcome.INVALID,
                     queue=request.POST.get("queue", "") or request.POST.get("pattern", ""),
                     detail=errors)  # fmt: skip
        page = render(request, "alerts_rule.html", context(None, form=form, rule=rule))
        page.status_code = UNPROCESSABLE
        return page
    rule = form.save(commit=False)
    if not rule.webhook_secret:
        rule.webhook_secret = secrets.token_hex(32)
    with transaction.atomic():  # saved and audited together, or neither
        rule.save()
        audit.record(request, resolve_or_first(rule.connection, rule.namespace), action,
                     AuditEntry.Outcome.OK, queue=rule.target, params=_params(rule))  # fmt: skip
    return redirect(reverse("rsmq-alert-rule", args=[rule.pk]) + "?saved=1")


@login_required
@require_POST
def rule_delete(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    rule = get_object_or_404(AlertRule, pk=pk)
    where = resolve_or_first(rule.connection, rule.namespace)
    authorize(request, where, Role.ADMIN, "alert_rule_delete", queue=rule.target)
    if request.POST.get("confirm", "") != rule.name:
        audit.record(request, where, "alert_rule_delete", AuditEntry.Outcome.INVALID,
                     queue=rule.target, detail="confirm: not the rule's name")  # fmt: skip
        form = AlertRuleForm(instance=rule, places=configured())
        ctx = context(
            None,
            form=form,
            rule=rule,
            delete_error=f"confirm: type {rule.name} exactly to delete the rule",
        )
        page = render(request, "alerts_rule.html", ctx)
        page.status_code = UNPROCESSABLE
        return page
    params = _params(rule)
    with transaction.atomic():  # deleted and audited together, or neither
        rule.delete()
        audit.record(request, where, "alert_rule_delete", AuditEntry.Outcome.OK,
                     queue=params["pattern"] or rule.queue, params=params)  # fmt: skip
    return redirect("rsmq-alerts")
