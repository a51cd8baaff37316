"""Export a saved agent's deterministic policy as a file that runs without jax_rl.

    python -m jax_rl.watch.export runs/SAC-walker-walk-seed0 --format onnx --out walker.onnx
    python -m jax_rl.watch.export runs/TD3-cheetah-run-seed0 --format stablehlo --out cheetah.shlo
    python -m jax_rl.watch.export runs/SAC-cartpole-swingup-3agents-seed0 --agent 1 \\
        --format onnx --out agent1.onnx

The file computes what the environment receives when the agent acts deterministically:
the learner's `act(state, obs, key, deterministic=True)` (TD3's actor, SAC's squashed
mean, MPO's mean) with everything it reads folded in as constants (parameters,
observation-normalisation statistics, BatchRenorm running moments, SALE encoders), then
clipped to [-1, 1] and mapped onto the environment's action bounds as the environment
adapter maps it. Input `obs`: float32 [batch, O], the raw observation as the environment
gives it; output `action`: float32 [batch, A]; the batch size is free in both formats. For
a task observed as a dict with `state` and `privileged_state`, trained with an asymmetric
actor, `obs` is the `state` part alone: the only part the actor reads.

- `--format stablehlo`: `jax.export`'s serialisation, lowered for CPU, CUDA and TPU. A
  consumer needs `jax` and nothing else: `jax.export.deserialize(data).call(obs)`.
- `--format onnx`: converted by jax2onnx; runs with onnxruntime alone. The model's
  metadata (`metadata_props`) names its input and output, their shapes, the action
  bounds, the run and the agent.

Before anything is written the file is run on `--check` observations beside the agent; a
file that does not act as the agent (max |difference| above 1e-4) is refused. The file is
written to a temporary name beside --out and renamed into place, so a refused or failed
export leaves nothing behind. Bad input (no agent, a population without --agent, a format
the policy cannot take) is one line on stderr and exit 2. See docs/export.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from jax_rl.run import cli
from jax_rl.run.driver import OneLineErrorParser

FORMATS = ("stablehlo", "onnx")
STABLEHLO_PLATFORMS = ("cpu", "cuda", "tpu")
INPUT, OUTPUT, BATCH = "obs", "action", "batch"
CHECK_TOLERANCE = 1e-4  # a file further than this from the agent is refused
# 17: every onnxruntime since 1.13 (2022) runs it, and it holds every operator jax2onnx
# writes for our networks (LayerNormalization arrived in 17).
ONNX_OPSET = 17


class ExportError(ValueError):
    """A policy that cannot be exported, or a file that does not act as the agent (one line)."""


@dataclasses.dataclass(frozen=True)
class Policy:
    """A deterministic policy ready to export: `act` maps obs [B, obs_size] to the
    environment's actions [B, action_size]; `bounds` (low, high) [A] are the bounds it
    maps [-1, 1] onto (None: it outputs [-1, 1])."""

    act: Callable[[Any], Any]
    obs_size: int
    action_size: int
    bounds: tuple[np.ndarray, np.ndarray] | None
    obs_stats: Any  # the learner's normalization.ObsStats (None without normalize_obs)
    description: dict[str, str]  # what the file's metadata says about its origin


@dataclasses.dataclass(frozen=True)
class Exported:
    """A written file and its check."""

    path: Path
    format: str
    policy: Policy
    checked: int  # observations run through the file and the agent
    max_difference: float


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        description=__doc__.split("\n\n")[0], formatter_class=cli.HelpFormatter
    )
    add = parser.add_argument
    add("run_dir", type=Path, metavar="RUN_DIR", help="a run's folder")
    add("--format", required=True, choices=FORMATS, help="the file's format")
    add("--out", type=Path, required=True, metavar="FILE", help="the file to write")
    add(
        "--checkpoint",
        type=int,
        default=None,
        metavar="STEP",
        help="the agent of checkpoint STEP (in RUN_DIR/checkpoints) instead of the final one",
    )
    add(
        "--agent",
        type=int,
        default=None,
        metavar="K",
        help="of a population, agent K (0-based, as config.json's agents list them); "
        "required where the run holds several",
    )
    add(
        "--check",
        type=int,
        default=256,
        metavar="N",
        help="observations run through the written file and the agent before it is kept",
    )
    return parser


# --- The policy ---------------------------------------------------------------------------


def action_bounds(env: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The [A] bounds an environment adapter maps actions in [-1, 1] onto, or None where it
    passes them on unchanged (Brax, or bounds that are [-1, 1] already). The adapters keep
    them as dm_control's and Gymnasium's `_low` / `_high` (an action repeat forwards them)
    and Playground's `_ctrl_scale` (inside the device loop's `BraxEnv`)."""
    low, high = getattr(env, "_low", None), getattr(env, "_high", None)
    if low is None or high is None:
        scale = getattr(getattr(env, "_env", None), "_ctrl_scale", None)
        if scale is None:
            return None
        low, high = scale
    low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
    if np.all(low == -1.0) and np.all(high == 1.0):
        return None
    return low, high


