"""Field filters (queues/fields.py + browse.lua's matches()): the parser, and the rules
held equal in Lua (cjson, bodies up to LUA_BODY_MAX) and in Python (longer bodies), on
the same cases, through the real browse on a real Redis."""

from __future__ import annotations

import pytest
import redis

from queues import InvalidArgument, RedisSMQ
from queues import fields as F
from queues.limits import LUA_BODY_MAX

# -- the parser -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "op", "path", "values"),
    [
        ("amount > 100", ">", ("amount",), (("n", 100.0),)),
        ("amount >= 1.5", ">=", ("amount",), (("n", 1.5),)),
        ("amount < -2e3", "<", ("amount",), (("n", -2000.0),)),
        ("amount <= 0", "<=", ("amount",), (("n", 0.0),)),
        ("customer = cust-42", "=", ("customer",), (("s", "cust-42"),)),
        ("customer != 'a b'", "!=", ("customer",), (("s", "a b"),)),
        ('name = "say \\"hi\\""', "=", ("name",), (("s", 'say "hi"'),)),
        ("ok = true", "=", ("ok",), (("b", True),)),
        ("ok != FALSE", "!=", ("ok",), (("b", False),)),
        ("gone = null", "=", ("gone",), (("z", None),)),
        ("zip = '01234'", "=", ("zip",), (("s", "01234"),)),
        ("status in (failed, retry)", "in", ("status",), (("s", "failed"), ("s", "retry"))),
        ("n IN ( 1 ,2,'3' )", "in", ("n",), (("n", 1.0), ("n", 2.0), ("s", "3"))),
        ("order.items[0].sku = A-1", "=", ("order", "items", 0, "sku"), (("s", "A-1"),)),
        ("a[ 2 ][3] = 1", "=", ("a", 2, 3), (("n", 1.0),)),
        ('"first name" = Bob', "=", ("first name",), (("s", "Bob"),)),
        ("meta.'x.y' = 1", "=", ("meta", "x.y"), (("n", 1.0),)),
        ("exists order.id", "exists", ("order", "id"), ()),
        ("MISSING order", "missing", ("order",), ()),
        ("prix = 'é€😀'", "=", ("prix",), (("s", "é€😀"),)),
    ],
)
def test_each_operator_path_and_quoting(text: str, op: str, path: tuple, values: tuple) -> None:
    w = F.parse(text)
    assert w.conditions == (F.Condition(op, path, values),)
    assert F.parse(w.text()) == w  # its written form reads back the same


def test_conditions_join_with_and() -> None:
    w = F.parse("a = 1 and b > 2 AND exists c && missing d")
    assert [c.op for c in w.conditions] == ["=", ">", "exists", "missing"]
    assert F.parse("") == F.NOTHING and not F.parse("   ")


@pytest.mark.parametrize(
    ("text", "position", "what"),
    [
        ("amount >", 9, "expected a value"),
        ("amount ! 3", 8, "expected an operator"),
        ("a = 1 b = 2", 7, "expected 'and'"),
        ("a = 1 and", 10, "a condition after 'and'"),
        ("a in (1, 2", 11, "expected , or )"),
        ("a in 1", 6, "expected ( after in"),
        ("a[x] = 1", 2, "an index such as [0]"),
        ("a > true", 5, "> compares with a number or a text"),
        ('"abc = 1', 1, "without its closing quote"),
        ("= 3", 1, "expected a field name"),
        ("a = 1e999", 5, "too large"),
        ("exists", 7, "expected a field name"),
    ],
)
def test_errors_name_the_field_the_position_and_what_is_allowed(
    text: str, position: int, what: str
) -> None:
    with pytest.raises(InvalidArgument) as e:
        F.parse(text)
    assert e.value.field == "where"
    assert f"at position {position} " in str(e.value), str(e.value)
    assert what in str(e.value) and "Allowed:" in str(e.value)


def test_bounds() -> None:
    for text, what in [
        ("a = 1 and " * F.MAX_CONDITIONS + "a = 1", "at most 10 conditions"),
        ("a" + ".b" * F.MAX_STEPS + " = 1", "at most 16 steps"),
        ("a in (" + ",".join("1" * 1 for _ in range(F.MAX_VALUES + 1)) + ")", "at most 20"),
        ("a = " + "x" * F.MAX_LENGTH, "at most 1000 characters"),
    ]:
        with pytest.raises(InvalidArgument, match=what):
            F.parse(text)


