"""prebuilt/smolvla/libero without its weights: refused at models[i].model (preview and submit), listed as needing
weights; with the folders in place, its load kwargs are the settings' folders."""

from __future__ import annotations

import pytest

from evaluations.choices import ImageKind
from evaluations.models import Evaluation
from evaluations.prebuilt.lerobot.smolvla import BACKBONE_FILES, POLICY_FILES
from evaluations.services.image_versions import resolve_reference

pytestmark = pytest.mark.django_db

#: The seed's own request (the platform's reference page opens with it).
SEED = {"models": [{"model": "prebuilt/smolvla/libero"}],
        "tasks": [{"taskId": "libero_goal/0", "env": "prebuilt/libero", "episodes": 5}], "tags": {"team": "robotics"}}
DOCS = "docs/running/smolvla-weights.md"


def _installed(tmp_path, *, skip: str = "") -> tuple[str, str]:
    """Folders holding the file names the check reads (empty files: only the check runs here, nothing loads)."""
    policy, backbone = tmp_path / "policy", tmp_path / "backbone"
    for folder, files in ((policy, POLICY_FILES), (backbone, BACKBONE_FILES)):
        folder.mkdir()
        for name in files:
            if name != skip:
                (folder / name).write_bytes(b"")
    return str(policy), str(backbone)


def _model_error(response) -> str:
    assert response.status_code == 400, response.content
    details = {d["path"]: d["message"] for d in response.json()["error"]["details"]}
    assert "models[0].model" in details, details
    return details["models[0].model"]


@pytest.mark.parametrize("endpoint", ["/v1/evaluation-previews", "/v1/evaluations"])
def test_the_seed_request_is_refused_at_the_model_while_the_weights_are_not_installed(api, settings, endpoint):
    settings.RLMESH_SMOLVLA_LIBERO_DIR = settings.RLMESH_SMOLVLA_BACKBONE_DIR = ""
    message = _model_error(api.post(endpoint, SEED, format="json"))
    assert message.startswith("prebuilt/smolvla/libero: the SmolVLA LIBERO weights are not installed")
    assert "RLMESH_SMOLVLA_LIBERO_DIR is not set" in message and "RLMESH_SMOLVLA_BACKBONE_DIR is not set" in message
    assert DOCS in message and "/docs/running/smolvla-weights/" in message  # the served page, and its source
    assert not Evaluation.objects.exists()


def test_a_folder_lacking_a_file_names_the_setting_and_the_file(api, settings, tmp_path):
    settings.RLMESH_SMOLVLA_LIBERO_DIR, settings.RLMESH_SMOLVLA_BACKBONE_DIR = _installed(tmp_path, skip="model.safetensors")
    message = _model_error(api.post("/v1/evaluation-previews", SEED, format="json"))
    assert f"RLMESH_SMOLVLA_LIBERO_DIR={tmp_path / 'policy'} lacks model.safetensors" in message
    assert "BACKBONE_DIR" not in message


def test_a_request_failing_the_schema_still_names_the_missing_weights(api, settings):
    settings.RLMESH_SMOLVLA_LIBERO_DIR = ""
    body = {**SEED, "tasks": [{"taskId": "libero_goal/0", "env": "prebuilt/libero", "episodes": "five"}]}
    assert "RLMESH_SMOLVLA_LIBERO_DIR is not set" in _model_error(api.post("/v1/evaluation-previews", body, format="json"))


def test_with_the_weights_installed_the_model_resolves_to_the_settings_folders(api, settings, tmp_path, tenant_a):
    policy, backbone = _installed(tmp_path)
    settings.RLMESH_SMOLVLA_LIBERO_DIR, settings.RLMESH_SMOLVLA_BACKBONE_DIR = policy, backbone
    r = api.post("/v1/evaluation-previews", SEED, format="json")
    assert "models[0].model" not in {d["path"] for d in r.json().get("error", {}).get("details", [])}, r.content
    image = resolve_reference("prebuilt/smolvla/libero", kind=ImageKind.MODEL, organization=tenant_a.org)
    assert image.load_kwargs == {"policy_dir": policy, "backbone_dir": backbone, "threads": 1}
    assert image.version.source == "python+lerobot://evaluations.prebuilt.lerobot.smolvla:SmolVLALibero"


def test_the_catalog_lists_it_as_needing_weights(api, settings, client, tenant_a, tmp_path):
    settings.RLMESH_SMOLVLA_LIBERO_DIR = ""
    image = api.get("/v1/images/prebuilt/smolvla").json()
    assert image["kind"] == "model"
    (weights,) = image["versions"][0]["weights"]
    assert weights == {"checkpoint": "libero", "installed": False, "docs": DOCS,
                       "settings": ["RLMESH_SMOLVLA_BACKBONE_DIR", "RLMESH_SMOLVLA_LIBERO_DIR"]}
    assert api.get("/v1/images/prebuilt/ppo").json()["versions"][0]["weights"] == []
    client.force_login(tenant_a.user)
    page = client.get("/images").content.decode()
    assert "prebuilt/smolvla/libero</code> <span class=\"muted\">— needs weights: RLMESH_SMOLVLA_BACKBONE_DIR, " \
           f"RLMESH_SMOLVLA_LIBERO_DIR ({DOCS})" in page
    settings.RLMESH_SMOLVLA_LIBERO_DIR, settings.RLMESH_SMOLVLA_BACKBONE_DIR = _installed(tmp_path)
    assert api.get("/v1/images/prebuilt/smolvla").json()["versions"][0]["weights"][0]["installed"] is True
    assert "prebuilt/smolvla/libero</code> <span class=\"muted\">— weights installed" in client.get("/images").content.decode()
