"""The two loops as the run driver's `Trainer`s, whatever backend feeds them.

`HostTrainer` drives `loops.host` over any `HostEnv` (dm_control, Gymnasium):
agent i gets a training and an evaluation environment built from its seed.
`DeviceTrainer` drives `loops.device` over a batched device environment
(Brax, MuJoCo Playground).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from jax_rl.envs import HostEnv
from jax_rl.envs.repeat import repeat_actions

# An agent's evaluation environment is seeded apart from its training one.
EVAL_SEED_OFFSET = 10_000


@dataclasses.dataclass
class Outcome:
    """What a trainer's training hands back to the driver (`jax_rl.run.driver`)."""

    evaluations: list[list[dict[str, float]]]  # per agent, one row per evaluation
    per_agent: list[dict[str, Any]]  # extra fields of each agent's summary.json
    overall: dict[str, Any]  # extra fields of a population's summary.json
    note: str = ""  # appended to the final line, e.g. the uniform random policy's return


@dataclasses.dataclass
class HostTrainer:
    envs: list[HostEnv]
    eval_envs: list[HostEnv]

    @classmethod
    def for_seeds(
        cls, make_env: Callable[[int], HostEnv], seeds: Sequence[int], action_repeat: int = 1
    ) -> HostTrainer:
        """Agent i's environments seeded as a run of its own with `seeds[i]` seeds them,
        each holding an action for `action_repeat` frames (`jax_rl.envs.repeat`; raises
        EnvironmentSettingError for a repeat longer than the episode)."""

        def make(seed: int) -> HostEnv:
            return repeat_actions(make_env(seed), action_repeat)

        return cls(
            [make(seed) for seed in seeds], [make(seed + EVAL_SEED_OFFSET) for seed in seeds]
        )

    @property
    def obs_size(self) -> int:
        return self.envs[0].obs_size

    @property
    def action_size(self) -> int:
        return self.envs[0].action_size

    def describe(self, loop_config: Any) -> str:
        repeat = loop_config.action_repeat
        held = f", each action held for {repeat} frames" if repeat > 1 else ""
        return f"{loop_config.total_steps:,} environment steps each{held}, on the host loop"

    def config_fields(self) -> dict[str, Any]:
        return {}

    def train(
        self,
        algo: ModuleType,
        configs: Sequence[Any],
        seeds: Sequence[int],
        loop_config: Any,
        logger: Any,
        control: Any,
        recorder: Any = None,
    ) -> Outcome:
        from jax_rl.loops import host

        result = host.train_population(
            algo, configs, seeds, self.envs, self.eval_envs, loop_config, logger, control,
            recorder,
        )  # fmt: skip
        return Outcome(result.evaluations, [{} for _ in seeds], {})


@dataclasses.dataclass
class DeviceTrainer:
    env: Any  # a batched device environment (envs.brax.BraxEnv's interface)

    @property
    def obs_size(self) -> int:
        return self.env.obs_size

    @property
    def action_size(self) -> int:
        return self.env.action_size

    def describe(self, loop_config: Any) -> str:
        import jax

        ratio = loop_config.updates_per_step * loop_config.batch_size / loop_config.num_envs
        return (
            f"on {jax.devices()[0].platform}: {loop_config.total_steps:,} environment steps "
            f"each, {loop_config.num_envs} envs x {loop_config.updates_per_step} updates per "
            f"iteration (replay ratio {ratio:g})"
        )

    def config_fields(self) -> dict[str, Any]:
        import jax

        return {"device": str(jax.devices()[0]), "num_devices": len(jax.local_devices())}

    def train(
        self,
        algo: ModuleType,
        configs: Sequence[Any],
        seeds: Sequence[int],
        loop_config: Any,
        logger: Any,
        control: Any,
        recorder: Any = None,
    ) -> Outcome:
        import jax
        import jax.numpy as jnp

        from jax_rl.loops import device

        if self.env.actor_obs_size:  # [state | privileged state]: the actor sees the state
            configs = [c.replace(actor_obs_size=self.env.actor_obs_size) for c in configs]
        result = device.train_population(
            algo, configs, seeds, self.env, loop_config, logger, control, recorder
        )
        # The same evaluation with uniform random actions: the floor each return is read against.
        keys = jnp.stack([jax.random.key(seed + 1) for seed in seeds])
        random_returns = jax.device_get(
            result.pipeline.evaluate(result.carry.agent, keys, jnp.bool_(True))
        )
        per_agent = [
            {
                "uniform_random_return_mean": float(random_returns[i].mean()),
                "updates": int(result.carry.updates),
            }
            for i in range(len(seeds))
        ]
        mean = float(random_returns.mean())
        return Outcome(
            result.evaluations,
            per_agent,
            {"uniform_random_return_mean": mean},
            note=f"uniform random policy: {mean:.1f}",
        )
