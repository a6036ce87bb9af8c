"""LIBERO: the env, how its servers start, and the privileged expert that acts in it.

The env (``prebuilt/libero``):

- :mod:`.factory` — the ``rlmesh`` env factory (``python+libero://evaluations.prebuilt.libero:Libero``, the name this
  package exports): suites, scenarios, step caps, perturbations, cameras; importable without LIBERO (the catalog
  reads it in the main venv);
- :mod:`.episodes` — the episode rules shared by the factory and the env (cameras, settle steps, init states);
- :mod:`.env` — :class:`~.env.LiberoTaskEnv`, one task as LeRobot's ``LiberoEnv`` serves it (runs in ``.venv-libero``);
- :mod:`.privileged` — the simulator state the env adds for the expert (``privileged: true``);
- :mod:`.reset`, :mod:`.stepping` — the soft reset that keeps the compiled scene and the physics step without a
  repeated forward (the same episodes by digest);
- :mod:`.describe` — the spaces rlmesh reads when it describes the env, without building a scene.

How its servers start (a per-host process that builds each task once and forks env servers from it):
:mod:`.zygote` (the process), :mod:`.adopt` (which envs it forks, and the forked server's env), :mod:`.memory`
(what an env holds, and the render context it opens only when asked).

The expert (``prebuilt/libero-expert``): the :mod:`.expert` package, one concept a module. The policies that read
LIBERO's cameras (SmolVLA, LeRobot checkpoints) live with LeRobot's policies, :mod:`evaluations.prebuilt.lerobot`; the
parity harnesses against LeRobot's own code with the test support, ``tests/support/libero_parity.py``.

Episodes of any image + state env export as a LeRobot dataset through :mod:`evaluations.datasets`.
"""

from .factory import *  # noqa: F401,F403 - the env's contract, as its catalog source names it
