"""Where a step of R13's host loop goes, one agent against a 3-agent mapped population
(docs/benchmarks/README.md, "The one recipe as a results cell trains it"): seconds per
1000 frames in all, in the jitted `learn` call (blocked on), and in the rest of the step
(the environments, the noise, the bookkeeping). `python cost_profile.py <agents>
[<steps per block>]`; run it under `taskset -c 0` for one core."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import r13_settings  # noqa: E402

from jax_rl import algos  # noqa: E402
from jax_rl.envs.dm_control import DMControlEnv  # noqa: E402
from jax_rl.envs.repeat import repeat_actions  # noqa: E402
from jax_rl.loops import host  # noqa: E402

agents = int(sys.argv[1]) if len(sys.argv) > 1 else 1
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 500
warmup, prefill, batch = 200, 1000, 256
settings = dict(r13_settings.r13_dmc)
repeat, updates, color = (
    settings.pop(k) for k in ("action_repeat", "updates_per_step", "noise_color")
)
algo = algos.get("SAC")
config = algo.Config(hidden_sizes=(256, 256), **settings)
seeds = list(range(agents))
envs = [repeat_actions(DMControlEnv("cartpole", "swingup", seed=s), repeat) for s in seeds]
fns = host.make_step_functions(algo, batch, updates, "map")
learner = host.init_population(
    algo, [config] * agents, seeds, envs[0].obs_size, envs[0].action_size, 4000, batch
)
learn_seconds = [0.0]


def timed_learn(*args):
    start = time.perf_counter()
    out = jax.block_until_ready(fns.learn(*args))
    learn_seconds[0] += time.perf_counter() - start
    return out


timed = host.StepFunctions(
    collect=fns.collect, learn=timed_learn, act_deterministic=fns.act_deterministic
)
collector = host.Collector(
    envs, timed, learner, prefill, seeds, discounts=[config.discount] * agents, noise_color=color
)
while collector.steps < prefill + repeat * warmup:
    collector.step()
for block in range(2):
    learn_seconds[0] = 0.0
    start = time.perf_counter()
    for _ in range(steps):
        collector.step()
    jax.block_until_ready(collector.learner)
    total = time.perf_counter() - start
    per = 1000.0 / (steps * repeat)  # per 1000 frames
    print(
        f"{agents} agent(s), block {block}: {total * per:.2f} s per 1000 frames; "
        f"learn {learn_seconds[0] * per:.2f}, rest {(total - learn_seconds[0]) * per:.2f}",
        flush=True,
    )
