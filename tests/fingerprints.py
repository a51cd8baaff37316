"""Fingerprints of the learners: what a refactor of TD3 and SAC must leave bit for bit.

Each case is a learner built from one preset's settings (the named presets, every task
entry, the published defaults and a few single parts), trained for UPDATES updates on a
fixed stream of synthetic batches (the parts that act every N updates are given an N
below UPDATES); its fingerprint is the SHA-256 of every leaf of the
final state, the update's last metrics and the actions it takes (deterministic and
exploring) on fixed observations. The rewards are all 0 for the first third of the
stream, so that hold_exploration's wait is exercised too.

    python tests/fingerprints.py --write    # record tests/data/fingerprints.json
    python tests/fingerprints.py            # compare against it, print the cases that differ
    python tests/fingerprints.py --add      # record the cases not recorded yet (a new preset)

tests/test_fingerprints.py compares on every `make test`. XLA's CPU kernels may round
differently on another processor, so the record keeps the processor it was made on and a
sum of each state beside the hash: on the same processor the hashes must match, on another
the sums must agree to 1e-4 (and the test says which of the two it checked). A case added
on another processor than the record's (`--add`) keeps its own processor beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jax_rl import algos  # noqa: E402
from jax_rl.algos import common  # noqa: E402
from jax_rl.core.transition import Transition  # noqa: E402
from jax_rl.run import cli, presets  # noqa: E402

RECORD = Path(__file__).resolve().parent / "data" / "fingerprints.json"
OBS_SIZE, ACTION_SIZE, BATCH, UPDATES = 6, 2, 16, 60
LEARNERS = ("TD3", "SAC")
# Single parts no preset turns on alone (flag name -> value, as on the command line).
PARTS: dict[str, dict[str, str]] = {
    "paper": {},
    "categorical": {"critic": "categorical", "num_atoms": "11", "v_min": "-5", "v_max": "5"},
    "normalize_obs": {"normalize_obs": "true", "scale_rewards": "true"},
    "lap": {"replay": "lap"},
    "hold_exploration": {"hold_exploration": "true", "exploration_decay": "30"},
    "sale": {"representation": "sale", "encoder_every": "20"},
    "mrq": {"representation": "mrq", "encoder_every": "20", "num_bins": "9"},
    "crossq_lap": {"crossq": "true", "replay": "lap", "renorm_warmup": "30"},
    "quantile": {
        "critic": "quantile",
        "num_critics": "3",
        "num_quantiles": "5",
        "quantiles_dropped": "2",
    },  # fmt: skip
    "simba_weight_decay": {
        "critic_network": "simba",
        "actor_network": "simba",
        "weight_decay": "0.01",
    },  # fmt: skip
}
TD3_ONLY = {
    "hard_targets_clipped": {"target_every": "20", "clip_values": "true"},
    "decaying_exploration": {"exploration_decay": "30", "initial_exploration_noise": "0.5"},
}
SAC_ONLY = {
    "hold_exploration": {"hold_exploration": "true"},
    "fixed_temperature": {"alpha_lr": "0", "init_alpha": "0.2", "policy_freq": "2"},
    "temperature_floor": {"alpha_min": "0.3", "alpha_lr": "0.1"},
}


def _parser() -> argparse.ArgumentParser:
    from jax_rl import main_dm_control

    return main_dm_control.build_parser()


def cases(policy: str) -> Iterator[tuple[str, Any]]:
    """(name, Config) of every case of `policy`: each preset's learner settings, then the parts."""
    parser = _parser()
    actions = {a.dest: a for a in parser._actions}
    module = algos.get(policy)
    fields = {name for name, *_ in common.describe(module.Config)}
    tables: list[tuple[str, dict[str, str]]] = []
    for preset in presets.all_presets(policy):
        settings = {
            key: ",".join(map(str, value)) if isinstance(value, list) else str(value)
            for key, value in preset.settings.items()
            if key in fields
        }
        tables.append((f"preset {preset.name}", settings))
    parts = {**PARTS, **(SAC_ONLY if policy == "SAC" else TD3_ONLY)}
    tables += [(f"part {name}", settings) for name, settings in parts.items()]
    for name, settings in tables:
        args = parser.parse_args(["--policy", policy])
        for key, text in settings.items():
            setattr(args, key, actions[key].type(text) if actions[key].type else text)
        _, config, _ = cli.build_algo_config(args, context=f"{name}: ")
        yield name, config


