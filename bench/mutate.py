"""Mutation testing of the modules whose mistakes cost most: change one thing
(a comparison, a bound, a condition, a write), run the tests that cover the
module, and count the changes no test noticed (docs/mutation.md).

    ./run.sh mutate [module ...]          # niced; no module: every one (an hour or more)
    ./run.sh mutate --list                # the modules, their tests and mutant counts
    ./run.sh mutate --report              # the last results as docs/mutation.md's table

Python modules are mutated by cosmic-ray's operators (its AST mutators, used
as a library), trimmed to the ones that make a plausible mistake: a boundary
moved (``<`` and ``<=``), a condition negated, ``and``/``or`` swapped, a
number off by one, a loop that never runs, a handler that catches nothing.
Not mutated: annotations (``from __future__ import annotations`` makes them
strings nobody evaluates) and the numbers of module-level constants (a
constant's value is a decision its own tests pin where it matters). Lua
scripts, for which no maintained mutator exists, are mutated here (see
:func:`lua_mutants`): comparisons flipped, ``and``/``or`` swapped, a ``not``
dropped, a number off by one, a call statement (a ``redis.call`` write, a
wake-up, an event) deleted.

Each mutant runs in a copy of the checkout (build/mutate/tree: a crash never
leaves a mutant in the work tree), in a process forked from one that has
already imported pytest, Django, redis and the test plugins: a fresh
``python -m pytest`` costs 5-8 s of start-up per mutant on the 2-core
machine, a fork under 1 s. The child imports the project itself, so code run
at import (decorator factories, constants) is mutated too. The unmutated
run records under coverage which test ran each line of a Python module; a
mutant runs those tests first, and the module's whole test files only when it
survives them (or no test was seen running its line): most mutants die in the
first few tests, and a survivor is always one the whole files let through.
A mutant is killed when a test fails or the run exceeds its timeout; it
survives when every test passes. Survivors judged equivalent (no input can
tell them apart from the original) are listed in :data:`EQUIVALENT` with the
reason, and left out of the kill rate's denominator.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutate"  # --work changes it (two runs side by side)
TREE = WORK / "tree"
# The longest one test may run, mutated: far above any one test of TARGETS'
# files unmutated (seconds, at a load of 20 on the shared 2-core machine).
TEST_TIMEOUT_S = 30

# Module -> the test files that cover it (fast ones: no browser). A run of a
# module is its mutants times these files' time, so keep each list to the
# files that exercise the module's behaviour. Older files first: a run stops
# at the first failure, which is how --report --before tells what the older
# files alone killed.
_BULK_TESTS = (
    "tests/test_queue_admin.py",
    "tests/test_broken_keys.py",
    "tests/test_commands_admin.py",
    "tests/test_bulk_edges.py",
)
_FINISH_TESTS = (
    "tests/test_transitions_finished.py",
    "tests/test_broken_keys.py",
    "tests/test_flow.py",
    "tests/test_worker.py",
    "tests/test_transitions_drained.py",
    "tests/test_transitions_finished_keys.py",
    "tests/test_transitions_finished_keep.py",
    "tests/test_command_budget.py",
    "tests/test_transitions_finished_general.py",
)
# test_command_budget.py: the straight-line paths exist for their cost, and a
# mutant that sends every job down the general path answers the same.
_PICKUP_TESTS = (
    "tests/test_transitions_active.py",
    "tests/test_pickup.py",
    "tests/test_global_concurrency.py",
    "tests/test_transitions_wrong_types.py",
    "tests/test_command_budget.py",
    "tests/test_pickup_general.py",
)
TARGETS: dict[str, tuple[str, ...]] = {
    "dashboard/core/permissions.py": (
        "tests/test_permissions.py",
        "tests/test_permissions_users.py",
    ),
    "queues/read/cohorts.py": (
        "tests/test_cohorts.py",
        "tests/test_views_cohorts.py",
        "tests/test_cohort_reasons.py",
    ),
    "queues/read/search.py": ("tests/test_read_search.py", "tests/test_search_bounds.py"),
    "queues/read/decode.py": ("tests/test_read_decode.py", "tests/test_read_decode_fields.py"),
    "queues/collector.py": (
        "tests/test_collector.py",
        "tests/test_collector_fold.py",
        "tests/test_collector_attempts.py",
        "tests/test_collector_edges.py",
        "tests/test_collector_loop.py",
    ),
    "queues/read/error_folding.py": (
        "tests/test_error_folding.py",
        "tests/test_failure_corpus.py",
        "tests/test_read_error_groups.py",
        "tests/test_error_folding_edges.py",
    ),
    "dashboard/shared/health.py": (
        "tests/test_health.py",
        "tests/test_health_edges.py",
        "tests/test_health_mutants.py",
    ),
    "priv/scripts/searchJobs-1.lua": ("tests/test_read_search.py", "tests/test_search_bounds.py"),
    # The hot path: a worker's pick-up (moveToActive with its straight-line
    # takeReady and its general path takeNextJob/pickupGeneral) and its
    # finish (moveToFinished, straight-line, with the general finishGeneral,
    # both running the finish's own steps of finishSteps; a finish that takes
    # the next job runs takeReady too).
    **dict.fromkeys(
        (
            "priv/scripts/moveToFinished-1.lua",
            "priv/scripts/includes/finishSteps.lua",
            "priv/scripts/includes/finishGeneral.lua",
        ),
        _FINISH_TESTS,
    ),
    **dict.fromkeys(
        (
            "priv/scripts/moveToActive-1.lua",
            "priv/scripts/includes/pickupGeneral.lua",
        ),
        _PICKUP_TESTS,
    ),
    # A finish fetching the next job plans it by takeNextJob (and takes it by
    # takeReady): the finish's tests see what the pick-up's cannot, such as
    # the finishing job taken again from wait.
    **dict.fromkeys(
        ("priv/scripts/includes/takeNextJob.lua", "priv/scripts/includes/takeReady.lua"),
        (*_PICKUP_TESTS, "tests/test_transitions_finished.py"),
    ),
    "priv/scripts/requeueJobs-13.lua": (
        "tests/test_queue_admin.py",
        "tests/test_broken_keys.py",
        "tests/test_cohorts.py",
        "tests/test_requeue_wakes.py",
        "tests/test_requeue_edges.py",
    ),
    # The other bulk scripts of the queue page's buttons (clean, drain, the
    # lists a retry-all or promote-all leaves alone) and the one-job retry
    # or promote: the admin tests drive them through Queue's methods.
    **dict.fromkeys(
        (
            "priv/scripts/cleanJobsInSet-11.lua",
            "priv/scripts/listedJobs-4.lua",
            "priv/scripts/requeueJob-13.lua",
        ),
        _BULK_TESTS,
    ),
    "priv/scripts/drain-11.lua": (
        *_BULK_TESTS,
        "tests/test_drain_mutants.py",
        "tests/test_drain_flows.py",
    ),
    # The job page's fail and remove buttons (Queue.fail, Queue.remove, and
    # the remove of an explicit set of ids, which also names the state).
    "priv/scripts/failJob-11.lua": (*_BULK_TESTS, "tests/test_admin_fail_remove.py"),
    "priv/scripts/removeJob-12.lua": (
        *_BULK_TESTS,
        "tests/test_actions_on_ids.py",
        "tests/test_admin_fail_remove.py",
    ),
    # A worker's other transitions: the stalled check (jobs whose lock lapsed
    # back to wait, or failed past maxStalledCount), a failed attempt's
    # backoff or a job's own delay, and a job handed back unfinished.
    "priv/scripts/moveStalledJobsToWait-8.lua": (
        "tests/test_transitions_stalled.py",
        "tests/test_commands_transitions.py",
        "tests/test_transitions_bullmq_shape.py",
        "tests/test_broken_keys.py",
        "tests/test_transition_mutants.py",
    ),
    "priv/scripts/moveToDelayed-8.lua": (
        "tests/test_transitions_delayed.py",
        "tests/test_commands_transitions.py",
        "tests/test_transitions_bullmq_shape.py",
        "tests/test_broken_keys.py",
        "tests/test_transition_mutants.py",
    ),
    "priv/scripts/releaseJob-8.lua": (
        "tests/test_release_job.py",
        "tests/test_transition_mutants.py",
    ),
    "priv/scripts/includes/requeueJobs.lua": (
        "tests/test_queue_admin.py",
        "tests/test_broken_keys.py",
        "tests/test_cohorts.py",
        "tests/test_requeue_wakes.py",
        "tests/test_requeue_edges.py",
    ),
    # The queue page's pause and resume (Queue.pause, Queue.resume): the
    # ready jobs between wait and paused, the marker that wakes workers.
    "priv/scripts/pause-7.lua": (
        "tests/test_queue_admin.py",
        "tests/test_broken_keys.py",
        "tests/test_global_concurrency.py",
        "tests/test_views_actions.py",
        "tests/test_worker.py",
        "tests/test_pause_mutants.py",
    ),
    # The schedulers tab's "Run now" and "Remove" (JobSchedulers.run_now,
    # JobSchedulers.remove).
    **dict.fromkeys(
        ("priv/scripts/runJobScheduler-11.lua", "priv/scripts/removeJobScheduler-7.lua"),
        (
            "tests/test_schedulers.py",
            "tests/test_views_schedulers.py",
            "tests/test_scheduler_mutants.py",
        ),
    ),
    # The job page's edit of a job's data (Queue.update_data).
    "priv/scripts/updateData-8.lua": (
        "tests/test_update_data.py",
        "tests/test_job_edits.py",
        "tests/test_update_data_mutants.py",
    ),
    # Which states hold a job: the one-job scripts' state check (fail,
    # remove, the data edit) and the bulk scripts' batches (clean, drain,
    # retry-all), with the listed pairs' loop cleanJobsInSet and requeueJobs
    # share.
    "priv/scripts/includes/locateJob.lua": (
        *_BULK_TESTS,
        "tests/test_requeue_wakes.py",
        "tests/test_requeue_edges.py",
        "tests/test_update_data.py",
        "tests/test_admin_fail_remove.py",
        "tests/test_actions_on_ids.py",
        "tests/test_locate_job_mutants.py",
    ),
    # Adding a job (Queue.add, Queue.add_bulk, the job page's "Add job"):
    # addJob-10 and addJobs-10 are the refusal, the context and the finish
    # around the steps of includes/addJobSteps.lua, which both inline.
    **dict.fromkeys(
        (
            "priv/scripts/addJob-10.lua",
            "priv/scripts/addJobs-10.lua",
            "priv/scripts/includes/addJobSteps.lua",
        ),
        (
            "tests/test_queue_add.py",
            "tests/test_queue_add_bulk.py",
            "tests/test_custom_id_keys.py",
            "tests/test_transitions_delayed.py",
            "tests/test_interop_bullmq.py",
            "tests/test_command_budget.py",
            "tests/test_add_mutants.py",
        ),
    ),
    # Adding a flow (FlowProducer.add): the tree's checks, its parents parked
    # in waiting-children, its leaves added by addJobSteps. The files are the
    # ones whose tests add a flow (the unmutated run's lookups of addFlow).
    "priv/scripts/addFlow-1.lua": (
        "tests/test_flow.py",
        "tests/test_interop_flows.py",
        "tests/test_read_flows.py",
        "tests/test_views_flows.py",
        "tests/test_flow_mutants.py",
    ),
    # A worker taking a job scheduler's run adds the next one (the worker's
    # _schedule_next_run). Not tests/test_interop_schedulers.py, whose BullMQ
    # workers wait up to 60 s for their runs: past TEST_TIMEOUT_S on the
    # loaded machine, its unmutated run failed.
    "priv/scripts/scheduleNextRun-11.lua": (
        "tests/test_schedulers.py",
        "tests/test_next_run_mutants.py",
    ),
    # The queue's obliterate (Queue.obliterate): paused queues only, in batches.
    "priv/scripts/obliterate-21.lua": (
        "tests/test_queue_admin.py",
        "tests/test_broken_keys.py",
        "tests/test_obliterate_mutants.py",
    ),
    # What a flow parent hears of its children (every script that finishes,
    # fails or deletes a child): its release, its failure policies, a broken
    # parent left alone.
    "priv/scripts/includes/parentRelease.lua": (
        "tests/test_flow.py",
        "tests/test_flow_mutants.py",
        "tests/test_interop_flows.py",
        "tests/test_drain_flows.py",
        "tests/test_queue_admin.py",
        "tests/test_broken_keys.py",
        "tests/test_transitions_finished.py",
        "tests/test_transitions_finished_general.py",
        "tests/test_parent_release_mutants.py",
    ),
    # What every button and API action goes through (acting/actions.py): the
    # action named, the ids checked, one script per job or a bulk one, each
    # refusal's words and status, the audit row, the cohort recorded.
    "dashboard/acting/actions.py": (
        "tests/test_views_actions.py",
        "tests/test_actions_on_ids.py",
        "tests/test_audit.py",
        "tests/test_api_errors.py",
        "tests/test_out_of_memory.py",
        "tests/test_views_error_groups.py",
        "tests/test_views_schedulers.py",
        "tests/test_views_workers.py",
        "tests/test_views_cohorts.py",
        "tests/test_views_peer.py",
        "tests/test_cohorts.py",
        "tests/test_odd_input.py",
        "tests/test_action_words.py",
    ),
}

# Survivors no test can kill: (module, original line, mutated line) -> why.
# Lines are compared stripped, so the entry outlives edits elsewhere in the file.
_FROZEN = "@dataclass(frozen=True, slots=True)"
_REQUEUE_CHECK = (
    'if raw["err"] or not (raw[1] or raw[2]) or (priority and not as_number(priority)) then'
)
_REQUEUE_READ = 'problem = read_job(job_key, 3, 3, "name", "timestamp", "priority")'
_FOUND_WINDOW = "window = raw[0] if isinstance(raw[0], bytes) else str(raw[0]).encode()"
_SLOTS_ONLY = "no code sets an attribute a class does not declare or hashes one of its objects"
_FROZEN_ONLY = "no code assigns to a field, hashes one, or sets an attribute it does not declare"
EQUIVALENT: dict[tuple[str, str, str], str] = {
    **{
        (module, _FROZEN, mutated): _FROZEN_ONLY
        for module in (
            "queues/read/search.py",
            "queues/read/cohorts.py",
            "dashboard/shared/health.py",
        )
        for mutated in (
            "@dataclass(frozen=False, slots=True)",
            "@dataclass(frozen=True, slots=False)",
        )
    },
    **{
        (module, "@dataclass(slots=True)", "@dataclass(slots=False)"): _SLOTS_ONLY
        for module in ("queues/read/search.py", "queues/read/cohorts.py")
    },
    **{
        ("queues/read/cohorts.py", original, mutated): why
        for original, mutated, why in (
            *(
                (line, line.replace("most_common(1)", "most_common( 2)"), "only the first is read")
                for line in (
                    "common = Counter(i for i in self.reason_of if i >= 0).most_common(1)",
                    "common = self.failed_reasons.most_common(1)",
                )
            ),
            *(
                (f"return common[0][0] if common else {none}", mutated, "most_common(1): one item")
                for none in ('""', "None")
                for mutated in (f"return common[ -1][0] if common else {none}",)
            ),
            (
                "return zlib.compress(msgspec.json.encode(record), 1)",
                "return zlib.compress(msgspec.json.encode(record), 2)",
                "any level inflates to the same record; the level is a speed choice, measured"
                " beside it (level 0, no compression, is killed by the record's size test)",
            ),
            (
                "index = cohort.reason_of[start + offset] if cohort.reason_of else -1",
                "index = cohort.reason_of[start + offset] if cohort.reason_of else - 2",
                "any negative index means no previous reason (index >= 0 is what is asked)",
            ),
            *(('"v": 1,', f'"v": {n},', "nothing reads the record's version yet") for n in (2, 0)),
        )
    },
    **{
        ("queues/read/cohorts.py", f"for {loop} in zip({pair}, strict=True):", mutated): (
            "a pipeline answers one reply per command it was given: the lengths always match"
        )
        for loop, pair in (
            ("(cohort_id, at_ms), raw", "wanted, pipe.execute(raise_on_error=False)"),
            ("job_id, raw", "chunk, replies(pipe)"),
        )
        for mutated in (f"for {loop} in zip({pair}, strict=False):",)
    },
    **{
        ("queues/read/search.py", _FOUND_WINDOW, _FOUND_WINDOW.replace("str(raw[0])", other)): (
            "the fallback for a client that decodes replies, which the project never makes"
            " (no decode_responses anywhere): a Lua string always arrives as bytes"
        )
        for other in ("str(raw[ 1])", "str(raw[ -1])")
    },
    (
        "queues/read/search.py",
        "around=max(0, around - len(step.found)),",
        "around=max( -1, around - len(step.found)),",
    ): (
        "found never holds more than around texts (each call gives at most what it is"
        " asked), so around - len(step.found) is never below 0"
    ),
    ("queues/read/search.py", "break", "continue"): (
        "the loop's own condition is the one the break tested (step.cursor is None)"
    ),
    **{
        ("queues/read/search.py", "step = SearchStep([], at, at.searched, 0)", mutated): (
            "the initial total is overwritten before the step is returned; a SearchError"
            " raised meanwhile discards the step"
        )
        for mutated in (
            "step = SearchStep([], at, at.searched, 1)",
            "step = SearchStep([], at, at.searched, -1)",
        )
    },
    **{
        (
            "priv/scripts/includes/finishSteps.lua",
            'if target == "failed" and tonumber(attempts) >= (tonumber(ARGV[8]) or 1) then',
            f'if target == "failed" and tonumber(attempts) >= (tonumber(ARGV[8]) or {other}) then',
        ): "the fallback is never taken: FinishOptions.packed always sends the attempts allowed"
        for other in ("2", "0")
    },
    (
        "priv/scripts/includes/parentRelease.lua",
        "local parent = {key = key, id = id, base = string.sub(key, 1, #key - #id), info = info}",
        "local parent = {key = key, id = id, base = string.sub(key, 0, #key - #id), info = info}",
    ): "Lua's string.sub takes a start of 0 as 1",
    (
        "queues/read/decode.py",
        "present = {name: value for name, value in zip(fields, values, strict=True)"
        " if value is not None}",
        "present = {name: value for name, value in zip(fields, values, strict=False)"
        " if value is not None}",
    ): "its callers pass an HMGET's reply with the fields they asked for: the lengths always match",
    (
        "queues/read/decode.py",
        "return job_from_hash(job_id, dict(zip(pairs, pairs, strict=False)))",
        "return job_from_hash(job_id, dict(zip(pairs, pairs, strict=True)))",
    ): "zip of one iterator with itself: strict only differs on an odd list, and a pick-up's"
    " HGETALL is always field, value pairs",
    **{
        ("priv/scripts/requeueJobs-13.lua", original, mutated): why
        for original, mutated, why in (
            (
                "local passed = tonumber(ARGV[5]) or 0",
                "local passed = tonumber(ARGV[5]) or 1",
                "the fallback is never taken: admin.requeue_jobs, the script's one caller,"
                " always sends pass_over as a number",
            ),
            (
                "passed, tonumber(ARGV[6]) or 0)",
                "passed, tonumber(ARGV[6]) or 1)",
                "the fallback is never taken: admin.requeue_jobs always sends"
                " report_reason_bytes as a number (an int, refused when negative)",
            ),
        )
    },
    **{
        ("priv/scripts/searchJobs-1.lua", original, mutated): why
        for original, mutated, why in (
            (
                'local ids, next_start, next_anchor, length = {}, "", "", 0',
                'local ids, next_start, next_anchor, length = {}, "", "", 1',
                "both branches that follow set length before it is read",
            ),
            *(
                (
                    "local answer = {0, next_start, next_anchor, length, 0, texts_around}",
                    mutated,
                    "the answer's first and fifth slots (looked at, unchecked) are each set"
                    " again after the loop, before the answer is returned",
                )
                for mutated in (
                    "local answer = {1, next_start, next_anchor, length, 0, texts_around}",
                    "local answer = {0, next_start, next_anchor, length, 1, texts_around}",
                )
            ),
            (
                "local first, last = string.find(value, text, 1, true)",
                "local first, last = string.find(value, text, 0, true)",
                "Lua's string.find takes a start of 0 as 1",
            ),
            (
                "return 0, 0",
                "return 0, 1",
                "a path match's last byte is read only by around(), which a first of 0"
                " never reaches (the caller's first > 0)",
            ),
        )
    },
    **{
        ("queues/read/error_folding.py", original, mutated): why
        for original, mutated, why in (
            *(
                (
                    "for trim in range(_LONGEST_ESCAPE + 1):",
                    f"for trim in range(_LONGEST_ESCAPE {other}):",
                    "a JSON-quoted reason cut inside an escape decodes after trimming at most 5"
                    ' characters ("\\ud83" of a cut pair; a lone surrogate decodes), so 11 to 13'
                    " tries all find it; they differ only for a text that is not JSON, opens"
                    " with a quote and has its one other quote 11-13 characters before the"
                    " cut, which no writer makes",
                )
                for other in ("- 1", "+ 2", "+ 0")
            ),
            (
                "and len(raw) <= _CACHED_FIELD_BYTES",
                "and len(raw) < _CACHED_FIELD_BYTES",
                "the digit-form shortcut answers what the plain path answers (the table"
                " tests assert it for every kind of field): only which way a field of"
                " exactly that many bytes is computed changes",
            ),
            (
                'return "::" in text or text.count(":") >= 7',
                'return "::" in text or text.count(":") >= 6',
                "a looser shortcut only runs the rule where its pattern, which needs seven"
                " colons or a '::', cannot match",
            ),
            (
                'return re.compile("|".join(re.escape(part) for part in needs)).search'
                " if needs else None",
                'return re.compile("|".join(re.escape(part) for part in needs)).search'
                " if not needs else None",
                "every rule then runs on every reason: the same folded text, only slower"
                " (the substrings are a shortcut, never a condition of the rule)",
            ),
            (
                "return hashlib.sha1(folded.encode(), usedforsecurity=False).hexdigest()[:16]",
                "return hashlib.sha1(folded.encode(), usedforsecurity=True).hexdigest()[:16]",
                "the same digest; the flag only matters to an OpenSSL in FIPS mode",
            ),
            (
                "if _MESSAGE_OPENER.search(match.string, max(0, match.start() - 16),"
                " match.start()):",
                "if _MESSAGE_OPENER.search(match.string, max( -1, match.start() - 16),"
                " match.start()):",
                "a pattern's search takes a negative start as 0",
            ),
            *(
                (
                    "if _MESSAGE_OPENER.search(match.string, max(0, match.start() - 16),"
                    " match.start()):",
                    "if _MESSAGE_OPENER.search(match.string, max(0, match.start() -"
                    f" {reach}), match.start()):",
                    "the window before a quote holds '(' and an error code of 13 digits"
                    " with its ', ': a reach of 15 or 17 changes only whether a code of 13"
                    " or 14 digits is an opener, and the tuples that carry one hold 4-5"
                    " (pymysql's (2013, '...'))",
                )
                for reach in (15, 17)
            ),
            *(
                (
                    "return quoted[0] + _QUOTED.sub(_quoted, quoted[1:-1]) + quoted[-1]",
                    mutated,
                    "a match of _QUOTED opens and closes with the same character",
                )
                for mutated in (
                    "return quoted[ -1] + _QUOTED.sub(_quoted, quoted[1:-1]) + quoted[-1]",
                    "return quoted[0] + _QUOTED.sub(_quoted, quoted[1:-1]) + quoted[- 0]",
                )
            ),
        )
    },
    **{
        ("dashboard/shared/health.py", original, mutated): why
        for original, mutated, why in (
            (
                "total = recent.total or 0  # 0: the rate is not known",
                "total = recent.total or -1  # 0: the rate is not known",
                "the rate it then gives (negative) is only compared with FAILING_RATE, as"
                " 0.0 would be: both are under it",
            ),
            (
                "rate = recent.failed / total if total else 0.0",
                "rate = recent.failed / total if total else -1.0",
                "the rate is only compared with FAILING_RATE: -1.0 and 0.0 are both under it",
            ),
            (
                "if rate >= FAILING_RATE and low_end(recent.failed, total) >= FAILING_FLOOR:",
                "if rate >= FAILING_RATE and low_end(recent.failed, total) > FAILING_FLOOR:",
                "no counts give a low end of exactly FAILING_FLOOR (searched for every"
                " total up to 200,000)",
            ),
        )
    },
    (
        "priv/scripts/requeueJob-13.lua",
        "local moved, skipped = requeue_jobs(q, ARGV[1], {job_id}, ARGV[3], nil, nil, 0)",
        "local moved, skipped = requeue_jobs(q, ARGV[1], {job_id}, ARGV[3], nil, nil, 1)",
    ): (
        "a reason_bytes of 1 only fills requeue_jobs' third answer (the job's id and the"
        " first byte of its previous reason), which this script never reads: it keeps"
        " moved and skipped, so the same writes and the same answer; one string.sub more"
    ),
    # The fourteenth pass: includes/requeueJobs.lua after perf4's check of a
    # sound job by one HMGET (read_job only for a job that one finds wrong).
    **{
        ("priv/scripts/includes/requeueJobs.lua", original, mutated): why
        for original, mutated, why in (
            *(
                (
                    _REQUEUE_CHECK,
                    _REQUEUE_CHECK.replace(old, new),
                    "only a cost: more jobs go to read_job, which answers no problem for"
                    " them (it refuses a hash with neither name nor timestamp, and a"
                    " priority that is no number, as the shortcut does): the same"
                    f" answer, one HMGET more for each job {whom}",
                )
                for old, new, whom in (
                    ("(raw[1] or raw[2])", "(raw[1] and raw[2])", "holding only one of the two"),
                    ("(priority and not", "(priority or not", "(as_number(nil) is nil)"),
                )
            ),
            *(
                (
                    _REQUEUE_READ,
                    _REQUEUE_READ.replace("3, 3,", bounds),
                    f"read_job(key, last_number, last_counter, name, timestamp, priority) {why}",
                )
                for bounds, why in (
                    ("4, 3,", "checks fields 3 to 4 as numbers: there is no fourth, the same"),
                    ("3, 4,", "also checks a fourth field as a counter: there is none, the same"),
                    ("3, 2,", "checks no counter, as with 3: the same"),
                    (
                        "2, 3,",
                        "checks the priority as integer text instead of a number: it gets"
                        " there only when it is no number (or the hash has neither name nor"
                        " timestamp), so field:priority either way",
                    ),
                )
            ),
            (
                'reported[#reported + 1] = string.sub(raw[4] or "", 1, reason_bytes)',
                'reported[#reported + 1] = string.sub(raw[4] or "", 0, reason_bytes)',
                "Lua's string.sub takes a start of 0 as 1",
            ),
        )
    },
    ("priv/scripts/listedJobs-4.lua", "return {0, 0, {}}", "return {0, 1, {}}"): (
        "a list of 0 means every list was looked at: the caller stops there and never"
        " reads the index beside it"
    ),
    (
        "priv/scripts/listedJobs-4.lua",
        "while list <= 3 and budget > 0 do",
        "while list <= 4 and budget > 0 do",
    ): "a fourth turn asks LRANGE of KEYS[5], which is nil: redis.pcall answers an error"
    " ('arguments must be strings or integers'), read as an empty list, and the loop"
    " ends with list 5, answered as 0 like 4: the same answer, one failed call more",
    # The job page's fail and remove actions (failJob-11.lua, removeJob-12.lua;
    # sixth pass of docs/mutation.md).
    ("priv/scripts/removeJob-12.lua", "for i = 4, #ARGV do", "for i = 3, #ARGV do"): (
        "ARGV[3] is the now in ms that admin.remove_job always sends, all digits, and no"
        " state's name is: one more comparison that never matches, the same answer"
    ),
    # A worker's other transitions (moveStalledJobsToWait-8.lua,
    # moveToDelayed-8.lua, releaseJob-8.lua; seventh pass of docs/mutation.md).
    **{
        ("priv/scripts/moveStalledJobsToWait-8.lua", original, mutated): why
        for original, mutated, why in (
            *(
                (
                    "local max_stalled = tonumber(ARGV[1]) or 1",
                    f"local max_stalled = tonumber(ARGV[1]) or {fallback}",
                    "a fallback never taken: move_stalled_jobs_to_wait, the one builder,"
                    " refuses a count under 0 and always sends the integer",
                )
                for fallback in (0, 2)
            ),
            *(
                (
                    'redis.call("LREM", active_key, 1, job_id)',
                    f'redis.call("LREM", active_key, {count}, job_id)',
                    "no script of the project puts an id in active twice (a pick-up"
                    " moves the one it takes), so removing 1, 2 or every copy of it"
                    " removes the same one",
                )
                for count in (0, 2)
            ),
            (
                'if string.sub(job_id, 1, 2) ~= "0:" then',
                'if string.sub(job_id, 0, 2) ~= "0:" then',
                "string.sub treats a start of 0 as 1",
            ),
            (
                "for first = 1, #active, 5000 do",
                "for first = 1, #active, 4999 do",
                "each chunk starts one id early: that id is added twice, and a set holds it once",
            ),
            (
                'redis.call("SADD", stalled_key, unpack(active, first, math.min(first'
                " + 4999, #active)))",
                'redis.call("SADD", stalled_key, unpack(active, first, math.min(first'
                " + 5000, #active)))",
                "each chunk ends one id late: that id is added twice, and a set holds it once",
            ),
            *(
                (
                    'if string.sub(job_id, 1, 2) ~= "0:" then',
                    f'if string.sub(job_id, {span}) ~= "0:" then',
                    "never equal to '0:' then, so a legacy marker (0:<ms>) has its hash"
                    " looked up: it has none, so it is found 'missing', dropped from"
                    " active and left unreported (the same marker test below) as"
                    " before: one lookup more, the same result",
                )
                for span in ("2, 2", "1, 1", "1, 3")
            ),
        )
    },
    (
        "priv/scripts/moveToDelayed-8.lua",
        "local delay = math.max(math.floor(tonumber(ARGV[5]) or 0), 0)",
        "local delay = math.max(math.floor(tonumber(ARGV[5]) or 1), 0)",
    ): "a fallback never taken: move_to_delayed, the one builder, refuses a negative"
    " delay and always sends the integer",
}

_CLEAN = "priv/scripts/cleanJobsInSet-11.lua"
_CHUNK_ONLY = (
    "a chunk of 999 or 1,001 ids reads every id once in the same order (each"
    " chunk starts where the last ended): only how many a ZRANGE or LRANGE reads"
)
EQUIVALENT.update(
    {
        (_CLEAN, "local SCAN_CHUNK = 1000", "local SCAN_CHUNK = 1001"): _CHUNK_ONLY,
        (_CLEAN, "local SCAN_CHUNK = 1000", "local SCAN_CHUNK = 999"): _CHUNK_ONLY,
        (_CLEAN, "local looked_at = 0", "local looked_at = 1"): (
            "set to #ids for completed and failed; for the other states Queue.clean, the"
            " script's one caller, never reads it"
        ),
        (
            _CLEAN,
            '"LIMIT", tonumber(ARGV[6]) or 0, limit)',
            '"LIMIT", tonumber(ARGV[6]) or 1, limit)',
        ): "the fallback is never taken: admin.clean_jobs always sends pass_over as a number",
        (
            _CLEAN,
            'local high = redis.call("LLEN", set_key) - 1',
            'local high = redis.call("LLEN", set_key) - 0',
        ): (
            "LRANGE clamps an end past the list to its last entry, and each entry's index"
            " is counted from the chunk's low end: the first chunk holds 999 entries"
            " instead of 1,000, the same ones at the same indexes"
        ),
        (
            _CLEAN,
            "local low = math.max(high - SCAN_CHUNK + 1, 0)",
            "local low = math.max(high - SCAN_CHUNK + 2, 0)",
        ): "chunks of 999 entries, each ending below the last: " + _CHUNK_ONLY,
        (
            _CLEAN,
            "local low = math.max(high - SCAN_CHUNK + 1, 0)",
            "local low = math.max(high - SCAN_CHUNK + 0, 0)",
        ): "chunks of 1,001 entries, each ending below the last: " + _CHUNK_ONLY,
        (
            _CLEAN,
            "while high >= 0 and #removed < limit do",
            "while high >= 0 and #removed <= limit do",
        ): (
            "with the limit reached, sort_chunk takes nothing more (its first check), so"
            " the further chunks are only read, down to the list's head"
        ),
        (
            _CLEAN,
            'if string.sub(chunk[offset], 1, 2) ~= "0:" then',
            'if string.sub(chunk[offset], 0, 2) ~= "0:" then',
        ): "Lua's string.sub takes a start of 0 as 1",
        (_CLEAN, "if #positions > 0 then", "if #positions >= 0 then"): (
            "an LREM of a value the list does not hold removes nothing (and Redis"
            " replicates no effect for it)"
        ),
        (_CLEAN, "if #ids > 0 then", "if #ids >= 0 then"): (
            "the other lists are then read also for a chunk of markers only; what they"
            " hold is looked up only for the ids of a chunk, and there are none"
        ),
        (_CLEAN, "while #removed < limit do", "while #removed <= limit do"): (
            "with the limit reached, sort_chunk takes nothing more (its first check), so"
            " the further chunks are only read, up to the set's end"
        ),
    }
)

_MADE = 'if #made > 15 or not (made == "0" or string.find(made, "^%-?[1-9]%d*$")) then'
EQUIVALENT.update(
    {
        ("priv/scripts/moveToFinished-1.lua", _MADE, _MADE.replace("#made > 15", other)): (
            "a count of 15 digits is exact as a Lua number, so either path writes the same"
            " count (the general path by HINCRBY); only which path a count nobody reaches"
            " by running takes"
        )
        for other in ("#made >= 15", "#made > 14")
    }
)
EQUIVALENT[
    ("priv/scripts/moveToFinished-1.lua", "local finished_count = 0", "local finished_count = 1")
] = "read only when the job is kept (keep ~= '0'), which sets it from ZCARD first"

EQUIVALENT[
    ("priv/scripts/moveToFinished-1.lua", "- (tonumber(keep) or 0)", "- (tonumber(keep) or 1)")
] = "the fallback is never taken: KeepJobs.packed always sends keep as integer text"

# Fourth pass (moveToFinished-1.lua's last lines, includes/finishGeneral.lua):
# finishGeneral's survivors judged equivalent, each with why.
_GENERAL = "priv/scripts/includes/finishGeneral.lua"
_CHILDREN = 'if target == "completed" and redis.call("EXISTS", children, failed_children) > 0 then'
EQUIVALENT.update(
    {
        **{
            (
                _GENERAL,
                "local keep_count = tonumber(ARGV[7]) or -1",
                f"local keep_count = tonumber(ARGV[7]) or {other}",
            ): "the fallback is never taken: FinishOptions.finish_args always sends"
            " KeepJobs.count_arg(), integer text"
            for other in ("-2", "-0")
        },
        (_GENERAL, _CHILDREN, _CHILDREN.replace("> 0 then", ">= 0 then")): (
            "only a cost: a completion whose children keys EXISTS finds absent then also"
            " reads their SCARD and ZCARD, both 0 for an absent key, and goes on as before"
        ),
        (_GENERAL, "if failed_count > 0 then", "if failed_count >= 0 then"): (
            "a count of 0 never gets here: EXISTS found one of the two children keys and"
            " SCARD found no pending child, so the unsuccessful sorted set exists, and Redis"
            " keeps no empty one (its ZCARD is 1 or more)"
        ),
        (
            _GENERAL,
            'local has_parent = (job[4] and job[4] ~= "") or job[5]',
            'local has_parent = (job[4] or job[4] ~= "") or job[5]',
        ): (
            "only a cost: every job then counts as a possible flow child, so a general finish"
            " also asks parent_of (one HMGET, which finds none: no parentKey, no parent) and a"
            " next job is taken by the general pick-up, which writes what the planned one does"
            " (the general path, not the hot straight line)"
        ),
        (_GENERAL, "if keep_count > 0 then", "if keep_count >= 0 then"): (
            "keep_count 0 never gets here (the enclosing `if keep_count ~= 0`): it is -1 or"
            " positive"
        ),
    }
)

_FAST_ENTRY = 'if len(flat) >= 4 and flat[0] == b"event" and flat[2] == b"jobId":'
EQUIVALENT.update(
    {
        ("queues/collector.py", original, mutated): why
        for original, mutated, why in (
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace(">= 4", "> 4"),
                "an entry of exactly event and jobId read by _field gives the same two values",
            ),
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace('flat[2] == b"jobId"', 'flat[2] != b"jobId"'),
                "every entry BullMQ and our scripts write has jobId second (or no jobId:"
                " drained, cleaned...): those go the slow way and read the same values; the"
                " fast way with a wrong id is taken only by an entry of a folded event"
                " (waiting, active, completed, failed) with another field second, which no"
                " writer makes",
            ),
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace('flat[0] == b"event"', 'flat[0] != b"event"'),
                "every entry BullMQ and our scripts write has event first: they go the slow"
                " way and read the same values; only an entry whose first field is not"
                " event yet whose second is jobId would be misread, and no writer makes one",
            ),
            *(
                (
                    f"for {loop} in zip({pair}, pipe.execute(raise_on_error=False), strict=True):",
                    f"for {loop} in zip({pair}, pipe.execute(raise_on_error=False), strict=False):",
                    "a pipeline answers one reply per command it was given: the lengths"
                    " always match",
                )
                for loop, pair in (("lookup, reply", "lookups"), ("ref, cursor", "missing"))
            ),
            (
                "self._folded = False  # whether a fold since the last record left something"
                " pending",
                "self._folded = True  # whether a fold since the last record left something"
                " pending",
                "only a cost: the first record then looks at every folder, and records none"
                " that holds nothing pending",
            ),
            (
                "self._folded = False",
                "self._folded = True",
                "only a cost: each record then looks at every folder (about 2 ms a pass for a"
                " thousand idle queues), and records none that holds nothing pending",
            ),
            (
                "except RedisError as error:",
                "except CosmicRayTestingException as error:",
                "the handler after it catches the error instead and does the same (the"
                " folders dropped, a second's wait, the stored cursors read again); only the"
                " log line differs, an error with its traceback for a warning",
            ),
            *(
                (
                    'batch = self.pending[-1] if self.pending else MinuteBatch(0, "")',
                    f'batch = self.pending[-1] if self.pending else MinuteBatch( {n}, "")',
                    "the stand-in batch when nothing is pending is never recorded: the first"
                    " entry (end_ms 0) opens a batch of its own minute",
                )
                for n in (1, -1)
            ),
            *(
                (
                    "end_ms = first_ms + MINUTE_MS if self.pending else 0",
                    f"end_ms = first_ms + MINUTE_MS if self.pending else {n}",
                    "with nothing pending any stream id's time (ms since 1970) is past 1, 0"
                    " and -1 alike: the first entry opens its minute's batch either way",
                )
                for n in (1, -1)
            ),
            (
                "if min(durations) < 0:  # a clock step: counted as 0 ms",
                "if min(durations) < 1:  # a clock step: counted as 0 ms",
                "max(0, ms) of durations whose least is 0 changes none of them",
            ),
            (
                "if excess <= 0:",
                "if excess <= -1:",
                "an excess of 0 forgets islice(self, 0): nothing",
            ),
            (
                "if min(durations) < 0:  # a clock step: counted as 0 ms",
                "if min(durations) <= 0:  # a clock step: counted as 0 ms",
                "max(0, ms) of durations whose least is 0 changes none of them",
            ),
            (
                "if excess <= 0:",
                "if excess < 0:",
                "an excess of 0 forgets islice(self, 0): nothing",
            ),
        )
    }
)

# The recheck of the collector's survivors before line 480 (docs/mutation.md),
# keyed by the text cosmic-ray's number changes make (``flat[ 1]``, ``- 2``).
_SLOW_WAY = (
    " every entry then goes the slow way, where _field reads the same event and jobId:"
    " only a cost (the fold's fast path, 30,000 entries/s at 10,000 jobs/s)"
)
_TOP = "top[_MAX_FIELDS[kind]] = max(max(durations), top.get(_MAX_FIELDS[kind], -1))"
_FIRST_MS = "first_ms = batch.minute * MINUTE_MS if self.pending else 0"
_PAIRS = "for index in range(0, len(flat) - 1, 2):"
EQUIVALENT.update(
    {
        ("queues/collector.py", original, mutated): why
        for original, mutated, why in (
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace(">= 4", ">= 5"),
                "an entry of exactly event and jobId (four items) goes the slow way, where"
                " _field reads the same two values: only a cost",
            ),
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace(">= 4", ">= 3"),
                "a stream entry is field-value pairs, so its flat list has an even length:"
                " >= 3 and >= 4 let the same entries through",
            ),
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace("flat[0] == b", "flat[ 1] == b"),
                "flat[1] is the event's name (waiting, active, ...), never 'event':" + _SLOW_WAY,
            ),
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace("flat[0] == b", "flat[ -1] == b"),
                "no writer ends an entry with the value 'event' (BullMQ's and ours end with a"
                " job id, prev, a reason or a return value):" + _SLOW_WAY,
            ),
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace("flat[2] == b", "flat[ 1] == b"),
                "flat[1] is the event's name, never 'jobId':" + _SLOW_WAY,
            ),
            (
                _FAST_ENTRY,
                _FAST_ENTRY.replace("flat[2] == b", "flat[ 3] == b"),
                "flat[3] is the job id: only a job whose id is 'jobId' takes the fast way,"
                " and every writer puts jobId second, so it reads the same values there;"
                + _SLOW_WAY,
            ),
            (
                _PAIRS,
                _PAIRS.replace("- 1, 2", "- 0, 2"),
                "the flat list is field-value pairs (even length): range(0, n, 2) and"
                " range(0, n - 1, 2) are the same indexes",
            ),
            *(
                (
                    "ms = 0",
                    f"ms = {n}",
                    "read only after the first entry sets it: a stream id is <ms>-<seq> and"
                    " never starts with '-', which the head starts as, so the first entry"
                    " always sets ms; with no entries it is never read",
                )
                for n in (1, -1)
            ),
            *(
                (
                    _FIRST_MS,
                    _FIRST_MS.replace("else 0", f"else {n}"),
                    "with nothing pending end_ms is 0 and every id's ms is >= 0, so the"
                    " first entry opens its minute's batch whatever first_ms is",
                )
                for n in (1, -1)
            ),
            *(
                (
                    _TOP,
                    _TOP.replace("], -1))", f"], {n}))"),
                    "the durations were clamped to >= 0 just before, and no maximum of"
                    " waits or runs is in top before this line (self.max holds bx only):"
                    " any default <= 0 leaves max(durations)",
                )
                for n in ("- 2", "- 0")
            ),
        )
    }
)

# The collector's survivors from line 480 on that docs/mutation-collector.md
# judged equivalent, keyed here so that --report counts them too.
_NEWS = 'pipe.xread({f.keys.events: f.position or "0-0" for f in group}, count=1)'
_OLDER = 'older = read(self.client.xrevrange, folder.keys.events, f"({read_from}", "-", count=1)'
_READ_LAST = "self.read_last_pass = 0  # events read by the last pass"
EQUIVALENT.update(
    {
        ("queues/collector.py", original, mutated): why
        for original, mutated, why in (
            *(
                (
                    f"for {pair} in zip({items}, replies, strict=True):",
                    f"for {pair} in zip({items}, replies, strict=False):",
                    "a pipeline answers one reply per command, and one command is queued"
                    " per item: the lengths always match",
                )
                for pair, items in (("group, reply", "asked"), ("folder, entries", "on_node"))
            ),
            (
                "if folder.pending and not folder.stopped:",
                "if folder.pending or not folder.stopped:",
                "the folders it adds hold nothing pending (record_pending loops over an"
                " empty list and sets folded_to to the '' it already is), and a stopped"
                " folder holds nothing pending (_stop_history clears it): no command either"
                " way",
            ),
            (
                _NEWS,
                _NEWS.replace("count=1", "count= 2"),
                "the news check uses only which streams XREAD names, the same for a count"
                " of 2: one entry more a reply",
            ),
            (
                _OLDER,
                _OLDER.replace("count=1", "count= 2"),
                "the gap check uses only whether XREVRANGE answered anything, the same for"
                " a count of 2: one entry more a reply",
            ),
            *(
                (
                    _READ_LAST,
                    _READ_LAST.replace("= 0", f"= {n}"),
                    "read by the run loop's pause only after collect_pass set it to 0 first",
                )
                for n in (1, -1)
            ),
            *(
                (
                    "self._renewed = 0.0",
                    f"self._renewed = {n}",
                    "_take_over sets it before _renew_if_due first reads it",
                )
                for n in ("1.0", "-1.0")
            ),
        )
    }
)

# includes/takeReady.lua, the straight-line pick-up: what only decides which
# path answers (the general path answers the same, at a cost).
_TAKE = "priv/scripts/includes/takeReady.lua"
_DUE = "if not score or score ~= score or score < (tonumber(now_text) + 1) * 4096"
_MARK = (
    'if job_id == leaving or (string.byte(job_id) == 48 and string.sub(job_id, 1, 2) == "0:") then'
)
_MARK_ONLY_A_COST = (
    "the check only spares an HGETALL: a legacy marker '0:<n>' let through reads no hash"
    " (`known` stays false) and goes to the general path, which drops it as it does now; an"
    " id merely starting with '0' sent there is taken the same. It differs only for a job"
    " whose custom id starts with '0:' and has a hash, which BullMQ 5 refuses to add (a"
    " custom id holding ':' must have three parts) and which the general path reads as a"
    " marker too"
)
_COUNT = 'if #count > 15 or not (count == "0" or string.find(count, "^%-?[1-9]%d*$")) then'
_OTHERS = (
    "return job_id, fields, #tail > 0, started, #tail + (head == tail and 0 or #head) > 1, due"
)
EQUIVALENT.update(
    {
        (_TAKE, original, mutated): why
        for original, mutated, why in (
            (
                _DUE,
                _DUE.replace("not score or score ~=", "not score and score ~="),
                "tonumber of a sorted set's score is never nil nor NaN (Redis refuses a NaN"
                " score; inf and -inf read as math.huge and -math.huge), so both"
                " conditions are false for every score",
            ),
            (
                _DUE,
                _DUE.replace("score < (", "score <= ("),
                "only a delayed job due at exactly now + 1 ms (sequence 0) goes to the"
                " general path, which promotes only jobs due by now and answers the same:"
                " a cost",
            ),
            (
                _DUE,
                _DUE.replace("+ 1) * 4096", "+ 2) * 4096"),
                "delayed jobs due at now + 1 ms go to the general path, which promotes none"
                " of them and answers the same: a cost",
            ),
            *(
                (_MARK, _MARK.replace(old, new), _MARK_ONLY_A_COST)
                for old, new in (
                    ("job_id) == 48", "job_id) ~= 48"),
                    ("job_id) == 48", "job_id) == 49"),
                    ("job_id) == 48", "job_id) == 47"),
                    ("== 48 and string", "== 48 or string"),
                    ("sub(job_id, 1, 2)", "sub(job_id, 2, 2)"),
                    ("sub(job_id, 1, 2)", "sub(job_id, 1, 3)"),
                    ("sub(job_id, 1, 2)", "sub(job_id, 1, 1)"),
                    ('2) == "0:"', '2) ~= "0:"'),
                )
            ),
            (
                _MARK,
                _MARK.replace("sub(job_id, 1, 2)", "sub(job_id, 0, 2)"),
                "string.sub treats a start of 0 as 1",
            ),
            (
                "for index = 1, #fields, 2 do",
                "for index = 1, #fields, 1 do",
                "both loops over a hash's pairs (ready_job's checks, start_ready_job's patching)"
                " read values as names too: that differs only for a value that is literally"
                " a name a loop looks for. In the checks 'ats', 'atm' or 'defa' send the job"
                " to the general path, which answers the same, and 'name' or 'timestamp'"
                " would let a hash holding neither field take the straight path; in the"
                " patching a value 'processedOn', 'pb' or 'ats' would have the next name"
                " overwritten. No writer makes such a value (an input that does not exist)",
            ),
            *(
                (
                    _COUNT,
                    _COUNT.replace("#count > 15", other),
                    "a count of 15 digits is exact as a Lua number, so either path writes"
                    " the same ats (the general path by HINCRBY); only which path a count"
                    " nobody reaches by running takes",
                )
                for other in ("#count >= 15", "#count > 14")
            ),
            (
                _OTHERS,
                _OTHERS.replace("head == tail and 0", "head == tail and 1"),
                "head is tail only when wait gave two ids, so #tail + 0 and #tail + 1 are"
                " both above 1",
            ),
        )
    }
)

# includes/takeNextJob.lua, the planned pick-up of the general callers.
_NEXT = "priv/scripts/includes/takeNextJob.lua"
_EXACT = "if count >= 2 ^ 53 or count <= -2 ^ 53 then"
EQUIVALENT.update(
    {
        (_NEXT, _EXACT, _EXACT.replace(exact, bound)): (
            "a count at or past the smaller bound is left to HINCRBY, which writes the"
            " same value one up: one command more for such a start (any count from 1, or"
            " from -1 down, with 1 ^ 53, which is 1), nothing else"
        )
        for exact, bound in (
            (">= 2 ^ 53", ">= 1 ^ 53"),
            (">= 2 ^ 53", ">= 2 ^ 52"),
            ("<= -2 ^ 53", "<= -1 ^ 53"),
            ("<= -2 ^ 53", "<= -2 ^ 52"),
        )
    }
)
_DUE_BOUND = '(now + 1) * 4096 - 1, "LIMIT", "0", "1")'
EQUIVALENT.update(
    {
        (_NEXT, _DUE_BOUND, _DUE_BOUND.replace(old, new)): (
            "delayed jobs not due yet (due at now + 1 ms, or within the days * 4097 adds)"
            " send the pick-up to the general path, which promotes only the due ones and"
            " answers the same: a cost"
        )
        for old, new in (("now + 1", "now + 2"), ("4096 - 1", "4097 - 1"), ("- 1,", "- 0,"))
    }
)
EQUIVALENT[
    (
        _NEXT,
        "if leaving == 0 or (may_take and concurrency) then",
        "if leaving == 0 or (may_take or concurrency) then",
    )
] = (
    "a finish then reads LLEN of active also without a concurrency limit (may_take is"
    " kept as it was) or when it may not take a job (it stays false): one read more, on the"
    " general path, on a key the finish has proven"
)
_READS_JOB = "if job_id and may_take and not general and #due == 0"
_NOT_MARKER = 'and string.sub(job_id, 1, 2) ~= "0:" and job_id ~= finishing then'
_PLAN_COST = (
    "the job's fields are then not read where the plan would start it itself, and a"
    " job without fields read is planned for the general path, which takes it the same"
    " way: a cost (the general path runs for every such pick-up)"
)
EQUIVALENT.update(
    {
        (_NEXT, original, mutated): why
        for original, mutated, why in (
            (_READS_JOB, _READS_JOB.replace("not general", "general"), _PLAN_COST),
            (_READS_JOB, _READS_JOB.replace("#due == 0", "#due ~= 0"), _PLAN_COST),
            (_READS_JOB, _READS_JOB.replace("#due == 0", "#due == 1"), _PLAN_COST),
            (_NOT_MARKER, _NOT_MARKER.replace('~= "0:"', '== "0:"'), _PLAN_COST),
            *(
                (
                    _NOT_MARKER,
                    _NOT_MARKER.replace("1, 2)", bounds),
                    "a legacy marker '0:<n>' let through has no hash: read_job finds no"
                    " fields and the plan sends it to the general path, which drops it as"
                    " now; one read more",
                )
                for bounds in ("2, 2)", "1, 3)", "1, 1)")
            ),
            (
                _NOT_MARKER,
                _NOT_MARKER.replace("1, 2)", "0, 2)"),
                "string.sub treats a start of 0 as 1",
            ),
        )
    }
)
_READ_FIELDS = (
    '_, fields = read_job(q.base .. job_id, 2, 4, "name", "timestamp", "ats", "atm", "defa")'
)
EQUIVALENT.update(
    {
        (_NEXT, _READ_FIELDS, _READ_FIELDS.replace("2, 4,", bounds)): why
        for bounds, why in (
            (
                "1, 4,",
                "the timestamp is then also checked as integer text: only a job whose"
                " timestamp is a number but no integer (no writer makes one: Date.now())"
                " goes to the general path, which reads it as a number and takes it the"
                " same way",
            ),
            (
                "2, 5,",
                "defa is then checked as integer text: a job holding a deferred failure"
                " goes to the general path either way (fields[5] sends it there)",
            ),
        )
    }
)
EQUIVALENT[
    (
        _NEXT,
        "if general or #due > 0 or (job_id and may_take and (not fields or fields[5])) then",
        "if general or #due >= 0 or (job_id and may_take and (not fields or fields[5])) then",
    )
] = "every pick-up planned for the general path, which takes the same job: a cost"
EQUIVALENT[
    (
        _NEXT,
        "if (tonumber(used) or 0) >= max then",
        "if (tonumber(used) or 1) >= max then",
    )
] = (
    "with no counter yet and a max of 1 the window counts as full, but PTTL of the absent"
    " counter is -2, so a new window starts and the job is taken as before: PTTL and DEL"
    " more, once a window"
)
EQUIVALENT.update(
    {
        (_NEXT, "if ttl > 0 then", mutated): why
        for mutated, why in (
            (
                "if ttl >= 0 then",
                "a counter in its last millisecond (PTTL 0) answers a limit of 0 ms instead"
                " of starting the next window: the worker asks again at once and finds the"
                " counter gone; one round trip more",
            ),
            (
                "if ttl > 1 then",
                "the next window starts with PTTL 1 instead of 0: PTTL answers whole"
                " milliseconds of a deadline kept in milliseconds, so 1 may be a fraction"
                " of one; a difference within the limiter's own 1 ms precision (equivalent"
                " only at that precision)",
            ),
        )
    }
)
_NEXT_OTHERS = "if leaving == 0 and #tail + (head == tail and 0 or #head) > 1 then"
EQUIVALENT[(_NEXT, _NEXT_OTHERS, _NEXT_OTHERS.replace("tail and 0", "tail and 1"))] = (
    "head is tail only when wait gave two ids, so #tail + 0 and #tail + 1 are both above 1"
)
_WINDOW = "if not (max and duration and max >= 1 and duration >= 1 and duration <= 2 ^ 53) then"
EQUIVALENT[(_NEXT, _WINDOW, _WINDOW.replace("duration >= 1", "duration >= 0"))] = (
    "a window under 1 ms is floored to 0: the start counts the job and PEXPIRE 0 deletes"
    " the counter at once, so no job is ever limited, as without a limit; three commands"
    " a job more (GET, INCR, PEXPIRE), on the general path only (a limit is declined by"
    " the straight-line one)"
)

# includes/pickupGeneral.lua, the general path of the pick-up (fifth pass).
_GENERAL = "priv/scripts/includes/pickupGeneral.lua"
_USED = 'if not max or (tonumber(redis.call("GET", limiter_key)) or 0) < max then'
EQUIVALENT[(_GENERAL, _USED, _USED.replace("or 0) <", "or 1) <"))] = (
    "with no counter yet and a max of 1 the window counts as full, but PTTL of the absent"
    " counter is -2, so the DEL below runs (on nothing) and 0 is answered as before: PTTL"
    " and DEL more, once a window"
)
EQUIVALENT.update(
    {
        (_GENERAL, "if ttl > 0 then", mutated): why
        for mutated, why in (
            (
                "if ttl >= 0 then",
                "a full counter in its last millisecond (PTTL 0: a script reads a key past"
                " its expiry as absent, so 0 is an expiry at this very millisecond) is kept"
                " and the job taken into the window that ends now, instead of into a new"
                " one; a difference within the limiter's own 1 ms precision (equivalent"
                " only at that precision), no test can make PTTL answer 0",
            ),
            (
                "if ttl > 1 then",
                "a full window with PTTL 1 left is taken for ended: rate_limit_ttl starts a"
                " new window (DEL), and take_next_job (the same text) takes a job into the"
                " old one instead of waiting 1 ms. PTTL answers whole milliseconds of a"
                " deadline kept in milliseconds, so 1 may be a fraction of one; a"
                " difference within the limiter's own 1 ms precision (equivalent only at"
                " that precision)",
            ),
        )
    }
)
_LREM = 'redis.call("LREM", q.active, 1, job_id)'
EQUIVALENT.update(
    {
        (_GENERAL, _LREM, _LREM.replace("1, job_id", count)): (
            "the job failed on pick-up was just pushed onto active's head, where LREM"
            " looks first: a count of 2 or 0 (all) removes more only when active held"
            " that id already, which no writer makes (the pick-up moved it there from"
            " wait or prioritized)"
        )
        for count in ("2, job_id", "0, job_id")
    }
)
_LEGACY = 'if string.sub(job_id, 1, 2) ~= "0:" then'
EQUIVALENT.update(
    {
        (_GENERAL, _LEGACY, _LEGACY.replace("1, 2)", bounds)): why
        for bounds, why in (
            ("0, 2)", "string.sub treats a start of 0 as 1"),
            *(
                (
                    other,
                    "a legacy marker (0:<delay>) is then looked up as a job: it has no hash,"
                    " so it is dropped as missing and, by the same test further down, not"
                    " reported: the same as before, one lookup more a marker. It differs only"
                    " for a custom id starting with 0: that holds a hash, which BullMQ 5"
                    " refuses (a custom id holds no colon). The same text further down (which"
                    " marker to report) is killed by"
                    " test_legacy_markers_are_dropped_without_being_reported_as_broken",
                )
                for other in ("2, 2)", "1, 3)", "1, 1)")
            ),
        )
    }
)
_CHUNK = "local start, chunk_size = 0, 100"
EQUIVALENT.update(
    {
        (_GENERAL, _CHUNK, _CHUNK.replace("100", size)): (
            "prioritized read in chunks of another size: the same jobs looked at in the same"
            " order, the loop's stop (a short chunk) following the size; only how many ZRANGE"
            " calls a run of broken or orphaned prioritized jobs costs"
        )
        for size in ("99", "101")
    }
)

# The scripts of the dashboard's pause, schedulers and edit buttons, and the
# state lookups they share (ninth pass of docs/mutation.md).
_PAUSE = "priv/scripts/pause-7.lua"
_PAUSED_FIELD = 'redis.call("HSET", KEYS[3], "paused", 1)'
EQUIVALENT.update(
    {
        (_PAUSE, _PAUSED_FIELD, _PAUSED_FIELD.replace("1)", value)): (
            "meta's paused field is read by its presence alone, by every reader: HEXISTS"
            " in pause-7.lua itself, obliterate-21.lua, queueCounts-0.lua,"
            " queues/read/counts.py, and in bullmq 2.20.1's Queue.isPaused and scripts;"
            " BullMQ writes 1, and a value of 0 or 2 pauses the queue the same"
        )
        for value in ("2)", "0)")
    }
)
_RUN_ARGS = 'lifo and "1" or "0", "", 0, "", ""}, 1)'
EQUIVALENT[
    (
        "priv/scripts/runJobScheduler-11.lua",
        _RUN_ARGS,
        _RUN_ARGS.replace('"", 0, "", ""', '"", 1, "", ""'),
    )
] = (
    "the deduplication TTL of a run-now job, which names no deduplication id (the"
    ' argument before it is ""): add_one_job reads the TTL only when it claims a'
    " deduplication key, so 0 or 1 ms writes the same job"
)
EQUIVALENT[
    (
        "priv/scripts/removeJobScheduler-7.lua",
        "{unpack(ARGV, 4)}, states)",
        "{unpack(ARGV, 3)}, states)",
    )
] = (
    "ARGV[3] (the now in ms, all digits) looked up as one more possible id of a legacy"
    " run: a candidate is taken only when a state holds it and its hash names the"
    " legacy key in rjk, and the only writer of such a hash is a legacy run, whose id"
    " is repeat:<checksum>:<ms> (BullMQ refuses an integer custom id): it never matches,"
    " and the real candidates are looked at after it, as before"
)
_LOCATE = "priv/scripts/includes/locateJob.lua"
_SLICE_OVERLAP = (
    "zset_holders' slices overlap by one id (slices of 1,000 ids starting every 999,"
    " or of 1,001 starting every 1,000): every id is still asked once or twice and"
    " note_holder keeps the first answer, so the same holders; one id more a ZMSCORE"
    " (test_locate_job_mutants kills the slices that leave a gap)"
)
EQUIVALENT.update(
    {
        (_LOCATE, "for first = 1, slices, 1000 do", "for first = 1, slices, 999 do"): (
            _SLICE_OVERLAP
        ),
        (
            _LOCATE,
            "local last = math.min(first + 999, #ids)",
            "local last = math.min(first + 1000, #ids)",
        ): _SLICE_OVERLAP,
        (
            _LOCATE,
            'return type(size) == "number" and size > 0',
            'return type(size) == "number" and size >= 0',
        ): (
            "occupied_states also keeps the empty states: list_holders reads an empty"
            " list (LRANGE answers nothing) and zset_holders passes over an empty set"
            " by its own EXISTS, so the same holders; one LRANGE or EXISTS more an"
            " empty state (a key of another type is still left out by the type test)"
        ),
        (
            _LOCATE,
            "for index = first, #ARGV - 1, 2 do",
            "for index = first, #ARGV - 0, 2 do",
        ): (
            "both callers (cleanJobsInSet-11, requeueJobs-13) always send 6 arguments and"
            " then pairs, so #ARGV is even and the odd indexes from 7 stop at #ARGV - 1"
            " either way"
        ),
        (
            _LOCATE,
            "for index = first, #ARGV - 1, 2 do",
            "for index = first, #ARGV - 1, 1 do",
        ): (
            "the pairs also read shifted by one add entries keyed by a state's name"
            " (wait, paused, active) on top of the right ones: no job has such an id,"
            " because its hash's key would be that state's own key (an add of the custom"
            " id 'wait' answers 'duplicated'), so no job is found listed that was not"
        ),
    }
)

# The tenth pass's survivors judged equivalent (docs/mutation.md).
EQUIVALENT[("dashboard/shared/health.py", "if per_minute >= 10:", "if per_minute > 10:")] = (
    "a pace of exactly 10 a minute takes the other branch and reads '10.0/min', whose"
    " '.0/' is dropped: '10/min' either way (test_health_mutants kills the bound moved"
    " to 9 or 11: 9.6 and 10.4 a minute)"
)
EQUIVALENT[("priv/scripts/drain-11.lua", "if budget <= 0 then", "if budget < 0 then")] = (
    "drain_state goes on with no room left (the budget never goes below 0: a state"
    " takes at most what is left): it counts the other states (LLEN/ZCARD through"
    " pcall) and reads the occupied other lists, then take_batch returns before any"
    " read of its own for a count of 0, so nothing is taken and the call still"
    " answers {1, skipped}; a few reads more a call whose batch ran out"
    " (test_drain_mutants kills the state passed over with room for one more job)"
)

_ADD_STEPS = "priv/scripts/includes/addJobSteps.lua"
_ADD_ARGS_ALWAYS_SENT = (
    "fallback never taken: job_args (queues/commands/admin.py), the one builder of"
    " addJob's and addJobs' arguments, always sends PreparedJob's delay and priority,"
    " ints the options checks validated"
)
EQUIVALENT.update(
    {
        (
            _ADD_STEPS,
            "local delay = tonumber(args[at + 5]) or 0",
            "local delay = tonumber(args[at + 5]) or 1",
        ): _ADD_ARGS_ALWAYS_SENT,
        (
            _ADD_STEPS,
            "local priority = tonumber(args[at + 6]) or 0",
            "local priority = tonumber(args[at + 6]) or 1",
        ): _ADD_ARGS_ALWAYS_SENT,
        (
            _ADD_STEPS,
            "local ttl = tonumber(args[at + 9]) or 0",
            "local ttl = tonumber(args[at + 9]) or 1",
        ): _ADD_ARGS_ALWAYS_SENT.replace("delay and priority", "dedup_ttl"),
        (
            _ADD_STEPS,
            "if taken > 8 and stride < 1073741824 then",
            "if taken > 8 and stride < 1073741823 then",
        ): (
            "the stride is a power of two (1, doubled), and none lies between 2^30 - 1"
            " and 2^30: it doubles up to 2^30 and stops there either way"
            " (test_add_mutants kills the cap moved to 2^30 + 1 or made <=)"
        ),
    }
)

# The thirteenth pass's survivors judged equivalent (docs/mutation.md).
_FLOW = "priv/scripts/addFlow-1.lua"
_FLOW_ARGS_ALWAYS_SENT = (
    "fallback never taken: add_flow (queues/commands/flows.py) sends each node's"
    " arguments by job_args, which always sends PreparedJob's delay and priority,"
    " ints the options checks validated (test_flow_mutants kills the parent's"
    " delay and priority read from another argument or dropped)"
)
EQUIVALENT.update(
    {
        (
            _FLOW,
            '"timestamp", ARGV[at + 4], "delay", tonumber(ARGV[at + 5]) or 0,',
            '"timestamp", ARGV[at + 4], "delay", tonumber(ARGV[at + 5]) or 1,',
        ): _FLOW_ARGS_ALWAYS_SENT,
        (
            _FLOW,
            '"priority", tonumber(ARGV[at + 6]) or 0}',
            '"priority", tonumber(ARGV[at + 6]) or 1}',
        ): _FLOW_ARGS_ALWAYS_SENT,
        (
            "priv/scripts/obliterate-21.lua",
            'redis.call("DEL", unpack(KEYS, 11))',
            'redis.call("DEL", unpack(KEYS, 10))',
        ): (
            "KEYS[10] (repeat) deleted once more: the call reaches this DEL only with"
            " budget left after the schedulers' take_batch, whose keep never keeps an"
            " id, so it took (and ZREMed) every member and the zset no longer exists;"
            " DEL of a missing key changes nothing"
        ),
    }
)

# cosmic-ray operators kept (the rest replace an operator with an unrelated
# one, e.g. + with **, which fails at once and only costs time).
_PY_COMPARISONS = {
    ("Lt", "LtE"),
    ("LtE", "Lt"),
    ("Gt", "GtE"),
    ("GtE", "Gt"),
    ("Eq", "NotEq"),
    ("NotEq", "Eq"),
    ("Is", "IsNot"),
    ("IsNot", "Is"),
}
_PY_BINARY = {("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"), ("FloorDiv", "Mul")}
_PY_PLAIN = {
    "AddNot",
    "ReplaceTrueWithFalse",
    "ReplaceFalseWithTrue",
    "ReplaceAndWithOr",
    "ReplaceOrWithAnd",
    "ReplaceBreakWithContinue",
    "ReplaceContinueWithBreak",
    "ExceptionReplacer",
    "NumberReplacer",
    "ZeroIterationForLoop",
    "ReplaceUnaryOperator_USub_UAdd",
    "ReplaceUnaryOperator_Delete_Not",
}


def _kept_operator(name: str) -> bool:
    short = name.split("/", 1)[1]
    if short in _PY_PLAIN:
        return True
    for prefix, pairs in (
        ("ReplaceComparisonOperator_", _PY_COMPARISONS),
        ("ReplaceBinaryOperator_", _PY_BINARY),
    ):
        if short.startswith(prefix):
            return tuple(short[len(prefix) :].split("_")) in pairs
    return False


@dataclass
class Mutant:
    module: str
    line: int  # 1-based, in the original file
    operator: str
    original: str  # the original line, stripped
    mutated: str  # the line as mutated, stripped ("" when deleted)
    source: str = ""  # the whole mutated file (not stored in the results)
    outcome: str = ""  # killed, survived, timeout, equivalent
    seconds: float = 0.0
    failed_test: str = ""

    @property
    def label(self) -> str:
        return f"L{self.line} {self.operator}: `{self.original}` -> `{self.mutated}`"


def _changed_line(original: str, mutated: str) -> tuple[int, str, str]:
    """The first line that differs: its number, and its text before and after."""
    before, after = original.splitlines(), mutated.splitlines()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag != "equal":
            old = " ".join(line.strip() for line in before[a1:a2])
            new = " ".join(line.strip() for line in after[b1:b2])
            return a1 + 1, old, new
    return 0, "", ""


def _unmutated_lines(source: str) -> tuple[set[int], set[int]]:
    """Lines of annotations, and lines of module-level constants (whose
    numbers are not mutated; their other expressions are)."""
    import ast

    tree = ast.parse(source)

    def span(node: ast.AST) -> set[int]:
        first = getattr(node, "lineno", 0)
        return set(range(first, (getattr(node, "end_lineno", None) or first) + 1))

    annotations: set[int] = set()
    for node in ast.walk(tree):
        annotation = None
        if isinstance(node, ast.arg | ast.AnnAssign):
            annotation = node.annotation
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotation = node.returns
        if annotation is not None:
            annotations |= span(annotation)
    constants: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            constants |= span(node)
    return annotations, constants


def _in_parameters(node: object) -> bool:
    parent = getattr(node, "parent", None)
    return getattr(parent, "type", "") in ("parameters", "param", "lambdef", "typedargslist")


def python_mutants(module: str, source: str) -> Iterator[Mutant]:
    from cosmic_ray import plugins
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code

    annotations, constants = _unmutated_lines(source)
    nodes = list(ast_nodes(get_ast(source)))
    for name in plugins.operator_names():
        if not _kept_operator(name):
            continue
        operator = plugins.get_operator(name)()
        positions = [(node, pos) for node in nodes for pos in operator.mutation_positions(node)]
        for occurrence, (node, (start, _end)) in enumerate(positions):
            line = start[0]
            if line in annotations or (line in constants and name.endswith("NumberReplacer")):
                continue
            if _in_parameters(node):
                continue  # the bare * of keyword-only parameters is no multiplication
            try:
                mutated = mutate_code(source, operator, occurrence)
            except AttributeError:  # cosmic-ray cannot replace a dotted exception name
                continue
            if mutated is None or mutated == source:
                continue
            number, old, new = _changed_line(source, mutated)
            yield Mutant(module, number or line, name.split("/", 1)[1], old, new, mutated)


# --- Lua --------------------------------------------------------------------------------

_LUA_COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "~=", "~=": "=="}
_LUA_TOKEN = re.compile(r"<=|>=|==|~=|<|>|\band\b|\bor\b|\bnot\s+|(?<![\w.\[])\d+(?![\w.])")
# A statement that is a call: `name(...)`, `a.b(...)`, `a:b(...)`, `redis.call(...)`.
_LUA_CALL = re.compile(r"[A-Za-z_][\w.:]*\s*\(")


def _lua_code_mask(lines: list[str]) -> list[str]:
    """Each line with comments and string contents blanked, so the mutator
    touches code only (a `--[[ ... ]]` header, a "<" inside a string)."""
    masked = []
    in_block = False
    for line in lines:
        out = []
        i = 0
        quote = ""
        while i < len(line):
            if in_block:
                end = line.find("]]", i)
                if end < 0:
                    out.append(" " * (len(line) - i))
                    i = len(line)
                    continue
                out.append(" " * (end + 2 - i))
                i = end + 2
                in_block = False
                continue
            char = line[i]
            if quote:
                if char == "\\":
                    out.append("  ")
                    i += 2
                    continue
                out.append(char if char == quote else " ")
                quote = "" if char == quote else quote
                i += 1
                continue
            if line.startswith("--[[", i):
                in_block = True
                out.append("    ")
                i += 4
                continue
            if line.startswith("--", i):
                out.append(" " * (len(line) - i))
                break
            if char in "\"'":
                quote = char
            out.append(char)
            i += 1
        masked.append("".join(out)[: len(line)].ljust(len(line)))
    return masked


def _statement_end(masked: list[str], first: int) -> int:
    """The last line of the call statement starting at ``first`` (its parentheses balanced)."""
    depth = 0
    for index in range(first, len(masked)):
        depth += masked[index].count("(") - masked[index].count(")")
        if depth <= 0:
            return index
    return first


def lua_mutants(module: str, source: str) -> Iterator[Mutant]:
    lines = source.split("\n")
    masked = _lua_code_mask(lines)
    for index, code in enumerate(masked):
        if index == 0 and code.startswith("#!"):
            continue
        for match in _LUA_TOKEN.finditer(code):
            word = match.group()
            if word in _LUA_COMPARE:
                replacements = [(_LUA_COMPARE[word], "compare")]
            elif word in ("and", "or"):
                replacements = [("or" if word == "and" else "and", "and/or")]
            elif word.startswith("not"):
                replacements = [("", "drop not")]
            else:
                before = code[: match.start()].rstrip()
                if before.endswith(("KEYS[", "ARGV[")):
                    continue  # which key or argument: wrong ones fail every call at once
                value = int(word)
                replacements = [(str(value + 1), "number+1")]
                if value > 0:
                    replacements.append((str(value - 1), "number-1"))
            for text, operator in replacements:
                line = lines[index]
                changed = line[: match.start()] + text + line[match.end() :]
                mutated = [*lines[:index], changed, *lines[index + 1 :]]
                yield Mutant(
                    module, index + 1, operator, line.strip(), changed.strip(), "\n".join(mutated)
                )
        statement = code.strip()
        call = _LUA_CALL.match(statement)
        if call and not statement.startswith(("local ", "return", "if ", "function")):
            last = _statement_end(masked, index)
            deleted = [*lines[:index], *([""] * (last - index + 1)), *lines[last + 1 :]]
            original = " ".join(line.strip() for line in lines[index : last + 1])
            yield Mutant(module, index + 1, "delete call", original, "", "\n".join(deleted))


# --- running ----------------------------------------------------------------------------


def copy_tree() -> None:
    """The checkout's files (tracked and new, not ignored) into TREE, afresh."""
    if TREE.exists():
        shutil.rmtree(TREE)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        name = raw.decode()
        source = ROOT / name
        if not source.is_file():
            continue  # deleted in the work tree, not yet in git
        target = TREE / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def warm_up() -> None:
    """Import what every test run needs and nothing of the project's own: the
    forked children import the project after its file was mutated."""
    sys.dont_write_bytecode = True  # the tree's modules change under the same mtime second
    os.chdir(TREE)
    sys.path.insert(0, str(TREE))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    for name in (
        "pytest",
        "django",
        "django.test",
        "redis",
        "hypothesis",
        "pytest_django",
        "pytest_asyncio",
        "pytest_timeout",
        "channels",
        "daphne",
        "bullmq",
        "msgpack",
        "rapidjson",
        "croniter",
        "prometheus_client",
    ):
        with contextlib.suppress(ImportError):
            __import__(name)
    for prefix in ("dashboard", "queues", "tests"):
        assert not any(m == prefix or m.startswith(prefix + ".") for m in sys.modules), prefix


