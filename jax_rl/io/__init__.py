"""What a run writes and reads back: checkpoints, the CSV logger and its trackers
(TensorBoard, W&B), the per-agent output folders, videos, and the quieting of library
noise on start-up."""
