"""The alerts page: the rules (admins create, edit and delete them), what fires now, the
history of every alert, and the notifications still waiting for their receiver."""

from __future__ import annotations

import secrets
from itertools import islice
from typing import Any, TypedDict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from dashboard.access import grants
from dashboard.access.grants import EVERY, require
from dashboard.access.guard import authorize, visible_or_404
from dashboard.access.roles import Role
from dashboard.acting import silences
from dashboard.acting.actions import ALERT_ACTIONS
from dashboard.alerting import acks
from dashboard.audit import log as audit
from dashboard.models import Alert, AlertEvent, AlertRule, AuditEntry, Notification, Silence
from dashboard.places.place import configured, resolve, resolve_or_first
from dashboard.views.common import UNPROCESSABLE, back, context
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
    severity: str
    renotify_seconds: int
    enabled: bool
    webhook: bool
    slack: bool
    emails: str


def _params(rule: AlertRule) -> RuleParams:
    return {
        "rule": rule.name, "pattern": rule.pattern, "metric": rule.metric, "op": rule.op,
        "threshold": rule.threshold, "for_seconds": rule.for_seconds, "enabled": rule.enabled,
        "severity": rule.severity, "renotify_seconds": rule.renotify_seconds,
        "webhook": bool(rule.webhook_url), "slack": bool(rule.slack_url), "emails": rule.emails,
    }  # fmt: skip


@login_required
@require_safe
def alerts_page(request: HtmxHttpRequest) -> HttpResponse:
    # Rules span every place, so there is none to resolve: only the role.
    require(request.user, Role.OBSERVER)
    # "Silence…" from a queue page: the form open, its place and queue filled in.
    asked = {k: request.GET[k] for k in ("place", "pattern") if request.GET.get(k)}
    return render(request, "alerts.html", _page(request, silence_posted=asked))


def _page(request: HtmxHttpRequest, **extra: Any) -> dict[str, Any]:
    live = Alert.objects.exclude(state=Alert.State.RESOLVED).select_related("rule")
    outbox = Notification.objects.filter(sent__isnull=True, gave_up__isnull=True, held="")
    given_up = Notification.objects.filter(sent__isnull=True, gave_up__isnull=False)
    held = Notification.objects.exclude(held="").select_related("silence")
    quiet = silences.current()
    now = timezone.now()
    quiet = list(grants.kept(request, quiet, _silenced))
    shown = [(x, silences.on(x, now), silences.window_text(x)) for x in quiet]
    rules = AlertRule.objects.annotate(
        active=Count("alerts", filter=~Q(alerts__state=Alert.State.RESOLVED))
    )
    if grants.scope_of(request).overall == Role.NONE:
        # Some queues are out of the caller's sight: their rules and alerts with them, and
        # the outbox's lists (a notification can name any queue).
        live_shown = list(grants.shown(request, live.order_by("state", "-changed"), _alerted))
        events = AlertEvent.objects.select_related("alert__rule")
        return context(
            None, rules=list(grants.shown(request, rules, _ruled)),
            live=live_shown[:LIVE_SHOWN], live_count=len(live_shown),
            history=list(islice(grants.shown(request, events, lambda e: _alerted(e.alert)),
                                HISTORY_SHOWN)),
            waiting=0, failing=[], given_up=[], given_up_count=0, held=[], held_count=0,
            silences=shown, silenced_now=sum(on for _, on, _ in shown),
            places=grants.places(request), days=silences.DAYS,
            rule_choices=list(grants.shown(request, AlertRule.objects.order_by("name"), _ruled)),
            **extra,
        )  # fmt: skip
    return context(
        None,
        rules=rules,
        live=live.order_by("state", "-changed")[:LIVE_SHOWN],
        live_count=live.count(),
        history=AlertEvent.objects.select_related("alert__rule")[:HISTORY_SHOWN],
        waiting=outbox.count(),
        failing=outbox.filter(attempts__gt=0).order_by("-attempts")[:FAILED_SHOWN],
        # Their errors are shown to admins only: they name addresses and ports (and
        # whether something answered there).
        given_up=given_up.order_by("-gave_up", "-pk")[:FAILED_SHOWN],
        given_up_count=given_up.count(),
        held=held.order_by("-created", "-pk")[:FAILED_SHOWN],
        held_count=held.count(),
        silences=shown,
        silenced_now=sum(on for _, on, _ in shown),
        now=now,
        places=grants.places(request),
        days=silences.DAYS,
        rule_choices=AlertRule.objects.order_by("name").only(
            "pk", "name", "connection", "namespace"
        ),
        **extra,
    )