# -- the rules: Lua and Python on the same cases ------------------------------------------

BODIES = [
    '{"customer": "cust-42", "amount": 150, "status": "failed", "ok": true}',
    '{"customer": "cust-7", "amount": 100, "status": "retry", "ok": false, "gone": null}',
    '{"customer": "cust-42", "amount": "150", "status": "done"}',
    '{"amount": 99.5, "order": {"items": [{"sku": "A-1"}, {"sku": "B-2"}]}}',
    '{"amount": 1e400, "order": {"items": []}}',
    '{"amount": -0, "order": {"items": {"0": {"sku": "A-1"}}}}',
    '{"amount": 12345678901234567890123, "customer": "cust-42\\u0000x"}',
    '{"a": {"b": null}, "customer": "Zoë", "prix": "é€😀"}',
    '{"customer": "cust-42", "customer": "cust-9"}',
    '{"list": [1, [2, 3]], "amount": 101}',
    '{"amount": 200, "status": ["failed"]}',
    '[{"customer": "cust-42"}]',
    '"cust-42"',
    "150",
    "null",
    "{}",
    "not json at all",
    '{"amount": 150',
    '{"amount": NaN}',
    '{"amount": Infinity}',
    '{"amount": 0x10}',
    '{"amount": 01}',
    '{"amount": 150} trailing',
    "\ufeff{}",
    '{"text": "tab\there", "amount": 5}',
    "[" * 64 + "]" * 64,
    '{"deep": ' + "[" * 63 + "]" * 63 + ', "amount": 300}',
    '{"deep": ' + "[" * 64 + "]" * 64 + ', "amount": 300}',
    "",
]

EXPRESSIONS = [
    "customer = cust-42",
    "customer != cust-42",
    "amount > 100",
    "amount >= 100",
    "amount < 100",
    "amount <= 100",
    "amount = 150",
    "amount != 150",
    "amount = '150'",
    "amount > '100'",
    "status in (failed, retry)",
    "order.items[0].sku = A-1",
    "order.items[1].sku >= B",
    "exists order.items[0]",
    "missing order",
    "exists gone",
    "gone = null",
    "ok = true",
    "ok != false",
    "a.b = null",
    "exists a.b.c",
    "customer > cust-5",
    "customer < Zz",
    "prix = 'é€😀'",
    "list[1][0] = 2",
    "amount > 1e300",
    "amount = 0",
    "status = failed",
    "amount > 100 and status in (failed, done)",
    "customer = cust-42 and missing gone and amount != 1",
    "text = 'tab\there'",
]


def _ids_matching(rsmq: RedisSMQ, queue: str, expression: str) -> set[str]:
    got: set[str] = set()
    after = None
    while True:
        b = rsmq.browse(queue, after=after, limit=1000, where=expression, budget=5.0)
        got |= {m.id for m in b.items}
        if b.at_end:
            return got
        after = b.resume


@pytest.fixture
def both(rsmq: RedisSMQ, queue: str) -> tuple[dict[str, str], dict[str, str]]:
    """Each body sent twice: as it is (read in Lua) and padded with JSON's whitespace
    past LUA_BODY_MAX (read by the client, in Python): id -> body."""
    small = rsmq.send_messages(queue, BODIES)
    padded = [b + " " * (LUA_BODY_MAX + 1 - len(b.encode())) for b in BODIES]
    big = rsmq.send_messages(queue, padded)
    return dict(zip(small, BODIES, strict=True)), dict(zip(big, BODIES, strict=True))


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_lua_and_python_agree(
    rsmq: RedisSMQ, queue: str, both: tuple[dict[str, str], dict[str, str]], expression: str
) -> None:
    small, big = both
    where = F.parse(expression)
    got = _ids_matching(rsmq, queue, expression)
    in_lua = sorted(body for mid, body in small.items() if mid in got)
    in_client = sorted(body for mid, body in big.items() if mid in got)
    by_python = sorted(b for b in BODIES if where.matches(b))
    assert in_lua == by_python
    assert in_client == by_python


