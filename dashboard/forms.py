"""Operator input, validated with the core's own ranges before anything reaches Redis."""

from __future__ import annotations

from django import forms

from queues import validation as v


def _seconds(label: str, required: bool = True, help_text: str = "") -> forms.IntegerField:
    return forms.IntegerField(
        label=label, min_value=0, max_value=v.MAX_SECONDS, required=required, help_text=help_text
    )


class QueueNameField(forms.CharField):
    def __init__(self, **kwargs) -> None:
        super().__init__(max_length=160, **kwargs)

    def validate(self, value: str) -> None:
        super().validate(value)
        if value and not v.QNAME_RE.fullmatch(value):
            raise forms.ValidationError(
                "Use 1 to 160 characters of a-z, A-Z, 0-9, _ and -.", code="invalid"
            )


class MaxsizeField(forms.IntegerField):
    def __init__(self, **kwargs) -> None:
        super().__init__(label="Max size (bytes)", help_text="1024 to 65536, or -1", **kwargs)

    def validate(self, value: int | None) -> None:
        super().validate(value)
        if value is not None and value != -1 and not v.MAXSIZE_MIN <= value <= v.MAXSIZE_MAX:
            raise forms.ValidationError(
                "maxsize must be between 1024 and 65536 bytes, or -1 for unlimited."
            )


class QueueCreateForm(forms.Form):
    name = QueueNameField(label="Name")
    vt = _seconds("Visibility timeout (s)")
    delay = _seconds("Delay (s)")
    maxsize = MaxsizeField()

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("initial", {"vt": 30, "delay": 0, "maxsize": 65536})
        super().__init__(*args, **kwargs)


class QueueAttributesForm(forms.Form):
    vt = _seconds("Visibility timeout (s)")
    delay = _seconds("Delay (s)")
    maxsize = MaxsizeField()


class SendForm(forms.Form):
    body = forms.CharField(label="Body", widget=forms.Textarea(attrs={"rows": 4}), strip=False)
    delay = _seconds("Delay (s)", required=False, help_text="blank: the queue's delay")


class VisibilityForm(forms.Form):
    vt = _seconds("Visible in (s)", help_text="0 makes it visible now")


class MoveForm(forms.Form):
    to = QueueNameField(label="To queue")


class ConfirmNameForm(forms.Form):
    """Typed confirmation for destructive queue actions."""

    # Not stripped: " q1" is not what the confirmation asks for.
    confirm = forms.CharField(label="Type the queue name to confirm", strip=False)

    def __init__(self, *args, qname: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.qname = qname

    def clean_confirm(self) -> str:
        value = self.cleaned_data["confirm"]
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

    dlq = QueueNameField(label="Dead-letter queue", required=False)
    maxrc = forms.IntegerField(
        label="After receives", min_value=1, max_value=1000, required=False,
        help_text="1 to 1000; leave both empty to remove the policy",
    )  # fmt: skip

    def clean(self) -> dict:
        data = super().clean()
        if bool(data.get("dlq")) != (data.get("maxrc") is not None):
            raise forms.ValidationError("Give both a dead-letter queue and a receive count.")
        return data


class RedriveForm(forms.Form):
    to = QueueNameField(
        label="To queue", required=False, help_text="empty: back to the queue each came from"
    )