def make_policy(
    algo: ModuleType,
    state: Any,
    obs_size: int,
    actor_obs_size: int = 0,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
    description: dict[str, str] | None = None,
) -> Policy:
    """The deterministic policy of learner `algo` in `state`, for observations [obs_size]
    (the learner's; with actor_obs_size S > 0 the policy reads the first S, the `state`
    of a [state | privileged state] observation), with actions mapped onto `bounds`."""
    import jax
    import jax.numpy as jnp

    privileged = obs_size - actor_obs_size if actor_obs_size else 0
    key = jax.random.PRNGKey(0)  # a deterministic act draws nothing; the key is unused

    def act(obs: jax.Array) -> jax.Array:
        if privileged:
            # The learner splits [state | privileged state] and gives the actor the first
            # part only: zeros stand in for the part nothing on the actor's path reads.
            obs = jnp.pad(obs, ((0, 0), (0, privileged)))
        action = jnp.clip(algo.act(state, obs, key, True), -1.0, 1.0)
        if bounds is None:
            return action
        low, high = bounds
        return low + (action + 1.0) * 0.5 * (high - low)  # the environment adapters' map

    return Policy(
        act=act,
        obs_size=actor_obs_size or obs_size,
        action_size=int(state.action_size),
        bounds=bounds,
        obs_stats=getattr(state, "obs_stats", None),
        description=dict(description or {}),
    )


def probe_observations(policy: Policy, count: int, seed: int = 0) -> np.ndarray:
    """[count, O] float32 observations to compare a file with its agent on: standard normal
    draws, scaled to the agent's observation statistics where it keeps them."""
    from jax_rl.core import normalization

    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((count, policy.obs_size)).astype(np.float32)
    stats = policy.obs_stats
    if stats is None:
        return draws
    size = policy.obs_size  # the actor's part of a [state | privileged state] observation
    mean = np.asarray(stats.mean, np.float32)[:size]
    std = np.sqrt(np.asarray(normalization.variance(stats), np.float32)[:size])
    return (mean + draws * np.maximum(std, 1e-3)).astype(np.float32)


def summary(policy: Policy) -> dict[str, str]:
    """What the file holds, as its metadata says it (ONNX) and docs/export.md describes it."""
    if policy.bounds is None:
        where = "in [-1, 1] (the environment's own range)"
        low, high = [-1.0] * policy.action_size, [1.0] * policy.action_size
    else:
        where = "within the environment's action bounds (action_low, action_high)"
        low, high = policy.bounds[0].tolist(), policy.bounds[1].tolist()
    return {
        **policy.description,
        "input": f"{INPUT}: float32 [{BATCH}, {policy.obs_size}], the raw observation",
        "output": f"{OUTPUT}: float32 [{BATCH}, {policy.action_size}], {where}",
        "action_low": str(low),
        "action_high": str(high),
    }


