"""Training: models, data, the per-worker loop shared by every sync scheme, the worker
process, the job options every process agrees on, and the local launcher behind `inart train`."""
