"""The prebuilt catalog through /v1/images, and the OpenAPI schema/docs."""

import pytest

from evaluations.models import ImageRepository, ImageVersion
from evaluations.services.image_versions import sync_prebuilt
from tests.conftest import CARTPOLE_TASK

pytestmark = pytest.mark.django_db


def test_it_lists_the_prebuilt_catalog(api):
    items = {i["reference"]: i for i in api.get("/v1/images").json()["items"]}
    assert {"prebuilt/classic-control", "prebuilt/random", "prebuilt/classic-control-heuristics", "prebuilt/ppo"} <= set(items)
    env = items["prebuilt/classic-control"]
    assert env["kind"] == "env"
    assert {s["id"] for s in env["scenarios"]} >= {"classic/CartPole-v1", "classic/MountainCar-v0", "classic/Acrobot-v1", "classic/Pendulum-v1"}
    cartpole = next(s for s in env["scenarios"] if s["id"] == "classic/CartPole-v1")
    assert cartpole["name"] and cartpole["successCriterion"]["kind"] == "survived"
    assert items["prebuilt/ppo"]["versions"][0]["checkpoints"] == ["cartpole"]
    assert all(i["kind"] == "model" for i in api.get("/v1/images?kind=model").json()["items"])


def test_one_image_by_reference(api):
    r = api.get("/v1/images/prebuilt/ppo")
    assert r.status_code == 200 and r.json()["currentVersion"].startswith("sha256:")
    assert api.get("/v1/images/prebuilt/ppo/cartpole").json()["reference"] == "prebuilt/ppo"
    assert api.get("/v1/images/prebuilt/random:latest").status_code == 200
    for missing in ("prebuilt/ppo/nope", "prebuilt/random:nope", "prebuilt/random/ckpt", "prebuilt/random@sha256:" + "f" * 64):
        assert api.get(f"/v1/images/{missing}").status_code == 404, missing
    assert api.get("/v1/images/prebuilt/nope").status_code == 404
    assert api.get("/v1/images?kind=tool").status_code == 400


@pytest.mark.parametrize("reference,message", [
    # Field case: "not a valid reference" with no word that names are lowercase.
    ("Prebuilt/classic-control", 'has uppercase letters in its namespace "Prebuilt": names are lowercase (prebuilt/classic-control)'),
    ("prebuilt/Classic-Control", 'uppercase letters in its repository name "Classic-Control": names are lowercase'),
    # the suggestion is a valid reference: every name lowercased (not only the first bad part), the tag kept
    ("Prebuilt/Random:V1", 'has uppercase letters in its namespace "Prebuilt": names are lowercase (prebuilt/random:V1)'),
    ("NOT VALID", 'has whitespace in its name "NOT VALID"'),
    ("classic-control", 'names no namespace; write namespace/repository, e.g. "prebuilt/classic-control"'),
    ("prebuilt/classic control", 'whitespace in its repository name "classic control"'),
    ("prebuilt/random@latest", 'has "@latest" where a digest is expected: @sha256:<64 lowercase hex digits> (a tag is written prebuilt/random:latest)'),
    ("prebuilt/random@sha256:ABCD", 'a malformed digest "sha256:ABCD"'),
    ("prebuilt/random:", 'an empty tag after ":"'),
    ("127.0.0.1:5000/demo/my-env", 'starts with a registry host "127.0.0.1:5000": drop it (demo/my-env)'),
])
def test_malformed_references_are_a_400_saying_what_is_wrong(api, reference, message):
    r = api.get(f"/v1/images/{reference}")
    assert r.status_code == 400, r.content
    error = r.json()["error"]
    assert error["code"] == "invalid_reference" and message in error["message"], error
    # the same words on every endpoint that takes a reference, and in a request's field errors
    assert api.post(f"/v1/images/{reference}/probes").status_code == 400
    preview = api.post("/v1/evaluation-previews", {"model": reference, "tasks": [CARTPOLE_TASK]}, format="json")
    assert preview.status_code == 400 and message in preview.json()["error"]["details"][0]["message"]


def test_well_formed_unknown_references_are_a_404(api):
    for missing in ("prebuilt/nope", "demo/my-env:v1", "localhost/rlmesh-classic-control:latest"):
        r = api.get(f"/v1/images/{missing}")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", missing
        assert api.post(f"/v1/images/{missing}/probes").status_code == 404


