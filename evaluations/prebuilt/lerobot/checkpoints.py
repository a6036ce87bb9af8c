"""LeRobot checkpoints an operator installs (``RLMESH_LEROBOT_CHECKPOINTS``): what each folder holds, whether it loads
here, and what it needs when it does not. Read without torch or lerobot (the catalog runs in the main venv): JSON and
file names only, never a weight file's contents but their SHA-256.

A checkpoint is a LeRobot ``pretrained_model/`` folder: ``config.json`` (its ``type``: act, diffusion, pi0, pi05,
pi0_fast, smolvla, groot, xvla, wall_x, tdmpc, vqbet), ``model.safetensors`` and the saved pre- and post-processors
(``policy_preprocessor.json``, ``policy_postprocessor.json`` and their ``*.safetensors`` statistics).

**A checkpoint is data, never code.** Only JSON and safetensors are read. A folder holding anything that would be
unpickled (``.bin``, ``.pt``, ``.pth``, ``.pkl``, ``.ckpt``, ``.npy``) or run (``.py``, ``trust_remote_code``), a
symbolic link, a device file or a path out of the folder is refused, naming the file.

**Hub-only files are refused, never fetched.** Some types need files only the Hugging Face Hub serves: SmolVLA its
SmolVLM2 backbone, π0 / π0.5 / π0-FAST PaliGemma's tokenizer (π0-FAST also its FAST action tokenizer), X-VLA BART's
tokenizer, GR00T and Wall-X their base models. Such a checkpoint loads once the operator installs those files in a
folder and names it in the setting :data:`HUB_FOLDERS` gives; until then it is refused with that setting's name.
ACT, Diffusion Policy and VQ-BeT initialise their vision backbone from torchvision's ImageNet weights when built; a
checkpoint carries its trained backbone, so they are built without them (``pretrained_backbone_weights: null``).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

__all__ = ["FILES", "HUB_FOLDERS", "PATCHED_SETTING", "PATCHED_TRANSFORMERS", "SERVER_BASE_BYTES", "SETTING", "TYPES",
           "inspect", "patched_transformers_env", "resident_bytes", "sha256_of"]

#: The setting (and environment variable of the model server) naming the folder of installed checkpoints.
SETTING = "RLMESH_LEROBOT_CHECKPOINTS"
#: What every checkpoint folder holds.
FILES = ("config.json", "model.safetensors", "policy_preprocessor.json", "policy_postprocessor.json")
#: The policy types lerobot 0.4.4 builds.
TYPES = ("act", "diffusion", "pi0", "pi05", "pi0_fast", "smolvla", "groot", "xvla", "wall_x", "tdmpc", "vqbet")
#: Per type: the files only a hub serves, as ``(setting naming the installed folder, what it must hold)``; a type
#: whose needs no setting can meet (its loader is not wired here) has ``setting`` None.
HUB_FOLDERS: dict[str, list[tuple[str | None, str]]] = {
    "smolvla": [("RLMESH_SMOLVLA_BACKBONE_DIR", "the SmolVLM2 backbone (HuggingFaceTB/SmolVLM2-500M-Video-Instruct: "
                 "config, tokenizer, processor)")],
    "pi0": [("RLMESH_PALIGEMMA_TOKENIZER_DIR", "PaliGemma's tokenizer (google/paligemma-3b-pt-224)")],
    "pi05": [("RLMESH_PALIGEMMA_TOKENIZER_DIR", "PaliGemma's tokenizer (google/paligemma-3b-pt-224)")],
    "pi0_fast": [("RLMESH_PALIGEMMA_TOKENIZER_DIR", "PaliGemma's tokenizer (google/paligemma-3b-pt-224)"),
                 (None, "the FAST action tokenizer (physical-intelligence/fast), which loads remote code")],
    "xvla": [("RLMESH_BART_TOKENIZER_DIR", "BART's tokenizer (facebook/bart-large)")],
    "groot": [(None, "the GR00T base model (nvidia/GR00T-N1.5-3B)")],
    "wall_x": [(None, "the Qwen2.5-VL base model Wall-X is built on")],
}
#: Types lerobot 0.4.4 builds only on the transformers it patches for them (its ``fix/lerobot_openpi`` branch, which
#: is not on PyPI): their model checks for ``transformers.models.siglip.check``, which only that build has, and
#: stops otherwise ("An incorrect transformer version is used"). Measured with transformers 4.57.6 from PyPI.
PATCHED_TRANSFORMERS = ("pi0", "pi05")
#: What says the patched build is there: set (by :func:`patched_transformers_env`) where the lerobot venv has it.
PATCHED_SETTING = "RLMESH_LEROBOT_TRANSFORMERS_PATCHED"
#: Suffixes of files a loader would unpickle or run.
UNSAFE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".npy", ".npz", ".py", ".pyc", ".so")
#: Largest ``config.json`` / processor JSON read (bytes).
MAX_JSON_BYTES = 4 * 2**20


def sha256_of(folder: Path) -> str:
    """SHA-256 over the folder's files (each one's relative path and bytes, in sorted order): which checkpoint ran."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()


