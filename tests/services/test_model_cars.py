"""An organization's LeRobot checkpoint as a model-car image (services.model_cars): archives read with the
protections imports have, the label, the builder's registry credential, planning, the storage quota and the catalog
page's upload. The image itself is built, pushed, probed and run in tests/containers/test_images.py."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile

import pytest

from evaluations.models import CheckpointUpload, ImageRepository, ImageVersion, Organization
from evaluations.services import model_cars
from evaluations.services.model_cars import CheckpointRefused, check_tar, label_path, unpack_upload

DIGEST = "sha256:" + "c" * 64
SHA = "sha256:" + "5" * 64
CONFIG = {"type": "act", "input_features": {"observation.state": {"shape": [8]}},
          "output_features": {"action": {"shape": [7]}}}


def checkpoint_files(**extra: bytes) -> dict[str, bytes]:
    """A folder inspect() accepts: the four files of a LeRobot pretrained_model/ (weights content is never read)."""
    return {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": b"\0" * 16,
            "policy_preprocessor.json": b"{}", "policy_postprocessor.json": b"{}", **extra}


def a_tar(members: list[tuple[str, bytes | str]]) -> io.BytesIO:
    """A tar of ``(name, content)``: bytes → a file; "dir" → a folder; "sym:<target>", "hard:<target>", "chr" → that."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            if isinstance(content, bytes):
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
                continue
            if content == "dir":
                info.type = tarfile.DIRTYPE
            elif content.startswith("sym:"):
                info.type, info.linkname = tarfile.SYMTYPE, content[4:]
            elif content.startswith("hard:"):
                info.type, info.linkname = tarfile.LNKTYPE, content[5:]
            elif content == "chr":
                info.type = tarfile.CHRTYPE
            tar.addfile(info)
    buf.seek(0)
    return buf


def a_zip(files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, target)
    buf.seek(0)
    return buf


# ------------------------------------------------------------------ reading the folder
def test_the_labelled_folder_reads_out_of_the_image_archive():
    archive = a_tar([("checkpoint", "dir"), *((f"checkpoint/{n}", d) for n, d in checkpoint_files().items())])
    with tarfile.open(fileobj=archive) as tar:
        members = check_tar(tar, "checkpoint", max_bytes=10**6)
    assert sorted(m.name for m in members)[:2] == ["checkpoint", "checkpoint/config.json"] and len(members) == 5


@pytest.mark.parametrize(("member", "reason"), [
    (("checkpoint/weights", "sym:/etc/passwd"), "is a link"),
    (("checkpoint/weights", "hard:checkpoint/config.json"), "is a link"),
    (("checkpoint/tty", "chr"), "not a plain file"),
    (("checkpoint/../../etc/cron.d/x", b"x"), "leads out"),
    (("/etc/x", b"x"), "leads out"),
    (("elsewhere/config.json", b"{}"), "outside the checkpoint's folder"),
    (("checkpoint/big", b"x" * 2000), "larger than 1000 bytes"),
])
def test_an_archive_that_could_escape_or_hide_something_is_refused_naming_the_entry(member, reason):
    archive = a_tar([("checkpoint/config.json", b"{}"), member])
    with tarfile.open(fileobj=archive) as tar, pytest.raises(CheckpointRefused, match=reason):
        check_tar(tar, "checkpoint", max_bytes=1000)


@pytest.mark.parametrize(("labels", "expected"), [
    ({}, None), ({"dev.rlmesh.lerobot.checkpoint": "/checkpoint/"}, "/checkpoint"),
    ({"dev.rlmesh.lerobot.checkpoint": "/opt/ckpt/pretrained_model"}, "/opt/ckpt/pretrained_model"),
])
def test_the_label_names_the_folder(labels, expected):
    assert label_path(labels) == expected


@pytest.mark.parametrize("value", ["checkpoint", "/", "/a/../..", ""])
def test_a_label_that_is_not_an_absolute_folder_is_refused(value):
    with pytest.raises(CheckpointRefused, match="an absolute folder inside the image"):
        label_path({"dev.rlmesh.lerobot.checkpoint": value})


def test_an_upload_finds_the_folder_at_the_top_or_in_its_one_folder(tmp_path):
    flat = unpack_upload(a_zip(checkpoint_files()), "act.zip", tmp_path / "flat")
    nested = unpack_upload(a_tar([(f"pretrained_model/{n}", d) for n, d in checkpoint_files().items()]), "act.tar",
                           tmp_path / "nested")
    assert flat == tmp_path / "flat" and nested == tmp_path / "nested" / "pretrained_model"
    assert model_cars.inspect_folder(nested)["type"] == "act"


