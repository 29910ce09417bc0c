"""The action table, once for both surfaces: each action's name (the console's button
value), the role it needs and its name in the audit log. The pages (views/actions.py
binds each to its handler) and the API (api/operations.py) both read it, so a role or an
audit name changes in one place for both, and neither surface imports the other."""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.access.roles import Action, Role

Actions = Mapping[str, Action]

# The queue page's buttons (views/queue_actions.py).
QUEUE_ACTIONS: Actions = {
    "send": Action(Role.OPERATOR, "send"),
    "requeue": Action(Role.OPERATOR, "requeue"),
    "delete": Action(Role.OPERATOR, "delete"),
    "move": Action(Role.OPERATOR, "move"),
    "requeue_all": Action(Role.ADMIN, "requeue_all"),
    "delete_all": Action(Role.ADMIN, "delete_all"),
    "edit": Action(Role.ADMIN, "edit_queue"),
    "purge": Action(Role.ADMIN, "purge"),
    "delete_queue": Action(Role.ADMIN, "delete_queue"),
    # what other RSMQ ports leave behind (queues/ops/orphans.py)
    "clean_orphans": Action(Role.ADMIN, "clean_orphans"),
    "clean_leftover": Action(Role.ADMIN, "clean_leftover"),
    "policy": Action(Role.ADMIN, "set_policy"),
    # An operator's on a dead-letter queue; elsewhere the admin's (checked by its handler).
    "redrive": Action(Role.OPERATOR, "redrive"),
    # adds messages, as a send does (dashboard/acting/exports.py)
    "import": Action(Role.OPERATOR, "import"),
    # Put back what a destructive action kept (dashboard/acting/undo.py): the admin's.
    "undo": Action(Role.ADMIN, "undo"),
    # Hold or pace the queue's consumers (dashboard/acting/flow.py): the operator's, as
    # moving messages is — it changes no message, is audited, and ends by itself or at a
    # resume; purging and deleting stay the admin's.
    "pause": Action(Role.OPERATOR, "pause_queue"),
    "throttle": Action(Role.OPERATOR, "throttle_queue"),
    "resume": Action(Role.OPERATOR, "resume_queue"),
}

# The message page's buttons (views/message.py).
MESSAGE_ACTIONS: Actions = {
    "requeue": Action(Role.OPERATOR, "requeue"),
    "visibility": Action(Role.OPERATOR, "visibility"),
    "delete": Action(Role.OPERATOR, "delete"),
    "move": Action(Role.OPERATOR, "move"),
    # edit and re-send: a new message, the original deleted in the same step if asked
    "resend": Action(Role.OPERATOR, "resend"),
}

# The Failing view's buttons (views/failing.py): one failure group at a time.
FAILING_ACTIONS: Actions = {
    "retry_group": Action(Role.OPERATOR, "retry_group"),
    "delete_group": Action(Role.ADMIN, "delete_group"),
}

# What an operator says of a queue's flags and of the queue itself (views/triage.py):
# acknowledge or snooze its open flags, take that back; mark it expected idle (nothing
# consumes it by design), or not.
TRIAGE_ACTIONS: Actions = {
    "ack": Action(Role.OPERATOR, "flag_ack"),
    "snooze": Action(Role.OPERATOR, "flag_snooze"),
    "unack": Action(Role.OPERATOR, "flag_unack"),
    "expect": Action(Role.OPERATOR, "expected_idle"),
}

# Alert hygiene (views/alerts.py): silence alerts (a rule, a queue pattern, a recurring
# maintenance window) and end a silence now; acknowledge a firing alert, on the alerts
# page or from a notification's link. The operator's: they change no message, only who
# is told, and each is audited.
ALERT_ACTIONS: Actions = {
    "silence": Action(Role.OPERATOR, "alert_silence"),
    "expire": Action(Role.OPERATOR, "alert_silence_expire"),
    "ack": Action(Role.OPERATOR, "alert_ack"),
}

# Two the console has no button for, at the roles theirs need: creating a queue
# (overview.queue_create: admin) and receiving (it hides the message and counts a
# receive, as an operator's requeue or visibility change does).
CREATE_QUEUE = Action(Role.ADMIN, "create_queue")
RECEIVE = Action(Role.OPERATOR, "receive")

# Marking the timeline: a token (api/annotate.py: POST /api/annotations/), or an operator
# from the incident timeline or under a queue's charts (views/annotate.py).
ANNOTATE = Action(Role.OPERATOR, "annotation_create")

# A download, no button: a viewer reads what it holds on the pages already; audited
# (views/transfer.py, api/native.py).
EXPORT = Action(Role.VIEWER, "export")

#: the audit names of the actions that change messages or queues, the console's and the
#: API's: the operator actions a queue's charts mark (a saved filter, an acknowledged flag
#: or an export is on the incident timeline, never on the charts); a bulk job's are its
#: kinds' (dashboard/acting/jobs.py's AUDIT, added there)
CHANGES: frozenset[str] = frozenset(
    a.audit_name
    for table in (QUEUE_ACTIONS, MESSAGE_ACTIONS, FAILING_ACTIONS)
    for a in table.values()
) | {CREATE_QUEUE.audit_name, RECEIVE.audit_name}