# Modules whose cluster tests run too (a 3-node cluster started per run, about
# 2 s): the collector's pipelines and MOVED handling differ only on a cluster.
WITH_CLUSTER = {"queues/collector.py"}


def run_tests(
    tests: tuple[str, ...],
    timeout: float,
    log: Path,
    *,
    measure: Path | None = None,
    lookups: Path | None = None,
    cluster: bool = False,
) -> tuple[str, float, str]:
    """("killed" | "survived" | "timeout", seconds, first failed test) of one
    pytest run of ``tests`` in a forked child; with ``measure`` (a module's
    file), which test ran each of its lines, into WORK/coverage.db; with
    ``lookups`` (a JSON file), which scripts each test looked up."""
    began = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: its own process group, so a timeout ends all it started
        os.setsid()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        import builtins

        import pytest
        from cosmic_ray.exceptions import CosmicRayTestingException

        # What ExceptionReplacer puts in an except clause: a handler that catches nothing.
        builtins.CosmicRayTestingException = CosmicRayTestingException  # type: ignore[attr-defined]
        args = [
            *tests,
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "-m",
            "not browser and not install and not host" + ("" if cluster else " and not cluster"),
            # Per test: a mutant that loops for ever (a Lua loop whose bound
            # moved holds Redis BUSY; a caller asking for the next batch again
            # and again) fails its test after this, not after the run's whole
            # timeout (which cost 86 s a mutant of listedJobs-4.lua).
            f"--timeout={int(min(timeout, TEST_TIMEOUT_S))}",
            # The plugins imported before the fork are not assertion-rewritten: fine.
            "-W",
            "ignore::pytest.PytestAssertRewriteWarning",
        ]
        plugins = [*_coverage_plugins(measure), *_lookup_plugins(lookups)]
        code = int(pytest.main(args, plugins=plugins))
        sys.stdout.flush()
        os._exit(code)
    outcome = ""
    while not outcome:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            outcome = "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
        elif time.monotonic() - began > timeout:
            _end_group(pid)
            os.waitpid(pid, 0)
            outcome = "timeout"
        else:
            time.sleep(0.05)
    _end_group(pid)  # what the tests left running (a server a failed test did not stop)
    seconds = time.monotonic() - began
    failed = ""
    text = log.read_text(errors="replace") if log.exists() else ""
    found = re.search(r"^(?:FAILED|ERROR) (\S+)", text, re.M)
    if found:
        failed = found.group(1)
    return outcome, seconds, failed


