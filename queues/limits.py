"""The core's bounds: how much one step, page, scan or record may hold.

Every operation's limits in one place (queues/ops/ reads them from here).
"""

from __future__ import annotations

#: messages one purge / move / redrive / bulk step handles: small enough that a step
#: never holds Redis for long (a few ms), large enough that a million take ~1000 steps
CHUNK = 1000
#: queues per stats script call, so a 10,000-queue read is many short scripts in one
#: pipeline, not one long script
STATS_CHUNK = 200
#: queues per stats call in a read of more than STATS_CHUNK_BIG_AFTER queues: 200 took
#: over 5 ms a call on a busy 2-core machine (SLOWLOG); a big namespace's read is many
#: back-to-back calls, each one a wait for every other client of Redis
STATS_CHUNK_BIG = 50
STATS_CHUNK_BIG_AFTER = 1000
STATS_ROW = 17
#: past this many queues a namespace's names are read in SSCAN steps of SCAN_COUNT, not
#: one SMEMBERS: SMEMBERS of 100,000 names holds Redis for over 20 ms, an SSCAN step ~1 ms
SMEMBERS_MAX = 10_000
SCAN_COUNT = 1000
#: hidden messages a stats call looks at to split in flight from delayed (more: an
#: estimate, said so): 1,000 held Redis 5.5 ms a call on a queue of 200,000 messages
#: (80,000 hidden), 400 2.2 ms (INFO commandstats, same run); a page's calls stay under 5 ms
DEFAULT_SAMPLE = 400
DEFAULT_SCAN_BUDGET = 10_000
#: messages one census_range reads at most
MAX_CENSUS_COUNT = 10_000
#: what one census script call reads before it stops (after at least one message):
#: its bodies' bytes, and CENSUS_MESSAGE_BYTES for each message besides. Redis spends
#: ~0.8 ms per MB of bodies copied into a reply and ~4 µs looking up one message, so a
#: call holds it well under 1 ms on a quiet machine, however large the bodies.
CENSUS_BYTES = 512 * 1024
CENSUS_MESSAGE_BYTES = 2048
MAX_MAXRC = 1000
#: members one browse script call looks at, at most: 1,000 took a median 4.5 ms of
#: Redis (the rc test of each; `bench/dashboard.py --calls` with 1,000, load average 6-8
#: on the 2 cores): too near the 5 ms a call may hold it; 500, half that
BROWSE_STEP = 500
#: bodies' bytes one browse call reads for a text search before it stops
BROWSE_BYTES = 128 * 1024
#: a browse's time budget (s): it makes calls until its page is full, the state ends
#: or this is spent, then says where it stopped
BROWSE_BUDGET = 0.04
#: "Why did it fail?": a queue's failure histories live in one extension key next to its
#: own, {ns}:{qname}:x:failures (same prefix, so the same Redis Cluster slot with a hash
#: tag in ns; no RSMQ queue name holds a ':', and the original never reads it). Bounds:
FAILURES_SUFFIX = ":x:failures"
FAILURE_HISTORY = 5  # failures kept per message (the last ones) ...
FAILURE_BYTES = 16 * 1024  # ... fewer when its history is longer than this
FAILURE_MESSAGES = 5000  # messages with a history per queue (more: one is forgotten)
FAILURE_TTL = 7 * 24 * 3600  # s: the key expires this long after its last failure
FAILURE_TYPE_MAX = 200  # characters of an exception's type
FAILURE_MESSAGE_MAX = 2000  # bytes of its message
FAILURE_TRACE_LINES = 20  # first lines of its traceback ...
FAILURE_TRACE_MAX = 8000  # ... and at most this many bytes of them
#: HSCAN steps of a failure_groups read of one key: a step ~1 ms, the read bounded
FAILURE_SCAN_COUNT = 1000
FAILURE_SCAN_STEPS = 30
FAILURE_EXAMPLES = 5
#: Wait and processing times. The project's worker records each message it deletes in
#: an extension key next to the queue's own, {ns}:{qname}:x:timings (same prefix, so the
#: same Cluster slot; the original never reads it): a list, newest first, of
#: "recorded fr wait processing" (epoch ms, ms, ms), capped and expiring:
TIMINGS_SUFFIX = ":x:timings"
TIMINGS_MAX = 1000  # entries kept per queue (a snapshot reads them all: one LRANGE)
TIMINGS_TTL = 24 * 3600  # s after the last record
#: messages a wait scan looks at per queue (scored since the last snapshot; more: evenly
#: spaced ranks are sampled, and the reading says so): each one ZRANGE + HGET. The worst
#: call (500 looked at among 100,000 new members, and 1,000 worker records) cost Redis
#: 3.9 ms of CPU, the stats script (400 sampled) 2.4 ms in the same run (load 14,
#: bench/wait_scan.py)
WAIT_SAMPLE = 500