# --- The two formats ----------------------------------------------------------------------


def to_stablehlo(policy: Policy) -> bytes:
    """`jax.export`'s serialisation of the policy, batch dimension symbolic."""
    import jax
    import jax.numpy as jnp

    spec = jax.ShapeDtypeStruct(
        jax.export.symbolic_shape(f"{BATCH}, {policy.obs_size}"), jnp.float32
    )
    exported = jax.export.export(jax.jit(policy.act), platforms=STABLEHLO_PLATFORMS)(spec)
    return bytes(exported.serialize())


def to_onnx(policy: Policy) -> bytes:
    """The policy as an ONNX model (jax2onnx), batch dimension symbolic, with its summary
    in the model's metadata."""
    try:
        import onnx
        from jax2onnx import to_onnx as convert
    except ImportError as e:
        raise ExportError(
            f"--format onnx needs jax2onnx and onnx ({e}); `make init` installs them"
        ) from None
    load_converter_plugins()
    try:
        model = convert(
            policy.act,
            [(BATCH, policy.obs_size)],
            model_name="jax_rl_policy",
            opset=ONNX_OPSET,
            input_names=[INPUT],
            output_names=[OUTPUT],
        )
    except Exception as e:  # the converter's own errors name the primitive it lacks
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportError(f"jax2onnx cannot convert this policy ({detail})") from None
    onnx.helper.set_model_props(model, summary(policy))
    model.doc_string = "A jax_rl agent's deterministic policy (python -m jax_rl.watch.export)"
    return bytes(model.SerializeToString())


CONVERTERS = {"stablehlo": to_stablehlo, "onnx": to_onnx}
CONVERTER_PLUGINS = ("jax", "flax")  # the jax2onnx plugin trees our networks need


def load_converter_plugins() -> None:
    """Register jax2onnx's plugins for JAX's primitives and Flax's modules, and only those.

    Its first conversion otherwise imports all of its 513 plugin modules, whose Equinox
    examples build and run models as they load: 26 s on a loaded 2-core CPU against 3.5 s
    for these two trees (docs/export.md). This reads jax2onnx's plugin loader (0.17.1,
    pinned); where a later version has none of that shape, its own loader runs instead."""
    try:
        from jax2onnx.plugins import plugin_system
    except ImportError:
        return
    import_tree = getattr(plugin_system, "_import_tree", None)
    if import_tree is None or getattr(plugin_system, "_already_imported_plugins", True):
        return
    root = Path(plugin_system.__file__).parent
    for tree in CONVERTER_PLUGINS:
        import_tree(root / tree, f"jax2onnx.plugins.{tree}")
    plugin_system._already_imported_plugins = True


def run_file(data: bytes, fmt: str, obs: np.ndarray) -> np.ndarray:
    """Actions [B, A] of an exported file (its bytes) for obs [B, O], as a consumer runs it."""
    if fmt == "stablehlo":
        import jax

        return np.asarray(jax.export.deserialize(bytearray(data)).call(obs))
    import onnxruntime

    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    return np.asarray(session.run([OUTPUT], {INPUT: obs})[0])


def reference_actions(policy: Policy, obs: np.ndarray) -> np.ndarray:
    """The policy's actions computed by JAX (the agent itself), for obs [B, O]."""
    import jax

    return np.asarray(jax.jit(policy.act)(obs))


# --- Writing ------------------------------------------------------------------------------


