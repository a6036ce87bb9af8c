"""LeRobot's policies served as rlmesh models (they run in ``.venv-lerobot``: lerobot 0.4.4, torch), one module a policy
family, beside the benchmark folders whose envs they act in.

- :mod:`.smolvla` — SmolVLA fine-tuned on LIBERO through LeRobot's own policy code (``prebuilt/smolvla/libero``);
- :mod:`.policy` — any LeRobot checkpoint an operator installs (``prebuilt/lerobot/<folder>``), loaded as LeRobot loads
  it; :mod:`.checkpoints` reads what such a folder holds and whether it loads here (JSON and file names only), and
  :mod:`.entry` makes the catalog's entry of them; :mod:`.batching` gathers the concurrent episodes' chunk requests
  into fixed-shape forward passes.

Nothing here imports torch or lerobot at import time: the platform reads their settings and refusals in its own
venv.
"""
