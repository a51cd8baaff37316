"""A user's own environment, handed to `jax_rl.train(env=...)` as a Python object, not a name.

Three kinds, told apart by what they are (nothing is named):

- a Gymnasium factory: a callable taking no arguments that returns a `gymnasium.Env`
  with a 1-D `Box` action space of finite bounds and a flat `Box` observation space
  (the environment's class, a function, `lambda: gymnasium.make(...)`). The host loop
  calls it for every environment it needs (each agent trains on one and evaluates on
  another), and seeds each by its first `reset(seed=...)`, as it does a named one;
- a dm_control factory: a callable taking no arguments that returns a
  `dm_control.rl.control.Environment` (`suite.load(...)`'s, or one built from a physics
  and a task of one's own); each environment's `task.random` is seeded with its seed,
  which is what the suite's `task_kwargs={"random": seed}` does;
- a Brax or MuJoCo Playground environment: the object itself, unbatched, with Brax's
  API (`reset(key)`, `step(state, action)`, `observation_size`, `action_size`; a state
  with `obs`, `reward`, `done`), or a factory returning one. One object serves every
  agent: the device pipeline vmaps it. A Playground object (one of `mujoco_playground`'s
  classes) is wrapped as the named Playground tasks are (`playground.wrap_env`); any
  other as the built-in Brax environments are (`BraxEnv.wrap`).

`identify` calls a factory once to see what it makes, and checks that the learners can
drive it: UnsupportedEnvironmentError, one line naming what is needed, for Dict or image
observations, discrete or unbounded actions, or an object of none of these kinds.

The run's name for it (`CustomEnv.name`: run folders, presets, config.json's `env`) is
what the environment calls itself: a Gymnasium environment's registered id (its
`spec.id`), else its class; a dm_control environment's task class; a Brax or Playground
environment's class. config.json's `custom_env` records `factory`, the factory's import
path `module:qualname`, where it has one (a function or class defined at the top of an
importable module), else null (a lambda, a function defined inside another, anything
defined in `__main__`, an object handed over itself), and `type`, the class of what it
made (of a dm_control environment, its task's). `reopen` opens a recorded run's
environment again: the one handed over again, else the factory its path imports.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

from jax_rl.envs import UnsupportedEnvironmentError

HOST_KINDS = ("gymnasium", "dm_control")
DEVICE_KINDS = ("brax", "playground")


@dataclasses.dataclass(frozen=True)
class CustomEnv:
    """A user's environment, identified: which backend trains it and how to make one."""

    kind: str  # the env_backend it trains on: HOST_KINDS or DEVICE_KINDS
    name: str  # the task's name in run folders, presets and config.json's `env`
    make: Callable[[], Any]  # a fresh environment (for an object handed over: that object)
    factory: str | None  # the factory's import path "module:qualname", None if it has none
    made: str  # "module:Class" of what it makes

    def record(self) -> dict[str, Any]:
        """What config.json (and the run's checkpoints) record of it: `custom_env`."""
        return {"factory": self.factory, "type": self.made}


def identify(env: Any) -> CustomEnv:
    """The kind of environment `env` is (see the module docstring), checked: one-line
    UnsupportedEnvironmentError for one the learners cannot train on. Calls a factory once."""
    if _is_device_env(env):
        return _device(env, lambda: env, None)
    if _is(env, "gymnasium", "Env") or _is(env, "dm_env", "Environment"):
        raise UnsupportedEnvironmentError(
            f"env= is a {_type_path(env)} environment; pass a factory that makes one (its "
            "class, or a function): every agent trains and evaluates on environments of its "
            "own, each seeded"
        )
    if not callable(env):
        raise UnsupportedEnvironmentError(
            f"env= is a {_type_path(env)}: give a task name, a factory of Gymnasium or "
            "dm_control environments, or a Brax or Playground environment"
        )
    made = env()
    path = import_path(env)
    if _is(made, "gymnasium", "Env"):
        from jax_rl.envs.gymnasium import check_spaces

        spec = getattr(made, "spec", None)
        name = spec.id if spec is not None else type(made.unwrapped).__name__
        try:
            check_spaces(name, made)
        finally:
            made.close()
        return CustomEnv("gymnasium", name, env, path, _type_path(made.unwrapped))
    if _is(made, "dm_env", "Environment"):
        from jax_rl.envs.dm_control import check_environment

        task = getattr(made, "task", None)
        name = type(task if task is not None else made).__name__
        try:
            check_environment(name, made)
        finally:
            made.close()
        return CustomEnv("dm_control", name, env, path, _type_path(made if task is None else task))
    if _is_device_env(made):
        return _device(made, env, path)
    raise UnsupportedEnvironmentError(
        f"env= made a {_type_path(made)}, which is none of a gymnasium.Env, a dm_control "
        "Environment or a Brax or Playground environment"
    )