def test_the_cases_mean_what_they_say() -> None:
    """A few rules spelled out (the agreement test shows Lua says the same)."""
    w = F.parse
    assert w("amount > 100").matches('{"amount": 150}')
    assert not w("amount > 100").matches('{"amount": "150"}')  # a text is not a number
    assert w("amount > '100'").matches('{"amount": "150"}')  # texts compare as texts
    assert not w("amount > '100'").matches('{"amount": 150}')
    assert w("amount = 100").matches('{"amount": 100.0}')
    assert not w("x != 1").matches("{}")  # != needs the field
    assert w("missing x").matches("{}") and not w("missing x").matches("nope")
    assert w("exists x").matches('{"x": null}')
    assert not w("a = 1").matches('{"a": [1]}') and w("a != 1").matches('{"a": [1]}')
    assert not w("a = 1").matches(b'{"a": 1') and not w("a = 1").matches(b"\xff\xfe")
    with pytest.raises(InvalidArgument, match="not valid Unicode"):
        w("s = caf\udce9")  # a literal no body could hold as UTF-8


def test_non_utf8_bodies_compare_byte_for_byte(rsmq: RedisSMQ, r: redis.Redis, ns: str,
                                               queue: str) -> None:  # fmt: skip
    mid = rsmq.send_message(queue, "placeholder")
    raw = b'{"name": "caf\xe9", "n": 1}'  # Latin-1 inside a JSON text: not UTF-8
    r.hset(f"{ns}:{queue}:Q", mid, raw)
    assert F.parse("n = 1").matches(raw)
    assert _ids_matching(rsmq, queue, "n = 1") == {mid}
    assert _ids_matching(rsmq, queue, "name > caf") == {mid}


# -- in browse: with the other filters, hostile data, bounds --------------------------------


def test_combined_with_state_rc_contains_and_age(rsmq: RedisSMQ, queue: str,
                                                 r: redis.Redis, ns: str) -> None:  # fmt: skip
    a, b, c = rsmq.send_messages(
        queue, ['{"amount": 150, "k": "x"}', '{"amount": 50, "k": "x"}', '{"amount": 500}']
    )
    d = rsmq.send_message(queue, '{"amount": 900, "k": "x"}', delay=100)
    got = rsmq.receive_message(queue, vt=100)
    assert got is not None and got.id == a  # a: in flight, rc 1

    def ids(**kw: object) -> set[str]:
        return {m.id for m in rsmq.browse(queue, limit=100, budget=5.0, **kw).items}  # type: ignore[arg-type]

    assert ids(where="amount > 100") == {a, c, d}
    assert ids(where="amount > 100", state="visible") == {c}
    assert ids(where="amount > 100", state="inflight") == {a}
    assert ids(where="amount > 100", state="delayed") == {d}
    assert ids(where="amount > 100", min_rc=1) == {a}
    assert ids(where="amount > 100", contains='"k"') == {a, d}
    assert ids(where="amount > 100", contains="nowhere") == set()
    # ages by the id's send time against the server's clock: make c an hour old
    old = _rewrite_sent(r, ns, queue, c, hours=1)
    assert ids(where="amount > 100", older_than=1800) == {old}
    assert ids(where="amount > 100", younger_than=1800) == {a, d}
    assert ids(older_than=1800, younger_than=7200) == {old}
    assert ids(where="amount < 100", younger_than=1800) == {b}


def _rewrite_sent(r: redis.Redis, ns: str, queue: str, mid: str, hours: int) -> str:
    """Message ``mid`` as if sent ``hours`` earlier (an id with an older time in it)."""
    sec, usec = r.time()
    us = (sec * 1_000_000 + usec) - hours * 3600 * 1_000_000
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    head = ""
    while us:
        us, d = divmod(us, 36)
        head = digits[d] + head
    new = head.rjust(10, "0") + mid[10:]
    z, q = f"{ns}:{queue}", f"{ns}:{queue}:Q"
    score = r.zscore(z, mid)
    body = r.hget(q, mid)
    r.zrem(z, mid)
    r.hdel(q, mid)
    r.zadd(z, {new: score or 0})
    r.hset(q, new, body or b"")
    return new


