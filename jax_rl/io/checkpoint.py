"""Full-state checkpoints with orbax: written atomically, checked before they are used.

A checkpoint is two items under `<save_dir>/checkpoints/<step>/`:

- `arrays`: every array the run carries (parameters, targets, optimizer
  states, duals, the replay buffer, PRNG keys, counters, environment state),
  saved as one flat list of leaves in the order of the run's own pytree;
- `meta`: JSON with what the loop keeps on the host (counters, NumPy and
  dm_control random states, the physics state) and a description of the run
  and of every leaf (path, shape, dtype).

Orbax writes a step into a temporary folder and renames it when complete, so
a run killed while saving leaves the previous checkpoint intact; the newest
`keep` checkpoints are kept. Restoring compares the stored description with
the pytree the current run expects and refuses a checkpoint from another
algorithm, environment or shape with a `CheckpointError` that says what differs.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

FORMAT_VERSION = 3  # 2: Brax runs store a population (leading agent axis); 3: host runs too
ARRAYS, META = "arrays", "meta"

# Reading a checkpoint: its arrays are read as NumPy arrays and made JAX arrays with
# `jnp.asarray`: uncommitted, on the default device, like the arrays a fresh run starts from.
# Restored straight onto a device they would be committed to it, and a jitted program given
# committed arrays is lowered with their placement written into it: a resumed run would
# compile again every program that the run it continues had compiled and cached (on the
# CPU, half a minute for a small Brax run). Whatever the layout at saving time (a population
# split over devices this machine does not have), the loops lay the arrays out as they lay
# out a fresh run's.


class CheckpointError(Exception):
    """A checkpoint that is missing, unreadable, or does not belong to this run."""


def _is_key(x: Any) -> bool:
    return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _leaves(tree: Any) -> tuple[list[str], list[Any]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [jax.tree_util.keystr(path) for path, _ in flat], [leaf for _, leaf in flat]


def _stored(leaf: Any) -> Any:
    """What is written for a leaf: raw key data for a PRNG key, else a JAX array
    (so a NumPy float64 is stored as the float32 that JAX computes with)."""
    if _is_key(leaf):
        return jax.random.key_data(leaf)
    return jnp.asarray(leaf)


def _on_host(leaf: dict[str, Any]) -> np.ndarray:
    """What orbax reads a stored leaf into: a NumPy array of its shape and dtype, so that it
    is read as one (see "Reading a checkpoint" above). np.empty only reserves address
    space: a large replay buffer costs nothing here."""
    return np.empty(tuple(leaf["shape"]), jnp.dtype(leaf["dtype"]))


def describe_leaves(tree: Any) -> list[dict[str, Any]]:
    """Path, shape and dtype of every leaf (PRNG keys as their raw key data)."""
    paths, leaves = _leaves(tree)
    out = []
    for path, leaf in zip(paths, leaves, strict=True):
        stored = _stored(leaf)
        out.append({"path": path, "shape": list(stored.shape), "dtype": str(stored.dtype)})
    return out


def _manager(directory: Path, create: bool, owner: bool = False) -> Any:
    # Imported here: orbax is slow to import and most commands never checkpoint.
    import orbax.checkpoint as ocp

    # Orbax reports every save at INFO level through absl; keep the run's output readable.
    logging.getLogger("absl").setLevel(logging.WARNING)
    # The run that owns the folder removes the temporary folder of a save that was killed
    # midway when it resumes (jax_rl.tools.chaos counts that none is left); a reader (evaluating
    # a run that is still training) must not: that folder may be a save in progress.
    options = ocp.CheckpointManagerOptions(
        max_to_keep=2, enable_async_checkpointing=False, create=create,
        cleanup_tmp_directories=owner,
    )  # fmt: skip
    manager = ocp.CheckpointManager(
        directory.absolute(), options=options, item_names=(ARRAYS, META)
    )
    # Orbax runs that clean-up in a background thread and waits for it only in its next
    # save; a process that exits before any save (refusing to resume, say) would have that
    # thread fail at interpreter shutdown with a traceback. Wait for it here: it is brief.
    wait_for_cleanup = getattr(manager, "_maybe_await_cleanup_tmp_directory", None)
    if owner and wait_for_cleanup is not None:
        wait_for_cleanup()
    return manager


class Checkpointer:
    """Saves and restores the full state of one run under `directory`."""

    def __init__(self, directory: Path, owner: bool = False) -> None:
        """`owner`: the run writing this folder (it clears a killed save's leftovers)."""
        self.directory = Path(directory)
        self.owner = owner
        self._mgr: Any = None

    def _get_manager(self) -> Any:
        if self._mgr is None:
            self._mgr = _manager(self.directory, create=True, owner=self.owner)
        return self._mgr

    def close(self) -> None:
        """Wait for Orbax's background work and release it (a process refusing to start
        calls this before it exits); the checkpointer opens again when next used."""
        if self._mgr is not None:
            self._mgr.close()
            self._mgr = None

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or None when there is none."""
        if not self.directory.is_dir():
            return None
        return self._get_manager().latest_step()

    def save(self, step: int, tree: Any, meta: dict[str, Any]) -> None:
        """Write `tree` (any pytree of arrays) and the JSON `meta` as checkpoint `step`."""
        import orbax.checkpoint as ocp

        _, leaves = _leaves(tree)
        arrays = {f"{i:05d}": _stored(leaf) for i, leaf in enumerate(leaves)}
        meta = {**meta, "format": FORMAT_VERSION, "step": step, "leaves": describe_leaves(tree)}
        mgr = self._get_manager()
        mgr.save(
            step,
            args=ocp.args.Composite(
                arrays=ocp.args.StandardSave(arrays), meta=ocp.args.JsonSave(meta)
            ),
            force=True,
        )
        mgr.wait_until_finished()

    def read_meta(self, step: int | None = None) -> dict[str, Any]:
        """The JSON part of checkpoint `step` (default: the newest)."""
        import orbax.checkpoint as ocp

        step = self._require_step(step)
        try:
            restored = self._get_manager().restore(
                step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())
            )
            meta = dict(restored[META])
        except Exception as e:  # orbax raises many kinds; all mean "unreadable"
            raise self._unreadable(step, e) from None
        if meta.get("format") != FORMAT_VERSION:
            raise CheckpointError(
                f"checkpoint {self.directory / str(step)} has format {meta.get('format')!r}; "
                f"this version of jax_rl reads format {FORMAT_VERSION}"
            )
        return meta

    def restore(self, template: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Checkpoint `step` (default: the newest) shaped like `template`, and its meta.

        `template` is a pytree like the one saved (arrays or ShapeDtypeStructs);
        a leaf whose path, shape or dtype differs is refused with CheckpointError.
        """
        import orbax.checkpoint as ocp

        step = self._require_step(step)
        meta = self.read_meta(step)
        expected = describe_leaves(template)
        stored = meta["leaves"]
        newer = _newer_settings({d["path"] for d in stored}, expected, template)
        _check_leaves(stored, [d for i, d in enumerate(expected) if i not in newer])
        abstract = {f"{i:05d}": _on_host(d) for i, d in enumerate(stored)}
        try:
            restored = self._get_manager().restore(
                step, args=ocp.args.Composite(arrays=ocp.args.StandardRestore(abstract))
            )[ARRAYS]
        except Exception as e:
            raise self._unreadable(step, e) from None
        _, template_leaves = _leaves(template)
        leaves, position = [], 0
        for i, like in enumerate(template_leaves):
            if i in newer:  # a setting the checkpoint predates: the run's own value
                leaves.append(jnp.asarray(like))
                continue
            value = jnp.asarray(restored[f"{position:05d}"])
            position += 1
            if _is_key(like):
                value = jax.random.wrap_key_data(value, impl=jax.random.key_impl(like))
            leaves.append(value)
        treedef = jax.tree_util.tree_structure(template)
        return jax.tree_util.tree_unflatten(treedef, leaves), meta

    def restore_part(self, template: Any, prefix: str, step: int | None = None) -> Any:
        """Only the leaves under `prefix` of checkpoint `step` (default: the newest), shaped
        like `template`: e.g. the agents (`['learner'].agent`) without the replay buffer.

        A leaf of `template` whose path (after `prefix`), shape or dtype the checkpoint
        does not hold is refused with CheckpointError.
        """
        import orbax.checkpoint as ocp

        step = self._require_step(step)
        meta = self.read_meta(step)
        position = {d["path"]: i for i, d in enumerate(meta["leaves"])}
        abstract: dict[str, Any] = {}
        wanted: list[int | None] = []
        expected = describe_leaves(template)
        inside = {p[len(prefix) :] for p in position if p.startswith(prefix)}
        newer = _newer_settings(inside, expected, template)
        for k, d in enumerate(expected):
            i = position.get(prefix + d["path"])
            if k in newer:
                wanted.append(None)
                continue
            if i is None:
                raise CheckpointError(
                    f"checkpoint {self.directory / str(step)} holds no {prefix}{d['path']}: "
                    "it was written by a different algorithm or configuration"
                )
            _check_leaves([meta["leaves"][i]], [{**d, "path": prefix + d["path"]}])
            abstract[f"{i:05d}"] = _on_host(d)
            wanted.append(i)
        # A partial restore: orbax reads only these leaves (not the replay buffer).
        partial = ocp.args.PyTreeRestore(
            item=abstract,
            restore_args=ocp.checkpoint_utils.construct_restore_args(abstract),
            partial_restore=True,
        )
        try:
            restored = self._get_manager().restore(step, args=ocp.args.Composite(arrays=partial))[
                ARRAYS
            ]
        except Exception as e:
            raise self._unreadable(step, e) from None
        _, template_leaves = _leaves(template)
        leaves = []
        for i, like in zip(wanted, template_leaves, strict=True):
            if i is None:  # a setting the checkpoint predates: the template's value
                leaves.append(jnp.asarray(like))
                continue
            value = jnp.asarray(restored[f"{i:05d}"])
            if _is_key(like):
                value = jax.random.wrap_key_data(value, impl=jax.random.key_impl(like))
            leaves.append(value)
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), leaves)

    def steps(self) -> list[int]:
        """The steps of the complete checkpoints, oldest first."""
        if not self.directory.is_dir():
            return []
        return sorted(self._get_manager().all_steps())

    def _unreadable(self, step: int, error: Exception) -> CheckpointError:
        detail = str(error).splitlines()[0] if str(error) else "no detail"
        return CheckpointError(
            f"checkpoint {self.directory / str(step)} cannot be read "
            f"({type(error).__name__}: {detail})"
        )

    def _require_step(self, step: int | None) -> int:
        latest = self.latest_step()
        if latest is None:
            raise CheckpointError(f"no complete checkpoint in {self.directory}")
        return latest if step is None else step