def _coverage_plugins(measure: Path | None) -> list[object]:
    """A pytest plugin that records, under coverage, the node id of the test
    running each line of ``measure`` (setup and teardown included: a fixture
    may be what calls the module). Lines run at import get no test."""
    if measure is None:
        return []
    import coverage
    import pytest

    cov = coverage.Coverage(data_file=str(WORK / "coverage.db"), include=[str(measure)])
    cov.start()

    class Contexts:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
            cov.switch_context(item.nodeid)
            yield
            cov.switch_context("")

        def pytest_sessionfinish(self) -> None:
            cov.stop()
            cov.save()

    return [Contexts()]


def _lookup_plugins(record: Path | None) -> list[object]:
    """A pytest plugin that records which scripts each test looked up, as
    JSON {script name: [node ids]} into ``record``: every call, run,
    pipelined call and SCRIPT LOAD of the project goes through
    ``queues.scripts.script``. A lookup outside a test (at import, in a
    module-level constant) is recorded under ""."""
    if record is None:
        return []
    import pytest

    from queues import scripts as project_scripts  # in the child, after the fork

    seen: dict[str, set[str]] = {}
    current = [""]
    look_up = project_scripts.script

    def script(name: str) -> object:
        seen.setdefault(name, set()).add(current[0])
        return look_up(name)

    project_scripts.script = script  # type: ignore[assignment]

    class Lookups:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
            current[0] = item.nodeid
            yield
            current[0] = ""

        def pytest_sessionfinish(self) -> None:
            assert record is not None
            record.write_text(json.dumps({name: sorted(ids) for name, ids in seen.items()}))

    return [Lookups()]


