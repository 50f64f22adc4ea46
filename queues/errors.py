"""How a script says it did nothing, and the exception each answer becomes.

- The closed set of codes: one of eleven negative integers, each mapped to one
  exception class so callers can catch exactly the situation they care about
  (``except JobNotInState``) or all of them (``except ScriptError``).
- A job left alone because its keys are broken (the job key holds a string, a
  counter field is not a number ...): single-job scripts answer
  ``{"broken", reason}`` (:class:`JobBroken`), bulk scripts list such jobs as
  id, reason pairs (:class:`SkippedJob`). The reasons are defined by
  ``priv/scripts/includes/keyCheck.lua``; :func:`describe_reason` words them.
- A whole-queue key of the wrong type: the script refuses with an error reply
  naming the key (:class:`CorruptKey`, a ``ResponseError``).
- Redis over ``maxmemory`` refuses a script that may write before it starts
  (``OOM ...``, redis-py's ``OutOfMemoryError``; :func:`is_out_of_memory`).
In each case the script changed nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from typing import NoReturn

from redis.exceptions import NoPermissionError, OutOfMemoryError, ResponseError

from queues import codec


class ErrorCode(IntEnum):
    JOB_NOT_EXIST = -1
    JOB_LOCK_NOT_EXIST = -2
    JOB_NOT_IN_STATE = -3
    JOB_PENDING_CHILDREN = -4
    PARENT_JOB_NOT_EXIST = -5
    JOB_LOCK_MISMATCH = -6
    PARENT_JOB_CANNOT_BE_REPLACED = -7
    JOB_BELONGS_TO_JOB_SCHEDULER = -8
    JOB_HAS_FAILED_CHILDREN = -9
    SCHEDULER_JOB_ID_COLLISION = -10
    SCHEDULER_JOB_SLOTS_BUSY = -11


class ScriptError(Exception):
    """A transition script refused to move a job; ``code`` says why."""

    code: ErrorCode

    def __init__(self, command: str, job_id: str | None = None) -> None:
        self.command = command
        self.job_id = job_id
        target = f" for job {job_id!r}" if job_id is not None else ""
        super().__init__(f"{command}{target}: {self.code.name} ({int(self.code)})")


class JobNotExist(ScriptError):
    code = ErrorCode.JOB_NOT_EXIST


class JobLockNotExist(ScriptError):
    code = ErrorCode.JOB_LOCK_NOT_EXIST


class JobNotInState(ScriptError):
    code = ErrorCode.JOB_NOT_IN_STATE


class JobPendingChildren(ScriptError):
    code = ErrorCode.JOB_PENDING_CHILDREN


class ParentJobNotExist(ScriptError):
    code = ErrorCode.PARENT_JOB_NOT_EXIST


class JobLockMismatch(ScriptError):
    code = ErrorCode.JOB_LOCK_MISMATCH


class ParentJobCannotBeReplaced(ScriptError):
    code = ErrorCode.PARENT_JOB_CANNOT_BE_REPLACED


class JobBelongsToJobScheduler(ScriptError):
    code = ErrorCode.JOB_BELONGS_TO_JOB_SCHEDULER


class JobHasFailedChildren(ScriptError):
    code = ErrorCode.JOB_HAS_FAILED_CHILDREN


class SchedulerJobIdCollision(ScriptError):
    code = ErrorCode.SCHEDULER_JOB_ID_COLLISION


class SchedulerJobSlotsBusy(ScriptError):
    code = ErrorCode.SCHEDULER_JOB_SLOTS_BUSY


EXCEPTION_BY_CODE: dict[ErrorCode, type[ScriptError]] = {
    cls.code: cls for cls in ScriptError.__subclasses__()
}


def is_error_code(result: object) -> bool:
    """True when a script's raw answer is one of the closed negative codes."""
    return isinstance(result, int) and -11 <= result <= -1


def error_for(code: int, command: str, job_id: str | None = None) -> ScriptError:
    """The exception for a script's negative answer (ValueError if outside the set)."""
    return EXCEPTION_BY_CODE[ErrorCode(code)](command, job_id)


def raise_for_code(result: object, command: str, job_id: str | None = None) -> None:
    """Raise the matching exception when ``result`` is a closed error code, or
    :class:`JobBroken` when it is a single-job script's broken-job answer."""
    if is_error_code(result):
        assert isinstance(result, int)
        raise error_for(result, command, job_id)
    reason = broken_reason(result)
    if reason is not None:
        raise JobBroken(command, job_id, reason)


# -- jobs left alone because their keys are broken ------------------------------

