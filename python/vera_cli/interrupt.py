"""Ctrl-C during a run the CLI works off itself (`vera ingest`, `vera demo`).

Procrastinate runs the ingestion job in a thread; a plain KeyboardInterrupt
would cancel the event loop and then wait for that thread, which reads every
file to the end (a paid embedder paying all the way). So the CLI takes SIGINT
itself:

- the first asks the run to stop after the file in hand (a flag the
  ingestion checks between files) and the worker to take no further job;
  the run writes the cursor of what it committed and reports, and the
  command prints its summary and exits 130;
- the second stops the process at once. That is safe: each file's episode,
  passages and claims commit in one transaction, so the one in hand is rolled
  back by the server when the connection drops, never half-written; raw
  bytes are written before that transaction under a content-addressed key
  (written again, unchanged, next time); cursor entries not yet written only
  make the next run hash those files again and find them unchanged. The job
  left `doing` is queued again by a `vera worker` once its heartbeat is
  stale, and finds nothing left to do.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import procrastinate

# what a shell reports for a process ended by SIGINT (128 + 2)
EXIT_INTERRUPTED = 130


class StopRequest:
    """The run's stop flag, set by the first Ctrl-C; the ingestion asks it between files."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def __call__(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        self._event.set()


def drain_interruptibly(
    app: procrastinate.App,
    stop: StopRequest,
    *,
    stalled_after: float,
    say: Callable[[str], None],
    before_hard_stop: Callable[[], None] = lambda: None,
) -> bool:
    """Run every due job in this process, as serving.drain does, but with Ctrl-C handled as above.
    True when a Ctrl-C stopped it (the job in hand ended early; later jobs stay queued)."""
    from vera_worker.adapters.queue import SERVED_QUEUES
    from vera_worker.adapters.serving import worker_options

    interrupted = False

    async def work() -> None:
        nonlocal interrupted
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        assert main is not None

        def on_sigint() -> None:
            nonlocal interrupted
            if interrupted:
                before_hard_stop()  # a progress bar gives the terminal its cursor back
                say("vera: stopped now; the file in hand was not written (run the command again)")
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(EXIT_INTERRUPTED)
            interrupted = True
            say("vera: stopping after the file in hand (Ctrl-C again stops at once) ...")
            stop.set()
            main.cancel()  # the worker then takes no new job and waits for the one in hand

        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            handling = True
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
            handling = False
        try:
            async with app.open_async():
                await app.run_worker_async(
                    queues=list(SERVED_QUEUES),
                    wait=False,
                    concurrency=1,
                    install_signal_handlers=False,
                    **worker_options(stalled_after),
                )
        finally:
            if handling:
                loop.remove_signal_handler(signal.SIGINT)

    try:
        asyncio.run(work())
    except asyncio.CancelledError:
        if not interrupted:
            raise
    return interrupted
