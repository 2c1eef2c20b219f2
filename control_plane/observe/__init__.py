"""Observability: Prometheus metrics of every long-running inart process and the live web
view (docs/observability.md)."""