_LUA_INCLUDE = re.compile(r'^\s*---\s*@include\s+"([\w-]+)"', re.M)


def _scripts_running(module: str) -> set[str]:
    """The script names whose source holds ``module``: its own name for a
    script, every script that inlines it (directly or through another
    include) for an include."""
    scripts_dir = TREE / "priv" / "scripts"
    includes: dict[str, set[str]] = {}  # file stem (or script name) -> includes named
    for path in [*scripts_dir.glob("*.lua"), *(scripts_dir / "includes").glob("*.lua")]:
        key = path.stem if path.parent.name == "includes" else path.stem.rsplit("-", 1)[0]
        includes[("include:" if path.parent.name == "includes" else "") + key] = set(
            _LUA_INCLUDE.findall(path.read_text())
        )
    target = Path(module)
    if target.parent.name != "includes":
        return {target.stem.rsplit("-", 1)[0]}

    def holds(key: str, seen: set[str]) -> bool:
        for name in includes.get(key, ()):
            if name == target.stem:
                return True
            if name not in seen and holds("include:" + name, seen | {name}):
                return True
        return False

    return {key for key in includes if not key.startswith("include:") and holds(key, set())}


def _tests_by_script(record: Path, names: set[str]) -> list[str]:
    """The tests that looked up one of ``names`` in the unmutated run. A
    lookup outside a test (a test module's parameters built at collection, a
    project constant) names no test: the tests that use what it built are
    missed here, which costs only time, since a mutant that survives the
    selection runs the whole files."""
    seen: dict[str, list[str]] = json.loads(record.read_text()) if record.exists() else {}
    return sorted({node for name in names for node in seen.get(name, []) if node})