def write_policy(policy: Policy, fmt: str, out: Path, check: int = 256) -> Exported:
    """Convert, check on `check` observations and write the file (atomically). ExportError
    where the policy cannot be converted or the file does not act as the agent."""
    if fmt not in CONVERTERS:
        raise ExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    data = CONVERTERS[fmt](policy)
    difference = 0.0
    if check > 0:
        obs = probe_observations(policy, check)
        try:
            actions = run_file(data, fmt, obs)
        except Exception as e:
            detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ExportError(f"the {fmt} file does not run ({detail})") from None
        difference = float(np.max(np.abs(actions - reference_actions(policy, obs))))
        if not difference <= CHECK_TOLERANCE:
            raise ExportError(
                f"the {fmt} file's actions differ from the agent's by up to {difference:.2g} "
                f"on {check} observations (more than {CHECK_TOLERANCE:g}); nothing written"
            )
    write_atomically(out, data)
    return Exported(out, fmt, policy, max(check, 0), difference)


def write_atomically(path: Path, data: bytes) -> None:
    """`data` into `path` through a temporary file beside it: `path` is whole or absent.
    (Opened with `open`, not `tempfile.mkstemp`, so that the file gets the umask's
    permissions, not mkstemp's owner-only ones.)"""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with temporary.open("xb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def check_out(out: Path) -> None:
    """ExportError unless `out` can be written: its folder exists and it is no folder."""
    if out.is_dir():
        raise ExportError(f"--out {out} is a folder; give the file to write")
    if not out.parent.is_dir():
        raise ExportError(f"--out {out}: no such folder {out.parent}")


# --- A run's agent ------------------------------------------------------------------------


def export(
    run_dir: Path | str,
    fmt: str,
    out: Path | str,
    agent: int | None = None,
    checkpoint: int | None = None,
    check: int = 256,
) -> Exported:
    """Export agent `agent` (None: the run's only one) of the run in `run_dir`, final or of
    checkpoint `checkpoint`, as a `fmt` file `out`. RunFolderError or ExportError (one-line
    messages) for bad input; nothing is written then."""
    from jax_rl.run.saved import RunFolderError, open_run

    out = Path(out)
    if fmt not in CONVERTERS:
        raise ExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    check_out(out)
    run = open_run(Path(run_dir))
    if agent is None and len(run.agents) > 1:
        raise RunFolderError(
            f"{run.directory} holds {len(run.agents)} agents; pass --agent K "
            f"(0-{len(run.agents) - 1}) to export one"
        )
    (chosen,) = run.select(agent)
    run.check_checkpoint(checkpoint)
    env = run.open_env(run.fresh_seed(chosen), None)
    actor_obs_size = getattr(env, "actor_obs_size", 0)
    state = run.load_agent(chosen, env.obs_size, env.action_size, checkpoint, actor_obs_size)
    description = {
        "policy": str(run.config["policy"]),
        "task": f"{run.kind}/{run.task}",
        "run": str(run.directory),
        "agent": chosen.name,
        "checkpoint": "final" if checkpoint is None else str(checkpoint),
    }
    if actor_obs_size:  # the input is the actor's part alone
        description["observation"] = "obs is the `state` entry of a dict observation"
    policy = make_policy(
        run.algo, state, env.obs_size, actor_obs_size, action_bounds(env), description
    )
    return write_policy(policy, fmt, out, check)


def main(argv: Sequence[str] | None = None) -> int:
    from jax_rl.io import quiet

    quiet.install()
    args = build_parser().parse_args(argv)
    if args.check < 0:
        cli.fail(f"--check must be >= 0, got {args.check}")
    from jax_rl.run.saved import RunFolderError

    try:
        done = export(args.run_dir, args.format, args.out, args.agent, args.checkpoint, args.check)
    except (RunFolderError, ExportError) as e:
        cli.fail(str(e))
    origin, what = done.policy.description, summary(done.policy)
    which = "final agent" if args.checkpoint is None else f"checkpoint {args.checkpoint}"
    checked = (
        f"; acts as the agent to {done.max_difference:.1g} on {done.checked} observations"
        if done.checked
        else ""
    )
    print(
        f"{origin['agent']} ({which}): {origin['policy']}'s deterministic policy in "
        f"{done.path} ({done.format}, {done.path.stat().st_size / 1024:.0f} KiB): "
        f"{what['input']} -> {what['output']}{checked}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
