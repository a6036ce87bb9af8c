"""POST /v1/evaluations/imports and the dashboard's "Import a local run" page.

The fixture bundle is real: ``tests/fixtures/make_result_bundle.py`` recorded it with ``rlmesh.Recorder``
(two CartPole workloads, ``pd`` and ``left``, two episodes each, AV1 videos of the render).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from evaluations.choices import Role
from evaluations.models import Episode, Evaluation, Workload
import evaluations.imports.write  # noqa: F401  (patched below)
from evaluations import imports
from evaluations.imports import BundleInvalid, import_bundle
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "cartpole_result_bundle.zip"
VIDEO_0 = "media/w000-pd/CartPole-v1/ep00000/render.mp4"
VIDEO_LAST = "media/w001-left/CartPole-v1/ep00001/render.mp4"


# ------------------------------------------------------------------ helpers
def fixture_members() -> dict[str, bytes]:
    with zipfile.ZipFile(FIXTURE) as z:
        return {name: z.read(name) for name in z.namelist()}


def fixture_doc() -> dict:
    return json.loads(fixture_members()["result.json"])


def make_bundle(doc: dict | None = None, *, drop: tuple[str, ...] = (), replace: dict[str, bytes] | None = None,
                prefix: str = "") -> bytes:
    """The fixture bundle, with result.json replaced by ``doc`` and members dropped/replaced/added."""
    members = fixture_members()
    if doc is not None:
        members["result.json"] = json.dumps(doc, indent=2).encode()
    members.update(replace or {})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            if name not in drop:
                z.writestr(prefix + name, data, compress_type=zipfile.ZIP_STORED if name.endswith(".mp4") else zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def upload(client, data: bytes, *, name: str = "run.zip", **extra):
    return client.post("/v1/evaluations/imports", {"bundle": SimpleUploadedFile(name, data, "application/zip"), **extra}, format="multipart")


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def snapshot(media_root: Path) -> tuple:
    """Everything an import could write: row counts and the files under MEDIA_ROOT."""
    files = sorted(str(p.relative_to(media_root)) for p in media_root.rglob("*") if p.is_file()) if media_root.exists() else []
    return Evaluation.objects.count(), Workload.objects.count(), Episode.objects.count(), files


def expected_success(ep: dict, criterion: dict | None) -> tuple[bool | None, str]:
    """The documented rule: env flag, else the workload's successCriterion (here only "survived"), else undefined."""
    if ep["success"] is not None:
        return ep["success"], "env"
    if criterion:
        assert criterion == {"kind": "survived"}
        return (not ep["terminated"] and ep["truncated"]), "criterion"
    return None, "undefined"


# ---------------------------------------------------------------- importing
def test_it_imports_a_real_bundle_as_a_completed_evaluation(api, media_root):
    data = FIXTURE.read_bytes()
    r = upload(api, data, name="cartpole_result_bundle.zip")
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body == api.get(f"/v1/evaluations/{body['id']}").json()  # the same shape as GET /v1/evaluations/{id}
    assert r["Location"] == f"/v1/evaluations/{body['id']}"
    doc = fixture_doc()
    assert body["status"] == "completed"
    assert body["name"] == "Import of cartpole_result_bundle.zip"
    assert body["progress"] == {"completedEpisodes": 4, "totalEpisodes": 4, "erroredEpisodes": 0}
    assert body["request"] == doc
    assert [(w["model"], w["env"], w["taskId"], w["episodes"], w["modelDigest"], w["envDigest"]) for w in body["workloads"]] == [
        (w["model"], w["env"], w["task"], len(w["episodes"]), None, None) for w in doc["workloads"]
    ]
    imported = body["config"]["import"]
    assert imported["sha256"] == hashlib.sha256(data).hexdigest()
    assert imported["fileName"] == "cartpole_result_bundle.zip" and imported["bytes"] == len(data)
    assert imported["schema"] == "rlmesh.result.v1" and imported["resultSetId"] == doc["resultSetId"]
    assert imported["rlmeshVersion"] is None  # rlmesh 0.1.0's Recorder writes no version
    evaluation = Evaluation.objects.get(public_id=body["id"])
    assert evaluation.origin == "import" and evaluation.request_raw == fixture_members()["result.json"].decode()
    assert evaluation.shards.count() == 0


