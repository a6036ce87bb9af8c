"""Any LeRobot checkpoint (issue 35): what the catalog reads of an installed folder (JSON and file names; a SHA-256 of
the files), what it refuses (anything that would be unpickled or run, links, remote code) and what it says a type
needs (files only a hub serves, named by the setting an operator sets); then, in .venv-lerobot and LIBERO, a tiny
checkpoint of every type that loads offline, built by lerobot's own classes, run through the platform."""

from __future__ import annotations

import json
import subprocess

import pytest

from evaluations.prebuilt.lerobot.checkpoints import PATCHED_SETTING, inspect
from evaluations.services.image_versions import sync_prebuilt
from tests.support.execution import create, episodes, run_all
from tests.support.libero import ROOT, needs_libero_venv

LEROBOT_PYTHON = ROOT / ".venv-lerobot" / "bin" / "python"
IMAGE = {"type": "VISUAL", "shape": [3, 256, 256]}


def _checkpoint(folder, policy_type="act", **config) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "type": policy_type, "input_features": {"observation.images.image": IMAGE,
                                                "observation.state": {"type": "STATE", "shape": [8]}},
        "output_features": {"action": {"type": "ACTION", "shape": [7]}}, **config}))
    (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    for name in ("policy_preprocessor.json", "policy_postprocessor.json"):
        (folder / name).write_text(json.dumps({"name": name, "steps": []}))


def test_an_installed_checkpoint_is_read_from_its_json_and_named_by_its_files(tmp_path):
    _checkpoint(tmp_path / "act-a")
    report = inspect(tmp_path / "act-a", {})
    assert report["loads"] and report["problem"] is None and report["type"] == "act"
    assert report["inputs"] == {"observation.images.image": [3, 256, 256], "observation.state": [8]}
    assert report["outputs"] == {"action": [7]} and report["sha256"].startswith("sha256:")
    (tmp_path / "act-a" / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}     !")
    assert inspect(tmp_path / "act-a", {})["sha256"] != report["sha256"]  # other files, another checkpoint


@pytest.mark.parametrize("make, words", [
    (lambda f: (f / "pytorch_model.bin").write_bytes(b"\x80\x04"), "pytorch_model.bin would be unpickled or run"),
    (lambda f: (f / "modeling_custom.py").write_text("import os"), "modeling_custom.py would be unpickled or run"),
    (lambda f: (f / "link.json").symlink_to("/etc/passwd"), "link.json is a symbolic link"),
    (lambda f: (f / "model.safetensors").unlink(), "lacks model.safetensors"),
])
def test_anything_that_would_run_or_leave_the_folder_is_refused_naming_the_file(tmp_path, make, words):
    _checkpoint(tmp_path / "c")
    make(tmp_path / "c")
    report = inspect(tmp_path / "c", {})
    assert not report["loads"] and words in report["problem"], report["problem"]


def test_pi0_and_pi05_need_the_transformers_lerobot_patches_besides_the_tokenizer(tmp_path):
    """Field case (bench/bench_lerobot_chunks.py): with the tokenizer in place, π0 / π0.5 still failed to build, "An
    incorrect transformer version is used": lerobot 0.4.4 builds them only on its patched transformers, not on PyPI."""
    from evaluations.prebuilt.lerobot.checkpoints import PATCHED_SETTING, patched_transformers_env
    from evaluations.services.weights import hub_settings

    _checkpoint(tmp_path / "pi05", policy_type="pi05")
    tokenizer = {"RLMESH_PALIGEMMA_TOKENIZER_DIR": str(tmp_path)}
    refused = inspect(tmp_path / "pi05", tokenizer)
    assert not refused["loads"] and "fix/lerobot_openpi" in refused["problem"]
    assert "RLMESH_PALIGEMMA_TOKENIZER_DIR" not in refused["problem"]  # that need is met
    assert inspect(tmp_path / "pi05", {**tokenizer, PATCHED_SETTING: "1"})["loads"]
    assert hub_settings()[PATCHED_SETTING] == ""  # this platform's lerobot venv: transformers from PyPI
    site = tmp_path / "site"
    (site / "transformers" / "models" / "siglip").mkdir(parents=True)
    assert patched_transformers_env(site) == {PATCHED_SETTING: ""}
    (site / "transformers" / "models" / "siglip" / "check.py").write_text("")
    assert patched_transformers_env(site) == {PATCHED_SETTING: "1"}


def test_remote_code_and_unknown_types_are_refused(tmp_path):
    _checkpoint(tmp_path / "remote", trust_remote_code=True)
    assert "run remote code" in inspect(tmp_path / "remote", {})["problem"]
    _checkpoint(tmp_path / "odd", policy_type="my_policy")
    assert "not one lerobot 0.4.4 builds" in inspect(tmp_path / "odd", {})["problem"]


@pytest.mark.parametrize("policy_type, setting", [("pi0", "RLMESH_PALIGEMMA_TOKENIZER_DIR"),
                                                  ("pi05", "RLMESH_PALIGEMMA_TOKENIZER_DIR"),
                                                  ("smolvla", "RLMESH_SMOLVLA_BACKBONE_DIR"),
                                                  ("xvla", "RLMESH_BART_TOKENIZER_DIR")])
def test_a_type_needing_hub_files_names_the_setting_of_the_folder_to_install(tmp_path, policy_type, setting):
    _checkpoint(tmp_path / "c", policy_type=policy_type)
    report = inspect(tmp_path / "c", {})
    assert not report["loads"] and setting in report["problem"] and "an operator installs it" in report["problem"]
    (tmp_path / "hub").mkdir()
    patched = {PATCHED_SETTING: "1"}  # π0 / π0.5: and the transformers lerobot patches (the test above)
    assert inspect(tmp_path / "c", {setting: str(tmp_path / "hub"), **patched})["loads"]  # installed: it loads


@pytest.mark.parametrize("policy_type", ["groot", "wall_x", "pi0_fast"])
def test_a_type_whose_hub_files_cannot_be_loaded_here_is_refused(tmp_path, policy_type):
    _checkpoint(tmp_path / "c", policy_type=policy_type)
    assert "only a hub serves and this platform does not load" in inspect(tmp_path / "c", {})["problem"]


@pytest.mark.django_db
def test_the_catalog_lists_each_checkpoint_and_planning_refuses_what_does_not_load(api, settings, tmp_path):
    root = tmp_path / "checkpoints"
    _checkpoint(root / "tiny-act")
    _checkpoint(root / "pi05-libero", policy_type="pi05")
    _checkpoint(root / "Not_A_Reference")  # no reference can name it: not listed
    settings.RLMESH_LEROBOT_CHECKPOINTS = str(root)
    sync_prebuilt()
    image = api.get("/v1/images/prebuilt/lerobot").json()
    rows = {r["checkpoint"]: r for r in image["versions"][0]["lerobot"]}
    assert set(rows) == {"tiny-act", "pi05-libero"} and rows["tiny-act"]["loads"] is True
    assert rows["tiny-act"]["type"] == "act" and rows["tiny-act"]["outputs"] == {"action": [7]}
    assert rows["pi05-libero"]["loads"] is False and "RLMESH_PALIGEMMA_TOKENIZER_DIR" in rows["pi05-libero"]["problem"]

    def preview(model):
        return api.post("/v1/evaluation-previews", {"model": model, "tasks": [
            {"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": 1}]}, format="json")

    assert preview("prebuilt/lerobot/tiny-act").status_code == 200
    refused = preview("prebuilt/lerobot/pi05-libero")
    assert refused.status_code == 400 and "RLMESH_PALIGEMMA_TOKENIZER_DIR" in refused.json()["error"]["message"]
    (root / "tiny-act" / "config.json").write_text((root / "tiny-act" / "config.json").read_text() + " ")
    changed = preview("prebuilt/lerobot/tiny-act")  # files changed since the catalog read them
    assert changed.status_code == 400 and "changed since the catalog read it" in changed.json()["error"]["message"]


@needs_libero_venv
@pytest.mark.skipif(not LEROBOT_PYTHON.exists(), reason="the lerobot venv is not installed")
@pytest.mark.slow
@pytest.mark.live
@pytest.mark.django_db
@pytest.mark.timeout(1800)
def test_a_tiny_checkpoint_of_each_type_that_loads_offline_runs_libero_episodes(tenant_a, settings, tmp_path):
    """act, diffusion, vqbet and tdmpc (lerobot 0.4.4's types that build offline), each a random checkpoint saved
    with its processors by lerobot's own classes: 2 LIBERO episodes each through the platform, the checkpoint's
    SHA-256 on every episode, and the sampling one (diffusion) run again alone, on 2 workers: the same digests."""
    types = ("act", "diffusion", "vqbet", "tdmpc")
    root = tmp_path / "checkpoints"
    built = subprocess.run([str(LEROBOT_PYTHON), "tests/fixtures/build_tiny_lerobot.py", str(root), *types], cwd=ROOT,
                           capture_output=True, text=True, timeout=900, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin",
                                                                               "HOME": str(tmp_path)})
    assert built.returncode == 0, built.stderr[-3000:]
    settings.RLMESH_LEROBOT_CHECKPOINTS = str(root)
    sync_prebuilt()
    body = {"models": [f"prebuilt/lerobot/tiny-{t}" for t in types],
            "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/9", "episodes": 2, "seed": 0, "maxSteps": 12}]}
    runs = []
    for models in (body["models"], ["prebuilt/lerobot/tiny-diffusion"]):  # again: the sampling one, on 2 workers
        evaluation = create(tenant_a, {**body, "models": models, "tasks": [{**body["tasks"][0], "workers": 2}]})
        run_all(evaluation)
        assert evaluation.status == "completed", evaluation.error_message
        runs.append({(e.workload.model_ref, e.index): e for e in episodes(evaluation)})
    first, second = runs
    assert len(first) == 8 and all(e.status == "completed" and e.steps == 12 for e in first.values())
    assert {k: e.trajectory_digest for k, e in second.items()} == {
        k: first[k].trajectory_digest for k in second}  # the same episodes, whatever ran beside them
    for (model, _), e in first.items():
        assert e.workload.model_kwargs["sha256"] == inspect(root / model.rsplit("/", 1)[1], {})["sha256"]
    print("LEROBOT", {model: e.trajectory_digest[:12] for (model, i), e in first.items() if i == 0})