def _batches(key: jax.Array) -> Transition:
    """UPDATES batches [UPDATES, BATCH, ...]; rewards 0 in the first third."""
    k_obs, k_next, k_act, k_rew, k_disc = jax.random.split(key, 5)
    shape = (UPDATES, BATCH)
    reward = jax.random.normal(k_rew, shape)
    reward = jnp.where(jnp.arange(UPDATES)[:, None] < UPDATES // 3, 0.0, reward)
    return Transition(
        obs=jax.random.normal(k_obs, shape + (OBS_SIZE,)),
        action=jax.random.uniform(k_act, shape + (ACTION_SIZE,), minval=-1.0, maxval=1.0),
        reward=reward,
        discount=(jax.random.uniform(k_disc, shape) > 0.05).astype(jnp.float32),
        next_obs=jax.random.normal(k_next, shape + (OBS_SIZE,)),
    )


def _windows(batches: Transition, horizon: int) -> Any:
    """Sub-trajectories [UPDATES, BATCH, horizon, ...] for a learner that trains on them
    (MR.Q's): step h of row b is row b + h of the same batch, cut after a terminal."""
    from jax_rl.core.replay import Window

    steps = jax.tree_util.tree_map(
        lambda x: jnp.stack([jnp.roll(x, -h, axis=1) for h in range(horizon)], axis=2), batches
    )
    goes_on = steps.discount[..., :-1] > 0
    first = jnp.ones(goes_on.shape[:-1] + (1,), bool)
    mask = jnp.cumprod(jnp.concatenate([first, goes_on], axis=-1), axis=-1)
    fields = {name: getattr(steps, name) for name in Transition.__dataclass_fields__}
    return Window(**fields, mask=mask.astype(jnp.float32))


def run(policy: str, config: Any) -> dict[str, Any]:
    """The case's fingerprint: {"sha256": hash of the leaves, "sum": their float sum}."""
    module = algos.get(policy)
    key = jax.random.key(7)
    init_key, data_key, update_key, act_key = jax.random.split(key, 4)
    state = module.init(init_key, OBS_SIZE, ACTION_SIZE, config)
    batches = _batches(data_key)
    horizon = algos.horizon(module, config)
    stream = batches if horizon == 1 else _windows(batches, horizon)

    def body(state: Any, step: tuple[Any, jax.Array]) -> tuple[Any, Any]:
        batch, k = step
        first = jax.tree_util.tree_map(lambda x: x[:1], batch)
        if horizon > 1:  # one step of the window's first row
            first = Transition(
                **{n: getattr(first, n)[:, 0] for n in Transition.__dataclass_fields__}
            )
        state = module.observe(state, first)
        state, metrics = module.update(state, batch, k)
        return state, metrics

    keys = jax.random.split(update_key, UPDATES)
    state, metrics = jax.jit(lambda s: jax.lax.scan(body, s, (stream, keys)))(state)
    obs = jax.random.normal(act_key, (4, OBS_SIZE))
    extra = {}
    if getattr(config, "exploration_noise_min", 0) > 0:
        extra["episode_draw"] = jnp.linspace(0.0, 0.9, 4)
    acted = (
        module.act(state, obs, act_key, True),
        module.act(state, obs, act_key, False, **extra),
    )
    leaves = jax.tree_util.tree_leaves((state, metrics, acted))
    digest = hashlib.sha256()
    total = 0.0
    for leaf in leaves:
        array = np.asarray(jax.device_get(leaf))
        digest.update(str(array.dtype).encode() + str(array.shape).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
        if np.issubdtype(array.dtype, np.floating):
            total += float(np.abs(array.astype(np.float64)).sum())
    return {"sha256": digest.hexdigest(), "sum": total}


def processor() -> str:
    """The processor the fingerprints were made on: its model, family and a hash of its
    feature flags (what XLA's CPU code generation follows), and the JAX version."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    fields = {}
    for line in info.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())  # the first processor's
    flags = hashlib.sha256(fields.get("flags", "").encode()).hexdigest()[:12]
    model = fields.get("model name", platform.processor())
    family = f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')}"
    return f"{model} ({family}; flags {flags}; jax {jax.__version__})"


def all_fingerprints() -> dict[str, dict[str, Any]]:
    return {
        f"{policy} {name}": run(policy, config)
        for policy in LEARNERS
        for name, config in cases(policy)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"record {RECORD.name}")
    parser.add_argument("--add", action="store_true", help="record only the cases not in it")
    args = parser.parse_args(argv)
    if args.add:
        record = json.loads(RECORD.read_text())
        known = set(record["cases"])
        new = {f"{policy} {name}": run(policy, config) for policy in LEARNERS
               for name, config in cases(policy) if f"{policy} {name}" not in known}  # fmt: skip
        if record["processor"] != processor():  # a case made elsewhere keeps its own
            new = {name: {**found, "processor": processor()} for name, found in new.items()}
        record["cases"].update(new)
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"added {', '.join(new) or 'nothing'} to {RECORD}")
        return 0
    found = all_fingerprints()
    if args.write:
        RECORD.write_text(
            json.dumps({"processor": processor(), "cases": found}, indent=1, sort_keys=True) + "\n"
        )
        print(f"wrote {len(found)} fingerprints to {RECORD}")
        return 0
    recorded = json.loads(RECORD.read_text())["cases"]
    differ = [name for name in recorded if found.get(name, {}).get("sha256")
              != recorded[name]["sha256"]]  # fmt: skip
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(recorded) - len(differ)} of {len(recorded)} fingerprints match")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
