"""Meta-World (V3) in one folder, served from ``.venv-metaworld``.

- :mod:`.factory` — the env factory and the scripted-expert model (``evaluations.prebuilt.metaworld:MetaWorld``,
  ``:MetaWorldExpert``): benchmarks, tasks, instructions; importable without Meta-World.
- :mod:`.seeds` — how an episode's seed fixes its goal and physics.
- :mod:`.env` — :class:`~.env.MetaWorldTaskEnv`, one task.
"""

from .factory import *  # noqa: F401,F403 - the env's and the expert's contract, as their catalog sources name them
