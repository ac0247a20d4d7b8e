"""A second encoder for a long embedding step: a child interpreter that loads the same model
on one BLAS thread and encodes the batches it is sent, answering each with its vectors.

Why a process and not a second BLAS thread: the model's matrices are small, so a second
BLAS thread mostly waits — on the 1 GB bench home one process on two BLAS threads embedded
483 chunks per CPU second, one on one thread 762 (`bench/meaning.py --embed-home`). The step
(build.py) hands every second batch to the helper and encodes the other itself, then appends
both in batch order: the projection is row for row what one process makes (the same code on
the same batches). A helper that fails (it dies, a frame is torn, it cannot start) is
stopped and the step encodes its batch itself, so a helper can slow a step, never change it.

Protocol (projections.frames over the child's stdin and stdout): a list of texts in, a
float32 (n, dim) array out, in order; the end of its stdin ends it. Its stderr is ours.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from projections import frames

__all__ = ["Helper", "serve", "start"]


class Helper:
    """The parent's end of one helper process."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.alive = True  # False once it failed or was closed

    def send(self, texts: list[str]) -> bool:
        """Hand a batch over; False when the helper is gone (it is stopped)."""
        if not self.alive:
            return False
        try:
            assert self.proc.stdin is not None
            frames.write(self.proc.stdin, texts)
            return True
        except (OSError, ValueError):
            self.close()
            return False

    def receive(self) -> Any:
        """The vectors of the batch sent first and not received yet; None when the helper
        is gone or its answer is torn (it is stopped)."""
        try:
            assert self.proc.stdout is not None
            vecs = frames.read(self.proc.stdout)
        except (OSError, ValueError, EOFError):
            vecs = None
        if vecs is None:
            self.close()
        return vecs

    def close(self) -> None:
        """End the helper (its stdin closed, then killed if it does not exit at once)."""
        self.alive = False
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start(spec: Mapping[str, Any] | None) -> Helper | None:
    """A helper process encoding with the model of `spec` (None: the default), or None when
    one cannot be started."""
    from projections.child import argv

    try:
        proc = subprocess.Popen(argv("projections.meaning.helper:serve",
                                     None if spec is None else dict(spec)),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
    except OSError:
        return None
    return Helper(proc)


def serve(spec: Mapping[str, Any] | None) -> None:
    """The child: encode every batch read from stdin, answer on stdout, until stdin ends."""
    from projections.meaning.model import load

    try:
        model = load(spec, threads=1)
        while (texts := frames.read(sys.stdin.buffer)) is not None:
            frames.write(sys.stdout.buffer, model.encode(texts))
    except (KeyboardInterrupt, BrokenPipeError):  # Ctrl-C reaches the whole group; the
        pass  # step that started it stopped: nothing to say, the step says what it did