def _tests_by_line(module_file: Path, source: str) -> dict[int, list[str] | None]:
    """For each line the tests ran: the node ids that ran it, or None when
    it ran at import (every test depends on it). A multi-line statement's
    lines share what any of its lines got."""
    import ast

    import coverage

    data = coverage.CoverageData(basename=str(WORK / "coverage.db"))
    data.read()
    by_line = data.contexts_by_lineno(str(module_file))
    found: dict[int, list[str] | None] = {}
    for line, contexts in by_line.items():
        ids = [context for context in contexts if context]
        found[line] = ids if len(ids) == len(contexts) else None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            if any(line in found for line in span):
                merged: set[str] = set()
                at_import = False
                for line in span:
                    ids = found.get(line, [])
                    if ids is None:
                        at_import = True
                    else:
                        merged.update(ids)
                for line in span:
                    found.setdefault(line, None if at_import else sorted(merged))
    return found


def _end_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def mutants_of(module: str, source: str | None = None) -> list[Mutant]:
    """The mutants of ``module``: of ``source`` when given (the copy a run
    tests, which the work tree may have moved past meanwhile)."""
    if source is None:
        source = (ROOT / module).read_text()
    found = (
        lua_mutants(module, source) if module.endswith(".lua") else python_mutants(module, source)
    )
    return list(found)