@pytest.mark.parametrize(("archive", "name", "reason"), [
    (lambda: a_zip(checkpoint_files(), symlinks={"model.safetensors2": "/etc/shadow"}), "x.zip", "is a link"),
    (lambda: a_zip({"../config.json": b"{}"}), "x.zip", "path traversal"),
    (lambda: a_zip({"README.md": b"hi"}), "x.zip", "holds no config.json"),
    (lambda: io.BytesIO(b"not an archive"), "x.zip", "could not be read as an archive"),
    (lambda: io.BytesIO(b""), "x.rar", "is not one of .zip"),
])
def test_a_bad_upload_is_refused_and_leaves_nothing(tmp_path, archive, name, reason):
    with pytest.raises(CheckpointRefused, match=reason):
        unpack_upload(archive(), name, tmp_path / "u")
    assert not (tmp_path / "u").exists()


def test_a_cached_checkpoint_runs_in_the_lerobot_server_with_the_probed_files(db, settings, tmp_path):
    repo = ImageRepository.objects.create(namespace="a", name="act", kind="model")
    version = ImageVersion.objects.create(repository=repo, digest=DIGEST, source=f"oci://reg/a/act@{DIGEST}",
                                          lerobot={"path": "/checkpoint", "type": "act", "sha256": SHA})
    cache = tmp_path / "run" / "model-cars" / ("c" * 64)
    (cache / "checkpoint").mkdir(parents=True)
    (cache / ".complete").write_text("{}")  # read out of the image before: no engine needed now
    spec = model_cars.server_spec(version, {"sha256": SHA})
    assert spec.source == model_cars.LEROBOT_SOURCE and spec.kind == "model"
    assert spec.kwargs == {"sha256": SHA, "root": str(cache), "folder": "checkpoint"}


# ------------------------------------------------------------------ registry credential
def test_the_builder_pushes_to_its_own_namespace_only(db, tenant_a, tenant_b):
    from evaluations.services.registry import authenticate_basic, builder_credential, granted_actions

    user, password = builder_credential("a")
    grantee = authenticate_basic(user, password)
    assert granted_actions(grantee, "repository:a/act:pull,push")["actions"] == ["pull", "push"]
    assert granted_actions(grantee, "repository:b/act:pull,push")["actions"] == []
    assert authenticate_basic(user, builder_credential("b")[1]) is None  # b's password is not a's
    assert authenticate_basic("rlmesh-builder.nobody", builder_credential("nobody")[1]) is None  # no such organization


# ------------------------------------------------------------------ planning and the catalog
@pytest.fixture
def model_car(tenant_a) -> ImageVersion:
    repo = ImageRepository.objects.create(namespace="a", name="act", kind="model")
    version = ImageVersion.objects.create(
        repository=repo, digest=DIGEST, source=f"oci://reg/a/act@{DIGEST}", tags=["v1"], kind="model", size=1234,
        lerobot={"path": "/checkpoint", "type": "act", "inputs": {"observation.state": [8]},
                 "outputs": {"action": [7]}, "sha256": SHA, "storedBytes": 1234})
    repo.current_version = version
    repo.save()
    return version


def test_a_model_car_runs_on_libero_and_records_its_checkpoint(api, model_car):
    from evaluations.models import Evaluation

    body = {"models": [{"model": "a/act:v1", "envVars": {"X": "1"}}],
            "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": 2}]}
    r = api.post("/v1/evaluations", body, format="json")
    assert r.status_code == 201, r.json()
    evaluation = Evaluation.objects.get(public_id=r.json()["id"])
    (workload,) = evaluation.workloads.all()
    assert workload.model_kwargs == {"sha256": SHA, "threads": 1} and workload.env_vars == {}  # the platform's server
    (model,) = evaluation.config["models"]
    assert model["checkpointSha256"] == SHA and model["envVarsIgnored"] == ["X"]


def test_a_model_car_acts_only_on_libero(api, model_car):
    from tests.conftest import cartpole_request

    r = api.post("/v1/evaluation-previews", cartpole_request(models=["a/act:v1"]), format="json")
    (detail,) = r.json()["error"]["details"]
    assert r.status_code == 400 and detail["path"] == "models[0]"
    assert "LeRobot checkpoint (act): it acts only in prebuilt/libero" in detail["message"]


def test_another_organization_cannot_see_or_run_it(api, model_car, tenant_b):
    other = tenant_b.client()
    assert other.get("/v1/images/a/act").status_code == 404
    r = other.post("/v1/evaluation-previews", {"models": ["a/act:v1"], "tasks": [
        {"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": 1}]}, format="json")
    assert r.status_code == 400 and r.json()["error"]["details"] == [{"path": "models[0]",
                                                                      "message": 'unknown model "a/act:v1"'}]
    (version,) = api.get("/v1/images/a/act").json()["versions"]
    assert version["lerobot"] == [{"checkpoint": "/checkpoint", "type": "act", "inputs": {"observation.state": [8]},
                                   "outputs": {"action": [7]}, "sha256": SHA, "loads": True, "problem": None}]


