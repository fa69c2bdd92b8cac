"""A typed view of the state: the application's own type, re-read after every change.

Theory of operation. AG-UI state is any JSON value the agent chooses; the schema
says nothing about its shape. :class:`StateView` reads it as a type the
application gives (an attrs class, or any type a cattrs structure hook builds),
lazily: the conversation counts the changes to its state (every
``STATE_SNAPSHOT`` and every ``STATE_DELTA`` that applied), and the view
structures a fresh copy of the state the first time :attr:`StateView.value` is
read after a change, then returns that object until the state changes again.

When the state stops fitting the type, :attr:`StateView.value` raises
:class:`StateShapeError` (a :class:`~agentproto.SchemaError`) naming the JSON
Pointer into the state where it stopped fitting, every problem listed; it keeps
raising until a later change makes the state fit again. A value structured from
an older state is never returned for a newer one.

The default converter takes JSON as it is: a ``str`` field takes only a string,
an ``int`` field only an integer (not a boolean), a ``float`` field a number, a
``bool`` field only a boolean, an attrs class or a mapping only an object, a list
only an array (cattrs' own converter would read ``"3"`` as ``3`` and an object as
the list of its keys). Members of the state the type does not declare are ignored
(pass ``cattrs.Converter(forbid_extra_keys=True)`` to refuse them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import attrs
import cattrs
from cattrs.cols import is_mapping, is_sequence, list_structure_factory, mapping_structure_factory

from agentproto._core.errors import StateShapeError
from agentproto._core.wire.checks import escape_pointer
from agentproto.agui._consume.consumer import Consumer
from agentproto.agui._reduce.conversation import Conversation

__all__ = ["StateView"]

T = TypeVar("T")

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def _json_type(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return "integer"
    if isinstance(value, float):
        return "number"
    return _JSON_TYPES.get(value.__class__, type(value).__name__)


def _scalar(name: str, fits: Callable[[Any], bool]) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        if not fits(value):
            raise TypeError(f"expected {name}, got {_json_type(value)}")
        return value

    return hook


def _checked(kind: str, cls: type, make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A hook factory: cattrs' own hook for the type, after checking the JSON container."""

    def factory(tp: Any) -> Callable[[Any, Any], Any]:
        inner = make(tp)

        def hook(value: Any, target: Any) -> Any:
            if value.__class__ is not cls:
                raise TypeError(f"expected {kind}, got {_json_type(value)}")
            return inner(value, target)

        return hook

    return factory


def make_state_converter() -> cattrs.Converter:
    """A cattrs converter that takes JSON as it is (the default of :class:`StateView`):
    no scalar coerced, an attrs class or mapping only from an object, a sequence only
    from an array."""
    converter = cattrs.Converter()
    converter.register_structure_hook_factory(
        attrs.has, _checked("object", dict, converter.gen_structure_attrs_fromdict)
    )
    converter.register_structure_hook_factory(
        is_mapping, _checked("object", dict, lambda tp: mapping_structure_factory(tp, converter))
    )
    converter.register_structure_hook_factory(
        is_sequence, _checked("array", list, lambda tp: list_structure_factory(tp, converter))
    )
    converter.register_structure_hook(str, _scalar("string", lambda v: isinstance(v, str)))
    converter.register_structure_hook(bool, _scalar("boolean", lambda v: isinstance(v, bool)))
    converter.register_structure_hook(
        int, _scalar("integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
    )
    converter.register_structure_hook(
        float,
        _scalar("number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    )
    return converter


class StateView(Generic[T]):
    """The state of a conversation, read as the application's type.

    Args:
        source: the :class:`~agentproto.agui.Conversation` (or the
            :class:`~agentproto.agui.Consumer` whose conversation) to read.
        tp: the type to read the state as: an attrs class, or any type the
            converter (or ``hook``) can build.
        converter: the cattrs converter to structure with; default a strict one
            (see the module notes). It is not changed.
        hook: a cattrs structure hook for ``tp`` (``hook(state, tp)``), for a type
            cattrs cannot build by itself.

    Example::

        view = StateView(consumer, Plan)
        consumer.feed_json(event)
        view.value  # a Plan, structured after the latest state change
    """

    def __init__(
        self,
        source: Conversation | Consumer,
        tp: type[T],
        *,
        converter: cattrs.Converter | None = None,
        hook: Callable[[Any, Any], T] | None = None,
    ) -> None:
        self._source = source
        self._type = tp
        self._converter = make_state_converter() if converter is None else converter
        if hook is not None:
            self._converter = self._converter.copy()
            self._converter.register_structure_hook(tp, hook)
        self._revision = -1
        self._value: Any = None
        self._error: StateShapeError | None = None

    @property
    def value(self) -> T:
        """The state as ``tp``, structured again when the state changed since the
        last read (a new object then; the same one otherwise).

        Raises:
            StateShapeError: the current state does not fit ``tp``.
        """
        source = self._source
        conversation = source.conversation if isinstance(source, Consumer) else source
        revision = conversation.state_revision
        if revision != self._revision:
            state = conversation.state_json()
            try:
                self._value, self._error = self._converter.structure(state, self._type), None
            except Exception as exc:  # cattrs' errors, or whatever a hook raises
                self._value, self._error = None, self._shape_error(exc)
            self._revision = revision
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[no-any-return]

    def fits(self) -> bool:
        """Whether the current state fits ``tp`` (reads :attr:`value`)."""
        try:
            _ = self.value
        except StateShapeError:
            return False
        return True

    def _shape_error(self, exc: Exception) -> StateShapeError:
        name = getattr(self._type, "__qualname__", repr(self._type))
        problems = [
            StateShapeError(keyword, path, f"the state does not fit {name}: {detail}")
            for path, keyword, detail in _problems(exc, "")
        ]
        first, *more = problems or [StateShapeError("type", "", f"the state does not fit {name}")]
        error = StateShapeError(first.keyword, first.location, first.detail, more=more)
        error.__cause__ = exc
        return error


def _problems(exc: BaseException, path: str) -> Iterator[tuple[str, str, str]]:
    """(JSON Pointer, keyword, detail) of each leaf problem in a cattrs error tree."""
    if isinstance(exc, cattrs.BaseValidationError):
        for sub in exc.exceptions:
            where = path
            for note in getattr(sub, "__notes__", ()):
                if isinstance(note, cattrs.AttributeValidationNote):
                    where = f"{path}/{escape_pointer(note.name)}"
                elif isinstance(note, cattrs.IterableValidationNote):
                    where = f"{path}/{escape_pointer(str(note.index))}"
            yield from _problems(sub, where)
    elif isinstance(exc, KeyError) and exc.args:  # the note named the member already
        yield path, "required", f"missing required member {exc.args[0]!r}"
    else:
        yield path, "type", str(exc) or type(exc).__name__