def test_prebuilt_images_are_read_by_everyone_and_probed_or_deleted_by_no_one(api):
    """Field case: POST …/probes on a prebuilt image answered 404 "image not found" while GET said 200."""
    assert api.get("/v1/images/prebuilt/random").status_code == 200
    r = api.post("/v1/images/prebuilt/random/probes")
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert "prebuilt image" in r.json()["error"]["message"] and "never probed" in r.json()["error"]["message"]
    digest = api.get("/v1/images/prebuilt/random").json()["currentVersion"]
    r = api.delete(f"/v1/images/prebuilt/random@{digest}")
    assert r.status_code == 403 and "prebuilt image" in r.json()["error"]["message"]


def test_another_organizations_images_are_invisible(api, tenant_b):
    repo = ImageRepository.objects.create(namespace=tenant_b.org.slug, name="secret-env", kind="env")
    repo.current_version = ImageVersion.objects.create(repository=repo, digest="sha256:" + "0" * 64, source="python://x:Y")
    repo.save()
    assert api.get("/v1/images/b/secret-env").status_code == 404
    assert "b/secret-env" not in {i["reference"] for i in api.get("/v1/images").json()["items"]}
    assert tenant_b.client().get("/v1/images/b/secret-env").status_code == 200


def test_sync_is_idempotent():
    before = ImageVersion.objects.count()
    sync_prebuilt()
    sync_prebuilt()
    assert ImageVersion.objects.count() == before


def test_schema_and_docs_are_served(client):
    r = client.get("/v1/schema", HTTP_ACCEPT="application/json")
    assert r.status_code == 200
    schema = r.json() if r["Content-Type"].startswith("application/json") else None
    text = r.content.decode()
    for path in ("/v1/evaluations", "/v1/evaluation-previews", "/v1/evaluations/{public_id}/scores", "/v1/images"):
        assert path in text
    assert "timeoutSeconds" in text and "envVars" in text and "maxSteps" in text
    if schema:
        assert "bearerAuth" in schema["components"]["securitySchemes"]
    docs = client.get("/v1/docs")
    assert docs.status_code == 200 and b"swagger-ui" in docs.content.lower()
    assert b"cdn" not in docs.content.lower()


def test_schema_validates_without_warnings():
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")


def test_deleting_a_version_is_refused_while_an_evaluation_uses_it(api, tenant_a, settings):
    import json

    from evaluations.models import Evaluation, Workload
    from tests.conftest import cartpole_request

    settings.RLMESH_REGISTRY_HOST = "127.0.0.1:9"  # nothing listens: the registry-side delete is best effort
    repo = ImageRepository.objects.create(namespace="a", name="my-env", kind="env")
    version = ImageVersion.objects.create(repository=repo, digest="sha256:" + "3" * 64, source="oci://x/a/my-env@sha256:" + "3" * 64, tags=["latest"])
    repo.current_version = version
    repo.save()
    eid = api.post("/v1/evaluations", data=json.dumps(cartpole_request()), content_type="application/json").json()["id"]
    Workload.objects.filter(evaluation__public_id=eid).update(env_version=version)
    Evaluation.objects.filter(public_id=eid).update(status="running")
    r = api.delete(f"/v1/images/a/my-env@{version.digest}")
    assert r.status_code == 409 and eid in r.json()["error"]["message"]
    Evaluation.objects.filter(public_id=eid).update(status="completed")
    assert api.delete(f"/v1/images/a/my-env@{version.digest}").status_code == 204
    version.refresh_from_db()
    repo.refresh_from_db()
    assert version.probe_status == "deleted" and repo.current_version is None  # kept: a finished evaluation names it
    assert api.delete("/v1/images/prebuilt/random@sha256:" + "4" * 64).status_code == 403  # prebuilt: never deleted
    assert tenant_a.client(tenant_a.viewer_key).delete(f"/v1/images/a/my-env@{version.digest}").status_code == 403


