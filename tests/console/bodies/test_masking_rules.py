"""RSMQ_MASKING read and applied (dashboard/web/masking.py): JSON fields by path (a ``*``
segment any key, lists looked through), free text by pattern (card numbers only when
their Luhn sum holds), a cut preview by its keys; a bad rule is a start-up error naming
its field; a queue no rule names is not touched. Reveals' rows are pruned with the audit
log's."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from dashboard.audit.retention import prune
from dashboard.models import Reveal
from dashboard.serving.checks import problems
from dashboard.web.masking import MASK, MaskingError, parse, rules_for

RULE = {"queues": "pay-*", "paths": ["card.number", "*.email"], "patterns": ["card", "email"]}


@pytest.fixture
def rules(settings):
    settings.RSMQ_MASKING = json.dumps([RULE])
    found = rules_for("pay-in")
    assert found is not None
    return found


def test_it_masks_json_fields_by_path_and_wildcard(rules) -> None:
    body = {"card": {"number": "x-1", "exp": "12/30"}, "a": {"email": "e"}, "b": [{"email": 1}]}
    got = json.loads(rules.mask(json.dumps(body)))
    assert got == {"card": {"number": MASK, "exp": "12/30"}, "a": {"email": MASK},
                   "b": [{"email": MASK}]}  # fmt: skip


def test_it_masks_free_text_by_pattern_and_spares_a_number_that_is_no_card(rules) -> None:
    text = "card 4111 1111 1111 1111, order 4111111111111112, mail to bob@example.org"
    assert rules.mask(text) == f"card {MASK}, order 4111111111111112, mail to {MASK}"


def test_a_cut_preview_is_masked_by_its_keys(rules) -> None:
    cut = json.dumps({"card": {"number": "5500005555555559"}, "pad": "x" * 50})[:40]
    masked = rules.mask(cut)
    assert "5500" not in masked and MASK in masked


def test_a_queue_no_rule_names_is_not_touched(settings) -> None:
    settings.RSMQ_MASKING = json.dumps([RULE])
    assert rules_for("orders") is None


def test_filters_on_masked_paths_are_named(rules) -> None:
    assert rules.names("card.number") and rules.names("x.email") and rules.names("a.email.b")
    assert not rules.names("card") and not rules.names("card.exp") and not rules.names("amount")


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("{", "RSMQ_MASKING is not JSON"),
        ('{"queues": "*"}', "RSMQ_MASKING must be a JSON list"),
        ('[{"queues": "*", "paths": ["a..b"]}]', "RSMQ_MASKING[0].paths[0]"),
        ('[{"queues": "*", "patterns": ["("]}]', "RSMQ_MASKING[0].patterns[0]"),
        ('[{"queues": "*", "patterns": ["x*"]}]', "matches empty text"),
        ('[{"queues": "*", "patterns": ["card"], "reveal_role": "boss"}]',
         "RSMQ_MASKING[0].reveal_role"),
        ('[{"queues": "*", "patterns": ["card"], "clear_role": "x"}]',
         "RSMQ_MASKING[0].clear_role"),
        ('[{"queues": "*", "path": ["a"]}]', "RSMQ_MASKING[0].path: not a field"),
        ('[{"queues": "*"}]', "RSMQ_MASKING[0] masks nothing"),
    ],
)  # fmt: skip
def test_a_bad_rule_is_refused_at_start_naming_its_field(settings, config: str, named: str) -> None:
    with pytest.raises(MaskingError, match=named.replace("[", r"\[").replace("]", r"\]")):
        parse(config)
    settings.RSMQ_MASKING = config
    assert any(named in p for p in problems())


def test_an_unset_rule_masks_cards_and_addresses_for_viewers_only(settings) -> None:
    settings.RSMQ_MASKING = None
    found = rules_for("anything")
    assert found is not None and found.clear_role == "operator"
    assert found.mask("a@b.io 378282246310005") == f"{MASK} {MASK}"


@pytest.mark.django_db
def test_reveals_go_with_the_audit_logs_retention(settings) -> None:
    settings.RSMQ_AUDIT_RETENTION = 90
    now = timezone.now()
    for days in (100, 10):
        Reveal.objects.create(username="u", connection="c", namespace="n", queue="q",
                              reason="r", until=now - dt.timedelta(days=days))  # fmt: skip
    prune(now)
    assert [r.until for r in Reveal.objects.all()] == [now - dt.timedelta(days=10)]
