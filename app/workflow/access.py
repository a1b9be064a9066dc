"""How the Workflow's public methods reach storage: errors translated, writes under the lock."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Generator
from typing import Any, Protocol, TypeVar, cast

from app.settings import Settings
from app.storage.backends import Backend, storage_errors
from app.workflow.ids import check_thread_id, new_thread_id

_Method = TypeVar("_Method", bound=Callable[..., Any])


class HoldsStorage(Protocol):
    """What a decorated method's owner has: its settings, and the storage it opens."""

    settings: Settings

    @property
    def backend(self) -> Backend:
        """The open storage (opened on first use): its thread lock is taken here."""
        ...


def one_writer(method: _Method) -> _Method:
    """Run a method that writes a thread while this process holds the thread's lock.

    Everything the method checks (does the thread exist, has it finished, is it waiting)
    is read inside the lock, so of two processes racing on one thread exactly one proceeds
    and the other gets ThreadBusy having changed nothing. A lost database connection ends
    the call with DatabaseUnavailable. ``thread_id=None`` (a new thread) is named first.
    A generator method holds the lock from its first item to its end (or its ``close()``).
    """
    signature = inspect.signature(method)

    def named(self: HoldsStorage, args: Any, kwargs: Any) -> tuple[inspect.BoundArguments, str]:
        bound = signature.bind(self, *args, **kwargs)
        thread_id = bound.arguments.get("thread_id")
        if thread_id is None:
            thread_id = bound.arguments["thread_id"] = new_thread_id()
        return bound, check_thread_id(thread_id)

    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def streaming(self: HoldsStorage, *args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            bound, thread_id = named(self, args, kwargs)
            with self.backend.writing(thread_id):
                return (yield from method(*bound.args, **bound.kwargs))

        return cast(_Method, streaming)

    @functools.wraps(method)
    def locked(self: HoldsStorage, *args: Any, **kwargs: Any) -> Any:
        bound, thread_id = named(self, args, kwargs)
        with self.backend.writing(thread_id):
            return method(*bound.args, **bound.kwargs)

    return cast(_Method, locked)


def storage(method: _Method) -> _Method:
    """Report a damaged database or a full disk as the project's error, naming the file.

    Every public method that reads or writes storage is wrapped; nested calls pass the
    translated error through unchanged. A generator method's items are guarded as they come.
    """
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def streaming(self: HoldsStorage, *args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            with storage_errors(self.settings):
                return (yield from method(self, *args, **kwargs))

        return cast(_Method, streaming)

    @functools.wraps(method)
    def guarded(self: HoldsStorage, *args: Any, **kwargs: Any) -> Any:
        with storage_errors(self.settings):
            return method(self, *args, **kwargs)

    return cast(_Method, guarded)
