"""Text behaves the same on SQLite and PostgreSQL: NUL is refused where users send it (with the JSON path) and replaced
where the platform records it; names, tags and labels refuse control characters and bidi overrides."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from evaluations.choices import ProbeStatus
from evaluations.imports import BundleInvalid, import_bundle
from evaluations.models import EvaluationLog, ImageRepository, ImageVersion
from evaluations.runs.lifecycle import create_evaluation, log
from evaluations.runs.outcome import error_fields
from evaluations.planning import plan_evaluation
from evaluations.services import probes
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db
FIXTURE = "tests/fixtures/cartpole_result_bundle.zip"


@pytest.mark.parametrize("edit, path", [
    (lambda b: b.update(metadata={"k": "a\u0000b"}), "metadata.k"),
    (lambda b: b.update(metadata={"a\u0000": 1}), "metadata"),
    (lambda b: b.update(name="x\u0000"), "name"),
    (lambda b: b["tasks"][0].update(metadata={"note": ["ok", "\u0000"]}), "tasks[0].metadata.note[1]"),
    (lambda b: b["models"][0].update(envVars={"K": "v\u0000"}), "models[0].envVars.K"),
])
@pytest.mark.parametrize("endpoint", ["/v1/evaluation-previews", "/v1/evaluations"])
def test_nul_anywhere_in_a_request_is_a_400_with_its_path(api, endpoint, edit, path):
    body = cartpole_request()
    edit(body)
    r = api.post(endpoint, data=json.dumps(body), content_type="application/json")
    assert r.status_code == 400, r.content
    assert r.json()["error"]["details"][0]["path"] == path
    assert "NUL" in r.json()["error"]["details"][0]["message"]


@pytest.mark.parametrize("edit, path", [
    (lambda b: b.update(name="\x1b[31mred\x1b[0m"), "name"),
    (lambda b: b.update(name="evil\u202etxt.exe"), "name"),
    (lambda b: b.update(tags={"team": "a\x07"}), "tags.team"),
    (lambda b: b.update(tags={"te\u2066am": "a"}), "tags.te\u2066am"),
    (lambda b: b.update(metadata={"evaluationLabel": "\x1b]0;title\x07"}), "metadata.evaluationLabel"),
    (lambda b: b["tasks"][0].update(taskId="classic/Cart\x1bPole-v1"), "tasks[0].taskId"),
])
def test_names_tags_and_labels_refuse_control_characters_and_bidi_overrides(api, edit, path):
    body = cartpole_request()
    edit(body)
    r = api.post("/v1/evaluations", data=json.dumps(body), content_type="application/json")
    assert r.status_code == 400, r.content
    assert path in [d["path"] for d in r.json()["error"]["details"]]


def test_tabs_and_newlines_stay_allowed_in_names(api):
    r = api.post("/v1/evaluation-previews", data=json.dumps(cartpole_request(name="a\tb\nc")), content_type="application/json")
    assert r.status_code == 200


def _bundle_with(mutate) -> io.BytesIO:
    src = zipfile.ZipFile(FIXTURE)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("result.json"):
                doc = json.loads(data)
                mutate(doc)
                data = json.dumps(doc).encode()
            dst.writestr(info, data)
    out.seek(0)
    out.name = "run.zip"
    return out


def test_an_imported_bundle_with_nul_is_refused_with_its_path(tenant_a):
    bundle = _bundle_with(lambda d: d["workloads"][0].setdefault("config", {}).update(note="a\u0000b"))
    with pytest.raises(BundleInvalid) as info:
        import_bundle(bundle, organization=tenant_a.org, user=tenant_a.user)
    assert info.value.errors[0]["path"] == "result.json$.workloads[0].config.note"


def test_an_imported_bundle_with_a_control_character_in_a_name_is_refused(tenant_a):
    bundle = _bundle_with(lambda d: d["workloads"][0].update(model="policy\x1b[2J"))
    with pytest.raises(BundleInvalid) as info:
        import_bundle(bundle, organization=tenant_a.org, user=tenant_a.user)
    assert info.value.errors[0]["path"] == "result.json$.workloads[0].model"
    with pytest.raises(BundleInvalid) as info:
        import_bundle(_bundle_with(lambda d: None), organization=tenant_a.org, user=tenant_a.user, name="run\u0000")
    assert info.value.errors[0]["path"] == "name"


def test_text_the_platform_records_has_its_nuls_replaced(tenant_a):
    evaluation = create_evaluation(plan=plan_evaluation(cartpole_request(), organization=tenant_a.org),
                                   raw_body="{}", organization=tenant_a.org)
    log(evaluation, "server said: a\x00b")
    assert EvaluationLog.objects.filter(evaluation=evaluation).last().message == "server said: a\ufffdb"
    assert error_fields({"seed": 0}, "boom \x00")["error"] == "boom \ufffd"
    repo = ImageRepository.objects.create(namespace=tenant_a.org.slug, name="nul", kind="env")
    version = ImageVersion.objects.create(repository=repo, digest="sha256:" + "0" * 64, source="oci://x",
                                          probe_status=ProbeStatus.PROBING)
    probes._record_probe(version, ProbeStatus.FAILED, ["FAIL  output \x00"],
                         {"kind": None, "envelope": {"x\x00": "y\x00"}, "labels": {}, "checkpoints": {}, "scenarios": []})
    version.refresh_from_db()
    assert "\x00" not in version.probe_log and version.describe == {"x\ufffd": "y\ufffd"}