def _in_order(node_ids: list[str], files: tuple[str, ...]) -> tuple[str, ...]:
    """Node ids in the order of their files in TARGETS (older files first)."""
    rank = {name: index for index, name in enumerate(files)}
    return tuple(sorted(node_ids, key=lambda n: (rank.get(n.split("::")[0], len(rank)), n)))


def run_module(
    module: str,
    *,
    only_lines: set[int] | None = None,
    after_each: Callable[[list[Mutant], int], None] | None = None,
) -> list[Mutant]:
    """Run ``module``'s mutants; ``after_each`` gets the ones run so far and
    how many there are after each mutant (a run stopped midway keeps them)."""
    # Test files not in the tree (yet) are left out: a run on an older checkout.
    tests = tuple(name for name in TARGETS[module] if (TREE / name).exists())
    mutants = mutants_of(module, (TREE / module).read_text())
    if only_lines:
        mutants = [m for m in mutants if m.line in only_lines]
    logs = WORK / "logs" / module.replace("/", "_")
    logs.mkdir(parents=True, exist_ok=True)
    target = TREE / module
    original = target.read_text()
    python = module.endswith(".py")
    (WORK / "coverage.db").unlink(missing_ok=True)
    lookups = WORK / "lookups.json"
    lookups.unlink(missing_ok=True)
    cluster = module in WITH_CLUSTER
    outcome, baseline, failed = run_tests(
        tests,
        900,
        logs / "baseline.txt",
        measure=target if python else None,
        lookups=None if python else lookups,
        cluster=cluster,
    )
    if outcome != "survived":
        raise SystemExit(
            f"{module}: its tests fail unmutated ({failed}; see {logs / 'baseline.txt'})"
        )
    # Python: which tests ran each line (a line run at import: all of them).
    # Lua: the tests that ran a script holding the module; a mutant runs
    # them first, as a line's tests for Python, then the whole files if it
    # survived them.
    by_line = _tests_by_line(target, original) if python else {}
    by_script = None if python else _tests_by_script(lookups, _scripts_running(module))
    timeout = baseline * 3 + 20
    print(f"{module}: {len(mutants)} mutants, tests {baseline:.1f} s unmutated", flush=True)
    try:
        for number, mutant in enumerate(mutants, 1):
            reason = EQUIVALENT.get((module, mutant.original, mutant.mutated))
            selected = by_line.get(mutant.line) if python else by_script
            target.write_text(mutant.source)
            log = logs / f"{number}.txt"
            if selected:
                mutant.outcome, mutant.seconds, mutant.failed_test = run_tests(
                    _in_order(selected, tests), timeout, log, cluster=cluster
                )
            if not selected or mutant.outcome == "survived":
                # Survived the tests that ran its line, or no test was seen
                # running it: the whole files decide (code run once per process,
                # such as a URLconf's decorators, is seen by one test only).
                mutant.outcome, mutant.seconds, mutant.failed_test = run_tests(
                    tests, timeout, log, cluster=cluster
                )
            if mutant.outcome == "survived" and reason:
                mutant.outcome = "equivalent"
            if after_each is not None:
                after_each(mutants[:number], len(mutants))
            mark = {"killed": ".", "timeout": "T", "survived": "S", "equivalent": "="}
            print(mark[mutant.outcome], end="" if number % 50 else "\n", flush=True)
    finally:
        target.write_text(original)
    print()
    return mutants


