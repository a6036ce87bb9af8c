"""LeRobot's policies served as rlmesh models (they run in ``.venv-lerobot``: lerobot 0.4.4, torch), one module a policy
family, beside the benchmark folders whose envs they act in.

- :mod:`.smolvla` — SmolVLA fine-tuned on LIBERO through LeRobot's own policy code (``prebuilt/smolvla/libero``).

Nothing here imports torch or lerobot at import time: the platform reads their settings and refusals in its own
venv.
"""
