"""What machines ask of the console: /healthz, /readyz, /metrics, and each Redis's health."""
