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
#: queues per stats call in a read of more than STATS_CHUNK_BIG_AFTER queues: a call of
#: STATS_CHUNK held Redis past the 5 ms a call may take on a busy machine (SLOWLOG:
#: bench/RESULTS.md, "Figures behind the code"); a big namespace's read is many
#: back-to-back calls, each one a wait for every other client of Redis
STATS_CHUNK_BIG = 50
STATS_CHUNK_BIG_AFTER = 1000
STATS_ROW = 17
#: past this many queues a namespace's names are read in SSCAN steps of SCAN_COUNT, not
#: one SMEMBERS: SMEMBERS of a big namespace's names holds Redis far longer than a step
#: (bench/RESULTS.md, "Figures behind the code")
SMEMBERS_MAX = 10_000
SCAN_COUNT = 1000
#: hidden messages a stats call looks at to split in flight from delayed (more: an
#: estimate, said so): each is a look in Redis, and this many keeps a page's calls under
#: the 5 ms a call may take (INFO commandstats: bench/RESULTS.md, "Figures behind the code")
DEFAULT_SAMPLE = 400
DEFAULT_SCAN_BUDGET = 10_000
#: a browse's "sent at least / less than this long ago" (s) at most: ten years
MAX_AGE = 10 * 366 * 24 * 3600
#: messages one census_range reads at most
MAX_CENSUS_COUNT = 10_000
#: what one census script call reads before it stops (after at least one message):
#: its bodies' bytes, and CENSUS_MESSAGE_BYTES for each message besides: Redis's time
#: grows with the bodies it copies into the reply and with the messages it looks up, so
#: counting both keeps a call short however large the bodies (bench/RESULTS.md, "Census
#: calls' Redis time" and "Figures behind the code").
CENSUS_BYTES = 512 * 1024
CENSUS_MESSAGE_BYTES = 2048
MAX_MAXRC = 1000
#: members one browse script call looks at, at most: twice this many (the rc test of
#: each) came too near the 5 ms a call may hold Redis (`bench/dashboard.py --calls`:
#: bench/RESULTS.md, "Browse script calls" and "Figures behind the code")
BROWSE_STEP = 500
#: bodies' bytes one browse call reads for a text search before it stops (checked with
#: HSTRLEN before a body is read)
BROWSE_BYTES = 128 * 1024
#: with a field filter (each body read and decoded with cjson, and the tables it makes
#: collected), one browse call looks at this many messages at most and decodes this many
#: bytes of bodies: a body decoded costs far more than an rc test, so fewer than
#: BROWSE_STEP keep a call as short as a received >= N one (`bench/dashboard.py
#: --fields`: bench/RESULTS.md, "Field filter scan calls" and "Figures behind the code")
BROWSE_FIELD_STEP = 150
BROWSE_FIELD_BYTES = 64 * 1024
#: Bodies a script reads itself are at most this long (_prelude.lua's LUA_BODY_MAX): a
#: Lua read copies the body, so a long one holds Redis many times as long as the plain
#: HGET the client reads it with instead (bench/RESULTS.md, "Body search on 8 MB bodies"
#: and "Figures behind the code")
LUA_BODY_MAX = 32 * 1024
#: browse.lua searches a needle itself only up to this length: string.find (plain) costs
#: body length x needle length, so at most 64 compares a byte of a <= 32 KB body; a
#: longer needle is searched by the client, in Python (``in``: linear in the body)
LUA_NEEDLE_MAX = 64
#: bodies' bytes one browse call leaves for the client to search (after one at least)
BROWSE_CLIENT_BYTES = 8 * 1024 * 1024
#: bodies' bytes one browse call's rows may hold (past it a row's body is read by the
#: client, like a body longer than LUA_BODY_MAX)
BROWSE_ROW_BYTES = 256 * 1024
#: bodies' bytes one browse request reads with plain HGETs (after one body at least):
#: past it a search stops (and says where to go on), a listing's row says its body was
#: not read
BROWSE_FETCH_BYTES = 16 * 1024 * 1024
#: bodies' bytes one move / redrive script call copies, after one message at least, and
#: one receive call reads (the rest: plain HGET / HMGET after it)
#: (_prelude.lua's MOVE_BYTES): moving a body copies it in Lua, so a chunk of long ones
#: would hold Redis for seconds (bench/RESULTS.md, "Figures behind the code")
MOVE_BYTES = 1024 * 1024
#: small bodies the client reads together in one HMGET, up to this many bytes
FETCH_BATCH_BYTES = 1024 * 1024
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
#: HSCAN steps of a failure_groups read of one key: each step short, the read bounded
FAILURE_SCAN_COUNT = 1000
FAILURE_SCAN_STEPS = 30
FAILURE_EXAMPLES = 5
FAILURE_LINE_MAX = 300  # characters of a failure's error line kept in its summary
FAILURE_TEXTS = 3  # a group's most frequent error lines shown
#: records of a namespace's audit stream one read takes (ops/console_api.py)
AUDIT_READ = 1000
#: Orphaned fields and leftover hashes (other ports' leftovers, queues/ops/orphans.py):
#: a queue hash of at most this many fields is listed with one HKEYS (names only: a
#: short call at this size, bench/RESULTS.md, "Figures behind the code"); a bigger one
#: is not counted (None)
ORPHAN_FIELDS_MAX = 10_000
#: field names one orphans.lua call checks
ORPHAN_CHUNK = 500
#: SCAN steps (of SCAN_COUNT keys each) a look for leftover hashes takes at most
LEFTOVER_SCAN_STEPS = 100
#: Wait and processing times. The project's worker records each message it deletes in
#: an extension key next to the queue's own, {ns}:{qname}:x:timings (same prefix, so the
#: same Cluster slot; the original never reads it): a list, newest first, of
#: "recorded fr wait processing" (epoch ms, ms, ms), capped and expiring:
TIMINGS_SUFFIX = ":x:timings"
TIMINGS_MAX = 1000  # entries kept per queue (a snapshot reads them all: one LRANGE)
TIMINGS_TTL = 24 * 3600  # s after the last record
#: messages a wait scan looks at per queue (scored since the last snapshot; more: evenly
#: spaced ranks are sampled, and the reading says so): each one ZRANGE + HGET. The worst
#: call stays under the 5 ms a call may hold Redis, with less margin than the stats
#: script (bench/wait_scan.py: bench/RESULTS.md, the wait readings and outlooks)
WAIT_SAMPLE = 500
#: Undo (queues/ops/undo.py): how long a stash is kept by default (the console's
#: RSMQ_UNDO_HOURS), the longest it may be kept, and how many skipped ids an undo's
#: result names (it counts them all)
UNDO_HOURS = 24
UNDO_HOURS_MAX = 24 * 30
UNDO_SKIPPED_IDS = 100
#: a stash's record keeps at most this many bytes of estimate for one message besides
#: its body: its zset member and score, rc, fr (Redis' own overhead per field)
UNDO_MESSAGE_BYTES = 96
#: messages a whole queue's stash size is estimated from (evenly spaced ranks)
UNDO_SAMPLE = 100
#: messages one undo step moves into a stash (a purge's bodies) or back out of it: each
#: message costs a restore several commands (presence checks, its fields), so twice this
#: many a call cost Redis more than a plain purge's call of CHUNK; this many keeps a call
#: well under it (bench/purge.py --undo: bench/RESULTS.md, "Purge + undo" and "Figures
#: behind the code"); at most 1000 (Lua's unpack limit)
UNDO_CHUNK = 250
#: messages a move or a redrive call takes: each is a ZREM, a ZADD and its hash fields
#: moved (and stashed for an undo): CHUNK a call held Redis past the 50 ms a call may
#: take (bench/jobs.py's peer: bench/RESULTS.md, "Act on every match")
MOVE_CHUNK = 250

