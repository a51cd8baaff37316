"""Watch a trained agent: a video of its deterministic policy on its task.

    python -m jax_rl.watch.render runs/SAC-walker-walk-seed0
    python -m jax_rl.watch.render runs/SAC-walker-walk-seed0 --episodes 3 --out walker.gif
    python -m jax_rl.watch.render runs/SAC-cartpole-swingup-3agents-seed0 --agent 1
    python -m jax_rl.watch.render runs/brax-SAC-halfcheetah-seed0 --checkpoint 50000

Loads the run's agent (the final one, or that of checkpoint --checkpoint) and
its task from config.json, plays --episodes episodes with fresh seeds and
writes a video (.mp4, or .gif), each frame captioned with the step and the
return so far; the returns are printed too. Every backend draws with MuJoCo's
renderer: dm_control's and Gymnasium's own, Brax's and Playground's model in
the simulator's joint positions. Headless machines use MUJOCO_GL=egl unless
MUJOCO_GL is set. A population's run renders every agent into its own folder,
or --agent K alone. See docs/watching.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from jax_rl.io import video
from jax_rl.run import cli
from jax_rl.run.driver import OneLineErrorParser

if TYPE_CHECKING:
    from jax_rl.run.saved import SavedAgent, SavedRun


def build_parser() -> argparse.ArgumentParser:
    from jax_rl.run.saved import add_selection_flags

    parser = OneLineErrorParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=cli.HelpFormatter,
    )
    add_selection_flags(parser)
    add = parser.add_argument
    add("--episodes", type=int, default=1, help="episodes, one after another in the video")
    add(
        "--out",
        type=Path,
        default=None,
        help="the video, .mp4 or .gif (default: render.mp4 in the agent's folder; for "
        "several agents, the agent's folder name is added to the file name)",
    )
    add("--width", type=int, default=video.DEFAULT_SIZE[0], help="frame width in pixels")
    add("--height", type=int, default=video.DEFAULT_SIZE[1], help="frame height in pixels")
    add("--every", type=int, default=1, help="draw every this many environment steps")
    add("--max_steps", type=int, default=None, help="cut each episode after this many steps")
    add("--fps", type=cli.finite_float, default=30.0, help="frames per second of the video")
    return parser


def check_flags(args: argparse.Namespace) -> None:
    """Exit 2 with one line on a bad value (before anything loads)."""
    for name in ("episodes", "every"):
        if getattr(args, name) <= 0:
            cli.fail(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if args.max_steps is not None and args.max_steps <= 0:
        cli.fail(f"--max_steps must be a positive integer, got {args.max_steps}")
    if args.fps <= 0:
        cli.fail(f"--fps must be positive, got {args.fps}")
    try:
        video.check_size(args.width, args.height)
        if args.out is not None:
            video.check_video_path(args.out)
    except ValueError as e:
        cli.fail(str(e))


def output_path(out: Path | None, agent_dir: Path, several: bool, checkpoint: int | None) -> Path:
    """Where an agent's video goes (see --out)."""
    if out is None:
        name = "render.mp4" if checkpoint is None else f"render-step{checkpoint}.mp4"
        return agent_dir / name
    return out.with_name(f"{out.stem}-{agent_dir.name}{out.suffix}") if several else out


def main(argv: Sequence[str] | None = None) -> int:
    from jax_rl.io import quiet

    # Before MuJoCo, dm_control or Gymnasium is imported: they read MUJOCO_GL once.
    video.use_headless_gl()
    quiet.install()
    args = build_parser().parse_args(argv)
    check_flags(args)
    from jax_rl.run.saved import RunFolderError, open_selection

    try:
        # The renderer first: opening the run imports the simulators, which may start
        # (and complain about) the OpenGL platform themselves.
        video.check_renderer()
        run, agents = open_selection(args)
    except (RunFolderError, video.RendererUnavailable) as e:
        cli.fail(str(e))
    for agent in agents:
        path = output_path(args.out, agent.directory, len(agents) > 1, args.checkpoint)
        try:
            render_agent(run, agent, args, path)
        except RunFolderError as e:  # an environment that draws no frames (a custom one's)
            cli.fail(str(e))
    return 0


def render_agent(run: SavedRun, agent: SavedAgent, args: argparse.Namespace, path: Path) -> None:
    """Play the agent's episodes, write its video and print one line about it."""
    from jax_rl.run import play
    from jax_rl.run.saved import episode_seed

    seed = episode_seed(run, agent, args.seed)
    size = (args.width, args.height)
    env = run.open_env(seed, size)
    state = run.load_agent(
        agent,
        env.obs_size,
        env.action_size,
        args.checkpoint,
        actor_obs_size=getattr(env, "actor_obs_size", 0),
    )
    player = play.make_player(run.kind, run.algo, env, run.loop_config, seed)
    label = f"{run.config['policy']} {run.task}"
    recording = play.Recording(size, args.every, label)
    try:
        episodes = player.play(state, args.episodes, recording, args.max_steps)
    finally:
        player.close()
    frames = [frame for episode in episodes for frame in episode.frames]
    video.write_video(path, frames, args.fps)
    returns = ", ".join(f"{e.episode_return:.1f}" for e in episodes)
    which = "final agent" if args.checkpoint is None else f"checkpoint {args.checkpoint}"
    print(
        f"{agent.name} ({which}, seed {seed}): return {returns} over {len(episodes)} "
        f"episode(s); {len(frames)} frames of {args.width}x{args.height} in {path} "
        f"({path.stat().st_size / 1024:.0f} KiB)"
    )


if __name__ == "__main__":
    sys.exit(main())