def results_path(module: str) -> Path:
    return WORK / f"{module.replace('/', '_')}.json"


def _killed(mutant: dict[str, object]) -> bool:
    return mutant["outcome"] in ("killed", "timeout")


def save(module: str, mutants: list[Mutant], minutes: float, of: int | None = None) -> None:
    """The run's results (every mutant, its outcome and the first test that
    failed) as build/mutate/<module>.json, which --report reads; ``of``: how
    many mutants the module has, when the run is not over (or was stopped)."""
    record = {
        "module": module,
        "of": len(mutants) if of is None else of,
        "tests": [name for name in TARGETS[module] if (TREE / name).exists()],
        "minutes": round(minutes, 1),
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "mutants": [
            {k: v for k, v in asdict(mutant).items() if k != "source"} for mutant in mutants
        ],
    }
    results_path(module).write_text(json.dumps(record, indent=1) + "\n")


def recheck(into: Path, module: str, mutants: list[Mutant]) -> None:
    """Replace the outcomes of ``mutants`` in the results kept in ``into``
    (a run rechecked after new tests, without running every mutant again)."""
    path = into / f"{module.replace('/', '_')}.json"
    record = json.loads(path.read_text())
    fresh = {(m.line, m.operator, m.original, m.mutated): m for m in mutants}
    # A merge may have moved the lines since the run: a mutant whose operator
    # and text are the only ones of their kind in the whole module is found by
    # its text (unique among the rechecked ones is not enough: the same line
    # of text elsewhere, not rechecked, would take the rechecked one's outcome).
    every = mutants_of(module, (TREE / module).read_text())
    texts = [(m.operator, m.original, m.mutated) for m in every]
    by_text = {
        text: m for m in mutants if texts.count(text := (m.operator, m.original, m.mutated)) == 1
    }
    for kept in record["mutants"]:
        text = (kept["operator"], kept["original"], kept["mutated"])
        found = fresh.get((kept["line"], *text)) or by_text.get(text)
        if found is not None:
            kept.update(outcome=found.outcome, failed_test=found.failed_test, rechecked=True)
    record["rechecked"] = time.strftime("%Y-%m-%d %H:%M")
    path.write_text(json.dumps(record, indent=1) + "\n")