def test_its_scores_match_result_json(api, media_root):
    eid = upload(api, FIXTURE.read_bytes()).json()["id"]
    doc = fixture_doc()
    groups = {g["key"]["model"]: g for g in api.get(f"/v1/evaluations/{eid}/scores").json()["groups"]}
    assert set(groups) == {w["model"] for w in doc["workloads"]}
    for w in doc["workloads"]:
        verdicts = [expected_success(ep, w["config"].get("successCriterion")) for ep in w["episodes"]]
        g = groups[w["model"]]
        assert g["episodes"] == len(w["episodes"]) == w["numEpisodes"]
        assert g["successes"] == sum(ok for ok, _ in verdicts)
        assert g["successRate"] == pytest.approx(sum(ok for ok, _ in verdicts) / len(verdicts))
        assert g["meanReward"] == pytest.approx(w["metrics"]["meanReward"])
        assert g["meanSteps"] == pytest.approx(w["metrics"]["totalSteps"] / len(w["episodes"]))
        assert g["successSources"] == {"criterion": len(w["episodes"])}
    assert groups["pd"]["successRate"] == 1.0 and groups["left"]["successRate"] == 0.0
    by_model = api.get(f"/v1/evaluations/{eid}/scores", {"groupBy": "model"}).json()["groups"]
    assert {g["key"]["model"]: g["episodes"] for g in by_model} == {"pd": 2, "left": 2}
    metrics = api.get(f"/v1/evaluations/{eid}/metrics").json()
    assert metrics["episodes"] == 4 and metrics["errors"] == 0
    assert metrics["steps"] == sum(w["metrics"]["totalSteps"] for w in doc["workloads"])
    assert metrics["meanEpisodeSeconds"] == pytest.approx(sum(e["durationS"] for w in doc["workloads"] for e in w["episodes"]) / 4)
    episodes = api.get(f"/v1/evaluations/{eid}/episodes").json()["items"]
    assert [(e["model"], e["index"], e["seed"], e["steps"], e["reward"], e["terminated"], e["truncated"]) for e in episodes] == [
        (w["model"], ep["index"], ep["seed"], ep["steps"], ep["reward"], ep["terminated"], ep["truncated"])
        for w in doc["workloads"] for ep in w["episodes"]
    ]
    assert {e["stopCondition"] for e in episodes if e["model"] == "pd"} == {"max_steps"}  # truncated at config.maxEpisodeSteps
    assert {e["stopCondition"] for e in episodes if e["model"] == "left"} == {"terminated"}
    assert api.get(f"/v1/evaluations/{eid}/logs").json()["items"][0]["message"].startswith("imported run.zip")


def test_it_stores_each_episode_video_readably(api, media_root):
    eid = upload(api, FIXTURE.read_bytes()).json()["id"]
    members = fixture_members()
    doc = fixture_doc()
    episodes = list(Episode.objects.filter(evaluation__public_id=eid).select_related("workload").order_by("workload__index", "index"))
    assert len(episodes) == 4
    for ep, row in zip(episodes, [e for w in doc["workloads"] for e in w["episodes"]]):
        media = row["media"][0]
        assert ep.video.name.startswith("episodes/") and ep.video.name.endswith(".mp4")
        assert (media_root / ep.video.name).is_file()  # under MEDIA_ROOT, through the default storage
        with default_storage.open(ep.video.name) as f:
            assert f.read() == members[media["path"]]
        assert ep.video_meta["bytes"] == len(members[media["path"]])
        assert ep.video_meta["codec"] == "av1"
        assert ep.video_meta["frames"] == media["frameCount"] == row["steps"]
        assert (ep.video_meta["width"], ep.video_meta["height"], ep.video_meta["fps"]) == (600, 400, 30.0)