_FIXED_REASONS = {
    "missing": "its hash is missing",
    "not_a_job": "its hash has no job fields (neither name nor timestamp)",
}


def describe_reason(reason: str) -> str:
    """A broken-job reason (keyCheck.lua's codes) in plain words."""
    kind, _, detail = reason.partition(":")
    if reason in _FIXED_REASONS:
        return _FIXED_REASONS[reason]
    if kind == "type":
        return f"its key is a {detail}, not a job hash"
    if kind == "field":
        return f"its {detail} field is not a number"
    if kind == "key":
        return f"its {detail} key has the wrong type"
    if kind == "states":
        return f"it is in more than one state ({detail.replace(',', ' and ')})"
    return f"its keys are broken ({reason})"


def broken_reason(result: object) -> str | None:
    """The reason of a single-job script's ``{"broken", reason}`` answer, else None."""
    if isinstance(result, list | tuple) and len(result) == 2 and codec.text(result[0]) == "broken":
        return codec.text(result[1]) or ""
    return None


class JobBroken(Exception):
    """A script left a job where it was because its keys are broken."""

    def __init__(self, command: str, job_id: str | None, reason: str) -> None:
        self.command = command
        self.job_id = job_id
        self.reason = reason
        target = f"job {job_id}" if job_id is not None else "the job"
        super().__init__(f"{command}: {target} was left alone: {describe_reason(reason)}")


@dataclass(frozen=True, slots=True)
class SkippedJob:
    """One job a bulk script left where it was, and why (a keyCheck.lua reason)."""

    job_id: str
    reason: str

    def describe(self) -> str:
        return describe_reason(self.reason)


def decode_skipped(flat: object) -> list[SkippedJob]:
    """A bulk script's skipped jobs (a flat list id, reason, id, reason ...)."""
    if not isinstance(flat, list | tuple):
        return []
    texts = [codec.text(item) or "" for item in flat]
    pairs = zip(texts[::2], texts[1::2], strict=False)
    return [SkippedJob(job_id, reason) for job_id, reason in pairs]


# -- refusals that arrive as error replies --------------------------------------

# keyCheck.lua's structure_refusal: "WRONGTYPE key <key> holds a <type>,
# expected a <type>; nothing was changed".
_CORRUPT_KEY = re.compile(
    r"^WRONGTYPE key (?P<key>.+) holds a (?P<actual>.+), "
    r"expected a (?P<expected>[a-z]+); nothing was changed"
)
_EXPECTED_WORDS = {
    "list": "a list",
    "zset": "a sorted set",
    "hash": "a hash",
    "set": "a set",
    "stream": "a stream",
    "counter": "an integer counter",
}


class CorruptKey(ResponseError):
    """A whole-queue key (``failed``, ``wait``, ``meta`` ...) has the wrong type,
    so the script refused to run: nothing was changed."""

    def __init__(self, key: str, actual: str, expected: str) -> None:
        self.key = key
        self.actual = actual
        self.expected = expected
        wanted = _EXPECTED_WORDS.get(expected, f"a {expected}")
        super().__init__(
            f"Nothing was changed: the key {key} holds a {actual}, where the queue keeps "
            f"{wanted}. Repair or delete that key in Redis."
        )


def raise_refusal(error: ResponseError) -> NoReturn:
    """Raise the :class:`CorruptKey` a script's error reply describes (chained
    to the reply), or the error itself when it is another one."""
    match = _CORRUPT_KEY.match(str(error))
    if match is None:
        raise error
    raise CorruptKey(match["key"], match["actual"], match["expected"]) from error


# How Redis says its ACL refused a command: NOPERM, or (Redis 7.0, a command
# inside a script) an ERR naming the script's user.
_SCRIPT_REFUSED = "The user executing the script can't"


def is_no_permission(error: BaseException) -> bool:
    """Whether Redis refused a command for the user's ACL (``NOPERM``; redis-py
    raises ``NoPermissionError``, a raw reader a ResponseError; Redis 7.0
    answers a script's refused command with ``ERR The user executing the
    script can't ...``)."""
    if isinstance(error, NoPermissionError):
        return True
    text = str(error)
    return isinstance(error, ResponseError) and (
        text.startswith("NOPERM") or _SCRIPT_REFUSED in text
    )


def is_out_of_memory(error: BaseException) -> bool:
    """Whether Redis refused because it is over ``maxmemory`` (an ``OOM`` error
    reply; redis-py raises ``OutOfMemoryError``, a raw reader a ResponseError)."""
    if isinstance(error, OutOfMemoryError):
        return True  # redis-py strips the "OOM " it classified the reply by
    return isinstance(error, ResponseError) and str(error).startswith("OOM ")
