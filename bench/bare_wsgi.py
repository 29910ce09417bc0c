"""A reference for bench/api.py: the same three routes as a bare WSGI function under the
same web server (one queues/ call per request: no Django, no token, no audit), to show
what the web server alone costs. Not part of the product.

    granian --interface wsgi bench.bare_wsgi:application   (RSMQ_REDIS_URL: the Redis)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from queues import RedisSMQ

rsmq = RedisSMQ(url=os.environ["RSMQ_REDIS_URL"], ns="rsmq")


def application(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
    method, parts = environ["REQUEST_METHOD"], environ["PATH_INFO"].strip("/").split("/")
    # /api/queues/<q>/messages/, /api/queues/<q>/receive/, /api/queues/<q>/messages/<id>/
    q = parts[2]
    if method == "POST" and parts[3] == "messages":
        size = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(size))
        answer: Any = {"id": rsmq.send_message(q, body["message"])}
    elif method == "POST":
        m = rsmq.receive_message(q, vt=30)
        answer = {"messages": [{"id": m.id, "message": m.message}] if m else []}
    else:
        answer = {"result": rsmq.delete_message(q, parts[4])}
    data = json.dumps(answer).encode()
    start("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
