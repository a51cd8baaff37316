"""Ray as the engine of results tables and large populations (`--engine ray`).

Two kinds of work become Ray tasks, here called jobs:

- a results cell (`python -m jax_rl.tools.results --engine ray`): one task x learner population,
  the run that `--engine local` starts as a subprocess (`jax_rl.tools.results`);
- a sub-population (`main_*.py --engine ray --agents_per_worker K`): K consecutive agents
  of the population one run would train (`jax_rl.run.subpopulations`).

A job runs in a worker process of its own (`max_calls=1`: JAX's state and its XLA flags
belong to a process) and asks Ray for one CPU core, or one GPU where the device pipeline
runs on one. A CPU job pins itself to a core that no other job on its machine holds, as
the results notes recommend for runs that share a machine (docs/results/README.md): two
cells on two cores then do not fight over both.
The job's output (the entry point's stdout and stderr) is appended to a log file in the
runs folder, where it also checkpoints. When its worker is lost (the process killed, the
machine gone), Ray starts the job again, up to `RETRIES` times, and the new attempt
continues from the newest checkpoint, so a retry costs the steps since that checkpoint
plus a start-up and compilation.

Jobs report to a `Board` actor (started, with the attempt; steps done; ended); the
driver prints the reports as they come and appends them to a JSON-lines file.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

ENGINES = ("local", "ray")
RETRIES = 3  # Ray's retries of a job whose worker was lost
KILL_AT_STEP = "JAX_RL_KILL_AT_STEP"  # the loops' fault injection (jax_rl.run.resuming)
KILL_JOB = "JAX_RL_KILL_JOB"  # test only: which job's first attempt it kills (default: all)
CONNECT_TIMEOUT_S = 5.0
T = TypeVar("T")
_held_cores: list[int] = []  # lock files this worker holds (see `pin_to_a_free_core`)


def fail(message: str) -> NoReturn:
    """One line on stderr, exit 2 (as `jax_rl.run.cli.fail`, without importing the learners)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


# --- Flags -------------------------------------------------------------------------------


def add_engine_flags(parser: Any, population: bool) -> None:
    """--engine and --address on a parser or one of its groups; with `population`,
    --agents_per_worker too."""
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: train here, as always; ray: as Ray tasks, on this machine or the "
        "cluster at --address (docs/cluster.md)",
    )
    parser.add_argument(
        "--address",
        default=None,
        help="with --engine ray: the Ray cluster to join (its head's host:port, or auto); "
        "default: start Ray on this machine with one task per core",
    )
    if population:
        parser.add_argument(
            "--agents_per_worker",
            type=int,
            default=None,
            help="with --engine ray: agents per Ray task (the population is split into "
            "sub-populations of this many consecutive agents; default 1)",
        )