def test_after_deleting_the_current_version_the_repository_remains_and_a_repush_is_probed_again(api, settings):
    from evaluations.services.registry import record_push

    settings.RLMESH_REGISTRY_HOST = "127.0.0.1:9"
    digest = "sha256:" + "5" * 64
    event = {"action": "push", "target": {"mediaType": "application/vnd.oci.image.manifest.v1+json", "repository": "a/thing", "digest": digest, "tag": "latest"}}
    version = record_push(event)
    assert version is not None and version.probe_status == "queued"
    assert api.delete(f"/v1/images/a/thing@{digest}").status_code == 204
    r = api.get("/v1/images/a/thing")
    assert r.status_code == 200 and r.json()["currentVersion"] is None
    refused = api.delete("/v1/images/a/thing:latest")  # a repository, not a version: 405, Allow without DELETE
    assert refused.status_code == 405 and "DELETE" not in refused["Allow"] and "by digest" in refused.json()["error"]["message"]
    again = record_push(event)  # pushed again after the delete: recorded and probed again
    assert again is not None and again.probe_status == "queued" and again.digest == digest


def test_a_deleted_version_cannot_be_probed_or_used(api, tenant_a):
    import json

    repo = ImageRepository.objects.create(namespace="a", name="gone", kind="env")
    v = ImageVersion.objects.create(repository=repo, digest="sha256:" + "6" * 64, source="oci://x", probe_status="deleted")
    r = api.post(f"/v1/images/a/gone@{v.digest}/probes")
    assert r.status_code == 409 and "was deleted" in r.json()["error"]["message"]
    body = {"model": "prebuilt/random", "tasks": [{"env": f"a/gone@{v.digest}", "taskId": "t", "episodes": 1}]}
    r = api.post("/v1/evaluation-previews", data=json.dumps(body), content_type="application/json")
    assert r.status_code == 400 and r.json()["error"]["message"].endswith("was deleted")


def test_served_target_is_read_from_the_image_command():
    from evaluations.services.probes import _served_target

    assert _served_target(["python3", "-m", "rlmesh.serve"] + ["--env", "pkg.envs:Walk"]) == "pkg.envs:Walk"
    assert _served_target(["python3", "-m", "rlmesh.serve", "pkg.models:Go", "--address", "0.0.0.0:1"]) == "pkg.models:Go"
    assert _served_target(["python3", "/app/server.py"]) is None


def test_a_repository_listed_with_a_passed_version_always_says_its_kind(api, tenant_a):
    """The probe writes a version's status and kind in one UPDATE; the repository's own kind is a second row a reader
    may read before it (the field case: a passed probe while the repository's kind was still '')."""
    repo = ImageRepository.objects.create(namespace=tenant_a.org.slug, name="fresh", kind="")
    version = ImageVersion.objects.create(repository=repo, digest="sha256:" + "a" * 64, source="oci://x", probe_status="passed",
                                          kind="env", tags=["latest"])
    repo.current_version = version
    repo.save()
    assert api.get(f"/v1/images/{tenant_a.org.slug}/fresh").json()["kind"] == "env"
    listed = {i["reference"]: i for i in api.get("/v1/images").json()["items"]}
    assert listed[f"{tenant_a.org.slug}/fresh"]["kind"] == "env"


@pytest.mark.django_db(transaction=True)
def test_versions_pinned_before_the_libero_folder_still_name_modules_that_exist():
    """Migration 0019: the expert and SmolVLA moved into ``evaluations/prebuilt/libero/``; a version recorded with the
    old module path is rewritten, so an evaluation pinned to it still starts its server."""
    import importlib.util

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from evaluations.models import ImageVersion

    before = [("evaluations", "0018_recorded_steps_dataset_exports")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    Repo, Version = apps.get_model("evaluations", "ImageRepository"), apps.get_model("evaluations", "ImageVersion")
    old = {"libero-expert": "python+libero://evaluations.prebuilt.libero_expert:LiberoExpert",
           "smolvla": "python+lerobot://evaluations.prebuilt.smolvla:SmolVLALibero",
           "libero": "python+libero://evaluations.prebuilt.libero:Libero"}
    for name, source in old.items():
        repo, _ = Repo.objects.get_or_create(namespace="prebuilt", name=name)
        Version.objects.create(repository=repo, digest="sha256:" + "0" * 64, source=source)
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    sources = dict(ImageVersion.objects.filter(digest="sha256:" + "0" * 64)
                   .values_list("repository__name", "source"))
    assert sources == {"libero-expert": "python+libero://evaluations.prebuilt.libero.expert.model:LiberoExpert",
                       "smolvla": "python+lerobot://evaluations.prebuilt.lerobot.smolvla:SmolVLALibero",
                       "libero": "python+libero://evaluations.prebuilt.libero:Libero"}
    for source in sources.values():
        module = source.split("://", 1)[1].split(":")[0]
        assert importlib.util.find_spec(module) is not None, module
