"""Dashboard: the paired comparison on Compare (table, forest plot, nothing pairs), baselines set from the detail page,
regression badges in the list, the performance profile on the Overview, sample sizes in the launch preview."""

from __future__ import annotations

import json

import pytest

from evaluations.choices import Role
from evaluations.models import Baseline
from tests.conftest import CARTPOLE_TASK, cartpole_request, make_user
from tests.support.comparisons import HEURISTICS, RANDOM, add_outcomes, finished, rate

pytestmark = pytest.mark.django_db
NIGHTLY = {"suite": "nightly"}


@pytest.fixture
def web(client, tenant_a):
    client.force_login(tenant_a.user)
    return client


def chart(html: str, name: str) -> dict:
    return json.loads(html.split(f'id="{name}" type="application/json">')[1].split("</script>")[0])


def main(html: str) -> str:
    return html.split("<main>")[1]


class TestCompare:
    def test_two_sides_give_the_paired_table_verdicts_and_a_forest_plot(self, web, tenant_a):
        tasks = ("classic/CartPole-v1", "classic/Acrobot-v1")
        a, b = finished(tenant_a, name="old", task_ids=tasks), finished(tenant_a, models=(RANDOM,), task_ids=tasks)
        add_outcomes(a, rate(0.9, 30), task_id=tasks[0])
        add_outcomes(a, rate(0.9, 30), task_id=tasks[1])
        add_outcomes(b, rate(0.9, 30), task_id=tasks[0])
        add_outcomes(b, rate(0.1, 30) + [(99, True)], task_id=tasks[1])  # one seed A never ran
        html = web.get(f"/compare?a={a.public_id}&b={b.public_id}").content.decode()
        table = html.split('id="paired-table"')[1].split("</table>")[0]
        assert table.count("<tr") == 4  # header, two tasks, overall
        assert 'data-verdict="worse"' in table and 'data-verdict="no detectable difference"' in table
        assert "0 / 1" in table  # unpaired A / B on Acrobot
        forest = chart(html, "chart-forest")
        assert {t["name"] for t in forest["data"]} >= {"worse", "no detectable difference"}
        worse = next(t for t in forest["data"] if t["name"] == "worse")
        assert "classic/Acrobot-v1" in worse["y"] and worse["error_x"]["arrayminus"][0] > 0
        assert any(s.get("x0") == 0 and s.get("x1") == 0 for s in forest["layout"]["shapes"])  # the zero line
        # the selects show what was compared; the matrix of both evaluations still renders
        assert f'value="{a.public_id}:{HEURISTICS}" selected' in html and 'id="compare-table"' in html

    def test_alpha_is_read_as_the_api_reads_it_and_a_bad_one_is_shown(self, web, tenant_a):
        """Field case: ``/compare?…&alpha=abc`` silently compared at 0.05 where the API answers 400."""
        a, b = finished(tenant_a), finished(tenant_a, models=(RANDOM,))
        add_outcomes(a, rate(0.5, 10))
        add_outcomes(b, rate(0.5, 10))
        for bad in ("abc", "0.9", "1_0"):
            html = web.get(f"/compare?a={a.public_id}&b={b.public_id}&alpha={bad}").content.decode()
            assert f"ALPHA: {bad} must be a number in (0, 0.5]" in html and 'id="paired"' not in html, bad
        html = web.get(f"/compare?a={a.public_id}&b={b.public_id}&alpha=0.1").content.decode()
        assert "Holm-adjusted p &lt; 0.1;" in html and "side-error" not in html

    def test_exactly_two_checked_single_model_evaluations_are_compared_older_as_a(self, web, tenant_a):
        old, new = finished(tenant_a, age_minutes=5), finished(tenant_a, models=(RANDOM,))
        add_outcomes(old, rate(0.5, 10))
        add_outcomes(new, rate(0.5, 10))
        html = web.get(f"/compare?evaluations={new.public_id}&evaluations={old.public_id}").content.decode()
        summary = html.split('id="paired"')[1]
        assert summary.index(old.public_id) < summary.index(new.public_id) and 'id="chart-forest"' in html
        # three evaluations: the matrix only
        third = finished(tenant_a)
        html = web.get(f"/compare?evaluations={new.public_id},{old.public_id},{third.public_id}").content.decode()
        assert 'id="paired"' not in html and 'id="compare-table"' in html

    def test_one_evaluations_two_models(self, web, tenant_a):
        both = finished(tenant_a, models=(RANDOM, HEURISTICS))
        add_outcomes(both, rate(0.1, 20), model=RANDOM)
        add_outcomes(both, rate(0.9, 20), model=HEURISTICS)
        html = web.get(f"/compare?evaluations={both.public_id}").content.decode()
        assert 'id="paired-summary"' in html and 'data-verdict="better"' in html

    def test_nothing_pairs_is_said_and_no_plot_is_drawn(self, web, tenant_a):
        a, b = finished(tenant_a), finished(tenant_a)
        add_outcomes(a, rate(0.5, 4))
        add_outcomes(b, rate(0.5, 4, start=50))
        html = web.get(f"/compare?a={a.public_id}&b={b.public_id}").content.decode()
        assert "Nothing pairs" in html.split('id="pairing-message"')[1] and "chart-forest" not in html

    def test_bad_or_foreign_sides_are_messages_not_errors(self, web, tenant_a, tenant_b):
        multi, foreign = finished(tenant_a, models=(RANDOM, HEURISTICS)), finished(tenant_b)
        r = web.get(f"/compare?a={multi.public_id}&b={foreign.public_id}")
        html = main(r.content.decode())
        assert r.status_code == 200 and "has 2 models" in html and f"evaluation {foreign.public_id} not found" in html
        assert 'id="paired"' not in html