def reopen(config: Mapping[str, Any], env: Any = None) -> CustomEnv:
    """The environment of a run that trained on a custom one (config.json `config`): `env`
    handed over again, else its factory imported by the recorded path. ValueError (one
    line) where neither can be had or it is not the environment the run trained on."""
    record = config["custom_env"]
    if env is None:
        path = record.get("factory")
        if not path:
            raise ValueError(
                f"it trained on a {record.get('type')} handed to jax_rl.train with no import "
                "path (a lambda, a nested function, an object, or code in __main__), so it "
                "cannot be reopened by name: from Python hand it over again "
                "(jax_rl.read_result(RUN_DIR, env=...), jax_rl.train(..., env=..., "
                "resume=RUN_DIR)); a factory defined at the top of an importable module is "
                "reopened by itself"
            )
        try:
            env = resolve(path)
        except Exception as e:  # noqa: BLE001 - whatever the user's module raises: one line
            raise ValueError(
                f"its environment factory {path} does not import ({type(e).__name__}: "
                f"{_first_line(e)}); it must be importable (installed, or on PYTHONPATH)"
            ) from None
    custom = identify(env)
    if (custom.kind, custom.name) != (config["env_backend"], config["env"]):
        raise ValueError(
            f"env= makes {custom.kind} {custom.name}, but the run trained on "
            f"{config['env_backend']} {config['env']}"
        )
    return custom


def import_path(factory: Any) -> str | None:
    """`module:qualname` that imports `factory` itself, or None where there is none."""
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if module == "__main__" or "<" in qualname:  # another process's __main__; <lambda>, <locals>
        return None
    path = f"{module}:{qualname}"
    try:
        return path if resolve(path) is factory else None
    except Exception:  # noqa: BLE001 - not importable, whatever the reason
        return None


def resolve(path: str) -> Any:
    """The object `module:qualname` names (importing the module)."""
    module, _, qualname = path.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _device(env: Any, make: Callable[[], Any], path: str | None) -> CustomEnv:
    """A Brax or Playground environment object, checked (its observation, traced)."""
    import jax

    kind = "playground" if _from_package(env, "mujoco_playground") else "brax"
    name = type(getattr(env, "unwrapped", env)).__name__
    shapes = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    obs = shapes.obs
    if kind == "brax" and isinstance(obs, Mapping):
        raise UnsupportedEnvironmentError(
            f"{name} observes a dict ({', '.join(map(str, obs))}); the learners need one flat "
            "array from a Brax environment (a Playground environment's dict is flattened)"
        )
    leaves = jax.tree_util.tree_leaves(obs)
    images = [x for x in leaves if len(x.shape) >= (3 if kind == "playground" else 2)]
    if images:
        raise UnsupportedEnvironmentError(
            f"{name} observes an array of shape {tuple(images[0].shape)}; the learners need "
            "flat state observations (not images)"
        )
    action_size = getattr(env, "action_size", None)
    if not isinstance(action_size, int) or action_size <= 0:
        raise UnsupportedEnvironmentError(
            f"{name}'s action_size is {action_size!r}; the learners need a positive int "
            "(continuous actions in [-1, 1])"
        )
    return CustomEnv(kind, name, make, path, _type_path(getattr(env, "unwrapped", env)))


def _is_device_env(obj: Any) -> bool:
    """Whether `obj` is an environment object with Brax's API (not a class of one)."""
    if isinstance(obj, type):
        return False
    kind = type(obj)
    methods = all(callable(getattr(obj, name, None)) for name in ("reset", "step"))
    # Looked up on the class: on an instance, Brax's `observation_size` runs a reset.
    sizes = all(hasattr(kind, name) or name in getattr(obj, "__dict__", {})
                for name in ("observation_size", "action_size"))  # fmt: skip
    return methods and sizes


def _is(obj: Any, module: str, name: str) -> bool:
    """isinstance(obj, module.name), without importing `module` (unimported: no instance)."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(obj, getattr(loaded, name))


def _from_package(obj: Any, package: str) -> bool:
    return any(
        klass.__module__ == package or klass.__module__.startswith(package + ".")
        for klass in type(obj).__mro__
    )


def _type_path(obj: Any) -> str:
    kind = type(obj)
    return f"{kind.__module__}:{kind.__qualname__}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