def _ruled(rule: AlertRule) -> tuple[str, str, str]:
    return rule.connection, rule.namespace, rule.target


def _alerted(alert: Alert) -> tuple[str, str, str]:
    return alert.connection, alert.namespace, alert.queue


def _silenced(silence: Silence) -> tuple[str, str, str]:
    return silence.connection, silence.namespace, silence.pattern


@login_required
@require_POST
def silence_create(request: HtmxHttpRequest) -> HttpResponse:
    action = ALERT_ACTIONS["silence"]
    conn, ns = request.POST.get("connection", ""), request.POST.get("namespace", "")
    if request.POST.get("place"):
        conn, _, ns = request.POST["place"].partition("/")
    where = resolve_or_first(conn, ns)
    pattern = request.POST.get("pattern", "")
    # no pattern: every queue's alerts held, so the caller's grants must cover every queue
    authorize(request, where, action.role, action.audit_name, queue=pattern or EVERY)
    asked = silences.read(request.POST, configured())
    if asked.errors:
        text = "; ".join(asked.errors.values())
        audit.record(request, where, action.audit_name, AuditEntry.Outcome.INVALID,
                     queue=pattern, detail=text, params=asked.params())  # fmt: skip
        page = render(request, "alerts.html", _page(request, silence_errors=asked.errors,
                                                    silence_posted=request.POST))  # fmt: skip
        page.status_code = UNPROCESSABLE
        return page
    by = request.user.get_username()
    with transaction.atomic():  # written and audited together, or neither
        silence = silences.create(asked, by)
        audit.record(request, resolve(asked.connection, asked.namespace), action.audit_name,
                     AuditEntry.Outcome.OK, queue=asked.pattern, params=asked.params(),
                     detail=f"silence {silence.pk}: {silence.target}")  # fmt: skip
    kind = "Maintenance window" if silence.weekdays else "Silence"
    messages.success(request, f"{kind} on {silence.target}: {silence.reason}.")
    return redirect(reverse("rsmq-alerts") + "#silences")