def test_a_bad_expression_or_age_is_refused_naming_the_field(rsmq: RedisSMQ, queue: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        rsmq.browse(queue, where="amount >")
    assert e.value.field == "where" and "position 9" in str(e.value)
    for name in ("older_than", "younger_than"):
        with pytest.raises(InvalidArgument) as e:
            rsmq.browse(queue, **{name: -1})  # type: ignore[arg-type]
        assert e.value.field == name
    with pytest.raises(InvalidArgument):
        rsmq.browse(queue, rank=0, where="a = 1")


def test_non_json_and_corrupt_records_never_break_the_scan(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    good = rsmq.send_messages(queue, ['{"a": 1}'] * 3)
    junk = rsmq.send_messages(queue, ["{", "[" * 5000, "\x00\xff", '{"a": NaN}'])
    ghost = rsmq.send_message(queue, '{"a": 1}')
    r.hdel(f"{ns}:{queue}:Q", ghost)  # its body gone: a member with no body
    r.hset(f"{ns}:{queue}:Q", good[1] + ":rc", "abc")  # an rc that is no number
    got = _ids_matching(rsmq, queue, "a = 1")
    assert got == set(good)
    assert not got & set(junk)
    assert _ids_matching(rsmq, queue, "missing a") == set()


def test_huge_bodies_are_read_by_the_client(rsmq: RedisSMQ, queue: str) -> None:
    rsmq.set_queue_attributes(queue, maxsize=-1)
    big = '{"amount": 500, "pad": "' + "x" * (2 * 1024 * 1024) + '"}'
    ids = rsmq.send_messages(queue, [big, big.replace("500", "5"), '{"amount": 501}'])
    b = rsmq.browse(queue, where="amount > 100", limit=10, budget=5.0, preview=20)
    assert [m.id for m in b.items] == [ids[0], ids[2]]
    assert b.items[0].message.startswith('{"amount": 500')


def test_each_call_is_bounded_by_the_byte_budget(rsmq: RedisSMQ, queue: str) -> None:
    """Bodies near LUA_BODY_MAX: one call decodes no more than BROWSE_FIELD_BYTES."""
    from queues.limits import BROWSE_FIELD_BYTES

    body = '{"amount": 1, "pad": "' + "x" * (LUA_BODY_MAX - 40) + '"}'
    rsmq.send_messages(queue, [body] * 20)
    b = rsmq.browse(queue, where="amount > 100", limit=10, budget=0.0)
    assert b.calls == 1 and not b.at_end
    assert b.looked <= BROWSE_FIELD_BYTES // len(body) + 1


def test_a_field_filter_call_looks_at_browse_field_step_at_most(rsmq: RedisSMQ, queue: str) -> None:
    from queues.limits import BROWSE_FIELD_STEP

    rsmq.send_messages(queue, ['{"a": 1}'] * (BROWSE_FIELD_STEP + 50))
    b = rsmq.browse(queue, where="a = 2", limit=10, budget=0.0, step=1000)
    assert b.calls == 1 and b.looked == BROWSE_FIELD_STEP and not b.at_end
    plain = rsmq.browse(queue, contains="x", limit=10, budget=0.0, step=1000)
    assert plain.looked == BROWSE_FIELD_STEP + 50  # other scans keep their step


def test_the_async_client_filters_the_same(redis_url: str, ns: str, rsmq: RedisSMQ,
                                           queue: str) -> None:  # fmt: skip
    import asyncio

    from queues import AsyncRedisSMQ

    ids = rsmq.send_messages(queue, ['{"amount": 150}', '{"amount": 5}', "x" * 40_000])

    async def main() -> list[str]:
        async with AsyncRedisSMQ(url=redis_url, ns=ns) as a:
            b = await a.browse(queue, where="amount > 100", limit=10, budget=5.0)
            return [m.id for m in b.items]

    assert asyncio.run(main()) == [ids[0]]


def test_an_id_with_no_time_in_it_matches_no_age(rsmq: RedisSMQ, queue: str, r: redis.Redis,
                                                 ns: str) -> None:  # fmt: skip
    mid = rsmq.send_message(queue, '{"a": 1}')
    r.zadd(f"{ns}:{queue}", {"not-an-rsmq-id": 0})  # another client's member
    r.hset(f"{ns}:{queue}:Q", "not-an-rsmq-id", '{"a": 1}')
    assert _ids_matching(rsmq, queue, "a = 1") == {mid, "not-an-rsmq-id"}
    got = rsmq.browse(queue, younger_than=3600, limit=10, budget=5.0)
    assert [m.id for m in got.items] == [mid]
    assert rsmq.browse(queue, older_than=1, limit=10, budget=5.0).items == []
