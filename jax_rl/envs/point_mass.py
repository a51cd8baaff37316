"""A point mass with Brax's environment API: a JAX-native probe for the device pipeline.

    env = point_mass_env(episode_length=100)   # a BraxEnv, trained like the built-in ones
    env = point_mass_env(privileged=True)      # observing a dict with a privileged state
    python jax_rl/main_brax.py --env point_mass  # the same, through the entry point

The mass sits on a line; the action pushes it; the reward is -position^2, so
the right policy drives it to the origin and holds it there. It compiles in a
second or two where a Brax physics environment takes tens of seconds, which
makes it the environment of the device loop's fast tests, and a way to try the device
pipeline's flags in seconds (`--env point_mass`). A small MuJoCo model of the same
slider draws it, so its runs can be rendered and evaluated like any other.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp

from jax_rl.envs.brax import BraxEnv
from jax_rl.envs.observation import PRIVILEGED, STATE, Layout

NAME = "point_mass"  # main_brax.py --env point_mass

# The drawing: a ball on a slider along x (the joint's position is the mass's), a rail
# from -2 to 2 and a marker at the origin, seen from the side by the model's camera.
_MJCF = """
<mujoco model="point_mass">
  <visual><global offwidth="640" offheight="480"/></visual>
  <worldbody>
    <light pos="0 -2 3" dir="0 0.5 -1" diffuse="1 1 1"/>
    <camera name="side" pos="0 -4 0.6" xyaxes="1 0 0 0 0.15 1"/>
    <geom type="box" size="2.1 0.02 0.02" pos="0 0 -0.12" rgba="0.5 0.5 0.5 1"/>
    <geom type="cylinder" size="0.03 0.15" pos="0 0 0" rgba="0.2 0.7 0.2 1"/>
    <body name="mass">
      <joint name="x" type="slide" axis="1 0 0" range="-2 2"/>
      <geom type="sphere" size="0.15" rgba="0.8 0.3 0.2 1"/>
    </body>
  </worldbody>
</mujoco>
"""


class PointMassState(flax.struct.PyTreeNode):
    obs: jax.Array  # [position, velocity]
    reward: jax.Array
    done: jax.Array  # always 0: episodes end by the time limit only


class PointMass:
    """x' = clip(x + 0.1 v'), v' = 0.9 v + 0.1 a; start x ~ U(-1, 1), v = 0; reward -x'^2.

    With `terminate_beyond`, an episode ends (a true terminal) once |x'| >= that
    bound: episodes then end at different steps in different environments.
    """

    observation_size = 2
    action_size = 1

    def __init__(self, terminate_beyond: float | None = None) -> None:
        self.terminate_beyond = terminate_beyond

    def reset(self, key: jax.Array) -> PointMassState:
        x = jax.random.uniform(key, (), minval=-1.0, maxval=1.0)
        return PointMassState(jnp.stack([x, 0.0]), jnp.float32(0.0), jnp.float32(0.0))

    def step(self, state: PointMassState, action: jax.Array) -> PointMassState:
        x, v = state.obs
        v = 0.9 * v + 0.1 * action[0]
        x = jnp.clip(x + 0.1 * v, -2.0, 2.0)
        done = jnp.float32(0.0)
        if self.terminate_beyond is not None:
            done = (jnp.abs(x) >= self.terminate_beyond).astype(jnp.float32)
        return PointMassState(jnp.stack([x, v]), -(x**2), done)

    def qpos(self, state: PointMassState) -> jax.Array:
        """[1]: the position, the drawing's one joint (the first feature of either
        observation, plain or privileged)."""
        return state.obs[:1]

    @property
    def mj_model(self) -> object:
        """The drawing's MuJoCo model (`jax_rl.io.video`); MuJoCo is imported only here."""
        import mujoco

        return mujoco.MjModel.from_xml_string(_MJCF)


class PrivilegedPointMass(PointMass):
    """The point mass observed as Playground's locomotion tasks are: a dict whose `state`
    is the position alone and whose `privileged_state` is position and velocity, made
    the vector [x | x, v] by `observation.Layout` (the actor sees x; the critics x, v)."""

    def __init__(self) -> None:
        super().__init__()
        shapes = {STATE: jnp.zeros(1), PRIVILEGED: jnp.zeros(2)}
        self.layout = Layout.of(shapes, "on", "the privileged point mass")
        self.observation_size = self.layout.size
        self.actor_obs_size = self.layout.actor_size

    def _observed(self, state: PointMassState) -> PointMassState:
        x, v = state.obs
        obs = {STATE: jnp.stack([x]), PRIVILEGED: jnp.stack([x, v])}
        return state.replace(obs=self.layout.flatten(obs))

    def reset(self, key: jax.Array) -> PointMassState:
        return self._observed(super().reset(key))

    def step(self, state: PointMassState, action: jax.Array) -> PointMassState:
        physics = state.replace(obs=state.obs[self.actor_obs_size :])  # the true [x, v]
        return self._observed(super().step(physics, action))


def point_mass_env(
    episode_length: int = 100, terminate_beyond: float | None = None, privileged: bool = False
) -> BraxEnv:
    """A new environment object (compiled programs are cached per object); `privileged`:
    `PrivilegedPointMass` (asymmetric actor-critic)."""
    env = PrivilegedPointMass() if privileged else PointMass(terminate_beyond)
    return BraxEnv.wrap(NAME, env, episode_length=episode_length)