def test_a_multipart_upload_takes_its_name_from_the_query_unless_the_form_has_one(api, media_root):
    bundle = {"bundle": SimpleUploadedFile("run.zip", FIXTURE.read_bytes(), "application/zip")}
    r = api.post("/v1/evaluations/imports?name=From%20the%20query", bundle, format="multipart")
    assert r.status_code == 201 and r.json()["name"] == "From the query"
    bundle = {"bundle": SimpleUploadedFile("run.zip", make_bundle(prefix="again/"), "application/zip"),
              "name": "From the form"}
    r = api.post("/v1/evaluations/imports?name=From%20the%20query", bundle, format="multipart")
    assert r.status_code == 201 and r.json()["name"] == "From the form"


def test_it_takes_a_raw_zip_body_with_a_file_name_and_a_name(api, media_root):
    r = api.generic("POST", "/v1/evaluations/imports?name=My%20laptop%20run", FIXTURE.read_bytes(), content_type="application/zip",
                    HTTP_CONTENT_DISPOSITION='attachment; filename="laptop.zip"')
    assert r.status_code == 201, r.json()
    assert r.json()["name"] == "My laptop run"
    assert r.json()["config"]["import"]["fileName"] == "laptop.zip"
    assert Episode.objects.filter(evaluation__public_id=r.json()["id"]).exclude(video="").count() == 4


def test_a_zip_of_the_exported_folder_is_accepted(api, media_root):
    r = upload(api, make_bundle(prefix="my-run/"), name="folder.zip")
    assert r.status_code == 201, r.json()
    assert Episode.objects.filter(evaluation__public_id=r.json()["id"]).exclude(video="").count() == 4


def test_success_comes_from_the_env_flag_then_the_criterion_else_it_is_undefined(api, media_root):
    doc = fixture_doc()
    doc["workloads"][0]["episodes"][0]["success"] = False  # the env said so: it wins over the criterion
    del doc["workloads"][1]["config"]["successCriterion"]
    body = upload(api, make_bundle(doc)).json()
    groups = {g["key"]["model"]: g for g in api.get(f"/v1/evaluations/{body['id']}/scores").json()["groups"]}
    assert groups["pd"]["successSources"] == {"env": 1, "criterion": 1} and groups["pd"]["successes"] == 1
    # No flag, no criterion: never a guess from `terminated` (on CartPole it means the pole fell).
    left = groups["left"]
    assert left["successSources"] == {"undefined": 2} and left["successRate"] is None and left["successRateCi"] is None
    assert left["successUndefined"] == 2 and left["meanReward"] is not None  # returns are still scored
    episodes = api.get(f"/v1/evaluations/{body['id']}/episodes").json()["items"]
    assert {(e["success"], e["successSource"]) for e in episodes if e["model"] == "left"} == {(None, "undefined")}
    assert any("success is undefined" in w for w in body["warnings"])


def test_a_bad_success_criterion_in_a_bundle_names_its_path(api, media_root):
    doc = fixture_doc()
    doc["workloads"][0]["config"]["successCriterion"] = {"kind": "survived", "steps": 0}
    r = upload(api, make_bundle(doc))
    assert r.status_code == 400
    assert {"path": "result.json$.workloads[0].config.successCriterion.steps", "message": "must be a whole number ≥ 1"} in r.json()["error"]["details"]


def test_warm_up_episodes_are_skipped_and_unseeded_ones_flagged(api, media_root):
    doc = fixture_doc()
    doc["workloads"][0]["episodes"][1]["includedInMetrics"] = False
    doc["workloads"][1]["episodes"][0]["seed"] = None
    body = upload(api, make_bundle(doc)).json()
    assert body["progress"]["totalEpisodes"] == 3
    seeds = [e["seed"] for e in api.get(f"/v1/evaluations/{body['id']}/episodes").json()["items"]]
    assert seeds == [0, -1, 1]
    assert any("includedInMetrics: false were not imported" in w for w in body["warnings"])
    assert any("without a seed" in w for w in body["warnings"])