class TestBaselinesAndRegressions:
    @pytest.fixture
    def baseline(self, tenant_a):
        evaluation = finished(tenant_a, tags=NIGHTLY, age_minutes=60, name="nightly 1")
        add_outcomes(evaluation, rate(0.9, 40))
        return evaluation

    def test_a_member_sets_and_unsets_the_baseline_from_the_detail_page(self, web, tenant_a, baseline):
        html = web.get(f"/evaluations/{baseline.public_id}").content.decode()
        assert "Make this the baseline of suite:nightly" in html
        r = web.post(f"/evaluations/{baseline.public_id}/baseline", {"tag": "suite:nightly", "action": "set"})
        assert r.status_code == 302 and r["Location"].endswith("/overview#regression")
        assert Baseline.objects.get().evaluation == baseline
        html = web.get(f"/evaluations/{baseline.public_id}").content.decode()
        assert "Unset baseline" in html
        web.post(f"/evaluations/{baseline.public_id}/baseline", {"tag": "suite:nightly", "action": "unset"})
        assert Baseline.objects.count() == 0

    def test_viewers_cannot_and_a_running_evaluation_cannot_be_one(self, client, web, tenant_a, baseline):
        viewer = make_user("vera", tenant_a.org, Role.VIEWER)
        client.force_login(viewer)
        assert "Make this the baseline" not in client.get(f"/evaluations/{baseline.public_id}").content.decode()
        assert client.post(f"/evaluations/{baseline.public_id}/baseline", {"tag": "suite:nightly"}).status_code == 403
        client.force_login(tenant_a.user)
        running = finished(tenant_a, tags=NIGHTLY, status="running")
        r = client.post(f"/evaluations/{running.public_id}/baseline", {"tag": "suite:nightly"}, follow=True)
        assert "only a completed evaluation can be a baseline" in r.content.decode()
        assert Baseline.objects.count() == 0

    def test_badges_in_the_list_and_the_verdict_on_the_detail_page(self, web, tenant_a, baseline):
        Baseline.objects.create(organization=tenant_a.org, tag_key="suite", tag_value="nightly", evaluation=baseline)
        fine = finished(tenant_a, tags=NIGHTLY, name="fine", age_minutes=30)
        add_outcomes(fine, rate(0.9, 40))
        worse = finished(tenant_a, models=(RANDOM,), tags=NIGHTLY, name="worse")
        add_outcomes(worse, rate(0.2, 40))
        elsewhere = finished(tenant_a, tags=NIGHTLY, name="elsewhere")
        add_outcomes(elsewhere, rate(0.9, 5, start=900))
        html = web.get("/evaluations").content.decode()
        rows = {r.split('data-id="')[1].split('"')[0]: r for r in html.split("<tr ")[1:] if 'data-id="' in r}
        assert 'data-regression="no regression"' in rows[fine.public_id]
        assert 'data-regression="regressed"' in rows[worse.public_id]
        assert 'data-regression="not comparable"' in rows[elsewhere.public_id]
        assert 'data-baseline="suite:nightly"' in rows[baseline.public_id] and "data-regression" not in rows[baseline.public_id]
        detail = web.get(f"/evaluations/{worse.public_id}").content.decode()
        section = detail.split('id="regression"')[1].split("</section>")[0]
        assert "regressed on 1 task" in section and 'data-verdict="worse"' in section and baseline.public_id in section

    def test_list_queries_with_baselines_stay_constant(self, web, tenant_a, baseline, django_assert_num_queries):
        Baseline.objects.create(organization=tenant_a.org, tag_key="suite", tag_value="nightly", evaluation=baseline)
        for i in range(3):
            add_outcomes(finished(tenant_a, tags=NIGHTLY), rate(0.9, 10))
        web.get("/evaluations")  # warms the verdict cache and the session
        # session, user, memberships, count, page, workloads, headline, baselines of the page's tags, catalog
        with django_assert_num_queries(9):
            web.get("/evaluations")
        for i in range(3):
            add_outcomes(finished(tenant_a, tags=NIGHTLY), rate(0.9, 50))
        with django_assert_num_queries(10):  # ... plus one episode query for the new evaluations' verdicts
            web.get("/evaluations")


