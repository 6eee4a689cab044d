"""A side's processes, forked from the worker: the warden, its namespace's init, the check's child.

Each side of a request runs in processes of its own (:class:`tutor.sandbox.side.SideRun`
forks the first):

* the **warden** (:func:`warden`) runs only our own code: it joins the
  side's pids and memory cgroups (telling the worker of a refusal), makes the side's namespaces, forks the namespace's
  init and the child, counts the side's processes and exits as the child
  did (:data:`TOO_MANY` when the subject started too many, :data:`SIGNALLED`
  plus the signal when a signal killed it);
* the **init** of the PID namespace (:func:`namespace_init`) only reaps orphans;
* the **child** (:func:`run_check`) keeps only its log, ``/dev/null`` and
  its own result pipe open, moves into the side's private tree, caps its
  memory, confines itself (:mod:`tutor.sandbox.confine`), seeds every
  generator, wraps the snippet module the request records
  (:mod:`tutor.sandbox.record`) and calls the check, sending each message
  signed with the side's key (:func:`tutor.sandbox.protocol.sign`).

The speed probe's children (:func:`probe_child`) run the same way, unconfined,
with :data:`SIDE_THREADS` torch threads.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import select
import signal
import sys
import tempfile
import time
import traceback

from tutor.sandbox import confine, landlock, namespaces, protocol, record, seccomp, speed
from tutor.sandbox.protocol import Attempted, Measured, Message, Progress, Raised, Request, Unjoined

#: Torch threads every side's child runs with, whatever the machine: intra-op
#: (``torch.set_num_threads``) and inter-op (``torch.set_num_interop_threads``).
#: A reduction split over more threads adds its partial sums in another order,
#: and float32 addition is not associative: a loss moved in its 6th digit and a
#: sampled token changed with the core count. One thread per side makes every
#: observation and every row of evidence the same on 1, 2, 4 or 16 cores, under
#: ``-j`` and under load (docs/determinism.md).
SIDE_THREADS = 1
#: The address space a CPU side's child may use, MiB (``TUTOR_MEMORY_CAP_MB``; 0: no cap).
MEMORY_CAP_MB = int(os.environ.get("TUTOR_MEMORY_CAP_MB", "8192"))
#: The most frames of the side's own tree a raised exception names (the innermost ones).
MAX_FRAMES = 16
#: The warden's exit status when its child started more than MAX_PROCESSES processes.
TOO_MANY = 127
#: The warden exits with this plus the signal number when its child was killed by a signal.
SIGNALLED = 64


def probe_child(threads: int, fd: int) -> None:
    """A speed probe's child: run ``tutor.sandbox.speed.workload`` with ``threads`` torch threads, write its
    figures as JSON to ``fd``, exit (never returns)."""
    code = 1
    try:
        landlock.die_with_parent()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the worker's stdout carries protocol lines only
        os.dup2(devnull, 2)
        # in the speed probe's child: the worker imported torch once, the child only reaches it
        import torch
        set_threads(torch, threads)
        data = json.dumps(speed.workload(torch)).encode()
        while data:
            data = data[os.write(fd, data):]
        code = 0
    except BaseException:
        pass
    finally:
        os._exit(code)


def warden(request: Request, folder: str, threads: int, fd: int, key: bytes, status: confine.Status,
           roots: tuple[str, ...], cgroup: str | None = None, memory_cgroup: str | None = None, *,
           log_fd: int, listed: tuple[str, ...] = ()) -> None:
    """The side's warden: namespaces, then the child; waits for it, counts its processes, exits as it did.

    Runs only our own code. It dies with the worker (PR_SET_PDEATHSIG) and
    leads its own process group (the worker kills the side by that group).
    Where a PID namespace can be made, the warden's first fork is that
    namespace's init (:func:`namespace_init`, which only reaps) and its second the
    child that runs the check: when the child ends the warden kills the
    init, and the kernel kills everything else the subject started. (The
    child is not the init itself: an init ignores signals it has no handler
    for, so ``os.abort()`` or a signal to itself would behave otherwise.)

    Args:
        roots: what the child may read when confined (:func:`tutor.sandbox.reads.policy`).
        listed: what it may list but not read (:func:`tutor.sandbox.reads.policy`).
    """
    code = 1
    try:
        landlock.die_with_parent()
        os.setpgid(0, 0)
        # the kernel counts the warden and everything under it, and caps their memory together; a
        # refusal is told to the worker (signed, like the child's lines), which says which cap holds instead
        for controller, path in (("pids", cgroup), ("memory", memory_cgroup)):
            why = namespaces.join_cgroup(path)
            if why:
                data = protocol.sign(key, Unjoined(controller=controller, why=why))
                while data:
                    data = data[os.write(fd, data):]
        init = None
        if status.pid_namespace:
            namespaces.make_namespaces()
            init = os.fork()
            if init == 0:  # never returns
                namespace_init()
        child = os.fork()
        if child == 0:  # never returns
            landlock.die_with_parent()
            run_check(request, folder, threads, fd, key, status, roots, log_fd, listed)
        os.close(fd)
        os.close(log_fd)
        code = watch(child, init)
        if init is not None:
            os.kill(init, signal.SIGKILL)  # and with it every process left in the namespace
            os.waitpid(init, 0)
    except BaseException:
        pass
    finally:
        os._exit(code)


def namespace_init() -> None:
    """The init of a side's PID namespace: reap whatever is orphaned there, until killed."""
    code = 0
    try:
        landlock.die_with_parent()
        # the side lists this process in its /proc: a name, not the worker's command line, and no capability
        namespaces.rename_process("tutor-side-init")
        landlock.drop_capabilities()
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes pause() when an orphan ends
        while True:
            try:
                os.wait()
            except ChildProcessError:
                signal.pause()
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def watch(child: int, init: int | None) -> int:
    """Wait for ``child``; stop the side when it has more than MAX_PROCESSES processes; its end as an exit status.

    The processes counted are the init's descendants (orphans included)
    where there is a PID namespace, else the child's and its own.
    """
    try:
        pidfd = os.pidfd_open(child)
    except (AttributeError, OSError):
        pidfd = None
    counted = init if init is not None else child
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break
        if len(namespaces.descendants(counted)) + (0 if init is not None else 1) > namespaces.MAX_PROCESSES:
            os.kill(init if init is not None else child, signal.SIGKILL)
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            return TOO_MANY
        if pidfd is not None:
            select.select([pidfd], [], [], 0.05)
        else:
            time.sleep(0.05)
    if os.WIFSIGNALED(status):
        return SIGNALLED + os.WTERMSIG(status)
    return min(os.WEXITSTATUS(status), SIGNALLED)


