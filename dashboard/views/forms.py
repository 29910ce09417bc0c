"""Operator input, checked by the core's own validation (``queues.validation``) before
anything reaches Redis: the same rules and the same words as the library and the CLI,
each naming the field and its allowed range."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django import forms
from django.core.validators import URLValidator

from dashboard.acting import flow as flows
from dashboard.acting.exports import IMPORT_MAX_BYTES, too_large
from dashboard.alerting import outbound
from dashboard.models import AlertRule, Ownership
from queues import InvalidArgument
from queues import validation as v
from queues.limits import FAILURE_TYPE_MAX
from queues.models import QueueStats
from queues.ops import MAX_MAXRC


def _core(check: Callable[[Any], object]) -> Callable[[Any], None]:
    """A Django validator from one of queues.validation's checks."""

    def validate(value: Any) -> None:
        try:
            check(value)
        except InvalidArgument as e:
            # Not "invalid": Django would swap in its own words for a code it knows.
            raise forms.ValidationError(str(e), code=e.field) from None

    return validate


#: one part of a duration: a whole number and its unit ("90s", "5 min", "2h", "1d")
DURATION_PART = re.compile(r"(\d+)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|h|days?|d)", re.I)
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: the longest span, in words: "9,999,999 s (115 d)"
SECONDS_RANGE = f"0 and {v.MAX_SECONDS} s ({v.MAX_SECONDS // 86400} d)"


def parse_duration(text: str) -> int | None:
    """Whole seconds from "90", "90s", "5m", "5 min", "2h", "1h30m", "1d"; None when it
    reads as none of these. A lone number is seconds; a sign is kept for the range check."""
    text = text.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    sign = -1 if text.startswith("-") else 1
    text = text.lstrip("+-").strip()
    total, at = 0, 0
    for part in DURATION_PART.finditer(text):
        if text[at : part.start()].strip():
            return None
        total += int(part[1]) * UNIT_SECONDS[part[2][0].lower()]
        at = part.end()
    if at == 0 or text[at:].strip():
        return None
    return sign * total


class DurationField(forms.Field):
    """A visibility timeout or a delay: seconds, or a number with a unit (s, min, h, d),
    checked by the core (0..9,999,999 s); shown in the largest unit that is exact."""

    def __init__(self, field: str, **kwargs: Any) -> None:
        kwargs.setdefault(
            "widget",
            forms.TextInput(
                attrs={"autocomplete": "off", "spellcheck": "false", "placeholder": "90s, 5m, 2h"}
            ),
        )
        super().__init__(**kwargs)
        self.field = field

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        seconds = parse_duration(str(value))
        if seconds is None:
            raise forms.ValidationError(
                f"{self.field} must be seconds (90) or a number with a unit (90s, 5m, 2h, "
                f"1h30m, 1d), between {SECONDS_RANGE}",
                code=self.field,
            )
        return seconds

    def validate(self, value: int | None) -> None:
        super().validate(value)
        if value is not None:
            try:
                v.seconds(self.field, value)
            except InvalidArgument as e:
                raise forms.ValidationError(
                    f"{e} s ({v.MAX_SECONDS // 86400} d); units: 90s, 5m, 2h, 1d", code=e.field
                ) from None

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
                if value % size == 0:
                    return f"{value // size}{unit}"
        return value


def _seconds(field: str, label: str, required: bool = True, help_text: str = "") -> DurationField:
    units = "seconds, or 90s / 5m / 2h / 1d"
    return DurationField(
        field,
        label=label,
        required=required,
        help_text=f"{units}; {help_text}" if help_text else units,
    )


class QueueNameField(forms.CharField):
    def __init__(self, field: str = "qname", **kwargs: Any) -> None:
        super().__init__(max_length=160, **kwargs)
        self.field = field

    def validate(self, value: str) -> None:
        super().validate(value)
        if value:
            _core(lambda name: v.qname(name, self.field))(value)


class MaxsizeField(forms.IntegerField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(label="Max size (bytes)", help_text="1024 to 65536, or -1", **kwargs)

    def validate(self, value: int | None) -> None:
        super().validate(value)
        if value is not None:
            _core(v.maxsize)(value)


class QueueCreateForm(forms.Form):
    name = QueueNameField("name", label="Name")
    vt = _seconds("vt", "Visibility timeout")
    delay = _seconds("delay", "Delay")
    maxsize = MaxsizeField()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {"vt": 30, "delay": 0, "maxsize": 65536})
        super().__init__(*args, **kwargs)


