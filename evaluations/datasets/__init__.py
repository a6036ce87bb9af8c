"""Datasets made from evaluations: an evaluation's recorded episodes (``recordSteps``) as a LeRobotDataset.

:mod:`.lerobot_frames` maps recorded steps to LeRobot features and frames (NumPy only: it runs in both venvs),
:mod:`.lerobot_writer` writes them with LeRobot's own ``LeRobotDataset`` (run on the lerobot venv's interpreter),
:mod:`.exports` is the platform's side: refusals, the export job, the zip it serves.
"""
