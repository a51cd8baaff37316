"""A run's folder and identity, the checks before it resumes, and the exit codes of its stops.

`run_control` builds the loops' `RunControl` for the flags after reading any checkpoint in
the run folder: resuming needs a readable checkpoint written with the same settings (save
for `MAY_DIFFER_ON_RESUME`), and a fresh start refuses a folder that holds another run's
checkpoints. `guarded` turns the loops' stops (a signal, a non-finite value, an unusable
checkpoint) into a message and an exit code. Every refusal is one line and exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from jax_rl.run.cli import EXIT_NON_FINITE, fail

T = TypeVar("T")


# Settings a resumed run may change; every other flag must match the checkpoint.
MAY_DIFFER_ON_RESUME = frozenset(
    {
        "max_timesteps",
        "save_dir",
        "no_progress",
        "checkpoint_every",
        "resume",
        "no_checkpoint_replay",
    }
)


def run_identity(
    args: argparse.Namespace, loop_config: Any, algo_config: Any, **extra: Any
) -> dict:
    """The settings that define a run (flag name -> value), stored in its checkpoints."""
    identity: dict[str, Any] = {"policy": args.policy, **extra}
    identity.update(dataclasses.asdict(loop_config))
    identity["replay_capacity"] = loop_config.capacity
    identity.update({f.name: getattr(algo_config, f.name) for f in dataclasses.fields(algo_config)})
    return identity


def check_save_dir(args: argparse.Namespace) -> None:
    """Exit 2 unless the run's output folder (--save_dir or --resume) can be created and
    written: tried in its nearest existing ancestor, leaving nothing behind."""
    for flag, value in (("--save_dir", args.save_dir), ("--resume", args.resume)):
        if value is None:
            continue
        path = Path(value).absolute()
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not existing.is_dir():
            fail(f"{flag} {value}: {existing} is a file, not a folder")
        try:
            tempfile.TemporaryDirectory(dir=existing, prefix=".jax_rl-probe-").cleanup()
        except OSError as e:
            fail(f"{flag} {value}: cannot write in {existing} ({e.strerror or e})")


def save_dir_of(args: argparse.Namespace, run_name: str) -> Path:
    """--resume DIR, else --save_dir, else runs/<run_name>; refuses two different folders."""
    if args.resume is not None:
        if (
            args.save_dir is not None
            and Path(args.save_dir).resolve() != Path(args.resume).resolve()
        ):
            fail(f"--resume {args.resume} continues that run in its own folder; drop --save_dir")
        if not Path(args.resume).is_dir():
            fail(f"--resume {args.resume}: no such directory")
        return Path(args.resume)
    save_dir = Path(args.save_dir) if args.save_dir else Path("runs") / run_name
    if save_dir.exists() and not save_dir.is_dir():
        fail(f"--save_dir {save_dir} is a file, not a folder")
    return save_dir


def identity_defaults(loop_config: Any, algo_config: Any) -> dict[str, Any]:
    """Every loop and learner setting's default (`run_identity`'s names): what a checkpoint
    written before a setting existed ran with."""
    return {
        f.name: f.default
        for config in (loop_config, algo_config)
        for f in dataclasses.fields(config)
        if f.default is not dataclasses.MISSING
    }


def run_control(
    args: argparse.Namespace,
    save_dir: Path,
    identity: dict[str, Any],
    defaults: dict[str, Any] | None = None,
) -> Any:
    """The loops' RunControl for these flags, after checking any checkpoint in `save_dir`
    (`defaults`: `identity_defaults`, for checkpoints older than a setting).

    Refuses (exit 2): resuming without a readable checkpoint or with other
    settings; starting afresh over a folder that holds a run's checkpoints.
    """
    from jax_rl.io.checkpoint import Checkpointer, CheckpointError, check_same_run
    from jax_rl.loops.common import RunControl

    checkpointer = Checkpointer(save_dir / "checkpoints", owner=True)
    try:
        control = RunControl(
            checkpointer,
            every=args.checkpoint_every,
            keep_replay=not args.no_checkpoint_replay,
            resume=args.resume is not None,
            identity=identity,
            may_differ=MAY_DIFFER_ON_RESUME,
            defaults=defaults or {},
            kill_at=_kill_at_step(),
        )
        latest = checkpointer.latest_step()
        if control.resume:
            if latest is None:
                fail(f"--resume {args.resume}: no complete checkpoint in {checkpointer.directory}")
            meta = checkpointer.read_meta()
            try:
                check_same_run(
                    meta.get("identity", {}), identity, set(MAY_DIFFER_ON_RESUME), defaults
                )
            except CheckpointError as e:
                raise CheckpointError(f"{e}{_moved_preset_hint(args, save_dir)}") from None
        elif latest is not None:
            fail(
                f"{save_dir} holds the checkpoints of an earlier run (step {latest}); pass "
                f"--resume {save_dir} to continue it, or choose another --save_dir"
            )
    except (ValueError, CheckpointError) as e:
        checkpointer.close()
        fail(str(e))
    except SystemExit:
        checkpointer.close()
        raise
    return control


def _moved_preset_hint(args: argparse.Namespace, save_dir: Path) -> str:
    """Where the run's recorded task entry lives now, when it left the defaults since the run
    started (issue 97: they became `--preset tuned`); "" otherwise."""
    import json

    from jax_rl.run import presets

    config = save_dir / "config.json"
    try:
        recorded = (json.loads(config.read_text()).get("preset") or {}).get("name")
    except (OSError, ValueError):
        return ""
    moved = presets.moved_to(args.policy, recorded) if isinstance(recorded, str) else None
    if moved is None or args.preset == moved:
        return ""
    return (
        f"; it ran the task entry {recorded}, which is --preset {moved} now: resume with "
        f"--preset {moved}"
    )


def _kill_at_step() -> int | None:
    """The JAX_RL_KILL_AT_STEP fault injection of the kill-and-resume tests, if set."""
    value = os.environ.get("JAX_RL_KILL_AT_STEP")
    if not value:
        return None
    if not value.isdigit():
        fail(f"JAX_RL_KILL_AT_STEP must be a step number, got {value!r}")
    return int(value)


def guarded(train: Callable[[], T]) -> T:
    """Run `train`, turning the loops' stops into a message and an exit code.

    SIGINT/SIGTERM: exit 128 + signal number after the checkpoint is written;
    a non-finite loss or parameter: exit 3; an unusable checkpoint: exit 2.
    """
    from jax_rl.io.checkpoint import CheckpointError
    from jax_rl.loops.common import Interrupted, NonFiniteError

    try:
        return train()
    except Interrupted as e:
        print(
            f"stopped by {e}; continue with the same command and --resume {e.directory.parent}",
            file=sys.stderr,
        )
        raise SystemExit(128 + e.signum) from None
    except NonFiniteError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(EXIT_NON_FINITE) from None
    except CheckpointError as e:
        fail(str(e))