def engine_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the engine flags (one line), or None."""
    per_worker = getattr(args, "agents_per_worker", None)
    if args.engine != "ray":
        if args.address is not None:
            return "--address needs --engine ray"
        if per_worker is not None:
            return "--agents_per_worker needs --engine ray"
        return None
    if per_worker is not None and per_worker < 1:
        return f"--agents_per_worker must be a positive integer, got {per_worker}"
    if args.address is not None and args.address != "auto" and _host_port(args.address) is None:
        return f"--address {args.address}: expected host:port (the Ray head's) or auto"
    return None


def _host_port(address: str) -> tuple[str, int] | None:
    host, _, port = address.rpartition(":")
    return (host, int(port)) if host and port.isdigit() else None


# --- Connecting --------------------------------------------------------------------------


def connect(address: str | None) -> None:
    """Join the Ray cluster at `address`, or start Ray on this machine (all its cores).
    Exit 2 with one line where Ray is missing or the address cannot be reached. A Ray
    already started in this process (a test's) is used as it is."""
    try:
        import ray
    except ImportError:
        fail("--engine ray needs Ray (pip install -r requirements.lock, or jax_rl[ray])")
    if ray.is_initialized():
        return
    # Ray reports usage statistics over the network unless told not to.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address not in (None, "auto"):
        host_port = _host_port(address)
        assert host_port is not None  # engine_problem checked the form
        try:  # fail fast: Ray itself waits a minute for a head that is not there
            socket.create_connection(host_port, timeout=CONNECT_TIMEOUT_S).close()
        except OSError as e:
            fail(f"--address {address}: cannot reach a Ray head there ({e.strerror or e})")
    options: dict[str, Any] = {} if address else {"include_dashboard": False}
    try:
        ray.init(address=address, logging_level=logging.WARNING, **options)
    except Exception as e:  # ConnectionError, RuntimeError, ...: Ray's words, on one line
        where = f"--address {address}" if address else "a local Ray"
        hint = ""
        if address and "RAY_AUTH_MODE" not in os.environ:
            # Ray 2.60's heads require their token, and a joining process only sends it in
            # token mode (docs/cluster.md).
            hint = "; a cluster started with its token needs RAY_AUTH_MODE=token here"
        fail(f"{where}: cannot start or join Ray ({' '.join(str(e).split())}){hint}")


def gpus_per_job(device_pipeline: bool) -> float:
    """1 for a device-pipeline job where the cluster has GPUs, else 0 (a CPU job)."""
    import ray

    return 1.0 if device_pipeline and ray.cluster_resources().get("GPU", 0) >= 1 else 0.0


def kill_at_step_of(key: str) -> int | None:
    """Test only: the step after whose checkpoint the job `key`'s first attempt is killed,
    from the driver's JAX_RL_KILL_AT_STEP (and JAX_RL_KILL_JOB, which job), else None."""
    step, only = os.environ.get(KILL_AT_STEP), os.environ.get(KILL_JOB)
    if not step or (only and only != key):
        return None
    return int(step)


# --- Jobs --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Job:
    """One Ray task's work, as the driver and its worker both see it."""

    key: str  # unique among the jobs of one driver, e.g. "SAC-walker-walk"
    label: str  # how the progress lines name it, e.g. "[2/2] SAC on walker-walk"
    watch: Path  # a folder whose train.csv rows say how far the job is
    log: Path  # where the job's output goes (appended)
    total_steps: int
    gpus: float = 0.0
    progress_every: float = 60.0  # seconds between reports of the steps done
    kill_at_step: int | None = None  # test only (`kill_at_step_of`)


@dataclasses.dataclass(frozen=True)
class Event:
    """One report of a job to the driver."""

    key: str
    kind: str  # "started", "note", "steps", "ended"
    time: float  # seconds since the epoch, on the job's machine
    attempt: int
    detail: dict[str, Any]


class Board:
    """The jobs' reports, kept until the driver takes them (a Ray actor)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.attempts: dict[str, int] = {}

    def start(self, key: str, detail: dict[str, Any]) -> int:
        """A job's attempt begins; returns its number (1, then 2 for the first retry, ...)."""
        self.attempts[key] = attempt = self.attempts.get(key, 0) + 1
        self.events.append(Event(key, "started", time.time(), attempt, detail))
        return attempt

    def report(self, key: str, kind: str, detail: dict[str, Any]) -> None:
        self.events.append(Event(key, kind, time.time(), self.attempts.get(key, 0), detail))

    def take(self) -> list[Event]:
        events, self.events = self.events, []
        return events


def run_job(job: Job, board: Any, work: Callable[[Callable[[str], None]], T]) -> T:
    """In the worker: run `work(say)` (the job's training; `say` sends a note to the
    driver) with this process pinned, its output in the job's log and its progress
    reported to `board`."""
    import ray

    core = pin_to_a_free_core() if job.gpus == 0 else None
    detail = {"pid": os.getpid(), "node": ray.util.get_node_ip_address(), "core": core}
    attempt = ray.get(board.start.remote(job.key, detail))
    # The fault injection kills a first attempt only, so that Ray's retry can finish.
    if job.kill_at_step is not None and attempt == 1:
        os.environ[KILL_AT_STEP] = str(job.kill_at_step)
    else:
        os.environ.pop(KILL_AT_STEP, None)
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(job, board, stop), daemon=True)
    watcher.start()
    try:
        with output_to(job.log):
            return work(lambda text: board.report.remote(job.key, "note", {"text": text}))
    finally:
        stop.set()
        watcher.join()
        ray.get(board.report.remote(job.key, "ended", {}))


def _watch(job: Job, board: Any, stop: threading.Event) -> None:
    """Report the job's steps done every `progress_every` seconds, when they changed."""
    reported = None
    while not stop.wait(job.progress_every):
        step = latest_step(job.watch)
        if step is not None and step != reported:
            board.report.remote(job.key, "steps", {"step": step, "total": job.total_steps})
            reported = step


def complete_lines(path: Path) -> list[str]:
    """The lines of a CSV that a run may be writing now, less the text after the last
    newline (a row still being written)."""
    return path.read_text().split("\n")[:-1]


def latest_step(folder: Path) -> int | None:
    """The step of the newest train.csv row under `folder` (None before the first); a row
    still being written (no newline yet) does not count."""
    steps = []
    for path in folder.rglob("train.csv"):
        lines = complete_lines(path)
        first = lines[-1].split(",", 1)[0] if len(lines) > 1 else ""
        if first.isdigit():
            steps.append(int(first))
    return max(steps, default=None)


