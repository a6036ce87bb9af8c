"""Slow downloads cannot starve the site (issue 33), on the web server as deployed: 32 readers of an 8 MiB zip at
20 KB/s (eight keys, four downloads each: every key's bound) while the sign-in page and another organization's
``/v1/info`` keep answering, a fifth download of one key is a 429 in the envelope, and a key gets its slot back when
one of its downloads ends. The latencies are measured by ``bench/bench_slow_readers.py``, not asserted here."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.support.slow_readers import probe, seed, start_readers, submit_and_wait, summary

pytestmark = pytest.mark.live

SIZE = 8 * 2**20


def test_slow_readers_hold_no_thread_the_site_needs_and_each_key_is_bounded(live):
    public_id = submit_and_wait(live)
    seeded = seed(live, public_id, size=SIZE, callers=8)
    path = f"/v1/evaluations/{public_id}/lerobot-dataset.zip"
    readers = start_readers(live, path, seeded["keys"], per_key=4)
    try:
        assert [r.status for r in readers] == [200] * 32
        measured = probe(live, seeded["other"], rounds=5)  # every answer a 200 while the 32 transfers go on
        print("with 32 slow readers: login", summary(measured["login"]), "| other org's /v1/info",
              summary(measured["info"]))
        req = urllib.request.Request(live.url + path, headers={"Authorization": f"Bearer {seeded['keys'][0]}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=30)
        assert refused.value.code == 429 and refused.value.headers["Retry-After"] == "5"
        assert json.loads(refused.value.read())["error"]["code"] == "too_many_downloads"
        assert all(r.is_alive() and r.read < SIZE for r in readers)  # they were still reading
        readers[0].stop.set()
        readers[0].join(timeout=30)
        with urllib.request.urlopen(req, timeout=60) as again:  # the slot is back: read it whole, at full speed
            assert again.status == 200 and len(again.read()) == SIZE
    finally:
        for reader in readers:
            reader.stop.set()