def test_a_trajectory_digest_in_a_bundle_is_kept_and_a_bundle_without_one_imports(api, media_root):
    plain = upload(api, FIXTURE.read_bytes()).json()
    items = api.get(f"/v1/evaluations/{plain['id']}/episodes").json()["items"]
    assert {(e["trajectoryDigest"], e["digestComparable"]) for e in items} == {(None, None)}
    doc = fixture_doc()
    digest = hashlib.sha256(b"episode 0").hexdigest()
    doc["workloads"][0]["episodes"][0]["trajectoryDigest"] = digest.upper()
    doc["workloads"][0]["episodes"][1]["trajectoryDigest"] = None
    body = upload(api, make_bundle(doc)).json()
    items = api.get(f"/v1/evaluations/{body['id']}/episodes").json()["items"]
    assert [(e["trajectoryDigest"], e["digestComparable"]) for e in items][:2] == [(digest, True), (None, None)]


def test_importing_the_same_bundle_again_is_a_409_naming_the_first_import(api, media_root):
    first = upload(api, FIXTURE.read_bytes()).json()["id"]
    before = snapshot(media_root)
    again = upload(api, FIXTURE.read_bytes())
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    assert again.json()["error"]["details"] == [{"path": "bundle", "message": f"this bundle (same sha256) was already imported as {first}"}]
    assert snapshot(media_root) == before and Evaluation.objects.count() == 1


# --------------------------------------------------------------- validation
def _doc_with(path: list, value):
    doc = fixture_doc()
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return make_bundle(doc)


def _zip_with(name: str, data: bytes, **kwargs) -> bytes:
    members = fixture_members()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in members.items():
            z.writestr(n, d)
        z.writestr(name, data, **kwargs)
    return buf.getvalue()


def _crc_broken(member: str) -> bytes:
    """The fixture with the last byte of ``member``'s (stored) data flipped: its head still reads, its CRC fails."""
    data = bytearray(make_bundle())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        info = z.getinfo(member)
    name_len, extra_len = int.from_bytes(data[info.header_offset + 26: info.header_offset + 28], "little"), int.from_bytes(
        data[info.header_offset + 28: info.header_offset + 30], "little")
    end = info.header_offset + 30 + name_len + extra_len + info.compress_size - 1
    data[end] ^= 0xFF
    return bytes(data)


