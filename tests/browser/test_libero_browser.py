"""A LIBERO episode's agentview video plays in the dashboard, with the task's instruction beside it (real Chromium
against a live platform; the env server runs in .venv-libero)."""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.live


def test_a_libero_episode_video_plays_beside_its_instruction(page, live):
    body = {"name": "LIBERO video", "model": "prebuilt/random",
            "tasks": [{"env": "prebuilt/libero", "taskId": "libero_object/0", "episodes": 1, "maxSteps": 20,
                       "record": "all"}]}
    r = live.cli("eval", "submit", "-", "--wait", "--json", stdin=json.dumps(body), timeout=900)
    assert r.returncode == 0, r.stderr
    eval_id = json.JSONDecoder().raw_decode(r.stdout)[0]["id"]
    page.goto(f"{live.url}/evaluations/{eval_id}/episodes?show=videos")
    row = page.locator("#episodes-table tbody tr").first
    assert "“pick up the alphabet soup and place it in the basket”" in row.locator("td").first.inner_text()
    row.locator("details.video summary").click()
    assert "Instruction: “pick up the alphabet soup and place it in the basket”" in row.locator("details.video").inner_text()
    video = row.locator("details.video video")
    size = video.evaluate(
        """v => new Promise((resolve, reject) => {
             const done = () => resolve([v.videoWidth, v.videoHeight, v.duration]);
             if (v.readyState >= 1) return done();
             v.addEventListener('loadedmetadata', done);
             v.addEventListener('error', () => reject(new Error('video error ' + (v.error && v.error.code))));
           })"""
    )
    # 21 agentview frames (reset + 20 steps) at LIBERO's 20 Hz
    assert size[0] > 0 and size[1] > 0 and size[2] == pytest.approx(21 / 20, abs=0.1), size
    video.evaluate("v => { v.muted = true; return v.play(); }")
    page.wait_for_function("v => v.currentTime > 0", arg=video.element_handle())
    shot(page, "libero-episode-video")