def rate(killed: int, mutants: int, equivalent: int) -> str:
    counted = mutants - equivalent
    return f"{100.0 * killed / counted:.0f}%" if counted else "-"


def _existed(ref: str, name: str) -> bool:
    found = subprocess.run(
        ["git", "cat-file", "-e", f"{ref}:{name}"], cwd=ROOT, check=False, capture_output=True
    )
    return found.returncode == 0


def _label(kept: dict[str, object]) -> str:
    fields = Mutant.__dataclass_fields__
    return Mutant(**{k: v for k, v in kept.items() if k in fields}).label  # type: ignore[arg-type]


def report(before: str | None) -> None:
    """The last results per module; with ``before`` (a git ref), also the kill
    rate the test files of that ref alone had: each run gives the files in
    TARGETS' order, older files first, and stops at the first failure, so a
    mutant whose first failure is in a file the ref lacks passed all of the
    ref's files (exact while new tests go into new files)."""
    head = "| module | mutants | killed | equivalent | survived | kill rate | minutes |"
    if before:
        head = head.replace("| kill rate |", f"| kill rate at {before} | kill rate |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    survivors: dict[str, list[str]] = {}
    equivalents: dict[str, list[tuple[str, str]]] = {}
    for module in TARGETS:
        path = results_path(module)
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        mutants = data["mutants"]
        for mutant in mutants:  # EQUIVALENT may have grown since the run
            key = (module, mutant["original"], mutant["mutated"])
            if mutant["outcome"] == "survived" and key in EQUIVALENT:
                mutant["outcome"] = "equivalent"
        killed = sum(_killed(m) for m in mutants)
        equivalent = sum(m["outcome"] == "equivalent" for m in mutants)
        survived = [m for m in mutants if m["outcome"] == "survived"]
        run = str(len(mutants))
        if data.get("of", len(mutants)) != len(mutants):  # a run stopped midway
            run += f" of {data['of']}"
        cells = [f"`{module}`", run, str(killed), str(equivalent), str(len(survived))]
        if before:
            old = {name for name in data["tests"] if _existed(before, name)}
            killed_then = sum(
                _killed(m) and (not m["failed_test"] or m["failed_test"].split("::")[0] in old)
                for m in mutants
            )
            cells.append(rate(killed_then, len(mutants), equivalent))
        cells += [rate(killed, len(mutants), equivalent), f"{data['minutes']:.0f}"]
        print("| " + " | ".join(cells) + " |")
        survivors[module] = [_label(m) for m in survived]
        equivalents[module] = [
            (_label(m), EQUIVALENT[(module, str(m["original"]), str(m["mutated"]))])
            for m in mutants
            if m["outcome"] == "equivalent"
        ]
    for module, labels in survivors.items():
        if labels:
            print(f"\n{module}, survived:")
            for label in labels:
                print(f"  - {label}")
    for module, found in equivalents.items():
        if found:
            print(f"\n{module}, equivalent:")
            for label, why in found:
                print(f"  - {label}: {why}")


def main() -> None:
    global WORK, TREE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules of TARGETS (default: all)")
    parser.add_argument("--list", action="store_true", help="list modules and mutant counts")
    parser.add_argument("--report", action="store_true", help="print the last results")
    parser.add_argument("--before", help="with --report: also the kill rate at this git ref")
    parser.add_argument("--lines", help="only mutants on these lines (1,5,9), to recheck")
    parser.add_argument("--work", type=Path, default=WORK, help="where the copy and results go")
    parser.add_argument(
        "--into", type=Path, help="with --lines: update these mutants in that --work's results"
    )
    args = parser.parse_args()
    WORK, TREE = args.work.resolve(), args.work.resolve() / "tree"
    into = args.into.resolve() if args.into else None  # before warm_up's chdir
    if args.report:
        report(args.before)
        return
    modules = args.modules or list(TARGETS)
    unknown = [m for m in modules if m not in TARGETS]
    if unknown:
        raise SystemExit(f"not in TARGETS: {', '.join(unknown)} (known: {', '.join(TARGETS)})")
    if args.list:
        for module in modules:
            print(f"{module}: {len(mutants_of(module))} mutants; {' '.join(TARGETS[module])}")
        return
    only = {int(n) for n in args.lines.split(",")} if args.lines else None
    WORK.mkdir(parents=True, exist_ok=True)
    copy_tree()
    warm_up()
    for module in modules:
        began = time.monotonic()

        def keep(done: list[Mutant], of: int, module: str = module, began: float = began) -> None:
            save(module, done, (time.monotonic() - began) / 60, of)

        mutants = run_module(module, only_lines=only, after_each=None if only else keep)
        minutes = (time.monotonic() - began) / 60
        if only is None:
            save(module, mutants, minutes)
        elif into:
            recheck(into, module, mutants)
        killed = sum(m.outcome in ("killed", "timeout") for m in mutants)
        equivalent = sum(m.outcome == "equivalent" for m in mutants)
        survived = [m for m in mutants if m.outcome == "survived"]
        print(
            f"{module}: {killed} of {len(mutants)} killed, {equivalent} equivalent,"
            f" {len(survived)} survived: {rate(killed, len(mutants), equivalent)}"
            f" in {minutes:.1f} min"
        )
        for mutant in survived:
            print(f"  survived {mutant.label}")


if __name__ == "__main__":
    main()