def run_check(request: Request, folder: str, threads: int, fd: int, key: bytes, status: confine.Status,
              roots: tuple[str, ...], log_fd: int, listed: tuple[str, ...] = ()) -> None:
    """The check's child: set up and confine this process in the side's tree, run the check, send its
    measurement (or the exception it raised) on ``fd`` signed with ``key``, exit (never returns).

    Its stdout and stderr are ``log_fd``, the side's ``output.log`` that the worker opened before the fork."""
    code = 1

    def send(message: Message) -> None:
        data = protocol.sign(key, message)
        while data:
            data = data[os.write(fd, data):]

    try:
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # not the worker's stdin, where the next request would arrive
        # Only the log (1, 2), /dev/null (0) and the side's own pipe stay open: no other side's
        # pipe, no descriptor of the worker's, reaches the subject.
        os.closerange(3, fd)
        os.closerange(fd + 1, 1 << 16)
        # sys.stdin reads descriptor 0 and never owns it. A file opened before the closerange would
        # hold a number closed under it that the subject's next descriptor reuses: closing that
        # sys.stdin (multiprocessing does in every child it starts, util._close_stdin) would close
        # the subject's descriptor, a Pipe's write end, and the write failed with EBADF.
        sys.stdin = open(0, closefd=False)
        if status.pid_namespace:  # a /proc of the side's own PID namespace: no worker, no other side listed
            namespaces.own_proc()
        os.chdir(folder)
        os.environ["TMPDIR"] = os.path.join(folder, "tmp")
        # torch.compile's caches (Inductor, Triton) go inside the side's own tree, the one place it may write
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "tmp", "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "tmp", "triton")
        tempfile.tempdir = None
        cap_memory(request.device)
        for name in list(sys.modules):
            if name.split(".")[0] in ("engine", "exercises"):
                del sys.modules[name]
        sys.path.insert(0, folder)
        importlib.invalidate_caches()

        # in the check's child, after the private copy is first on sys.path
        import random

        import numpy as np
        import torch

        set_threads(torch, threads)
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)  # where a hang is
        cap_files()
        # a warden that made a user namespace holds every capability inside it; its child gives them all up
        landlock.drop_capabilities()
        # the filter is made while every installed package is readable (pyseccomp and libseccomp among them)
        seccomp_filter = seccomp.build() if status.seccomp else None
        if status.landlock:
            policy = landlock.Policy(tree=folder, read=roots, network=not status.net_namespace, listed=listed)
            confine.Attempts(policy, lambda what: send(Attempted(what=what)), seccomp=status.seccomp,
                             signals=status.signals, network_refused=status.network != "none").install()
            landlock.restrict(policy, status.landlock)
        if seccomp_filter is not None:
            seccomp.load(seccomp_filter)  # last: Landlock's own calls are done, and no subject code has run yet
        random.seed(request.seed)
        np.random.seed(request.seed)
        torch.manual_seed(request.seed)

        def progress(fraction: float, message: str) -> None:
            send(Progress(fraction=fraction, message=message))

        # the snippet module's calls are recorded: wrapped before the check's module imports anything of it
        recorder = record.Recorder() if request.record else None
        if recorder is not None and not recorder.install(request.record).__file__.startswith(folder):
            raise RuntimeError("the recorded module did not load from the private copy")
        module_name, _, function_name = request.check.partition(".")
        module = importlib.import_module(f"exercises.{module_name}")
        if not module.__file__.startswith(folder):
            raise RuntimeError("the check did not load from the private copy")
        check = getattr(module, function_name)
        # the Context of the private copy: its source is readable there (torch.compile reads it)
        from exercises.context import Context
        context = Context(device=request.device, seed=request.seed, on_progress=progress)
        measurement = check(context).to_dict()
        # the records share the measurement's one line (protocol.MAX_MESSAGE_BYTES) with what the check sent
        room = protocol.MAX_MESSAGE_BYTES - len(json.dumps(measurement)) - 1024
        send(Measured(observed=measurement["observed"], evidence=measurement["evidence"],
                      records=recorder.fit(room) if recorder is not None else []))
        code = 0
    except BaseException as exc:  # everything the subject does wrong is an outcome
        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
        # the frames in the side's own tree, by their path in it: the runner names a learner's line
        # (the deepest frame in their file), not only torch's innermost one
        mine = tuple(f"{os.path.relpath(f.filename, folder)}:{f.lineno}" for f in tb
                     if f.filename.startswith(folder.rstrip(os.sep) + os.sep))[-MAX_FRAMES:]
        first = (str(exc).splitlines() or [""])[0][:300]
        try:
            send(Raised(exception=type(exc).__name__, message=first, where=where, frames=mine))
        except BaseException:
            pass
    finally:
        os._exit(code)


def set_threads(torch, threads: int) -> None:
    """Give this child ``threads`` intra-op and inter-op threads (before its first tensor operation)."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # the inter-op pool already started (not in a fresh fork of the worker)
        pass


def cap_files() -> None:
    """Cap the size of any file the child writes (``RLIMIT_FSIZE``): past it a write fails (EFBIG), the disk stays."""
    try:
        # Unix only
        import resource
        cap = confine.FILE_CAP_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass


def cap_memory(device: str) -> None:
    """Cap the child's address space so a runaway allocation fails, not the machine."""
    if device != "cpu" or MEMORY_CAP_MB <= 0:
        return  # CUDA drivers reserve large virtual ranges; a cap would break them
    try:
        # Unix only
        import resource
        cap = MEMORY_CAP_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass
