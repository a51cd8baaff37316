"""Many agents in one compiled program: seeds and hyperparameter sweeps.

A population is a list of `AgentSpec`s: each agent has its own seed and its
own values of the swept continuous hyperparameters (learning rates, tau,
discount, noise scales, MPO's epsilons: the learners keep these as traced
values, so agents that differ only in them share one program). Everything an
agent owns (parameters, optimizer states, replay buffer, environments, keys)
gets a leading [P] axis and the loop's per-agent function is `jax.vmap`ped.

Counters that every agent advances in lock step (replay position and size,
update and step counts) are *shared*: they stay unbatched (vmap axis None).
That keeps the loops' `lax.cond`s (the prefill switch, TD3's delayed actor
update) real branches under vmap, instead of the both-branches `select` a
batched predicate would turn them into. Brax's resets branch on `any_agent`:
the agents exchange one boolean per step (did any environment of any agent
end?), their only communication, so that resets stay a branch too.

`over_agents` builds the population version of a function; with one agent it
indexes the leading axis away instead of vmapping (XLA runs a size-1 vmap of
the learners' updates measurably slower than the plain function).

`placement`, `shard_agents` and `split_envs` lay a population out over the
local devices (`jax.sharding`): agents along a one-axis mesh, or, for a
single agent, its environments. The programs are the same; XLA's SPMD
partitioner splits them (agents share only that reset boolean; a single
agent's split environments meet again at the replay insert).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "agents"


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """One agent of a population: its seed and its values of the swept hyperparameters."""

    index: int
    seed: int
    values: tuple[tuple[str, float], ...]  # (field, value) of every swept field, sorted

    @property
    def setting(self) -> str:
        """The label of its hyperparameter setting (shared by the seeds of one setting)."""
        return ",".join(f"{k}={v:.6g}" for k, v in self.values)

    def folder(self, policy: str) -> str:
        """Its log folder: `<policy>[-<setting>]-seed<seed>` (`jax_rl.watch.plot` groups by it)."""
        middle = f"-{self.setting}" if self.values else ""
        return f"{policy}{middle}-seed{self.seed}"


def expand(base_seed: int, num_seeds: int, sweep: Mapping[str, Sequence[float]]) -> list[AgentSpec]:
    """Every combination of the swept values, each with seeds base_seed .. base_seed+num_seeds-1.

    Ordered setting-major: the agents of one setting are consecutive.
    """
    if num_seeds < 1:
        raise ValueError(f"num_seeds must be a positive integer, got {num_seeds}")
    for name, values in sweep.items():
        if not values:
            raise ValueError(f"--{name}: no values given")
        labels = [f"{float(v):.6g}" for v in values]
        if len(set(labels)) != len(labels):
            raise ValueError(
                f"--{name}: values {list(values)} repeat (to 6 significant digits, which "
                "name the agents' folders)"
            )
    names = sorted(sweep)
    settings = list(itertools.product(*(sweep[n] for n in names)))
    agents: list[AgentSpec] = []
    for setting in settings:
        pairs = tuple((n, float(v)) for n, v in zip(names, setting, strict=True))
        for offset in range(num_seeds):
            agents.append(AgentSpec(len(agents), base_seed + offset, pairs))
    return agents


def batched_fields(node: Any, shared: Sequence[str] = ()) -> Any:
    """A vmap axes prefix for a flax struct node: axis 0 for every field, None for `shared`."""
    axes = {
        f.name: (None if f.name in shared else 0)
        for f in dataclasses.fields(node)
        if f.metadata.get("pytree_node", True)
    }
    return dataclasses.replace(node, **axes)


def stack(trees: Sequence[Any]) -> Any:
    """Stack equal-structured pytrees (one per agent) along a new leading axis."""
    return jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *trees)


def _per_agent(
    fn: Callable[[jax.Array], jax.Array], axes: Any, tree: Any, shared: bool = False
) -> Any:
    """Apply fn to every per-agent leaf of a population tree (axes: a vmap-style prefix),
    or with `shared` to every shared leaf (axis None) instead; the other leaves as they are."""
    return jax.tree_util.tree_map(
        lambda a, sub: jax.tree_util.tree_map(fn, sub) if (a is None) == shared else sub,
        axes,
        tree,
        is_leaf=lambda x: x is None,
    )


def index_agent(tree: Any, axes: Any, i: int | jax.Array) -> Any:
    """Agent i's slice of a population tree (shared leaves as they are; i may be traced)."""
    return _per_agent(lambda x: x[i], axes, tree)


def repeat_agent(tree: Any, axes: Any, size: int) -> Any:
    """A population of `size` copies of one agent's tree (shared leaves as they are): the
    shape of a population, e.g. to restore one agent out of a checkpoint."""
    return _per_agent(lambda x: jnp.broadcast_to(x, (size, *jnp.shape(x))), axes, tree)


LOOPS = ("vmap", "map")


def over_agents(
    fn: Callable[..., Any],
    in_axes: tuple[Any, ...],
    out_axes: Any,
    size: int,
    loop: str = "vmap",
) -> Callable[..., Any]:
    """fn on one agent -> fn on a population of `size` agents (not jitted).

    `in_axes`/`out_axes` are vmap-style prefixes: 0 for per-agent values,
    None for shared ones (a shared output is agent 0's). A size-1 population
    indexes instead of vmapping. `loop` "map" runs the agents one after another
    (`lax.map`: one agent's working set at a time, for CPUs whose caches a
    vmapped population's activations overflow; see `jax_rl.loops.host`);
    `any_agent` then sees one agent only.
    """
    if loop not in LOOPS:
        raise ValueError(f"loop must be one of {LOOPS}, got {loop!r}")
    if size > 1 and loop == "map":

        def mapped(*args: Any) -> Any:
            def body(i: jax.Array) -> Any:
                return fn(*[index_agent(x, a, i) for x, a in zip(args, in_axes, strict=True)])

            out = jax.lax.map(body, jnp.arange(size))
            return _per_agent(lambda x: x[0], out_axes, out, shared=True)

        return mapped
    if size > 1:
        return jax.vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_name=AXIS)

    def one(*args: Any) -> Any:
        single = [index_agent(x, a, 0) for x, a in zip(args, in_axes, strict=True)]
        return _per_agent(lambda x: x[None], out_axes, fn(*single))

    return one


