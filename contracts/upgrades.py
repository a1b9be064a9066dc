"""Upgraders: how a payload stored at an older version of a contract becomes the current one.

Each ``@upgrader`` bridges one version step; a class's steps are checked to chain to its
current version when the class is defined, so a broken chain fails at import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TypeVar

VERSION_PATTERN = re.compile(r"^[1-9][0-9]*\.[0-9]+$")
"""Versions are ``MAJOR.MINOR`` strings, as written into every stored payload."""


def version_key(version: str) -> tuple[int, ...]:
    """A ``MAJOR.MINOR`` version as numbers, so that 1.10 comes after 1.9."""
    return tuple(int(part) for part in version.split("."))


UPGRADE_MARK = "__contract_upgrade__"
"""Attribute an ``@upgrader`` leaves on its function: the (from, to) versions it bridges."""

C = TypeVar("C")


def upgrader(*, from_version: str, to_version: str) -> Callable[[C], C]:
    """Declare a classmethod that turns a ``from_version`` payload into a ``to_version`` one.

    Goes above ``@classmethod``. The method receives the stored payload as a dict (values
    as read: plain data, or contract instances for nested parts) and returns the payload of
    the next version; ``schema_version`` is set for it. Upgraders chain, so each one only
    bridges one step and old steps never need rewriting.
    """
    for version in (from_version, to_version):
        if not VERSION_PATTERN.match(version):
            raise ValueError(f"upgrader version {version!r} is not MAJOR.MINOR, e.g. '1.0'")
    if from_version == to_version:
        raise ValueError(f"upgrader from {from_version!r} to itself upgrades nothing")

    def mark(method: C) -> C:
        if not isinstance(method, classmethod):
            raise TypeError("@upgrader(...) must be placed above @classmethod")
        setattr(method.__func__, UPGRADE_MARK, (from_version, to_version))
        return method

    return mark


def upgrade_steps(cls: type, current: str) -> dict[str, tuple[str, str]]:
    """The declared upgraders of a class as ``from -> (to, method name)``, checked to chain.

    ``current`` is the version the class writes (its ``VERSION``); every step must lead there.

    Checked when the class is defined, so a broken chain (a step that leads nowhere, a
    loop, two ways out of one version) fails at import instead of on some stored thread.
    """
    methods: dict[str, tuple[str, str]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, classmethod):
                mark = getattr(value.__func__, UPGRADE_MARK, None)
                if mark is not None:
                    methods[name] = mark
    steps: dict[str, tuple[str, str]] = {}
    for name, (source, target) in sorted(methods.items()):
        if source in steps:
            raise TypeError(
                f"{cls.__name__} declares two upgraders from {source!r}: "
                f"{steps[source][1]} and {name}"
            )
        steps[source] = (target, name)
    if current in steps:
        raise TypeError(
            f"{cls.__name__} upgrades from its current version {current!r} "
            f"({steps[current][1]}); raise VERSION to the version that upgrader produces"
        )
    for source in steps:
        seen = [source]
        version = source
        while version != current:
            if version not in steps:
                raise TypeError(
                    f"{cls.__name__}: upgrading {source!r} stops at {version!r}, which is neither "
                    f"the current version {current!r} nor upgraded further"
                )
            version = steps[version][0]
            if version in seen:
                raise TypeError(f"{cls.__name__}: upgraders loop through {version!r}")
            seen.append(version)
    return steps


def distance(steps: Mapping[str, tuple[str, str]], version: str, current: str) -> int:
    """How many upgrader steps lead from ``version`` to ``current``."""
    hops = 0
    while version != current:
        version = steps[version][0]
        hops += 1
    return hops