def _unsafe(folder: Path) -> str | None:
    """The first file of ``folder`` a loader must not touch, with why; None when every entry is a plain file or
    folder inside it, of a safe kind."""
    root = folder.resolve()
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        rel = path.relative_to(folder)
        if stat.S_ISLNK(mode):
            return f"{rel} is a symbolic link (a checkpoint is plain files)"
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return f"{rel} is not a plain file"
        if not path.resolve().is_relative_to(root):
            return f"{rel} leads out of the checkpoint's folder"
        if path.suffix.lower() in UNSAFE_SUFFIXES:
            return (f"{rel} would be unpickled or run: a checkpoint is data (JSON and safetensors only), never code; "
                    "convert its weights to model.safetensors")
    return None


def _json(path: Path) -> dict:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_JSON_BYTES} bytes")
    value = json.loads(path.read_text())
    if not isinstance(value, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return value


def _features(config: dict, key: str) -> dict[str, list[int]]:
    raw = config.get(key) or {}
    return {name: list(spec.get("shape") or []) for name, spec in raw.items() if isinstance(spec, dict)}


def patched_transformers_env(site_packages: str | os.PathLike | None = None) -> dict:
    """``{PATCHED_SETTING: "1"}`` when the transformers lerobot patches for π0 / π0.5 is installed (in
    ``site_packages``, the lerobot venv's; default: this interpreter's), else ``{PATCHED_SETTING: ""}``."""
    if site_packages is None:
        import importlib.util

        try:
            found = importlib.util.find_spec("transformers.models.siglip.check") is not None
        except ModuleNotFoundError:
            found = False
    else:
        found = (Path(site_packages) / "transformers" / "models" / "siglip" / "check.py").is_file()
    return {PATCHED_SETTING: "1" if found else ""}


def _hub_problem(policy_type: str, env: dict) -> str | None:
    missing = []
    for setting, what in HUB_FOLDERS.get(policy_type, []):
        folder = env.get(setting, "") if setting else ""
        if setting is None:
            missing.append(f"{what}, which only a hub serves and this platform does not load")
        elif not folder or not Path(folder).is_dir():
            missing.append(f"{what}: an operator installs it in a folder and names it in {setting}")
    if policy_type in PATCHED_TRANSFORMERS and not env.get(PATCHED_SETTING):
        missing.append("lerobot's patched transformers for π0 / π0.5 (its fix/lerobot_openpi branch, not on PyPI; "
                       "PyPI's fails lerobot's check)")
    return "; ".join(missing) or None


#: Resident memory of a LeRobot model server before its weights: Python, torch, lerobot and the LIBERO observation
#: pipeline (measured: 1.0 GiB peak RSS serving an 11 M-parameter ACT whose weights are 45 MB).
SERVER_BASE_BYTES = 1 << 30


def resident_bytes(folder: str | os.PathLike) -> int:
    """What a LeRobot model server on the checkpoint ``folder`` holds, estimated: :data:`SERVER_BASE_BYTES` and its
    ``.safetensors`` as stored (float32 weights load at their stored size); the base alone when the folder is
    unreadable."""
    try:
        weights = sum(p.stat().st_size for p in Path(folder).glob("*.safetensors") if p.is_file())
    except OSError:
        weights = 0
    return SERVER_BASE_BYTES + weights


def inspect(folder: str | os.PathLike, env: dict | None = None) -> dict:
    """What the checkpoint in ``folder`` is and whether it loads here: ``{"type", "inputs", "outputs", "sha256",
    "loads", "problem"}`` (features as name → shape; ``problem`` None when it loads). ``env``: where the hub folders'
    settings are read (default: the process environment)."""
    env = dict(os.environ) if env is None else env
    path = Path(folder)
    out = {"type": None, "inputs": {}, "outputs": {}, "sha256": None, "loads": False, "problem": None}
    if not path.is_dir():
        out["problem"] = f"{path.name} is not a folder"
        return out
    unsafe = _unsafe(path)
    if unsafe:
        out["problem"] = f"refused: {unsafe}"
        return out
    missing = [f for f in FILES if not (path / f).is_file()]
    if missing:
        out["problem"] = f"it lacks {', '.join(missing)} (a LeRobot pretrained_model/ folder)"
        return out
    try:
        config = _json(path / "config.json")
        for name in ("policy_preprocessor.json", "policy_postprocessor.json"):
            _json(path / name)
    except (OSError, ValueError) as exc:
        out["problem"] = f"unreadable: {exc}"
        return out
    policy_type = config.get("type")
    out.update(type=policy_type, inputs=_features(config, "input_features"), outputs=_features(config, "output_features"),
               sha256=sha256_of(path))
    if config.get("trust_remote_code") or config.get("auto_map"):
        out["problem"] = "refused: its config asks to run remote code (trust_remote_code / auto_map)"
    elif policy_type not in TYPES:
        out["problem"] = f"type {policy_type!r} is not one lerobot 0.4.4 builds ({', '.join(TYPES)})"
    else:
        hub = _hub_problem(policy_type, env)
        out["problem"] = f"{policy_type} needs {hub}" if hub else None
    out["loads"] = out["problem"] is None
    return out