class QueueAttributesForm(forms.Form):
    vt = _seconds("vt", "Visibility timeout")
    delay = _seconds("delay", "Delay")
    maxsize = MaxsizeField()


class SendForm(forms.Form):
    body = forms.CharField(label="Body", widget=forms.Textarea(attrs={"rows": 4}), strip=False)
    delay = _seconds("delay", "Delay", required=False, help_text="blank: the queue's delay")


class VisibilityForm(forms.Form):
    vt = _seconds("vt", "Visible in", help_text="0 makes it visible now")


class MoveForm(forms.Form):
    to = QueueNameField("to", label="To queue")
    # Moved messages start with a fresh receive count unless this is ticked.
    keep_counts = forms.BooleanField(required=False, label="Keep their receive count")


class ResendForm(forms.Form):
    """Edit and re-send (the message page): the edited body, sent as a new message to
    ``to`` (blank: this queue), the original deleted in the same step if asked."""

    body = forms.CharField(
        label="Body",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false", "data-json-editor": ""}),
    )
    to = QueueNameField("to", label="Send to queue", required=False, help_text="blank: this queue")
    delay = _seconds("delay", "Delay (s)", required=False, help_text="blank: the queue's delay")
    delete_original = forms.BooleanField(
        label="Delete the original in the same step", required=False
    )


class ImportForm(forms.Form):
    """Import an export's JSON Lines into the queue page's queue (dashboard/acting/exports.py)."""

    file = forms.FileField(
        label="JSON Lines file",
        help_text="an export (rsmq message export, or Export here); at most 2 MB",
    )
    keep_ids = forms.BooleanField(
        label="Keep ids (with their receive counts); skip an id already here", required=False
    )

    def clean_file(self) -> Any:
        f = self.cleaned_data["file"]
        if f.size > IMPORT_MAX_BYTES:
            raise forms.ValidationError(str(too_large(f.size)))
        return f


class ConfirmNameForm(forms.Form):
    """Typed confirmation for destructive queue actions."""

    # Not stripped: " q1" is not what the confirmation asks for.
    confirm = forms.CharField(label="Type the queue name to confirm", strip=False)

    def __init__(self, *args: Any, qname: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.qname = qname

    def clean_confirm(self) -> str:
        value: str = self.cleaned_data["confirm"]
        if value != self.qname:
            raise forms.ValidationError(f"Type {self.qname} exactly to confirm.")
        return value


class RefreshForm(forms.Form):
    refresh_seconds = forms.TypedChoiceField(
        label="Live refresh",
        coerce=int,
        choices=[(0, "off"), (2, "2 s"), (5, "5 s"), (10, "10 s"), (30, "30 s"), (60, "1 min")],
    )


class PolicyForm(forms.Form):
    """The dead-letter policy: after maxrc receives a message goes to dlq."""

    dlq = QueueNameField("dlq", label="Dead-letter queue", required=False)
    maxrc = forms.IntegerField(
        label="After receives", required=False,
        validators=[_core(lambda value: v.integer("maxrc", value, 1, MAX_MAXRC))],
        widget=forms.NumberInput(attrs={"min": 1, "max": MAX_MAXRC}),
        help_text=f"1 to {MAX_MAXRC}; leave both empty to remove the policy",
    )  # fmt: skip

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("dlq")) != (data.get("maxrc") is not None):
            raise forms.ValidationError("Give both a dead-letter queue and a receive count.")
        return data


class RedriveForm(ConfirmNameForm):
    """Redrive (a dead-letter queue's messages back where they came from, or any queue's
    to another), confirmed like purge: the page states how many, the queue's name typed."""

    to = QueueNameField(
        "to", label="To queue", required=False, help_text="empty: back to the queue each came from"
    )
    field_order = ["to", "confirm"]