EP = "result.json$.workloads[0].episodes"
INVALID_BUNDLES = {
    "not a zip": (lambda: b"this is not a zip archive", "bundle", "not a zip archive"),
    "a truncated zip": (lambda: FIXTURE.read_bytes()[:5000], "bundle", "not a zip archive"),
    "path traversal": (lambda: _zip_with("../../evil.sh", b"#!/bin/sh"), "bundle:../../evil.sh", "path traversal"),
    "absolute member": (lambda: _zip_with("/etc/cron.d/evil", b"x"), "bundle:/etc/cron.d/evil", "absolute path"),
    "an LZMA member": (lambda: _zip_with("notes.txt", b"x" * 100, compress_type=zipfile.ZIP_LZMA), "bundle:notes.txt", "compression method 14"),
    "a bzip2 member": (lambda: _zip_with("notes.txt", b"x" * 100, compress_type=zipfile.ZIP_BZIP2), "bundle:notes.txt", "compression method 12"),
    "backslash member": (lambda: _zip_with("..\\evil.txt", b"x"), "bundle:..\\evil.txt", "backslash"),
    "missing result.json": (lambda: make_bundle(drop=("result.json",)), "bundle:result.json", "is missing"),
    "result.json not JSON": (lambda: make_bundle(replace={"result.json": b"{\"schema\": "}), "result.json$", "not valid JSON"),
    "result.json with NaN": (lambda: make_bundle(replace={"result.json": fixture_members()["result.json"].replace(b'"reward": 30.0', b'"reward": NaN', 1)}), "result.json$", "NaN"),
    "result.json not an object": (lambda: make_bundle(replace={"result.json": b"[1, 2]"}), "result.json$", "must be a JSON object"),
    "wrong schema": (lambda: _doc_with(["schema"], "rlmesh.result.v2"), "result.json$.schema", "rlmesh.result.v1"),
    "no schema": (lambda: _doc_with(["schema"], KeyError), "result.json$.schema", "missing"),
    "no workloads": (lambda: _doc_with(["workloads"], []), "result.json$.workloads", "non-empty"),
    "model not a string": (lambda: _doc_with(["workloads", 0, "model"], 7), "result.json$.workloads[0].model", "string"),
    "reward a string": (lambda: _doc_with(["workloads", 0, "episodes", 1, "reward"], "high"), f"{EP}[1].reward", "finite number"),
    "reward missing": (lambda: _doc_with(["workloads", 0, "episodes", 1, "reward"], KeyError), f"{EP}[1].reward", "required"),
    "steps negative": (lambda: _doc_with(["workloads", 0, "episodes", 0, "steps"], -1), f"{EP}[0].steps", "between 0"),
    "seed a float": (lambda: _doc_with(["workloads", 0, "episodes", 0, "seed"], 1.5), f"{EP}[0].seed", "integer"),
    "terminated an int": (lambda: _doc_with(["workloads", 0, "episodes", 0, "terminated"], 1), f"{EP}[0].terminated", "true or false"),
    "success a string": (lambda: _doc_with(["workloads", 0, "episodes", 0, "success"], "yes"), f"{EP}[0].success", "true or false or null"),
    "episode not an object": (lambda: _doc_with(["workloads", 0, "episodes", 0], 3), f"{EP}[0]", "object"),
    "digest not hex": (lambda: _doc_with(["workloads", 0, "episodes", 0, "trajectoryDigest"], "z" * 64), f"{EP}[0].trajectoryDigest", "64 hex characters"),
    "digest too short": (lambda: _doc_with(["workloads", 0, "episodes", 0, "trajectoryDigest"], "ab" * 8), f"{EP}[0].trajectoryDigest", "of 16 characters"),
    "digest a number": (lambda: _doc_with(["workloads", 0, "episodes", 0, "trajectoryDigest"], 12), f"{EP}[0].trajectoryDigest", "got an integer"),
    "duplicate index": (lambda: _doc_with(["workloads", 0, "episodes", 1, "index"], 0), f"{EP}[1].index", "repeats"),
    "numEpisodes disagrees": (lambda: _doc_with(["workloads", 0, "numEpisodes"], 3), "result.json$.workloads[0].numEpisodes", "lists 2"),
    "unknown criterion": (lambda: _doc_with(["workloads", 0, "config", "successCriterion"], {"kind": "vibes"}), "result.json$.workloads[0].config.successCriterion.kind", "survived"),
    "media missing": (lambda: make_bundle(drop=(VIDEO_0,)), f"{EP}[0].media[0].path", "not in the bundle"),
    "media path traversal": (lambda: _doc_with(["workloads", 0, "episodes", 0, "media", 0, "path"], "../../etc/passwd"), f"{EP}[0].media[0].path", "path traversal"),
    "media not an mp4": (lambda: make_bundle(replace={VIDEO_0: b"<html>not a video</html>"}), f"{EP}[0].media[0].path", "not an MP4"),
    "corrupt media (bad CRC, found while storing)": (lambda: _crc_broken(VIDEO_LAST), f"bundle:{VIDEO_LAST}", "cannot be read"),
}


