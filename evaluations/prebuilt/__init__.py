"""The offline catalog every organization may use, served by the ``local`` runtime (:mod:`.catalog` lists it).

- One folder per benchmark whose env has more than one module: :mod:`.libero` (the env, its servers, its expert),
  :mod:`.metaworld`, :mod:`.miniwob`, :mod:`.shop`; the classic envs' modules beside them: :mod:`.envs` (classic
  control), :mod:`.robotics` (MuJoCo locomotion, gymnasium-robotics), :mod:`.browser` (what the web envs share).
- One folder per policy family that is more than a module: :mod:`.lerobot` (LeRobot's policies: SmolVLA). The
  reference models of the classic envs: :mod:`.models` (the rlmesh models) and :mod:`.policies` (their numpy
  controllers and the PPO forward pass, weights in ``weights/``).
- :mod:`.catalog` (the entries, their labels and digests) and :mod:`.describing` (their describe envelopes, cached by
  what they depend on).
- :mod:`.fused`: a trusted rlmesh model that declares a batched corner, batched across a host's episodes (its
  inference process and the thin servers that ask it).
"""
