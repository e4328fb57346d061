"""Serving a trained model: weights and KV-cache memory by format, prefill and decode time,
TTFT/TPOT and throughput at a concurrency, the serving planner and $ per million tokens.
Pure numpy formulas; nothing here imports widgets or plots."""
