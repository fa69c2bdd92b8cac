"""Runnable AG-UI examples (the scripted agent is the CLI's and the demo's example stream)."""