def queue_page_forms(stats: QueueStats, dlq_seen: bool = True) -> dict[str, forms.Form]:
    """The queue page's forms as the page first shows them, by their template names; the
    policy's dead-letter queue filled in only for one who may see it (``dlq_seen``)."""
    return {
        "send_form": SendForm(),
        # attributes another client spoiled are not offered back as zeros: Save would
        # write them; the admin types every value
        "attributes_form": QueueAttributesForm(
            initial={}
            if stats.unreadable
            else {"vt": stats.vt, "delay": stats.delay, "maxsize": stats.maxsize}
        ),
        "purge_form": ConfirmNameForm(qname=stats.qname, prefix="purge"),
        "delete_form": ConfirmNameForm(qname=stats.qname, prefix="delete"),
        "orphans_form": ConfirmNameForm(qname=stats.qname, prefix="orphans"),
        "leftover_form": ConfirmNameForm(qname=stats.qname, prefix="leftover"),
        "move_form": MoveForm(),
        "policy_form": PolicyForm(
            initial={"dlq": stats.dlq if dlq_seen else "", "maxrc": stats.maxrc}
        ),
        "redrive_form": RedriveForm(qname=stats.qname),
        "import_form": ImportForm(),
        "flow_form": FlowForm(),
    }


MAX_FOR_SECONDS = 7 * 86_400
MAX_THRESHOLD = 1e12


def _range(field: str, low: str, high: str, kind: str) -> dict[str, str]:
    """Django's number errors in the console's words: the field and its range."""
    text = f"{field} must be {kind} between {low} and {high}"
    return {"invalid": text, "min_value": text, "max_value": text, "required": text}


def _url(field: str) -> dict[str, str]:
    text = f"{field} must be an http(s) URL of at most 500 characters"
    return {"invalid": text, "max_length": text}


