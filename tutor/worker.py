"""The worker: a process with torch imported that runs checks in forked children.

Run as ``python -m tutor.worker``. It imports torch once (without running any
operation, so no thread pool or CUDA context exists yet), says hello, then
reads one JSON request per line on stdin and answers one JSON line per
request on stdout. For each side of a request (the clean subject, the faulted
subject) it

1. makes a private copy of the subject packages in a temporary folder and
   applies the fault there (``exercises.faults.make_private_copy``);
2. forks a child that forgets any imported ``engine``/``exercises`` modules,
   puts the copy first on ``sys.path``, works inside the temporary folder,
   caps its memory, sends its output to a log file, seeds every generator and
   calls the check function;
3. waits for the child's result under a time limit, killing it when the time
   runs out, and reports a crash, an exception or a timeout as an outcome;
4. removes the temporary folder.

Because every check runs in a fresh fork, a fault can never leak into the
next run, and torch's import is paid once per worker, not once per run.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # ask CUDA without creating a context

from exercises.context import Context  # noqa: E402
from exercises.faults import Fault, FaultError, make_private_copy  # noqa: E402

OUTPUT_EXCERPT_CHARS = 2000
MEMORY_CAP_MB = int(os.environ.get("TUTOR_MEMORY_CAP_MB", "8192"))


def main() -> None:
    import torch  # the one import this process exists to pay for

    _preload(torch)

    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but protocol lines may reach the real stdout
    scratch = tempfile.mkdtemp(prefix="tutor-worker-")  # every private copy lives in here
    hello = {"hello": {"torch": torch.__version__, "cuda": _cuda_available(torch),
                       "pid": os.getpid(), "cores": os.cpu_count() or 1, "scratch": scratch}}
    _send(out, hello)
    try:
        _serve(out, scratch, torch.__version__)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _serve(out, scratch: str, torch_version: str) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            _send(out, {"error": "the worker received a line that is not JSON"})
            continue
        _send(out, handle(request, torch_version, lambda msg: _send(out, msg), scratch))


def _preload(torch) -> None:
    """Import, once, the modules checks reach for lazily (the optimizer's first
    step imports torch._dynamo, about a second). Imports only: no tensor
    operation runs here, so no thread pool exists to break across fork."""
    for name in ("torch.optim", "torch._dynamo", "torch.autograd.gradcheck", "numpy"):
        try:
            importlib.import_module(name)
        except Exception:
            pass


def _cuda_available(torch) -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver is the same as no CUDA here
        return False


def _send(out, message: dict) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def handle(request: dict, torch_version: str, send=None, scratch: str | None = None) -> dict:
    """Run every side of one request and return the combined answer."""
    job = request.get("job")
    sides = request.get("sides", [])
    timeout_s = float(request.get("timeout_s", 60))
    threads = max(1, (os.cpu_count() or 1) // max(1, len(sides)))
    started = time.perf_counter()
    running = {}
    results = {}
    for side in sides:
        name = side["name"]
        fault = Fault(**side["fault"]) if side.get("fault") else None
        folder = tempfile.mkdtemp(prefix=f"{name}-", dir=scratch)
        try:
            make_private_copy(Path(folder), fault)
        except (FaultError, OSError) as exc:
            shutil.rmtree(folder, ignore_errors=True)
            results[name] = {"status": "error", "error": f"the fault could not be applied: {exc}"}
            continue
        running[name] = _fork(request, folder, threads)
    deadline = time.monotonic() + timeout_s
    buffers = {name: b"" for name in running}
    open_fds = {child["fd"]: name for name, child in running.items()}
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select(list(open_fds), [], [], min(remaining, 0.5))
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            name = open_fds[fd]
            if not chunk:
                del open_fds[fd]
                continue
            buffers[name] += chunk
            while b"\n" in buffers[name] and send is not None:
                line, _, rest = buffers[name].partition(b"\n")
                try:
                    message = json.loads(line)
                except json.JSONDecodeError:
                    break  # not a progress line; the final reading sorts it out
                if "progress" in message:
                    buffers[name] = rest
                    send({"job": job, "side": name, "progress": message["progress"],
                          "message": message.get("message", "")})
                else:
                    break
    for name, child in running.items():
        timed_out = child["fd"] in open_fds
        if timed_out:
            os.kill(child["pid"], signal.SIGKILL)
        _, status = os.waitpid(child["pid"], 0)
        os.close(child["fd"])
        results[name] = _result(buffers[name], status, timed_out, timeout_s, child)
        results[name]["duration_s"] = round(time.perf_counter() - child["started"], 4)
        shutil.rmtree(child["folder"], ignore_errors=True)
    return {"job": job, "torch": torch_version, "device": request.get("device", "cpu"),
            "duration_s": round(time.perf_counter() - started, 4), "sides": results}


def _fork(request: dict, folder: str, threads: int) -> dict:
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(request, folder, threads, write_fd)
    os.close(write_fd)
    return {"pid": pid, "fd": read_fd, "folder": folder, "started": started}


def _child(request: dict, folder: str, threads: int, fd: int) -> None:
    code = 1
    try:
        log = os.open(os.path.join(folder, "output.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.stdin = open(os.devnull)
        os.chdir(folder)
        _cap_memory(request.get("device", "cpu"))
        for name in list(sys.modules):
            if name.split(".")[0] in ("engine", "exercises"):
                del sys.modules[name]
        sys.path.insert(0, folder)
        importlib.invalidate_caches()

        import random

        import numpy as np
        import torch

        torch.set_num_threads(threads)
        seed = int(request.get("seed", 0))
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

        def progress(fraction: float, message: str) -> None:
            _write(fd, {"progress": fraction, "message": message})

        module_name, _, function_name = request["check"].partition(".")
        module = importlib.import_module(f"exercises.{module_name}")
        if not module.__file__.startswith(folder):
            raise RuntimeError("the check did not load from the private copy")
        check = getattr(module, function_name)
        context = Context(device=request.get("device", "cpu"), seed=seed, on_progress=progress)
        measurement = check(context)
        _write(fd, {"measurement": measurement.to_dict()})
        code = 0
    except BaseException as exc:  # everything the subject does wrong is an outcome
        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
        first = (str(exc).splitlines() or [""])[0][:300]
        try:
            _write(fd, {"exception": type(exc).__name__, "message": first, "where": where})
        except BaseException:
            pass
    finally:
        os._exit(code)


def _cap_memory(device: str) -> None:
    """Cap the child's address space so a runaway allocation fails, not the machine."""
    if device != "cpu" or MEMORY_CAP_MB <= 0:
        return  # CUDA drivers reserve large virtual ranges; a cap would break them
    try:
        import resource
        cap = MEMORY_CAP_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass


def _write(fd: int, message: dict) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _result(buffer: bytes, status: int, timed_out: bool, timeout_s: float, child: dict) -> dict:
    output = _excerpt(os.path.join(child["folder"], "output.log"))
    if timed_out:
        return {"status": "timeout", "error": f"the check did not finish within {timeout_s:g} s and was stopped",
                "output": output}
    final = None
    for line in buffer.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "measurement" in message or "exception" in message:
            final = message
    if final and "measurement" in final:
        return {"status": "ok", "measurement": final["measurement"], "output": output}
    if final and "exception" in final:
        where = f" ({final['where']})" if final.get("where") else ""
        return {"status": "error", "error": f"{final['exception']}: {final['message']}{where}",
                "exception": final["exception"], "output": output}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return {"status": "error", "error": f"the subject crashed with signal {name}", "output": output}
    return {"status": "error", "error": f"the check exited with code {os.WEXITSTATUS(status)} and no result",
            "output": output}


def _excerpt(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(OUTPUT_EXCERPT_CHARS)
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
    except OSError:
        return ""
    text = head.decode("utf-8", "replace")
    if size > OUTPUT_EXCERPT_CHARS:
        text += f"\n… ({size - OUTPUT_EXCERPT_CHARS} more bytes of output not shown)"
    return text


if __name__ == "__main__":
    main()