def test_the_overview_draws_a_performance_profile_from_three_tasks(web, tenant_a):
    tasks = ("classic/CartPole-v1", "classic/Acrobot-v1", "classic/MountainCar-v0")
    evaluation = finished(tenant_a, task_ids=tasks)
    for t, r in zip(tasks, (0.9, 0.5, 0.1)):
        add_outcomes(evaluation, rate(r, 20), task_id=t)
    profile = chart(web.get(f"/evaluations/{evaluation.public_id}").content.decode(), "chart-profile")
    line = next(t for t in profile["data"] if t.get("name") == HEURISTICS)
    assert line["line"]["shape"] == "hv" and line["y"][0] == 1.0 and line["y"][-1] == 0.0
    assert line["y"][line["x"].index(0.5)] == pytest.approx(1 / 3)  # only CartPole (0.9) is above 0.5
    assert sum(1 for t in profile["data"] if t.get("fill") == "tonexty") == 1  # the band
    one_task = finished(tenant_a)
    add_outcomes(one_task, rate(0.5, 10))
    assert "chart-profile" not in web.get(f"/evaluations/{one_task.public_id}").content.decode()
    assert "chart-profile" in web.get(f"/evaluations/{one_task.public_id}/overview?groupBy=benchmark").content.decode()


def test_the_launch_preview_shows_sample_sizes_and_warns(web):
    body = cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": 10}, {**CARTPOLE_TASK, "taskId": "classic/Acrobot-v1",
                                                                      "episodes": 100}])
    html = web.post("/evaluations/preview", {"request_json": json.dumps(body)}, headers={"HX-Request": "true"}).content.decode()
    table = html.split('id="sample-sizes"')[1].split("</table>")[0]
    assert table.count('class="sample-size-warning"') == 1 and "fewer than 20" in table
    assert "±26 pp" in table and "381" in table and "93" in table
