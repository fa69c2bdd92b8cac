"""``python -m agentproto``: the command line (see :mod:`agentproto.cli`)."""

from agentproto.cli import main

raise SystemExit(main())
