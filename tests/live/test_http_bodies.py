"""Request bodies as gunicorn hands them over: a chunked body (no Content-Length) is a 411 in the envelope, on
both setups, instead of arriving empty (a field case: a valid preview sent chunked was "not valid JSON", and a
1.1 MB one escaped the 413)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

import pytest

from tests.conftest import cartpole_request

pytestmark = pytest.mark.live


def _post(platform, path: str, document: dict, *, chunked: bool) -> tuple[int, str, bytes]:
    body = json.dumps(document).encode()
    url = urlparse(platform.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    headers = {"Authorization": f"Bearer {platform.api_key}", "Content-Type": "application/json"}
    try:
        if chunked:
            conn.request("POST", path, body=iter([body[: len(body) // 2], body[len(body) // 2 :]]),
                         headers={**headers, "Transfer-Encoding": "chunked"}, encode_chunked=True)
        else:
            conn.request("POST", path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type", ""), r.read()
    finally:
        conn.close()


@pytest.mark.parametrize("document, with_length", [(cartpole_request(), 200),
                                                    (cartpole_request(metadata={"blob": "x" * 1_100_000}), 413)],
                         ids=["valid", "oversized"])
def test_a_chunked_body_is_a_411_naming_the_header(platform, document, with_length):
    status, content_type, raw = _post(platform, "/v1/evaluation-previews", document, chunked=True)
    assert status == 411 and content_type.startswith("application/json"), raw[:300]
    error = json.loads(raw)["error"]
    assert error["code"] == "length_required" and "Content-Length" in error["message"]
    status, _, raw = _post(platform, "/v1/evaluation-previews", document, chunked=False)
    assert status == with_length, raw[:300]  # the same body with its length is read