class PlacedForm(forms.ModelForm):
    """A row about one queue, or the queues matching a pattern, of one configured
    connection and namespace (``place``: "conn/ns"): the fields and the choices an alert
    rule and an owner share. ``FIRST``: the fields shown first."""

    FIRST: list[str] = ["place"]

    place = forms.ChoiceField(
        label="Redis and namespace",
        error_messages={"invalid_choice": "place must be a configured connection and namespace"},
    )
    queue = QueueNameField("queue", label="Queue", required=False, help_text="one queue ...")
    pattern = forms.CharField(
        label="or queues matching", required=False, max_length=160,
        error_messages={"max_length": "pattern must be at most 160 characters"},
        help_text="a pattern: * any characters, ? one, [abc] one of (orders-*)",
    )  # fmt: skip

    def __init__(self, *args: Any, places: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        place = self.fields["place"]
        assert isinstance(place, forms.ChoiceField)
        place.choices = [(f"{c}/{ns}", f"{c} · {ns}") for c, ns in places]
        self.order_fields(self.FIRST)
        if self.instance.pk:
            self.initial["place"] = f"{self.instance.connection}/{self.instance.namespace}"


MAX_RENOTIFY = 7 * 24 * 3600


class AlertRuleForm(PlacedForm):
    """An alert rule (dashboard/alerting/): where, what, when, and who hears of it."""

    threshold = forms.FloatField(
        label="Threshold", required=False, min_value=-MAX_THRESHOLD, max_value=MAX_THRESHOLD,
        error_messages=_range("threshold", f"{-MAX_THRESHOLD:g}", f"{MAX_THRESHOLD:g}", "a number"),
        help_text="ignored for anomaly flags (they fire while the flag is open); for a burn"
        " rate, the SLO's target in % (99: 99 % of messages wait less than the queue's SLO)",
    )  # fmt: skip
    severity = forms.ChoiceField(
        label="Severity", required=False, choices=AlertRule.Severity.choices,
        error_messages={"invalid_choice": "severity must be high or low"},
        help_text="low: no notification at once, one digest a day",
    )  # fmt: skip
    renotify_seconds = forms.IntegerField(
        label="Re-notify every (s)", required=False, min_value=0, max_value=MAX_RENOTIFY,
        error_messages=_range("renotify_seconds", "0", str(MAX_RENOTIFY), "whole seconds"),
        help_text=f"0 to {MAX_RENOTIFY}: tell a firing alert again this often until someone"
        " acknowledges it (0: once)",
        widget=forms.NumberInput(attrs={"min": 0, "max": MAX_RENOTIFY}),
    )  # fmt: skip
    for_seconds = forms.IntegerField(
        label="For (s)", min_value=0, max_value=MAX_FOR_SECONDS,
        error_messages=_range("for_seconds", "0", str(MAX_FOR_SECONDS), "whole seconds"),
        help_text=f"0 to {MAX_FOR_SECONDS}: how long it must hold before it fires",
        widget=forms.NumberInput(attrs={"min": 0, "max": MAX_FOR_SECONDS}),
    )  # fmt: skip

    webhook_url = forms.URLField(
        label="JSON webhook URL", required=False, max_length=500, assume_scheme="https",
        error_messages=_url("webhook_url"),
    )  # fmt: skip
    slack_url = forms.URLField(
        label="Slack incoming-webhook URL", required=False, max_length=500,
        assume_scheme="https", error_messages=_url("slack_url"),
    )  # fmt: skip

    class Meta:
        model = AlertRule
        fields = ["name", "queue", "pattern", "metric", "op", "threshold", "for_seconds",
                  "severity", "renotify_seconds", "enabled", "webhook_url", "slack_url",
                  "emails"]  # fmt: skip
        labels = {"op": "Fires when the value is", "emails": "E-mail to"}
        help_texts = {"emails": "addresses, comma-separated"}
        error_messages = {
            "name": {"required": "name is required: 1 to 100 characters",
                     "max_length": "name must be 1 to 100 characters"},
            "metric": {"required": "metric is required",
                       "invalid_choice": "metric must be one of the listed metrics or flags"},
            "op": {"invalid_choice": "op must be above (gt) or below (lt)"},
            "severity": {"invalid_choice": "severity must be high or low"},
            "emails": {"max_length": "emails must be at most 500 characters"},
        }  # fmt: skip

    FIRST = ["name", "place"]

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if name and name.splitlines() != [name]:
            raise forms.ValidationError(
                "name must be one line: 1 to 100 characters, no line breaks", code="name"
            )
        return name

    def _outbound(self, field: str) -> str:
        """The URL as outbound.py will check it before each delivery, checked now: a
        target it would refuse is a form error naming the field."""
        url: str = self.cleaned_data[field]
        if url:
            try:
                outbound.check(url, resolve=False)
            except (outbound.Refused, outbound.Unresolved) as e:
                raise forms.ValidationError(f"{field}: {e}", code=field) from None
        return url

    def clean_webhook_url(self) -> str:
        return self._outbound("webhook_url")

    def clean_slack_url(self) -> str:
        return self._outbound("slack_url")

    def clean_emails(self) -> str:
        addresses = [a.strip() for a in self.cleaned_data["emails"].split(",") if a.strip()]
        for a in addresses:
            try:
                forms.EmailField().clean(a)
            except forms.ValidationError:
                raise forms.ValidationError(
                    f"emails: {a!r} is not an e-mail address", code="emails"
                ) from None
        return ", ".join(addresses)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        metric = data.get("metric", "")
        if metric.startswith("redis:"):
            if data.get("queue") or data.get("pattern"):
                raise forms.ValidationError(
                    "A Redis metric watches the connection's Redis: leave queue and pattern empty."
                )
        elif bool(data.get("queue")) == bool(data.get("pattern")):
            raise forms.ValidationError("Give either a queue or a pattern of queue names (one).")
        if data.get("threshold") is None:
            if not metric.startswith(("flag:", "state:")):
                self.add_error(
                    "threshold",
                    f"threshold is required: a number between {-MAX_THRESHOLD:g}"
                    f" and {MAX_THRESHOLD:g}",
                )
            data["threshold"] = 0.0
        elif metric.startswith("burn:") and not 0 < data["threshold"] < 100:
            self.add_error(
                "threshold", "threshold: the SLO's target, a percentage above 0 and below 100"
            )
        if data.get("renotify_seconds") is None:
            data["renotify_seconds"] = 0
        data["severity"] = data.get("severity") or AlertRule.Severity.HIGH
        conn, _, ns = data.get("place", "").partition("/")
        self.instance.connection, self.instance.namespace = conn, ns
        return data


class OwnershipForm(PlacedForm):
    """Who owns a queue or the queues matching a pattern (dashboard/triage/owners.py)."""

    runbook_url = forms.URLField(
        label="Runbook URL", required=False, max_length=500, assume_scheme="https",
        validators=[URLValidator(schemes=["http", "https"])],
        error_messages=_url("runbook_url"),
        help_text="http:// or https:// only",
    )  # fmt: skip

    class Meta:
        model = Ownership
        fields = ["queue", "pattern", "owner", "oncall", "runbook_url"]
        labels = {"oncall": "On call"}
        help_texts = {"oncall": "a person, a rota, a pager or chat handle"}
        error_messages = {
            "owner": {"required": "owner is required: 1 to 100 characters",
                      "max_length": "owner must be 1 to 100 characters"},
            "oncall": {"max_length": "oncall must be at most 200 characters"},
        }  # fmt: skip

    FIRST = ["place"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("queue")) == bool(data.get("pattern")):
            raise forms.ValidationError("Give either a queue or a pattern of queue names (one).")
        conn, _, ns = data.get("place", "").partition("/")
        self.instance.connection, self.instance.namespace = conn, ns
        taken = Ownership.objects.filter(
            connection=conn, namespace=ns, queue=data.get("queue", ""),
            pattern=data.get("pattern", ""),
        ).exclude(pk=self.instance.pk)  # fmt: skip
        if conn and taken.exists():
            raise forms.ValidationError(
                f"{data.get('queue') or data.get('pattern')} already has an owner here: edit it."
            )
        return data


class SaveFilterForm(forms.Form):
    """Saving the queue page's filter under a name (dashboard/views/saved_filters.py)."""

    name = forms.CharField(max_length=100, strip=True)
    scope = forms.ChoiceField(
        choices=[("queue", "this queue"), ("all", "every queue")], initial="queue"
    )
    shared = forms.BooleanField(required=False, help_text="admins: for everyone")


class FailureGroupForm(forms.Form):
    """One failure group of the Failing view to retry or delete: which (its error type,
    state and queue), how many the page counted (at most that many are acted on) and the
    queue's name typed to confirm."""

    type = forms.CharField(label="Error type", max_length=FAILURE_TYPE_MAX)
    state = forms.ChoiceField(label="State", choices=[("retry", "retrying"), ("dead", "dead")])
    where = QueueNameField("where", label="In queue")
    count = forms.IntegerField(label="Messages", min_value=1, max_value=2**53)
    # Not stripped: " q1" is not what the confirmation asks for.
    confirm = forms.CharField(label="Type the queue name to confirm", strip=False)

    def __init__(self, *args: Any, qname: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.qname = qname

    def clean_confirm(self) -> str:
        value: str = self.cleaned_data["confirm"]
        if value != self.qname:
            raise forms.ValidationError(f"Type {self.qname} exactly to confirm.")
        return value


class UndoForm(forms.Form):
    """An Undo (dashboard/acting/undo.py): the stash's token, and the confirmation the button's
    question asked ("yes")."""

    token = forms.RegexField(
        regex=r"^[0-9a-f]{32}$",
        error_messages={"invalid": "token must be 32 lowercase hex digits."},
    )
    confirm = forms.ChoiceField(
        choices=[("yes", "yes")],
        error_messages={"invalid_choice": "confirm must be yes: an Undo is confirmed."},
    )

    prefix = "undo"


class FlowForm(forms.Form):
    """Pause / throttle a queue's consumers (dashboard/acting/flow.py checks it, for the
    API too): a throttle's rate, why, and for how long (empty: until resumed)."""

    rate = forms.CharField(
        label="Receives a second", required=False,
        widget=forms.TextInput(attrs={"inputmode": "decimal", "size": 6}),
    )  # fmt: skip
    reason = forms.CharField(
        label="Reason", required=False, max_length=500,
        widget=forms.TextInput(attrs={"size": 24, "placeholder": "why"}),
    )  # fmt: skip
    duration = forms.CharField(
        label="For", required=False,
        widget=forms.TextInput(attrs={"size": 8, "placeholder": "1h", "list": "flow-durations"}),
        help_text="empty: until resumed",
    )  # fmt: skip

    def __init__(self, *args: Any, verb: str = "pause", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.verb = verb

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        given = {"rate": data.get("rate"), "reason": data.get("reason") or "",
                 "for": data.get("duration")}  # fmt: skip
        try:
            data["asked"] = flows.read(self.verb, given)
        except InvalidArgument as e:
            field = {"for": "duration"}.get(e.field, e.field)
            self.add_error(field if field in self.fields else None, str(e))
        return data
