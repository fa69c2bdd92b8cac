"""Runnable ACP examples: a scripted agent (no model) and a client that drives it."""