def agent_axes(agent: Any) -> Any:
    """vmap axes of a population of learner states: the update count `step` is shared."""
    return batched_fields(agent, shared=("step",)) if hasattr(agent, "step") else 0


def replay_axes(replay: Any) -> Any:
    """vmap axes of a population of replay buffers: the write position and size are shared
    (every agent inserts in lock step); None where the buffer is left out (a checkpoint)."""
    return batched_fields(replay, shared=("position", "size")) if replay is not None else None


def any_agent(predicate: jax.Array) -> jax.Array:
    """True where `predicate` holds for at least one agent of the population being traced.

    Under `over_agents`' vmap this is an unbatched value, so a `lax.cond` on it
    stays a branch; outside a population it is `predicate` itself.
    """
    try:
        return jax.lax.psum(predicate.astype(jnp.int32), AXIS) > 0
    except NameError:  # not inside a population vmap
        return predicate


# --- Several devices -----------------------------------------------------------------


def mesh() -> Mesh | None:
    """A one-axis mesh over the local devices, or None where there is only one."""
    devices = jax.local_devices()
    if len(devices) < 2:
        return None
    return Mesh(np.array(devices), (AXIS,))


def placement(num_agents: int, num_envs: int, num_devices: int) -> str:
    """How a population is laid out over `num_devices` devices: "agents", "envs" or "one".

    Agents are split over the devices when their number is a multiple of the
    device count; a single agent's environments are split when theirs is;
    otherwise everything stays on one device.
    """
    if num_devices < 2:
        return "one"
    if num_agents > 1 and num_agents % num_devices == 0:
        return "agents"
    if num_agents == 1 and num_envs % num_devices == 0:
        return "envs"
    return "one"


def shard_agents(tree: Any, axes: Any, the_mesh: Mesh) -> Any:
    """Per-agent leaves split along their leading axis over the mesh; shared ones replicated."""
    split = NamedSharding(the_mesh, PartitionSpec(AXIS))
    return replicate(_per_agent(lambda x: jax.device_put(x, split), axes, tree), the_mesh)


def replicate(tree: Any, the_mesh: Mesh) -> Any:
    """Every leaf not yet on the mesh copied to each of its devices."""
    replicated = NamedSharding(the_mesh, PartitionSpec())

    def place(x: Any) -> Any:
        on_mesh = isinstance(getattr(x, "sharding", None), NamedSharding)
        return x if on_mesh else jax.device_put(x, replicated)

    return jax.tree_util.tree_map(place, tree)


def split_envs(envs: Any, the_mesh: Mesh) -> Any:
    """One agent's environment states [1, N, ...] split along N over the mesh.

    Leaves without an environment axis (a key) are replicated.
    """

    def place(x: jax.Array) -> jax.Array:
        if x.ndim >= 2 and x.shape[1] % the_mesh.size == 0:
            return jax.device_put(x, NamedSharding(the_mesh, PartitionSpec(None, AXIS)))
        return jax.device_put(x, NamedSharding(the_mesh, PartitionSpec()))

    return jax.tree_util.tree_map(place, envs)


# --- Ranking a sweep -------------------------------------------------------------------


def rank_settings(agents: Sequence[AgentSpec], finals: Sequence[float]) -> list[dict[str, Any]]:
    """One row per setting, best first: mean, std, min, max of the agents' final returns.

    Agents whose final return is not finite (diverged) count as such and rank last.
    """
    groups: dict[str, list[tuple[AgentSpec, float]]] = {}
    for agent, final in zip(agents, finals, strict=True):
        groups.setdefault(agent.setting, []).append((agent, final))
    rows: list[dict[str, Any]] = []
    for setting, members in groups.items():
        values = np.array([f for _, f in members], np.float64)
        finite = values[np.isfinite(values)]
        rows.append(
            {
                "setting": setting or "(defaults)",
                "seeds": len(members),
                "diverged": int(len(values) - len(finite)),
                "mean": float(finite.mean()) if len(finite) else math.nan,
                "std": float(finite.std(ddof=1)) if len(finite) > 1 else 0.0,
                "min": float(finite.min()) if len(finite) else math.nan,
                "max": float(finite.max()) if len(finite) else math.nan,
                **dict(members[0][0].values),
            }
        )
    rows.sort(
        key=lambda r: (r["diverged"] > 0, -r["mean"] if math.isfinite(r["mean"]) else math.inf)
    )
    return rows


def ranking_markdown(rows: Sequence[Mapping[str, Any]], policy: str) -> str:
    """The ranking as a Markdown table."""
    lines = [
        f"| rank | {policy} setting | seeds | final return mean | std | min | max | diverged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rank, r in enumerate(rows, 1):
        lines.append(
            f"| {rank} | {r['setting']} | {r['seeds']} | {r['mean']:.1f} | {r['std']:.1f} | "
            f"{r['min']:.1f} | {r['max']:.1f} | {r['diverged']} |"
        )
    return "\n".join(lines) + "\n"