@login_required
@require_POST
def silence_expire(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    action = ALERT_ACTIONS["expire"]
    silence = visible_or_404(request, Silence.objects.all(), pk, _silenced)
    where = resolve_or_first(silence.connection, silence.namespace)
    authorize(request, where, action.role, action.audit_name, queue=silence.pattern)
    params = {"silence": silence.pk, "target": silence.target, "reason": silence.reason}
    if silence.ends is not None and silence.ends <= timezone.now():
        messages.info(request, f"The silence on {silence.target} was over already.")
        return redirect(reverse("rsmq-alerts") + "#silences")
    with transaction.atomic():
        silences.expire(silence, request.user.get_username())
        audit.record(request, where, action.audit_name, AuditEntry.Outcome.OK,
                     queue=silence.pattern, params=params)  # fmt: skip
    messages.success(request, f"The silence on {silence.target} is over: its alerts notify again.")
    return redirect(reverse("rsmq-alerts") + "#silences")


def _ack(request: HtmxHttpRequest, alert: Alert, how: str) -> bool:
    """Acknowledge ``alert`` as the request's user (its role checked by the caller),
    audited; False (said, audited as invalid) if it was not firing or acknowledged."""
    action = ALERT_ACTIONS["ack"]
    where = resolve_or_first(alert.connection, alert.namespace)
    params = {"rule": alert.rule.name, "since": alert.since, "from": how}
    with transaction.atomic():
        done = acks.acknowledge(alert, request.user.get_username())
        outcome = AuditEntry.Outcome.OK if done else AuditEntry.Outcome.INVALID
        detail = "" if done else "not firing, or acknowledged already"
        audit.record(request, where, action.audit_name, outcome, queue=alert.queue,
                     params=params, detail=detail)  # fmt: skip
    return done


@login_required
@require_POST
def alert_ack(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    action = ALERT_ACTIONS["ack"]
    alert = visible_or_404(request, Alert.objects.select_related("rule"), pk, _alerted)
    where = resolve_or_first(alert.connection, alert.namespace)
    authorize(request, where, action.role, action.audit_name, queue=alert.queue)
    what = f"{alert.rule.name} on {alert.queue or 'Redis ' + alert.connection}"
    if _ack(request, alert, "console"):
        messages.success(request, f"Acknowledged {what}: not told again until it fires anew.")
    else:
        messages.error(request, f"{what} is not firing, or was acknowledged already.")
    return redirect(back(request, reverse("rsmq-alerts")))


@login_required
@require_http_methods(["GET", "POST"])
def ack_link(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """A notification's acknowledge link: GET shows what it acknowledges and a button
    (a link preview or a mail scanner that fetches it acts on nothing); POST acts."""
    action = ALERT_ACTIONS["ack"]
    if request.method == "GET":
        require(request.user, Role.OBSERVER)
    try:
        link = acks.read(token)
    except acks.Refused as e:
        if request.method == "POST":  # a refusal of the role first, audited
            authorize(request, resolve(), action.role, action.audit_name)
        page = render(request, "alerts_ack.html", context(None, refused=str(e)))
        page.status_code = 400 if request.method == "GET" else 409
        return page
    alert = link.alert
    if grants.scope_of(request).hides(*_alerted(alert)):
        raise Http404("No Alert matches the given query.")
    if request.method == "POST":
        where = resolve_or_first(alert.connection, alert.namespace)
        authorize(request, where, action.role, action.audit_name, queue=alert.queue)
        if _ack(request, alert, "link"):
            return render(request, "alerts_ack.html", context(None, alert=alert, done=True))
        page = render(request, "alerts_ack.html", context(None, refused="Used already."))
        page.status_code = 409
        return page
    return render(request, "alerts_ack.html", context(None, alert=alert, token=token))


@login_required
@require_http_methods(["GET", "POST"])
def rule_create(request: HtmxHttpRequest) -> HttpResponse:
    return _edit(request, AlertRule(), "alert_rule_create")


@login_required
@require_http_methods(["GET", "POST"])
def rule_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    return _edit(request, visible_or_404(request, AlertRule.objects.all(), pk, _ruled),
                 "alert_rule_edit")  # fmt: skip


def _edit(request: HtmxHttpRequest, rule: AlertRule, action: str) -> HttpResponse:
    where = resolve_or_first(rule.connection, rule.namespace) if rule.pk else resolve()
    if request.method == "GET":
        require(request.user, Role.ADMIN)
        form = AlertRuleForm(instance=rule, places=grants.places(request))
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
    # where it now looks: the caller's grants must cover it too
    authorize(request, resolve_or_first(rule.connection, rule.namespace), Role.ADMIN, action,
              queue=rule.target or EVERY)  # fmt: skip
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
    rule = visible_or_404(request, AlertRule.objects.all(), pk, _ruled)
    where = resolve_or_first(rule.connection, rule.namespace)
    authorize(request, where, Role.ADMIN, "alert_rule_delete", queue=rule.target)
    if request.POST.get("confirm", "") != rule.name:
        audit.record(request, where, "alert_rule_delete", AuditEntry.Outcome.INVALID,
                     queue=rule.target, detail="confirm: not the rule's name")  # fmt: skip
        form = AlertRuleForm(instance=rule, places=grants.places(request))
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
