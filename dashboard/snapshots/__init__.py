"""Every queue's counters on a schedule: the snapshot run, its rows and lake, and what they say
over time (history, rates, wait times).
"""
