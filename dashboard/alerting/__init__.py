"""Alerts: admins' rules over the snapshots and the pipeline's anomaly flags
(``rules.py``: what a rule reads), evaluated after each snapshot by a Celery task of its
own (``evaluate.py``: pending → firing → resolved, and the outbox rows that tell of it),
and delivered by webhook, Slack or e-mail with retries (``delivery.py``).
"""