@pytest.mark.parametrize("case", list(INVALID_BUNDLES))
def test_an_invalid_bundle_is_a_400_with_a_path_and_writes_nothing(api, media_root, case):
    build, path, message = INVALID_BUNDLES[case]
    upload(api, FIXTURE.read_bytes())  # an earlier import's files must survive the failed one's cleanup
    before = snapshot(media_root)
    r = upload(api, build())
    assert r.status_code == 400, (case, r.json())
    error = r.json()["error"]
    assert error["code"] == "invalid_bundle"
    assert path in [d["path"] for d in error["details"]], error
    assert message in error["message"] or any(message in d["message"] for d in error["details"]), error
    assert snapshot(media_root) == before


@pytest.mark.parametrize("setting,value,path,message", [
    ("RLMESH_IMPORT_MAX_MEMBERS", 3, "bundle", "members; the limit is 3"),
    ("RLMESH_MAX_EPISODES_PER_EVALUATION", 3, "result.json$.workloads", "4 episodes; the limit per evaluation is 3"),
])
def test_limits_from_settings_apply(api, media_root, settings, setting, value, path, message):
    setattr(settings, setting, value)
    before = snapshot(media_root)
    r = upload(api, FIXTURE.read_bytes())
    assert r.status_code == 400
    assert r.json()["error"]["details"] == [{"path": path, "message": r.json()["error"]["details"][0]["message"]}]
    assert message in r.json()["error"]["message"]
    assert snapshot(media_root) == before


def test_a_zip_bomb_is_refused_before_anything_is_extracted(api, media_root, settings):
    settings.RLMESH_IMPORT_MAX_BYTES = 2_000_000
    bomb = _zip_with("media/zeros.bin", b"\0" * 5_000_000)  # 5 MB of zeros deflate to ~5 KB
    assert len(bomb) < 100_000
    before = snapshot(media_root)
    r = upload(api, bomb)
    assert r.status_code == 400
    detail = r.json()["error"]["details"][0]
    assert detail["path"] == "bundle" and detail["message"].startswith("uncompresses to more than 1048576 bytes")
    assert snapshot(media_root) == before


def test_a_small_zip_of_zeros_named_like_a_video_cannot_fill_the_disk(api, media_root):
    """The field case: a 20 KB zip holding 20 MB of zeros as render.mp4 was accepted and written."""
    doc = fixture_doc()
    doc["workloads"][0]["episodes"][0]["media"] = [{"camera": "render", "kind": "video", "path": "render.mp4", "format": "mp4"}]
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("result.json", json.dumps(doc))
        z.writestr("render.mp4", b"\0\0\0\x18ftypisom" + b"\0" * 20_000_000)
    assert len(data.getvalue()) < 100_000
    before = snapshot(media_root)
    r = upload(api, data.getvalue())
    assert r.status_code == 400 and r.json()["error"]["details"][0]["message"].startswith("uncompresses to more than")
    assert snapshot(media_root) == before


def test_videos_beyond_the_organizations_storage_quota_are_refused(api, tenant_a, media_root, settings):
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 1000  # the fixture's videos take more
    before = snapshot(media_root)
    r = upload(api, FIXTURE.read_bytes())
    assert r.status_code == 413 and r.json()["error"]["code"] == "storage_quota_exceeded"
    assert snapshot(media_root) == before
    settings.RLMESH_ORG_STORAGE_QUOTA_BYTES = 10**9
    body = upload(api, FIXTURE.read_bytes()).json()
    tenant_a.org.refresh_from_db()
    videos = api.get(f"/v1/evaluations/{body['id']}/metrics").json()["videos"]
    assert tenant_a.org.storage_bytes == videos["totalBytes"] > 0


def test_uploads_are_rate_limited_per_user(api, media_root, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"imports": "2/m"})
    codes = [upload(api, b"not a zip").status_code for _ in range(3)]
    assert codes == [400, 400, 429]
    r = upload(api, b"not a zip")
    assert r.json()["error"]["code"] == "throttled" and int(r["Retry-After"]) > 0


