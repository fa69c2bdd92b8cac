"""The ``agentproto`` command line.

``agentproto replay [FILE] [--json]`` folds a recorded AG-UI stream into its final
messages, activities and state; ``agentproto validate [FILE] [--json]`` reports its
warnings and fatal error; ``agentproto acp replay [FILE] [--json]`` folds a recorded
ACP log. Without FILE each uses a bundled example. Each command
is one function taking the parsed arguments and returning the exit status;
:func:`_build_parser` declares them. To add a command, write its function and
declare it in :func:`_build_parser` (a new group with :func:`_group`).

Exit status: whatever the command returns; 2 on a usage error (argparse's
convention), 0 for ``--help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

__all__ = ["main"]

Command = Callable[[argparse.Namespace], int]


def _agui_replay(args: argparse.Namespace) -> int:
    """``agentproto replay``: print the final conversation of a recorded AG-UI stream."""
    from agentproto.agui._replay import run_replay

    return run_replay(args.file, as_json=args.json)


def _agui_validate(args: argparse.Namespace) -> int:
    """``agentproto validate``: report every warning and the fatal error of a stream."""
    from agentproto.agui._replay import run_validate

    return run_validate(args.file, as_json=args.json)


_AGUI_FILE_HELP = (
    "an AG-UI recording: SSE, JSON Lines, a JSON array of events or a conformance "
    "stream file, detected from its content ('-' for stdin; default: a bundled example)"
)


def _acp_replay(args: argparse.Namespace) -> int:
    """``agentproto acp replay``: print the final state of each session of a log."""
    from agentproto.acp._replay import run_replay

    return run_replay(args.file, as_json=args.json)


def _group(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """Declare a command group (``agentproto NAME ...``) and return its sub-parsers."""
    parser = commands.add_parser(name, help=help_text, description=help_text)
    return parser.add_subparsers(dest="command", required=True, metavar="COMMAND")


def _build_parser() -> argparse.ArgumentParser:
    """The argument parser: every group, every command, with its handler as ``handler``."""
    parser = argparse.ArgumentParser(
        prog="agentproto",
        description="Typed tools for the AG-UI and ACP v2 agent protocols.",
    )
    groups = parser.add_subparsers(dest="group", required=True, metavar="COMMAND")

    exit_codes = "Exit 0 without a fatal error (warnings and a RUN_ERROR included), 1 on a "
    exit_codes += "fatal protocol error, 2 on a usage or I/O error."
    agui_replay = groups.add_parser(
        "replay",
        help="fold a recorded AG-UI stream into its final messages, activities and state",
        description="Replay a recorded AG-UI stream through the consumer pipeline and print "
        "its final messages, activities, state, runs and diagnostics. " + exit_codes,
    )
    agui_replay.add_argument("file", nargs="?", metavar="FILE", help=_AGUI_FILE_HELP)
    agui_replay.add_argument("--json", action="store_true", help="print one JSON object")
    agui_replay.set_defaults(handler=_agui_replay)
    validate = groups.add_parser(
        "validate",
        help="report every warning and the fatal error of a recorded AG-UI stream",
        description="Check a recorded AG-UI stream against the protocol and print each "
        "warning and the fatal error with the event's 0-based index and wire path. " + exit_codes,
    )
    validate.add_argument("file", nargs="?", metavar="FILE", help=_AGUI_FILE_HELP)
    validate.add_argument("--json", action="store_true", help="print one JSON object")
    validate.set_defaults(handler=_agui_validate)

    acp = _group(groups, "acp", "ACP v2 (agent <-> code editor, JSON-RPC over NDJSON)")
    replay = acp.add_parser(
        "replay",
        help="print the final state of each session of a recorded log",
        description=(
            "Read JSON-RPC 2.0 messages, one per line (session/update notifications and "
            "session/request_permission requests; other messages are ignored with a "
            "diagnostic), and print the final state of each session. Exit 0 when the log "
            "was read, 1 on a fatal input error, 2 on a usage or I/O error."
        ),
    )
    replay.add_argument(
        "file",
        nargs="?",
        metavar="FILE.ndjson",
        help="the log ('-' for stdin; default: a bundled example log)",
    )
    replay.add_argument(
        "--json",
        action="store_true",
        help='print {"sessions": ..., "diagnostics": [...]} as one compact JSON object',
    )
    replay.set_defaults(handler=_acp_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments after the program name (default ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse exits on usage errors (2) and --help (0)
        return stop.code if isinstance(stop.code, int) else 2
    handler: Command = args.handler
    return handler(args)