# A learner's settings are leaves of its state (`<...>.config.<name>`); a setting added to
# the library after a checkpoint was written is a leaf the checkpoint lacks.
_SETTING = (".config.", "['config'][")


def _newer_settings(stored: set[str], expected: list[dict[str, Any]], template: Any) -> set[int]:
    """The indices of `expected` that are settings newer than the checkpoint (paths not in
    `stored`). Those take the template's values: the run's settings, which for a setting
    the checkpoint predates are its default (`check_same_run` allows only that). Only a
    template of real values can give them; other differences are left to `_check_leaves`."""
    newer = {
        i
        for i, d in enumerate(expected)
        if d["path"] not in stored and any(mark in d["path"] for mark in _SETTING)
    }
    if newer and any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in _leaves(template)[1]):
        return set()
    return newer


def _check_leaves(stored: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    if len(stored) != len(expected):
        raise CheckpointError(
            f"the checkpoint holds {len(stored)} arrays, this run has {len(expected)}: "
            "it was written by a different algorithm or configuration"
        )
    for s, e in zip(stored, expected, strict=True):
        if (s["path"], s["shape"], s["dtype"]) != (e["path"], e["shape"], e["dtype"]):
            raise CheckpointError(
                f"the checkpoint's {s['path']} is {s['dtype']}{s['shape']}, this run needs "
                f"{e['path']} as {e['dtype']}{e['shape']}: incompatible shapes"
            )


def check_same_run(
    stored: dict[str, Any],
    current: dict[str, Any],
    may_differ: set[str],
    defaults: dict[str, Any] | None = None,
) -> None:
    """Refuse to resume when a setting other than those in `may_differ` changed.

    `stored` and `current` map setting names (as flags) to values. A setting the stored
    identity lacks (added to the library after the checkpoint was written) counts as its
    value in `defaults`, the value every run had before it existed.
    """
    defaults = defaults or {}

    def was(name: str) -> Any:
        return stored[name] if name in stored else defaults.get(name)

    changed = [
        f"{name}: checkpoint has {was(name)!r}, this run {current.get(name)!r}"
        for name in sorted(set(stored) | set(current))
        if name not in may_differ and _plain(was(name)) != _plain(current.get(name))
    ]
    if changed:
        raise CheckpointError(
            "cannot resume: the run was started with other settings (" + "; ".join(changed) + ")"
        )


def _plain(value: Any) -> Any:
    """JSON round trip turns tuples into lists; compare in that form."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def all_finite(tree: Any) -> jax.Array:
    """One boolean: every floating-point leaf of `tree` is finite."""
    checks = [
        jnp.all(jnp.isfinite(x))
        for x in jax.tree_util.tree_leaves(tree)
        if isinstance(x, jax.Array | np.ndarray) and jnp.issubdtype(x.dtype, jnp.floating)
    ]
    return jnp.all(jnp.stack(checks)) if checks else jnp.bool_(True)
