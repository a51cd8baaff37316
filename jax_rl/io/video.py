"""Frames of MuJoCo scenes and the video files made of them.

Everything that draws goes through MuJoCo's OpenGL renderer. On a machine
without a display that needs a headless OpenGL: `use_headless_gl` picks EGL
(`MUJOCO_GL=egl`) unless the user chose another, and `check_renderer` opens a
tiny context first, so that a machine where none can start is told so in one
line before anything compiles (`RendererUnavailable`).

- `ModelRenderer` draws a MuJoCo model in the joint positions `qpos` it is
  given: how the device backends (Brax, Playground), whose simulator state
  lives in JAX arrays, are drawn.
- `write_video` encodes frames as MP4 (H.264, through imageio's ffmpeg plugin,
  which brings its own ffmpeg binary) or as a GIF (through Pillow), after
  `caption` has burned a line of text into each frame.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

VIDEO_SUFFIXES = (".mp4", ".gif")
DEFAULT_SIZE = (320, 240)  # width, height: small files, the bodies still clear


class RendererUnavailable(RuntimeError):
    """No OpenGL context can be made here; the message says which MUJOCO_GL failed."""


def use_headless_gl() -> str:
    """Set MUJOCO_GL=egl unless the user set one; returns the one in force.

    Call before dm_control or Gymnasium's MuJoCo renderer is imported: they
    read it once. (Training without videos sets `disable`, in
    `jax_rl.envs.dm_control`, only where nothing was chosen.)
    """
    if os.environ.get("MUJOCO_GL") in (None, "", "disable"):
        os.environ["MUJOCO_GL"] = "egl"
    return os.environ["MUJOCO_GL"]


def check_renderer() -> None:
    """Open and close a tiny OpenGL context; RendererUnavailable (one line) if none starts."""
    backend = use_headless_gl()
    failure = _open_context()
    if failure is not None:
        raise RendererUnavailable(
            f"no renderer could start with MUJOCO_GL={backend} ({failure}); on a machine "
            "without a display install EGL (libegl1) or OSMesa (libosmesa6) and set "
            "MUJOCO_GL=egl or MUJOCO_GL=osmesa"
        )


def _open_context() -> str | None:
    """None if a context opens, else why not (the first line of the error)."""
    import mujoco

    detail = None
    try:
        with warnings.catch_warnings():
            # glfw reports a missing display as a warning, then fails later: an error here.
            warnings.simplefilter("error")
            context = mujoco.GLContext(8, 8)
            context.make_current()
            context.free()
    except Exception as e:  # the GL libraries raise many kinds; all mean "no renderer"
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if detail is not None:
        # A half-made context complains from its destructor; it holds nothing to free.
        hook, sys.unraisablehook = sys.unraisablehook, lambda _: None
        try:
            gc.collect()
        finally:
            sys.unraisablehook = hook
    return detail


def check_size(width: int, height: int) -> None:
    """ValueError unless both are even and positive (H.264's colour planes need that)."""
    for name, value in (("width", width), ("height", height)):
        if value <= 0 or value % 2:
            raise ValueError(f"--{name} must be a positive even number of pixels, got {value}")


def check_video_path(path: Path) -> None:
    """ValueError unless `path` ends in a suffix `write_video` encodes."""
    if path.suffix.lower() not in VIDEO_SUFFIXES:
        raise ValueError(
            f"--out {path}: the video must end in {' or '.join(VIDEO_SUFFIXES)}, "
            f"not {path.suffix or 'nothing'}"
        )


def camera_of(model: Any) -> int:
    """The model's first camera (the suites' tracking views), else MuJoCo's free camera."""
    return 0 if int(model.ncam) > 0 else -1


class ModelRenderer:
    """Draws `model` in given joint positions; `close` frees the OpenGL context.

    Closed explicitly (or as a context manager): freeing it at interpreter exit,
    after EGL has shut down, prints tracebacks.
    """

    def __init__(self, model: Any, width: int, height: int) -> None:
        import mujoco

        self._mujoco = mujoco
        self.model = model
        self.data = mujoco.MjData(model)
        self.camera = camera_of(model)
        # The model's offscreen buffer bounds the frame size; grow it where it is smaller.
        model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), width)
        model.vis.global_.offheight = max(int(model.vis.global_.offheight), height)
        self._renderer = mujoco.Renderer(model, height=height, width=width)

    def draw(self, qpos: np.ndarray) -> np.ndarray:
        """[H, W, 3] uint8: the model with joint positions `qpos` [nq]."""
        self.data.qpos[:] = np.asarray(qpos, np.float64)
        self._mujoco.mj_forward(self.model, self.data)
        self._renderer.update_scene(self.data, camera=self.camera)
        return np.array(self._renderer.render())

    def close(self) -> None:
        self._renderer.close()

    def __enter__(self) -> ModelRenderer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def caption(frame: np.ndarray, text: str) -> np.ndarray:
    """`frame` with `text` burned into its top left corner (white on a dark band)."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    height, width = frame.shape[:2]
    # A glyph is about 0.55 of the font size wide: fit the line in the width if need be.
    font = _font(max(8, min(height // 16, int(width / (0.55 * max(len(text), 1))))))
    left, top, right, bottom = draw.textbbox((4, 2), text, font=font)
    draw.rectangle((0, 0, right + 4, bottom + 3), fill=(0, 0, 0))
    draw.text((4, 2), text, fill=(255, 255, 255), font=font)
    return np.asarray(image)


@functools.lru_cache(maxsize=4)
def _font(size: int) -> Any:
    """Pillow's own font at `size` pixels (loaded once: it costs more than drawing)."""
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def write_video(path: Path, frames: Sequence[np.ndarray], fps: float) -> None:
    """Encode `frames` ([H, W, 3] uint8, all one size) as `path` (.mp4 or .gif)."""
    check_video_path(path)
    if not frames:
        raise ValueError("no frames to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gif":
        from PIL import Image

        # One palette for every frame, without dithering: the frames then differ only where
        # something moved, which GIF stores compactly (dithering noise defeats that).
        palette = Image.fromarray(frames[0]).quantize(colors=128, method=Image.Quantize.MEDIANCUT)
        images = [
            Image.fromarray(f).quantize(palette=palette, dither=Image.Dither.NONE) for f in frames
        ]
        images[0].save(
            path,
            save_all=True,
            append_images=images[1:],
            duration=round(1000 / fps),
            loop=0,
            optimize=True,
        )
        return
    import imageio.v2 as imageio

    with warnings.catch_warnings():
        # The encoder is an ffmpeg subprocess; JAX warns about any fork of its process,
        # and this one runs nothing of JAX's.
        warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
        # macro_block_size=1: no resizing (the sizes are even, which H.264 needs).
        writer: Any = imageio.get_writer(
            path, fps=fps, codec="libx264", quality=7, macro_block_size=1,
            ffmpeg_log_level="error",
        )  # fmt: skip
        with writer:
            for frame in frames:
                writer.append_data(frame)


def read_frames(path: Path) -> list[np.ndarray]:
    """Every frame of a video `write_video` wrote (for tests and checks)."""
    import imageio.v3 as iio

    if path.suffix.lower() == ".gif":
        return [np.asarray(f)[..., :3] for f in iio.imread(path, index=None, mode="RGB")]
    import imageio.v2 as imageio

    reader: Any = imageio.get_reader(path, format="FFMPEG")
    with reader:
        return [np.asarray(frame) for frame in reader]
