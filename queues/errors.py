"""The closed set of codes a transition script returns when it cannot complete.

Scripts answer with one of eleven negative integers, never anything else; each
maps to one exception class so callers can catch exactly the situation they
care about (``except JobNotInState``) or all of them (``except ScriptError``).
"""

from __future__ import annotations

from enum import IntEnum


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
    """Raise the matching exception when ``result`` is a closed error code."""
    if is_error_code(result):
        assert isinstance(result, int)
        raise error_for(result, command, job_id)
