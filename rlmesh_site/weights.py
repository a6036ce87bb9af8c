"""Weights and checkpoints an operator installs, read by the settings (``rlmesh_site.settings`` imports every name):
nothing here is ever downloaded; a model that needs what is missing is refused, naming the setting.

- SmolVLA fine-tuned on LIBERO (``prebuilt/smolvla/libero``): its checkpoint and SmolVLM2 backbone folders
  (docs/running/smolvla-weights.md);
- LeRobot checkpoints (``prebuilt/lerobot/<folder>``): the folder holding one per subfolder, and the files only a hub
  serves that some types need (docs/running/lerobot-checkpoints.md).
"""

from __future__ import annotations

from rlmesh_site.env import env_str

RLMESH_SMOLVLA_LIBERO_DIR = env_str("RLMESH_SMOLVLA_LIBERO_DIR")
RLMESH_SMOLVLA_BACKBONE_DIR = env_str("RLMESH_SMOLVLA_BACKBONE_DIR")
RLMESH_LEROBOT_CHECKPOINTS = env_str("RLMESH_LEROBOT_CHECKPOINTS")
RLMESH_PALIGEMMA_TOKENIZER_DIR = env_str("RLMESH_PALIGEMMA_TOKENIZER_DIR")
RLMESH_BART_TOKENIZER_DIR = env_str("RLMESH_BART_TOKENIZER_DIR")
