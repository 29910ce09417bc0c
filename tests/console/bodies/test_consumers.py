"""A consumer's receive (the API's and rest-rsmq's, through Django and the fast path
alike): bodies as they are to a token whose role may reveal the queue's (its traffic
untouched), masked to one below the rule's reveal_role."""

from __future__ import annotations

import json

import pytest
from support.asgi import console as served_console

from dashboard.access import tokens
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

CARD = "4111111111111111"
BODY = json.dumps({"card": {"number": CARD}, "n": 1})


@pytest.mark.parametrize(("reveal_role", "clear"), [("operator", True), ("admin", False)])
@pytest.mark.parametrize("fast", [True, False])
def test_a_receive_masks_only_below_the_rules_reveal_role(
    settings, console, rsmq: RedisSMQ, reveal_role: str, clear: bool, fast: bool
) -> None:
    settings.RSMQ_MASKING = json.dumps(
        [{"queues": "pay", "paths": ["card.number"], "reveal_role": reveal_role}]
    )
    rsmq.create_queue("pay")
    rsmq.send_messages("pay", [BODY, BODY])
    token = tokens.mint("consumer", "operator", "test", 10_000)[1]
    served = served_console(fast=fast)
    try:
        served("GET", "/api/rest-rsmq/queues", token=token)  # its token read in this process
        native = served("POST", "/api/queues/pay/receive/", {"n": 1}, token=token)
        rest = served("GET", "/api/rest-rsmq/messages/pay", token=token)
    finally:
        served.close()
    assert native.status == rest.status == 200
    assert native.fast == rest.fast == fast
    got = [json.loads(native.body)["messages"][0]["message"], json.loads(rest.body)["message"]]
    expected = BODY if clear else json.dumps({"card": {"number": "[masked]"}, "n": 1})
    assert got == [expected, expected]
