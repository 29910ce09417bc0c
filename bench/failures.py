"""What the failure cleanup costs the hot paths: Redis time per script call of receive,
delete and receive-and-delete (pop), the scripts of a git ref (default ``main``) against
the working tree's, side by side on one redis-server, in interleaved rounds.

Redis time is read from ``INFO commandstats`` (EVALSHA's usec) around each block, so the
figure is the script's own cost, without the client's; the ratio is this tree / the ref.

    python bench/failures.py                 # against main, ~20 s
    python bench/failures.py --ref HEAD~3 --rounds 9
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from queues import RedisSMQ  # noqa: E402
from queues import scripts as S  # noqa: E402
from queues.ops import FAILURES_SUFFIX  # noqa: E402
from queues.server import EmbeddedRedis  # noqa: E402

BLOCK = 1000  # messages per measured block


def _source(ref: str, name: str) -> bytes:
    def show(path: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{ref}:queues/scripts/{path}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip

    return (show("_prelude.lua") + "\n" + show(f"{name}.lua")).encode()


def _usec(r: redis.Redis) -> tuple[int, int]:
    s = r.info("commandstats")["cmdstat_evalsha"]
    return int(s["usec"]), int(s["calls"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ref", default="main")
    p.add_argument("--rounds", type=int, default=20)
    a = p.parse_args()
    old = {n: _source(a.ref, n) for n in ("receive", "delete")}
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis") as server:
        r = redis.Redis.from_url(server.url)
        q = RedisSMQ(url=server.url, ns="b")
        q.create_queue("q")
        shas = {("ref", n): r.script_load(src) for n, src in old.items()}
        shas |= {("tree", "receive"): r.script_load(S.RECEIVE.source)}
        shas |= {("tree", "delete"): r.script_load(S.DELETE.source)}
        assert shas[("ref", "receive")] == hashlib.sha1(old["receive"]).hexdigest()
        z, h, f = "b:q", "b:q:Q", "b:q" + FAILURES_SUFFIX
        # Each side gets its keys exactly as its operations pass them.
        keys = {"ref": (z, h), "tree": (z, h, f)}
        extra = {"ref": (), "tree": (FAILURES_SUFFIX,)}
        costs: dict[tuple[str, str], list[float]] = {}
        for i in range(a.rounds):
            for side in ("ref", "tree") if i % 2 == 0 else ("tree", "ref"):
                for op in ("receive", "delete", "pop"):
                    q.send_messages("q", ["x" * 64] * BLOCK)
                    k = keys[side]
                    if op == "delete":
                        ids = [m.id for m in q.receive_messages("q", BLOCK, vt=60)]
                    before = _usec(r)
                    if op == "delete":
                        pipe = r.pipeline(transaction=False)
                        for mid in ids:
                            pipe.evalsha(shas[(side, "delete")], len(k), *k, mid)
                        pipe.execute()
                    else:
                        pipe = r.pipeline(transaction=False)
                        pop = "pop" if op == "pop" else ""
                        for _ in range(BLOCK):
                            args = (1, 60, "b:", "q", pop, *extra[side])
                            pipe.evalsha(shas[(side, "receive")], len(k), *k, *args)
                        pipe.execute()
                    after = _usec(r)
                    per_call = (after[0] - before[0]) / (after[1] - before[1])
                    costs.setdefault((side, op), []).append(per_call)
                    q.purge_queue("q")
        # On a busy machine the best block is the script's cost, the median what it met.
        print(f"Redis µs per script call over {a.rounds} rounds of {BLOCK} calls: best, median")
        print(
            f"| op | {a.ref} best | this tree best | ratio "
            f"| {a.ref} median | this tree median | ratio |"
        )
        print("|---|---|---|---|---|---|---|")
        for op in ("receive", "delete", "pop"):
            ref, tree = (min(costs[(s, op)]) for s in ("ref", "tree"))
            mref, mtree = (statistics.median(costs[(s, op)]) for s in ("ref", "tree"))
            print(
                f"| {op} | {ref:.2f} | {tree:.2f} | {tree / ref:.2f}× "
                f"| {mref:.2f} | {mtree:.2f} | {mtree / mref:.2f}× |"
            )
        r.close()
        q.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
