"""Registry push notifications arriving at once, on PostgreSQL with gunicorn's threads (a push of blobs the
registry already held makes its notifications arrive close together): every version recorded once, every tag on
exactly one version, the current version the one ``latest`` names, and no error."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

pytestmark = pytest.mark.live


def _event(repository: str, digest: str, tag: str) -> dict:
    return {"action": "push", "target": {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                         "repository": repository, "digest": digest, "tag": tag,
                                         "references": [{"size": 1000}]}}


def test_concurrent_notifications_for_one_repository_apply_one_after_the_other(live_pg):
    secret = json.loads((live_pg.var / "secrets.json").read_text())["RLMESH_REGISTRY_NOTIFY_SECRET"]
    digests = [f"sha256:{i:064x}" for i in range(1, 7)]
    events = [_event("demo/racy", d, t) for d in digests for t in ("latest", f"v-{d[-4:]}")]
    codes: list[int] = []
    barrier = threading.Barrier(len(events))

    def post(event):
        req = urllib.request.Request(f"{live_pg.url}/v1/registry/events", data=json.dumps({"events": [event]}).encode(),
                                     method="POST", headers={"Authorization": f"Bearer {secret}",
                                                             "Content-Type": "application/json"})
        barrier.wait()
        with urllib.request.urlopen(req, timeout=60) as response:
            codes.append(response.status)

    threads = [threading.Thread(target=post, args=(e,)) for e in events]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [200] * len(events)
    image = live_pg.api("/v1/images/demo/racy")
    versions = image["versions"]
    assert sorted(v["digest"] for v in versions) == digests  # each once
    tags = [t for v in versions for t in v["tags"]]
    assert sorted(tags) == sorted(["latest"] + [f"v-{d[-4:]}" for d in digests])  # each tag on exactly one version
    (latest,) = [v["digest"] for v in versions if "latest" in v["tags"]]
    assert image["currentVersion"] == latest