def test_its_size_counts_in_the_storage_quota_once_until_deleted(api, model_car, monkeypatch, settings):
    from evaluations.services import probes

    settings.RLMESH_REGISTRY_HOST = "127.0.0.1:9"  # nothing listens: the registry-side delete is best effort
    org = Organization.objects.get(slug="a")
    ImageVersion.objects.filter(pk=model_car.pk).update(lerobot={}, probe_status="queued")

    def passed(version, found, log):
        found["lerobot"] = {**model_car.lerobot, "storedBytes": version.size}

    monkeypatch.setattr(probes, "_inspect", lambda version, log, found: found.update(kind="model", model_car="/checkpoint"))
    monkeypatch.setattr(probes, "_probe_model_car", passed)
    assert probes.probe_version(model_car.pk) == "passed"
    assert probes.probe_version(model_car.pk) == "passed"  # probed again: counted once
    org.refresh_from_db()
    assert org.storage_bytes == 1234
    assert api.delete(f"/v1/images/a/act@{DIGEST}").status_code == 204
    org.refresh_from_db()
    assert org.storage_bytes == 0


# ------------------------------------------------------------------ the catalog page's upload
@pytest.fixture
def web(client, tenant_a, monkeypatch):
    client.login(username=tenant_a.user.username, password=f"pw-{tenant_a.user.username}")
    client.sent = []
    monkeypatch.setattr(model_cars, "build_and_push", lambda *a: pytest.fail("built in the web request"))
    monkeypatch.setattr("evaluations.dispatch.send_checkpoint_upload", client.sent.append)
    return client


def upload(web, archive: io.BytesIO, name: str = "act.zip", **fields):
    archive.name = name
    return web.post("/images/checkpoints", {"repository": "act-libero", "tag": "v1", "archive": archive, **fields})


def test_an_uploaded_checkpoint_is_queued_for_its_build(web, settings):
    r = upload(web, a_zip({f"pretrained_model/{n}": d for n, d in checkpoint_files().items()}))
    assert r.status_code == 302
    (row,) = CheckpointUpload.objects.all()
    assert (row.repository, row.tag, row.status) == ("act-libero", "v1", "queued") and web.sent == [row.pk]
    assert (model_cars.upload_folder(row) / "pretrained_model" / "config.json").is_file()
    page = web.get("/images").content.decode()
    assert "a/act-libero:v1" in page and "queued" in page and "Upload a LeRobot checkpoint" in page


@pytest.mark.parametrize(("archive", "status", "reason"), [
    (lambda: a_zip(checkpoint_files(**{"optimizer.pt": b"x"})), 400, "would be unpickled or run"),
    (lambda: a_zip({**checkpoint_files(), "config.json": json.dumps({**CONFIG, "type": "pi0"}).encode()}), 400,
     "RLMESH_PALIGEMMA_TOKENIZER_DIR"),
    (lambda: a_zip(checkpoint_files(), symlinks={"x": "/etc/passwd"}), 400, "is a link"),
])
def test_a_refused_upload_says_why_and_keeps_nothing(web, settings, archive, status, reason):
    r = upload(web, archive())
    assert r.status_code == status and reason in r.content.decode()
    assert not CheckpointUpload.objects.exists() and web.sent == []
    assert not (settings.MEDIA_ROOT / "checkpoint-uploads").exists() or not any((settings.MEDIA_ROOT / "checkpoint-uploads").iterdir())


def test_an_upload_past_the_storage_quota_is_a_413(web, settings):
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 100
    r = upload(web, a_zip(checkpoint_files()))
    assert r.status_code == 413 and "storage quota" in r.content.decode() and not CheckpointUpload.objects.exists()


def test_a_bad_name_or_tag_is_a_400_on_its_field(web):
    r = upload(web, a_zip(checkpoint_files()), repository="Act/Libero", tag="-x")
    assert r.status_code == 400 and r.context["upload_form"].errors.keys() == {"repository", "tag"}


def test_viewers_cannot_upload(client, tenant_a):
    from tests.conftest import make_user

    viewer = make_user("vera", tenant_a.org, "viewer")
    client.force_login(viewer)
    r = upload(client, a_zip(checkpoint_files()))
    assert r.status_code == 403 and not CheckpointUpload.objects.exists()


def test_a_build_that_fails_says_why_and_removes_the_folder(db, tenant_a, settings):
    settings.RLMESH_DOCKER_HOST = "unix:///nonexistent/engine.sock"
    row = CheckpointUpload.objects.create(organization=tenant_a.org, repository="act", tag="v1")
    folder = model_cars.upload_folder(row)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    model_cars.build_upload(row.pk)
    row.refresh_from_db()
    assert row.status == "failed" and "building a/act:v1 failed" in row.error and not folder.exists()
    model_cars.build_upload(row.pk)  # a duplicate delivery does nothing
    assert CheckpointUpload.objects.get(pk=row.pk).error == row.error


def test_only_the_upload_path_takes_a_checkpoint_sized_body(settings):
    from rlmesh_site.asgi import CHECKPOINT_UPLOAD_PATH, largest_body

    settings.RLMESH_CHECKPOINT_UPLOAD_MAX_BYTES = 3 * 1024**3
    assert largest_body(CHECKPOINT_UPLOAD_PATH) == 3 * 1024**3 + 2**20
    assert largest_body("/v1/evaluations") == largest_body() < 1024**3
