"""A pause for a person, declared with its node: what it shows, which answers it takes.

A pause node passes one :class:`Pause` to ``@node(..., pauses=...)``: its kind, the
actions a person may take with the decision fields each needs or takes, and the pause's
own request and decision contracts (the ``details`` a request shows and a decision
gives). Everything about decisions derives from the pauses a wiring holds
(``graphs.wiring.pauses_of``): the kinds and actions that exist, the typed resume
payload ``interrupt()`` validates, what the Python API, the fleet and the CLI accept, and
the CLI's hints and prompts. No list elsewhere has to agree with the nodes.

A node branches on a decision through its pause: ``PAUSE.chosen(decision)`` is the action
typed as the pause's ``Literal`` of action names, so a comparison with a name the pause
does not declare (``== "rejct"``) is a mypy error (``comparison-overlap``, strict
equality), not a branch that silently never runs. The ``Literal`` and the actions must name
the same actions, or the pause fails at import.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, Literal, get_args, get_origin

from pydantic import BaseModel
from typing_extensions import TypeVar

from contracts import HumanDecision, RecordedDecision
from contracts.human import NAME_PATTERN

ENVELOPE = ("kind", "schema_version", "interrupt_id", "action", "decided_by")
"""Fields of every decision, whatever its action: they address it and sign it."""
DECISION_FIELDS: tuple[str, ...] = tuple(
    name for name in HumanDecision.model_fields if name not in ENVELOPE
)
"""The fields an action may need or take (``reason``, ``answers``, ``constraints``,
``details``): every other field of ``HumanDecision``, derived from the contract."""
INBOX_RESPONSES = ("accept", "edit", "response", "ignore")
"""The responses of LangGraph's Agent Inbox (``HumanResponse.type``), each of which a pause
maps to one of its actions (:attr:`Action.inbox`)."""
_NAME = re.compile(NAME_PATTERN)
ActionT = TypeVar("ActionT", bound=str, default=str, covariant=True)
"""A pause's action names as a type: its ``Literal`` (plain ``str`` for a pause without one)."""


class PauseDeclarationError(ValueError):
    """A pause or action declared so that no decision could answer it as meant."""


ASKING: ContextVar[tuple[str, Pause[Any] | None] | None] = ContextVar("asking", default=None)
"""The running node's name and the pause it declares (the runner sets it around a body), so
a question put through another pause, which no way in could answer, is refused when asked."""


@dataclass(frozen=True)
class Action:
    """One answer a pause accepts, and the decision fields it needs or may carry.

    ``reason`` may go with any action; ``needs`` makes a field required (``reason`` for a
    rejection, ``details`` for the pause's own decision), ``takes`` allows one that other
    actions refuse (``answers`` and ``constraints`` with a revision).

    ``inbox`` names the Agent Inbox responses that choose this action: ``accept`` and
    ``ignore`` as they come (an ``ignore`` gives the reason an action needs: that it was
    ignored), ``edit`` with the decision fields its arguments give, ``response`` with its
    text as the field ``text_as`` (``reason`` unless said).

    ``details`` is the contract of this action's own ``details`` when it is not the pause's
    ``decision``: actions of one pause that give different data (a revision's instructions,
    an escalation's owner) each declare theirs, and a decision is checked against its own.
    """

    name: str
    needs: tuple[str, ...] = ()
    takes: tuple[str, ...] = ()
    inbox: tuple[str, ...] = ()
    text_as: str = "reason"
    details: type[BaseModel] | None = None

    def __post_init__(self) -> None:
        """Refuse, at import, a name the CLI and contracts cannot spell or an unknown field."""
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise PauseDeclarationError(
                f"action {self.name!r} is not a snake_case name matching {NAME_PATTERN}"
            )
        for field in (*self.needs, *self.takes):
            if field not in DECISION_FIELDS:
                raise PauseDeclarationError(
                    f"action {self.name!r}: {field!r} is no decision field; expected one of "
                    f"{', '.join(DECISION_FIELDS)}"
                )
        if isinstance(self.inbox, str) or not set(self.inbox) <= set(INBOX_RESPONSES):
            raise PauseDeclarationError(
                f"action {self.name!r}: inbox= takes a tuple of Agent Inbox responses "
                f"({', '.join(INBOX_RESPONSES)}); got {self.inbox!r}"
            )
        if self.text_as not in ("reason", "constraints") or not self.allows(self.text_as):
            raise PauseDeclarationError(
                f"action {self.name!r}: text_as={self.text_as!r} must be a text field the "
                "action takes: 'reason', or 'constraints' it takes"
            )
        if self.details is not None and not (
            isinstance(self.details, type) and issubclass(self.details, BaseModel)
        ):
            raise PauseDeclarationError(
                f"action {self.name!r}: details= takes a pydantic model class, not {self.details!r}"
            )
        if self.details is not None and not self.allows("details"):
            raise PauseDeclarationError(
                f"action {self.name!r}: its details contract {self.details.__name__} would "
                "never be given: add 'details' to its needs= or takes="
            )

    def allows(self, field: str) -> bool:
        """Whether a decision with this action may give ``field``."""
        return field == "reason" or field in self.needs or field in self.takes


