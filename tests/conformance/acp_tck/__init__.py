"""The ACP v2 conformance kit's requirements, checked against agents run as subprocesses.

The requirement ids, tiers and capability gates are those of the ACP maintainers'
conformance kit (``agentclientprotocol/acp-tck``, ``src/tck/v2/requirements.py``); the
summaries, the probes and the harness are this repository's own. ``registry`` lists the
ids, ``harness`` runs an agent over stdio with a mock client, ``checks`` judges each id,
``targets`` names the agents, ``runner`` prints the per-tier table
(``python -m tests.conformance.acp_tck.runner``).
"""
