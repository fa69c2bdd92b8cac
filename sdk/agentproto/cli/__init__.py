"""The ``agentproto`` command line: the argparse entry and its dispatch.

Layout: this module declares the parser and dispatches; :mod:`agentproto.cli.agui`
holds ``replay`` and ``validate``, :mod:`agentproto.cli.acp` holds ``acp replay``,
:mod:`agentproto.cli.acp_session` ``acp serve-example`` and ``acp run``
(:mod:`agentproto.cli.acp_agent` is the agent ``serve-example`` serves),
:mod:`agentproto.cli._text` the bounded output helpers they share; ``data/`` holds
the bundled example recordings (package data, read with ``importlib.resources``). The commands
are the I/O edge (files, stdin, stdout, exit status) around the sans-I/O core
(:mod:`agentproto.agui._history.replay`, :class:`agentproto.acp.SessionStore`).

``agentproto replay [FILE] [--json]`` folds a recorded AG-UI stream into its final
messages, activities and state; ``agentproto validate [FILE] [--json]`` reports its
warnings and fatal error; ``agentproto acp replay [FILE] [--json]`` folds a recorded
ACP log. Without FILE each uses a bundled example. Each command is one function
taking the parsed arguments and returning the exit status, which imports its
module when it runs (``--help`` loads no protocol code); :func:`build_parser`
declares them. To add a command, write its function in the protocol's module and
declare it in :func:`build_parser` with :func:`_command` (a new group with
:func:`_group`).

Exit status: whatever the command returns (0 without a fatal error, 1 on a fatal
error in the input's content, 2 on an I/O error); 2 on a usage error (argparse's
convention), 0 for ``--help`` and ``--version``. No input file makes a command show a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

__all__ = ["build_parser", "main"]

Command = Callable[[argparse.Namespace], int]


def _agui_replay(args: argparse.Namespace) -> int:
    """``agentproto replay``: print the final conversation of a recorded AG-UI stream."""
    from agentproto.cli.agui import run_replay

    return run_replay(args.file, as_json=args.json)


def _agui_validate(args: argparse.Namespace) -> int:
    """``agentproto validate``: report every warning and the fatal error of a stream."""
    from agentproto.cli.agui import run_validate

    return run_validate(args.file, as_json=args.json)


_AGUI_FILE_HELP = (
    "an AG-UI recording: SSE, JSON Lines, a JSON array of events or a conformance "
    "stream file, detected from its content ('-' for stdin; default: a bundled example)"
)


def _acp_replay(args: argparse.Namespace) -> int:
    """``agentproto acp replay``: print the final state of each session of a log."""
    from agentproto.cli.acp import run_replay

    return run_replay(args.file, as_json=args.json)


def _acp_serve_example(args: argparse.Namespace) -> int:
    """``agentproto acp serve-example``: the scripted example agent on stdio."""
    from agentproto.cli.acp_session import run_serve_example

    return run_serve_example()


def _acp_run(args: argparse.Namespace) -> int:
    """``agentproto acp run -- CMD ...``: drive an agent through one prompt."""
    from agentproto.cli.acp_session import run_command

    command = list(args.agent_command)
    if command[:1] == ["--"]:
        command = command[1:]
    return run_command(
        command, prompt=args.prompt, approve=not args.deny, as_json=args.json, timeout=args.timeout
    )


def _declare_acp_sessions(acp: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``acp serve-example`` and ``acp run``."""
    serve = acp.add_parser(
        "serve-example",
        help="run the scripted example ACP agent on stdio",
        description="Serve the scripted example agent (no model) on stdin/stdout until the "
        "client closes stdin.",
    )
    serve.set_defaults(handler=_acp_serve_example)
    run = acp.add_parser(
        "run",
        help="drive an agent command through one prompt and print the session's final state",
        description="Start CMD, initialize, open a session in the current directory, send one "
        "prompt (permission requests approved with their first allow option, or declined with "
        "--deny) and print the stop reason and the session's final state. Exit 0 when the turn "
        "ended, 1 when the agent failed the protocol, 2 on a usage error.",
    )
    run.add_argument("--prompt", default="hello", help="the prompt text (default: hello)")
    run.add_argument("--deny", action="store_true", help="decline every permission request")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument("--timeout", type=float, default=60.0, help="seconds per step (default 60)")
    run.add_argument("agent_command", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    run.set_defaults(handler=_acp_run)


class _Version(argparse.Action):
    """``--version``: print ``agentproto VERSION`` and exit 0 (the version read only then)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from agentproto import __version__

        sys.stdout.write(f"agentproto {__version__}\n")
        parser.exit()


def _group(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """Declare a command group (``agentproto NAME ...``) and return its sub-parsers."""
    parser = commands.add_parser(name, help=help_text, description=help_text)
    return parser.add_subparsers(dest="command", required=True, metavar="COMMAND")


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    handler: Command,
    *,
    help_text: str,
    description: str,
    file: tuple[str, str],
    json_help: str = "print one JSON object",
) -> None:
    """Declare a command taking an optional FILE (``file``: metavar, help) and ``--json``."""
    parser = commands.add_parser(name, help=help_text, description=description)
    parser.add_argument("file", nargs="?", metavar=file[0], help=file[1])
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.set_defaults(handler=handler)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: every group, every command, with its handler as ``handler``.

    Public so that the documentation renders the command reference from it (the
    ``argparse`` directive of ``docs/_ext/cli_reference.py``), never a copy that drifts.
    """
    parser = argparse.ArgumentParser(
        prog="agentproto",
        description="Typed tools for the AG-UI and ACP v2 agent protocols.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    groups = parser.add_subparsers(dest="group", required=True, metavar="COMMAND")

    exit_codes = "Exit 0 without a fatal error (warnings and a RUN_ERROR included), 1 on a "
    exit_codes += "fatal protocol error, 2 on a usage or I/O error."
    _command(
        groups,
        "replay",
        _agui_replay,
        help_text="fold a recorded AG-UI stream into its final messages, activities and state",
        description="Replay a recorded AG-UI stream through the consumer pipeline and print "
        "its final messages, activities, state, runs and diagnostics. " + exit_codes,
        file=("FILE", _AGUI_FILE_HELP),
    )
    _command(
        groups,
        "validate",
        _agui_validate,
        help_text="report every warning and the fatal error of a recorded AG-UI stream",
        description="Check a recorded AG-UI stream against the protocol and print each "
        "warning and the fatal error with the event's 0-based index and wire path. " + exit_codes,
        file=("FILE", _AGUI_FILE_HELP),
    )

    acp = _group(groups, "acp", "ACP v2 (agent <-> code editor, JSON-RPC over NDJSON)")
    _command(
        acp,
        "replay",
        _acp_replay,
        help_text="print the final state of each session of a recorded log",
        description=(
            "Read JSON-RPC 2.0 messages, one per line (session/update notifications and "
            "session/request_permission requests; other messages are ignored with a "
            "diagnostic), and print the final state of each session. Exit 0 when the log "
            "was read, 1 on a fatal input error, 2 on a usage or I/O error."
        ),
        file=("FILE.ndjson", "the log ('-' for stdin; default: a bundled example log)"),
        json_help='print {"sessions": ..., "diagnostics": [...]} as one compact JSON object',
    )
    _declare_acp_sessions(acp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments after the program name (default ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse exits on usage errors (2) and --help (0)
        return stop.code if isinstance(stop.code, int) else 2
    handler: Command = args.handler
    return handler(args)
