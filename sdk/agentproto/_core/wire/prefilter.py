"""A faster regular expression that accepts only what a schema pattern accepts.

Theory of operation
-------------------
Compiled loaders check a ``pattern`` field in two steps: they search a *prefilter*
first, and only when it finds nothing do they search the schema's own pattern (which
then decides, and names the failure). The prefilter may therefore reject more than the
pattern, which costs time only, but must never accept a string the pattern rejects.

:func:`prefilter` rewrites a pattern in two ways that keep that promise:

* capturing groups become non-capturing (nothing reads what they captured);
* greedy quantifiers become possessive (``*`` → ``*+``): the search never backtracks
  into them, so each match it still finds is one the full search finds too.

* a repeated group of alternatives one of which is a single character,
  ``(?:X|B)*+``, is unrolled into ``(?:X*+(?:(?:B)X*+)*+)``: the same strings
  (each is a run of ``X`` and ``B``), but runs of ``X`` are taken by the engine's
  one-character loop instead of a branch per character.

Python's engine does much less work per character under these: the JSON Pointer
pattern of the patch operations, ``^(/([^/~]|~[01])*)*$``, costs about half as
much per path. Where a rewrite could alter what matches (a backreference or a
conditional numbers groups; a negative lookaround would succeed more often; verbose
mode gives whitespace and ``#`` a meaning this rewrite does not track) the pattern is
returned unchanged, as is one that does not compile. Lazy quantifiers are kept as they
are.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["prefilter"]

_BRACES: Final = re.compile(r"\{\d*(?:,\d*)?\}")  # a repeat count, as sre reads one
_UNSAFE_GROUPS: Final = ("=", "!", "<=", "<!", "(", "P=")  # (?=...) ... (?P=name)
_INLINE_FLAGS: Final = re.compile(r"[aiLmsux-]*[:)]")  # (?i) (?s:...) (?-i:...)


def prefilter(pattern: str) -> str:
    """A pattern that matches only where ``pattern`` matches, and is faster to search.

    Returns:
        The rewritten pattern, or ``pattern`` itself where rewriting is not safe.
    """
    try:
        re.compile(pattern)
        rewritten = _rewrite(pattern)
        if rewritten is None:
            return pattern
        rewritten = _unroll(rewritten)
        re.compile(rewritten)
    except (re.error, IndexError, ValueError):  # one this reader misreads stays as it is
        return pattern
    return rewritten


def _rewrite(pattern: str) -> str | None:
    """``pattern`` with plain groups non-capturing and greedy quantifiers possessive;
    ``None`` when it holds a construct the rewrite could change the meaning of."""
    out: list[str] = []
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1 : i + 2].isdigit() and pattern[i + 1] != "0":  # a backreference
                return None
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if char == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
            continue
        if char == "(":
            if not pattern.startswith("?", i + 1):
                out.append("(?:")
                i += 1
                continue
            if pattern.startswith(_UNSAFE_GROUPS, i + 2):  # lookaround, conditional, backref
                return None
            if pattern.startswith("#", i + 2):  # a comment: copied as it is
                end = pattern.index(")", i) + 1
                out.append(pattern[i:end])
                i = end
                continue
            flags = _INLINE_FLAGS.match(pattern, i + 2)
            if flags and "x" in flags.group():  # verbose: whitespace and # mean something
                return None
            out.append("(?")  # (?:...), (?P<name>...), (?>...), flags: kept as they are
            i += 2
            continue
        quantifier = ""
        if char in "*+?":
            quantifier = char
        elif char == "{":
            braces = _BRACES.match(pattern, i)
            quantifier = braces.group() if braces else ""
        if not quantifier:
            out.append(char)
            i += 1
            continue
        i += len(quantifier)
        if pattern.startswith(("?", "+"), i):  # lazy or possessive already: as it is
            quantifier += pattern[i]
            i += 1
        else:
            quantifier += "+"
        out.append(quantifier)
    return "".join(out)


def _unroll(pattern: str) -> str:
    """``pattern`` (rewritten: every plain group non-capturing, every repeat possessive)
    with each ``(?:X|B...)*+`` whose alternatives include one character ``X`` unrolled."""
    out: list[str] = []
    i, size = 0, len(pattern)
    while i < size:
        end = _atom_end(pattern, i)
        if end is not None:  # an escape, a class or a comment: copied as it is
            out.append(pattern[i:end])
            i = end
        elif pattern[i] == "(":
            end = _group_end(pattern, i)
            plain = pattern.startswith("?:", i + 1)  # other groups keep their head in inner
            head = "(?:" if plain else "("
            inner = _unroll(pattern[i + len(head) : end])
            if plain and pattern.startswith("*+", end + 1):
                alternatives = _top_level_alternatives(inner)
                single = next((a for a in alternatives if _one_character(a)), None)
                if single is not None and len(alternatives) > 1:
                    alternatives.remove(single)
                    rest = "|".join(alternatives)
                    out.append(f"(?:{single}*+(?:(?:{rest}){single}*+)*+)")
                    i = end + 3
                    continue
            out.append(f"{head}{inner})")
            i = end + 1
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def _atom_end(pattern: str, i: int) -> int | None:
    """Index just past the escape, class or comment at ``i``; ``None`` if none is there
    (nothing inside one opens, closes or splits a group)."""
    char = pattern[i]
    if char == "\\":
        return i + 2
    if char == "[":
        return _class_end(pattern, i)
    if char == "(" and pattern.startswith("?#", i + 1):
        return pattern.index(")", i) + 1
    return None


def _group_end(pattern: str, start: int) -> int:
    """Index of the parenthesis closing the group opening at ``start``."""
    depth = 0
    i = start
    while True:
        end = _atom_end(pattern, i)
        if end is not None:
            i = end
            continue
        if pattern[i] == "(":
            depth += 1
        elif pattern[i] == ")":
            depth -= 1
            if not depth:
                return i
        i += 1


def _top_level_alternatives(pattern: str) -> list[str]:
    """``pattern`` split at each ``|`` outside its groups and classes."""
    pieces: list[str] = []
    depth = 0
    start = i = 0
    while i < len(pattern):
        end = _atom_end(pattern, i)
        if end is not None:
            i = end
            continue
        char = pattern[i]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and not depth:
            pieces.append(pattern[start:i])
            start = i + 1
        i += 1
    pieces.append(pattern[start:])
    return pieces


def _one_character(piece: str) -> bool:
    """Whether ``piece`` always matches exactly one character: a class, ``.``, a
    literal, or an escaped symbol or class (``\\d``, ``\\w``, ``\\s`` and their negations)."""
    if len(piece) == 1:
        return piece not in "^$|()[]{}*+?\\"
    if piece.startswith("\\"):
        return len(piece) == 2 and (not piece[1].isalnum() or piece[1] in "dDwWsS")
    return piece.startswith("[") and _class_end(piece, 0) == len(piece)


def _class_end(pattern: str, start: int) -> int:
    """Index just past the character class opening at ``start``."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):  # a leading ] is a member
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1
