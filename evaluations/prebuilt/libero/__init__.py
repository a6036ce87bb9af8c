"""LIBERO in one folder: the env and its episodes, the privileged expert, SmolVLA, parity with LeRobot.

- :mod:`.factory` — the ``rlmesh`` env factory (``python+libero://evaluations.prebuilt.libero:Libero``): suites,
  scenarios, step caps, perturbations; importable without LIBERO (the catalog reads it in the main venv).
- :mod:`.episodes` — the episode rules shared by the factory and the env (cameras, settle steps, init states).
- :mod:`.env` — :class:`~.env.LiberoTaskEnv`, one task as LeRobot's ``LiberoEnv`` serves it (runs in ``.venv-libero``).
- :mod:`.reset` — the soft reset that keeps the compiled scene (same episodes as a rebuild, by digest).
- :mod:`.privileged`, :mod:`.expert`, :mod:`.rotation` — the scripted expert (``prebuilt/libero-expert``) and the
  simulator state it reads.
- :mod:`.smolvla` — SmolVLA through LeRobot's own policy code (``prebuilt/smolvla``, runs in ``.venv-lerobot``).

Episodes of any image + state env export as a LeRobot dataset through :mod:`evaluations.datasets`.
"""

from .factory import *  # noqa: F401,F403 - the env's contract, as its catalog source names it