#: Pause / throttle (queues/ops/flow.py). A queue's flow flag lives in an extension key
#: next to its own, {ns}:{qname}:x:flow (a hash; same prefix, so the same Cluster slot;
#: the original never reads it), and the namespace's flagged queues in {ns}:@flow (no
#: queue name holds '@'): what the overview and triage read in one command.
FLOW_SUFFIX = ":x:flow"
#: receives a second a throttle may allow, at most (and at least FLOW_RATE_MIN)
FLOW_RATE_MAX = 100_000
FLOW_RATE_MIN = 0.01
#: the longest a flag may be set for (s): it resumes by itself then
FLOW_SECONDS_MAX = 30 * 24 * 3600
#: characters of a flag's reason and of who set it
FLOW_REASON_MAX = 500
FLOW_BY_MAX = 150
#: What is coming due (queues/ops/flow.py ``due``): each scale's bucket width (ms) and
#: how many buckets a view counts ahead; the peak is the busiest aligned window of
#: DUE_PEAK ms, found by counting inside the busiest bucket, then inside its busiest
#: part (a day: its hours): a few dozen ZCOUNTs a view, O(log n) each
DUE_SCALES = {"minute": (60_000, 60), "hour": (3_600_000, 48), "day": (86_400_000, 30)}
DUE_PEAK = 300_000
#: the overview's peaks: the next DUE_PEAK_HOURS hours of each queue of its page with
#: delayed messages (hour buckets, then the busiest hour's five-minute windows)
DUE_PEAK_HOURS = 24
#: queues per due script call in one pipelined read
DUE_CHUNK = 10

#: the longest zset member a message page reads by its bytes (``message_and_failures``):
#: another client's id, not an RSMQ one (go-rsmq's are 22 characters); in a URL as hex
MEMBER_MAX = 1024
