"""Training loops: host.py (dm_control, Python steps the env) and device.py (Brax)."""
