"""How numbers, durations and charts look."""