@dataclass(frozen=True)
class Pause(Generic[ActionT]):
    """A node's pause: its kind, its actions, and the contracts of its own data.

    ``request`` is the model of what this pause alone shows (a request's ``details``),
    ``decision`` the model of what its actions that need or take ``details`` give, unless
    an action declares its own (``Action.details``). All are pydantic models
    (``contracts.Contract``), declared in the node's module.
    ``ids`` starts each request's interrupt id (``<ids>-s<step>.<thread>``); it defaults to
    the kind spelled with dashes, and stays fixed once threads were saved with it.
    ``literal`` is the ``Literal`` of the action names that types ``chosen`` (declare the
    pause as ``Pause[ThatLiteral]`` too: mypy reads the annotation, the import check reads
    ``literal``).
    """

    kind: str
    actions: tuple[Action, ...]
    request: type[BaseModel] | None = None
    decision: type[BaseModel] | None = None
    ids: str = ""
    literal: object = None

    def __post_init__(self) -> None:
        """Refuse, at import, a pause no decision could answer as declared."""
        where = f"pause {self.kind!r}"
        if not isinstance(self.kind, str) or not _NAME.match(self.kind):
            raise PauseDeclarationError(f"{where}: kind must be snake_case ({NAME_PATTERN})")
        if isinstance(self.actions, Action) or not all(
            isinstance(action, Action) for action in self.actions
        ):
            raise PauseDeclarationError(
                f"{where}: actions= takes a tuple of Action(...)s, got {self.actions!r} "
                "(a tuple of one needs a trailing comma: (Action('approve'),))"
            )
        object.__setattr__(self, "actions", tuple(self.actions))
        if not self.actions:
            raise PauseDeclarationError(
                f"{where} declares no actions: a person could not answer it; give it "
                "Action(...)s, e.g. actions=(Action('approve'), Action('reject', "
                "needs=('reason',)))"
            )
        names = [action.name for action in self.actions]
        if len(set(names)) != len(names):
            raise PauseDeclarationError(f"{where}: action names must be unique; got {names}")
        for model, role in ((self.request, "request"), (self.decision, "decision")):
            if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise PauseDeclarationError(f"{where}: {role}= takes a pydantic model class")
        shared = [
            action.name
            for action in self.actions
            if action.allows("details") and action.details is None
        ]
        if shared and self.decision is None:
            raise PauseDeclarationError(
                f"{where}: actions {shared} take details, but the pause declares no "
                "decision contract (decision=..., or each action's own details=...)"
            )
        if self.decision is not None and not shared:
            raise PauseDeclarationError(
                f"{where}: its decision contract {self.decision.__name__} would never be "
                "given: no action needs or takes 'details' without a contract of its own"
            )
        answered = [kind for action in self.actions for kind in action.inbox]
        if len(set(answered)) != len(answered):
            raise PauseDeclarationError(
                f"{where}: each Agent Inbox response chooses one action; got {answered}"
            )
        if self.literal is not None:
            self._check_literal(where, names)
        if not self.ids:
            object.__setattr__(self, "ids", self.kind.replace("_", "-"))

    def _check_literal(self, where: str, names: list[str]) -> None:
        """Refuse, at import, a ``Literal`` that names other actions than the pause declares.

        A name only the ``Literal`` has would type-check a branch no decision can take; a
        name only the actions have would be a decision the body's comparisons never meet.
        """
        spelled = get_args(self.literal) if get_origin(self.literal) is Literal else ()
        if not spelled or not all(isinstance(name, str) for name in spelled):
            raise PauseDeclarationError(
                f"{where}: literal= takes the Literal of its action names, e.g. "
                f"Literal[{', '.join(map(repr, names))}]; got {self.literal!r}"
            )
        if set(spelled) != set(names):
            raise PauseDeclarationError(
                f"{where}: its Literal names {', '.join(spelled)} but its actions are "
                f"{', '.join(names)}; both must name the same actions"
            )

    @property
    def names(self) -> tuple[str, ...]:
        """The actions' names, as declared."""
        return tuple(action.name for action in self.actions)

    def action(self, name: str) -> Action:
        """The declared action ``name``, or PauseDeclarationError naming the declared ones."""
        for action in self.actions:
            if action.name == name:
                return action
        raise PauseDeclarationError(
            f"pause {self.kind!r} has no action {name!r}; declared: {', '.join(self.names)}"
        )

    def chosen(self, decision: HumanDecision | RecordedDecision) -> ActionT:
        """The decision's action, typed as this pause's ``Literal`` for the body to compare.

        A decision reaches a body only through its pause's checks, so its action is one
        the pause declares; one that is not is a decision of another pause, read by mistake.
        """
        if decision.action not in self.names:
            raise PauseDeclarationError(
                f"pause {self.kind!r} has no action {decision.action!r}: the decision is not "
                f"this pause's; declared: {', '.join(self.names)}"
            )
        return decision.action  # type: ignore[return-value]  # checked just above

    def responses(self, allowed: Collection[str] | None = None) -> dict[str, Action]:
        """The action each Agent Inbox response chooses, of the actions ``allowed`` (all)."""
        return {
            response: action
            for action in self.actions
            if allowed is None or action.name in allowed
            for response in action.inbox
        }

    def on_expiry(self, allowed: Collection[str] | None = None) -> Action:
        """The safe default an expired request takes: the action Agent Inbox's ``ignore`` picks.

        Both mean a person who did not engage, so the pause declares it once (``inbox=``).
        A pause without one cannot let its requests expire, and says how to give it one.
        """
        action = self.responses(allowed).get("ignore")
        if action is None or "details" in action.needs:
            raise PauseDeclarationError(
                f"pause {self.kind!r} has no safe default for an expired request (the task "
                "sets policies.decision_timeout): mark the action a person's silence means, "
                "needing no details, with inbox=('ignore',)"
            )
        return action

    def takers(self, field: str) -> tuple[str, ...]:
        """The actions with which ``field`` may be given."""
        return tuple(action.name for action in self.actions if action.allows(field))

    def details_contract(self, action: str) -> type[BaseModel] | None:
        """The contract of ``action``'s details: its own, else the pause's decision's."""
        declared = self.action(action)
        if not declared.allows("details"):
            return None
        return declared.details or self.decision

    def details_contracts(self) -> dict[type[BaseModel], tuple[str, ...]]:
        """Each details contract of the pause, with the actions that give it, in order."""
        found: dict[type[BaseModel], tuple[str, ...]] = {}
        for action in self.actions:
            contract = self.details_contract(action.name)
            if contract is not None:
                found[contract] = (*found.get(contract, ()), action.name)
        return found

    def details_of(self, details: dict[str, Any] | None, action: str | None = None) -> Any:
        """A decision's ``details`` as its action's contract (None stays None).

        Without ``action``, the pause's decision contract (that all its actions share).
        """
        contract = self.decision if action is None else self.details_contract(action)
        if details is None or contract is None:
            return None
        return contract.model_validate(details)