@pytest.mark.parametrize("raw", [False, True])
def test_an_upload_over_the_limit_is_a_413(api, media_root, settings, raw):
    settings.RLMESH_IMPORT_MAX_BYTES = 10_000
    before = snapshot(media_root)
    if raw:
        r = api.generic("POST", "/v1/evaluations/imports", FIXTURE.read_bytes(), content_type="application/zip")
    else:
        r = upload(api, FIXTURE.read_bytes())
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "payload_too_large"
    assert snapshot(media_root) == before


def test_a_missing_bundle_field_is_a_400(api, media_root):
    r = api.post("/v1/evaluations/imports", {"name": "x"}, format="multipart")
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["path"] == "bundle"


def test_a_failure_while_writing_rows_removes_the_stored_videos(tenant_a, media_root, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(imports.write, "log", boom)  # the last write inside the transaction
    before = snapshot(media_root)
    with FIXTURE.open("rb") as f, pytest.raises(RuntimeError):
        import_bundle(f, organization=tenant_a.org, user=tenant_a.user)
    assert snapshot(media_root) == before


def test_the_service_raises_bundle_invalid_with_paths(tenant_a, media_root):
    with pytest.raises(BundleInvalid) as info:
        import_bundle(io.BytesIO(_doc_with(["workloads", 1, "episodes", 0, "truncated"], None)), organization=tenant_a.org, user=tenant_a.user)
    assert info.value.errors == [{"path": "result.json$.workloads[1].episodes[0].truncated", "message": "must be true or false, got null"}]
    assert info.value.status == 400


# ------------------------------------------------------------------- access
def test_viewers_get_403_and_nothing_is_written(tenant_a, media_root):
    before = snapshot(media_root)
    r = upload(tenant_a.client(tenant_a.viewer_key), FIXTURE.read_bytes())
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "forbidden"
    assert snapshot(media_root) == before


def test_anonymous_callers_get_401(client, media_root):
    r = client.post("/v1/evaluations/imports", {"bundle": SimpleUploadedFile("x.zip", FIXTURE.read_bytes())})
    assert r.status_code == 401


def test_the_route_does_not_collide_with_evaluation_ids(api):
    r = api.get("/v1/evaluations/imports")
    assert r.status_code == 405  # the import route, not "evaluation imports not found"


def test_an_imported_evaluation_is_invisible_to_another_organization(api, tenant_b, media_root):
    eid = upload(api, FIXTURE.read_bytes()).json()["id"]
    other = tenant_b.client()
    for suffix in ("", "/scores", "/metrics", "/episodes", "/logs"):
        r = other.get(f"/v1/evaluations/{eid}{suffix}")
        assert r.status_code == 404, suffix
        assert "error" in r.json()
    assert other.get("/v1/evaluations").json()["items"] == []
    web = Client()
    web.force_login(tenant_b.user)
    assert web.get(f"/evaluations/{eid}").status_code == 404


# ---------------------------------------------------------------- dashboard
def test_the_dashboard_upload_imports_and_redirects_to_the_evaluation(tenant_a, media_root):
    web = Client()
    web.force_login(tenant_a.user)
    listing = web.get("/evaluations").content.decode()
    assert 'href="/evaluations/import"' in listing
    page = web.get("/evaluations/import")
    assert page.status_code == 200 and 'enctype="multipart/form-data"' in page.content.decode()
    r = web.post("/evaluations/import", {"bundle": SimpleUploadedFile("laptop.zip", FIXTURE.read_bytes(), "application/zip"), "name": "From my laptop"})
    evaluation = Evaluation.objects.get(name="From my laptop")
    assert r.status_code == 302 and r["Location"] == evaluation.get_absolute_url()
    assert evaluation.origin == "import" and evaluation.creator == tenant_a.user and evaluation.api_key is None
    detail = web.get(evaluation.get_absolute_url()).content.decode()
    assert 'id="imported-badge"' in detail and "run-again-top" not in detail
    assert 'From my laptop</a> <span class="badge"' in web.get("/evaluations").content.decode()  # marked in the list too
    assert "scores-table" in detail
    for tab in ("episodes", "configuration", "logs"):
        assert web.get(f"{evaluation.get_absolute_url()}/{tab}").status_code == 200, tab
    other = fixture_doc()
    other["resultSetId"] = "another-run"
    htmx = web.post("/evaluations/import", {"bundle": SimpleUploadedFile("b.zip", make_bundle(other))}, headers={"HX-Request": "true"})
    assert htmx.status_code == 200 and htmx["HX-Redirect"].startswith("/evaluations/eval_")


def test_platform_evaluations_show_no_imported_badge(tenant_a, media_root):
    from evaluations.runs.lifecycle import create_evaluation
    from evaluations.planning import plan_evaluation
    from tests.conftest import cartpole_request

    evaluation = create_evaluation(plan=plan_evaluation(cartpole_request(), organization=tenant_a.org),
                                   raw_body=json.dumps(cartpole_request()), organization=tenant_a.org, creator=tenant_a.user)
    web = Client()
    web.force_login(tenant_a.user)
    assert 'id="imported-badge"' not in web.get(evaluation.get_absolute_url()).content.decode()


def test_the_dashboard_upload_shows_errors_on_the_form(tenant_a, media_root):
    web = Client()
    web.force_login(tenant_a.user)
    before = snapshot(media_root)
    r = web.post("/evaluations/import", {"bundle": SimpleUploadedFile("bad.zip", make_bundle(drop=(VIDEO_0,)))})
    assert r.status_code == 400
    html = r.content.decode()
    assert 'id="form-errors"' in html
    assert f"<code>{EP}[0].media[0].path</code>" in html and "is not in the bundle" in html
    assert web.post("/evaluations/import", {}).status_code == 400  # no file: the form says so
    assert snapshot(media_root) == before


def test_viewers_cannot_import_from_the_dashboard(tenant_a, media_root):
    viewer = make_user("vera", tenant_a.org, Role.VIEWER)
    web = Client()
    web.force_login(viewer)
    assert "import-link" not in web.get("/evaluations").content.decode()
    page = web.get("/evaluations/import").content.decode()
    assert "can read but not import" in page and "import-button" not in page
    r = web.post("/evaluations/import", {"bundle": SimpleUploadedFile("x.zip", FIXTURE.read_bytes())})
    assert r.status_code == 403
    assert Evaluation.objects.count() == 0


def test_videos_already_stored_are_deleted_when_a_later_one_is_corrupt(tenant_a, media_root, monkeypatch):
    deleted: list[str] = []
    real_delete = default_storage.delete
    monkeypatch.setattr(default_storage, "delete", lambda name: (deleted.append(name), real_delete(name)))
    before = snapshot(media_root)
    with pytest.raises(BundleInvalid) as info:
        import_bundle(io.BytesIO(_crc_broken(VIDEO_LAST)), organization=tenant_a.org, user=tenant_a.user)
    assert info.value.errors[0]["path"] == f"bundle:{VIDEO_LAST}" and "CRC" in info.value.errors[0]["message"]
    assert len(deleted) == 3  # the three videos stored before the corrupt fourth
    assert snapshot(media_root) == before


def test_a_name_longer_than_submissions_allow_is_refused_not_truncated(api, media_root):
    before = Evaluation.objects.count()
    r = api.post("/v1/evaluations/imports", {"bundle": SimpleUploadedFile("run.zip", FIXTURE.read_bytes(), "application/zip"),
                                             "name": "x" * 201}, format="multipart")
    assert r.status_code == 400 and r.json()["error"]["details"][0]["path"] == "name"
    assert Evaluation.objects.count() == before
