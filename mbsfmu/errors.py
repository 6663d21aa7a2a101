"""The project's own errors: every one names where the problem is and what is wrong."""

from __future__ import annotations

import reprlib
from dataclasses import dataclass

BRIEF_CHARS = 60  # longest rendering of a user's value in a message
MAX_LISTED = 50  # problems listed in a message (an alias bomb can make thousands)
_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxlong, _BRIEF.maxother = 2, 40, 40, 40
_BRIEF.maxlist = _BRIEF.maxtuple = _BRIEF.maxdict = _BRIEF.maxset = _BRIEF.maxfrozenset = 4


def brief(value: object, limit: int = BRIEF_CHARS) -> str:
    """repr(value) bounded in depth, items and length (at most ``limit`` characters), so an
    error message about a hostile value (a YAML alias bomb expanding to 9^8 items, a 4000-digit
    integer) costs microseconds and a line of text."""
    try:
        text = _BRIEF.repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is named by its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Problem:
    """One problem at ``path`` (keys and list indices into the model file), e.g.
    ("bodies", 2, "inertia", "Ixx"); ``line`` is the 1-based file line where known."""

    path: tuple
    message: str
    line: int | None = None

    def where(self) -> str:
        out = ""
        for key in self.path:
            out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
        return out or "(top level)"


class MbsError(Exception):
    """Base class of mbsfmu's errors."""

    exit_code = 2  # the command line's exit code for it: 2 bad input (1: a run stopped, an output not written)


class ModelError(MbsError):
    """A model that cannot be built; lists every problem found, each with its location."""

    noun = "model"  # what the file is, for the heading ("3 problem(s) in model m.yaml")

    def __init__(self, problems: list[Problem], source: str = "<model>"):
        self.problems = list(problems)
        self.source = source
        lines = [f"{len(self.problems)} problem(s) in {self.noun} {source}:"]
        for p in self.problems[:MAX_LISTED]:
            loc = f"{source}:{p.line}: " if p.line else f"{source}: "
            lines.append(f"  {loc}{p.where()}: {p.message}")
        if len(self.problems) > MAX_LISTED:  # all are in .problems; a screenful is what a person reads
            lines.append(f"  ... and {len(self.problems) - MAX_LISTED} more (the first {MAX_LISTED} are listed)")
        super().__init__("\n".join(lines))

    @classmethod
    def wrong_kind(cls, source: str, message: str) -> ModelError:
        """The error for a file of another kind given as this one (a scenario given as a model, a
        model as a scenario): one message saying what the file is and what to do, not a list of
        unknown and missing keys."""
        err = cls([Problem((), message)], source)
        err.args = (f"{source}: {message}",)
        return err


class InputError(MbsError, ValueError):
    """A call argument of the wrong size or with non-finite values."""


def did_you_mean(word: object, options) -> str:
    """' (did you mean 'x'?)' for the closest of options to word, else ''."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
