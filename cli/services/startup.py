"""The console process's start-up and end: the cyclic collector held off while it starts,
and no final collection after its command answered (docs/history/performance-journal.md "Start-up").

Click-free and import-free: `cli.main`, `cli.group` and a capture pass call these.
"""

from __future__ import annotations

_QUIET = [False]  # whether `quiet_startup` holds the collector off


def quiet_startup() -> None:
    """Hold the cyclic collector off while the console's process starts (`cli.main.main`
    with no argv): ~25 collections ran during the imports of a +1 `capture`, each walking
    the young objects those imports made — classes, functions, module dicts, all of them
    alive until the process ends — ~3 % of its CPU (callgrind, docs/history/performance-journal.md).
    `startup_done` turns it back on; it is called before any work that makes garbage: once
    the invoked command is loaded (`cli.group`), or, for a one-shot `capture`, once its
    engine is ready (`cli.registry.QUIET_UNTIL_WORK`). A no-op when the collector was
    already off (the caller's choice, kept)."""
    import gc

    if gc.isenabled():
        gc.disable()
        _QUIET[0] = True


def startup_done() -> None:
    """The collector back on after `quiet_startup`, with what start-up made frozen
    (`gc.freeze`: imported modules, classes and functions are never garbage, and later
    collections no longer walk them). Idempotent; a no-op when start-up was not quiet."""
    if _QUIET[0]:
        import gc

        _QUIET[0] = False
        gc.freeze()
        gc.enable()


def skip_final_collection() -> None:
    """Put every live object out of the cyclic collector's reach (`gc.freeze`): called by
    `cli.main.main` once the console's command has answered and committed everything, right
    before its process ends.

    The interpreter's shutdown otherwise collects and frees every module, class and
    function one at a time: ~35 of the ~50 ms a +1 `capture` or hook process spent after
    its work was done, under load (docs/history/performance-journal.md); the operating system
    takes the memory back at once instead. Nothing else changes: atexit handlers run, files are
    flushed and closed, objects outside reference cycles are finalized as before (the
    log's environment and the SQLite connections are closed explicitly anyway); only
    objects in reference cycles are left to the OS, as at any process exit. Every
    commit is already durable by then (LMDB and SQLite sync at commit)."""
    import gc

    gc.freeze()
