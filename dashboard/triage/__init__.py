"""Which queue is in trouble, why, and where it is heading: conditions and the overview's
order, forecasts, thresholds, owners, the timeline.
"""