def pin_to_a_free_core() -> int | None:
    """Pin this process to a core that no other job on this machine holds; None (unpinned)
    where every core is held. A core is held through a lock file, which the kernel
    releases when the process ends, even by SIGKILL.

    JAX's CPU client is started first, with the process's whole affinity, so that XLA's
    thread pool has the size it has in an unpinned run: XLA splits some operations by the
    number of its threads, and a pool of one gives other float rounding than `--engine
    local` (SAC's cartpole-swingup returns at 10k steps: 147 / 225 / 240 against 227 /
    186 / 187). Then every thread of the process is pinned to the core, and so are the
    threads started later, which inherit it."""
    folder = Path(tempfile.gettempdir()) / f"jax_rl-cores-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    for core in sorted(os.sched_getaffinity(0)):
        fd = os.open(folder / f"{core}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _held_cores.append(fd)  # held for the worker's life: one job (max_calls=1)
        import jax

        jax.devices("cpu")  # the CPU client and its thread pool, sized as unpinned
        for thread in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that has ended
                os.sched_setaffinity(int(thread), {core})
        return core
    return None


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """This process's stdout and stderr (file descriptors 1 and 2) appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    with log.open("a") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, original in zip((1, 2), saved, strict=True):
                os.dup2(original, fd)
                os.close(original)


def exit_code(run: Callable[[], int | None]) -> int:
    """An entry point's `main` run in this process, its exit code as a subprocess's:
    0, its SystemExit code (2 for bad flags), or 1 with the traceback printed."""
    try:
        return int(run() or 0)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:
        traceback.print_exc()
        return 1


# --- The driver's side -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Submission:
    """A job and the Ray task that does it: `function(job, board, *payload)`."""

    job: Job
    function: Callable[..., Any]
    payload: tuple[Any, ...]


def run_jobs(
    submissions: Sequence[Submission],
    finish: Callable[[Job, Any], bool],
    events_file: Path,
) -> list[Job]:
    """Run every job as a Ray task, print their reports as they come (and append them to
    `events_file`), hand each result to `finish` (False: the job failed); the failed jobs."""
    import ray

    board: Any = ray.remote(num_cpus=0)(Board).remote()
    tasks: dict[Callable[..., Any], Any] = {}
    refs = {}
    for sub in submissions:
        if sub.function not in tasks:
            tasks[sub.function] = ray.remote(max_calls=1, max_retries=RETRIES)(sub.function)
        task = tasks[sub.function].options(num_cpus=1, num_gpus=sub.job.gpus)
        refs[task.remote(sub.job, board, *sub.payload)] = sub.job
    jobs = {job.key: job for job in refs.values()}
    failed, pending = [], list(refs)
    events_file.parent.mkdir(parents=True, exist_ok=True)
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=1.0)
        _show(ray.get(board.take.remote()), jobs, events_file)
        for ref in done:
            job = refs[ref]
            try:
                result = ray.get(ref)
            except ray.exceptions.RayError as e:
                # An error of the job's own is not retried; a lost worker was, RETRIES times.
                how = "failed" if isinstance(e, ray.exceptions.RayTaskError) else "lost"
                print(f"{_clock()} {job.label}: {how} ({_first_line(e)}); see {job.log}")
                failed.append(job)
                continue
            if not finish(job, result):
                failed.append(job)
    _show(ray.get(board.take.remote()), jobs, events_file)
    ray.kill(board)
    return failed


def _show(events: list[Event], jobs: dict[str, Job], events_file: Path) -> None:
    """Print the jobs' reports and append them to `events_file`."""
    with events_file.open("a") as out:
        for event in events:
            out.write(json.dumps({**dataclasses.asdict(event), "label": jobs[event.key].label}))
            out.write("\n")
            text = _describe(event)
            if text:
                print(f"{_clock(event.time)} {jobs[event.key].label}: {text}", flush=True)


def _describe(event: Event) -> str | None:
    d = event.detail
    if event.kind == "started":
        what = "started" if event.attempt == 1 else f"retried (attempt {event.attempt})"
        core = f", core {d['core']}" if d.get("core") is not None else ""
        return f"{what} on {d['node']} (pid {d['pid']}{core})"
    if event.kind == "steps":
        return f"{d['step']:,} / {d['total']:,} steps"
    if event.kind == "note":
        return str(d["text"])
    return None  # "ended": the driver's finished line says how


def _clock(when: float | None = None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(when))


def _first_line(error: BaseException) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
