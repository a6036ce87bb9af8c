"""Dashboard pages and partials (Django test client): full page vs htmx fragment, tenancy, writes, query counts."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from evaluations.choices import EvaluationStatus, Role
from evaluations.models import ApiKey, Episode, Evaluation, Membership, WorkerProcess, Workload
from evaluations.runs.lifecycle import create_evaluation
from evaluations.planning import plan_evaluation
from tests.conftest import cartpole_request, make_user

pytestmark = pytest.mark.django_db


def submit(tenant, body=None, raw=None) -> Evaluation:
    body = body or cartpole_request()
    plan = plan_evaluation(body, organization=tenant.org)
    return create_evaluation(plan=plan, raw_body=raw or json.dumps(body), organization=tenant.org, creator=tenant.user)


@pytest.fixture
def web(client, tenant_a):
    client.login(username=tenant_a.user.username, password=f"pw-{tenant_a.user.username}")
    return client


def add_episodes(evaluation: Evaluation, outcomes) -> None:
    workload = evaluation.workloads.first()
    Episode.objects.bulk_create(
        Episode(evaluation=evaluation, workload=workload, index=i, seed=i, status=status, success=success,
                success_source="criterion" if status == "completed" else "", reward=reward, steps=10,
                stop_condition="time_limit" if status == "completed" else "error", error="boom" if status == "error" else "",
                started_at=timezone.now(), wall_ms=12.0)
        for i, (status, success, reward) in enumerate(outcomes)
    )
    Evaluation.objects.filter(pk=evaluation.pk).update(completed_episodes=len(outcomes))


def test_pages_need_sign_in(client):
    for url in ("/evaluations", "/evaluations/new", "/compare", "/images", "/settings"):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")


def test_login_page_renders(client):
    r = client.get("/accounts/login/")
    assert r.status_code == 200 and b"Sign in" in r.content


PAGES = ["", "/episodes", "/configuration", "/logs", "/overview?groupBy=model"]


@pytest.mark.parametrize("suffix", PAGES)
def test_detail_tabs_full_page_and_fragment(web, tenant_a, suffix):
    evaluation = submit(tenant_a)
    add_episodes(evaluation, [("completed", True, 500.0), ("completed", False, 20.0), ("error", None, None)])
    url = f"/evaluations/{evaluation.public_id}{suffix}"
    full = web.get(url)
    assert full.status_code == 200 and b"<html" in full.content and "HX-Request" in full["Vary"]
    frag = web.get(url, HTTP_HX_REQUEST="true")
    assert frag.status_code == 200 and b"<html" not in frag.content and b"data-tab-content" in frag.content
    boosted = web.get(url, HTTP_HX_REQUEST="true", HTTP_HX_BOOSTED="true")
    assert b"<html" in boosted.content


def test_overview_shows_scores_charts_and_interval(web, tenant_a):
    evaluation = submit(tenant_a)
    add_episodes(evaluation, [("completed", True, 500.0), ("completed", True, 500.0), ("completed", False, 20.0)])
    html = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert 'id="scores-table"' in html and "0.667" in html and "[0.208, 0.939]" in html
    assert 'id="chart-success"' in html and 'id="chart-reward"' in html
    assert "plotly.min.js" in html and "cdn" not in html.lower()


def test_overview_says_where_the_time_went_with_the_batches_a_model_server_saw(web, tenant_a):
    from evaluations.models import Shard

    evaluation = submit(tenant_a)
    html = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert 'id="throughput"' not in html  # nothing has finished
    add_episodes(evaluation, [("completed", True, 500.0), ("completed", False, 20.0)])
    Episode.objects.filter(evaluation=evaluation).update(finished_at=timezone.now())
    html = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert 'id="throughput"' in html and "20 steps" in html and 'id="model-batches"' not in html
    shard = Shard.objects.filter(evaluation=evaluation).first() or Shard.objects.create(
        evaluation=evaluation, workload=evaluation.workloads.first(), index=0)
    shard.timings = {"modelBatches": [{"server": "s", "size": 4, "calls": {"1": 3, "4": 1}, "seconds": 0.7}]}
    shard.save(update_fields=["timings"])
    html = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert 'id="model-batches"' in html and "passes of 4 rows" in html
    assert 'data-rows="4">1 × 4</span>' in html and "mean 1.75" in html and "175 ms a pass" in html


def test_episodes_tab_filters_sorts_and_paginates(web, tenant_a):
    evaluation = submit(tenant_a, cartpole_request(tasks=[{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 120}]))
    add_episodes(evaluation, [("completed", i % 3 != 0, float(i)) for i in range(119)] + [("error", None, None)])
    base = f"/evaluations/{evaluation.public_id}/episodes"
    page1 = web.get(base, HTTP_HX_REQUEST="true").content.decode()
    assert "page 1 of 3 · 120 episodes" in page1
    failed = web.get(base + "?show=failed", HTTP_HX_REQUEST="true").content.decode()
    assert "40 episodes" in failed and "✓ yes" not in failed
    errors = web.get(base + "?show=errors", HTTP_HX_REQUEST="true").content.decode()
    assert "1 episodes" in errors and "boom" in errors
    by_reward = web.get(base + "?sort=-reward", HTTP_HX_REQUEST="true").content.decode()
    assert by_reward.index("<td>118.00</td>") < by_reward.index("<td>117.00</td>")
    last = web.get(base + "?page=3", HTTP_HX_REQUEST="true").content.decode()
    assert "page 3 of 3" in last


def test_episodes_tab_shows_a_digest_prefix_with_the_full_digest_on_hover(web, tenant_a):
    from evaluations.models import Episode

    evaluation = submit(tenant_a)
    add_episodes(evaluation, [("completed", True, 500.0), ("completed", True, 500.0), ("error", None, None)])
    digest = "0123456789ab" + "f" * 52
    Episode.objects.filter(evaluation=evaluation, index=0).update(trajectory_digest=digest, digest_comparable=True)
    Episode.objects.filter(evaluation=evaluation, index=1).update(trajectory_digest="e" * 64, digest_comparable=False)
    html = web.get(f"/evaluations/{evaluation.public_id}/episodes", HTTP_HX_REQUEST="true").content.decode()
    assert f'<code title="{digest}">0123456789ab</code>' in html
    assert f'<code title="{"e" * 64} (not comparable: the env' in html and "not comparable</span>" in html
    assert html.count("not comparable</span>") == 1


def test_configuration_shows_raw_request_exactly_and_warns_about_env_vars(web, tenant_a):
    raw = '{"models":[{"model":"prebuilt/random","envVars":{"TOKEN":"s3cr<et>"}}],\n  "tasks":[{"env":"prebuilt/classic-control","taskId":"classic/CartPole-v1","episodes":1}]}'
    evaluation = submit(tenant_a, json.loads(raw), raw=raw)
    html = web.get(f"/evaluations/{evaluation.public_id}/configuration").content.decode()
    assert 'id="raw-request"' in html and "visible to everyone in Org A" in html and "It contains <code>envVars</code>" in html
    embedded = html.split('<script id="raw-request" type="application/json">')[1].split("</script>")[0]
    assert json.loads(embedded) == raw  # the Copy button copies exactly these bytes
    download = web.get(f"/evaluations/{evaluation.public_id}/request.json")
    assert download.content == raw.encode() and "attachment" in download["Content-Disposition"]


def test_a_compact_request_is_shown_formatted_beside_its_exact_bytes(web, tenant_a):
    """Field case: the Configuration tab showed a compact request as one unreadable line."""
    raw = '{"model":"prebuilt/random","tasks":[{"env":"prebuilt/classic-control","taskId":"classic/CartPole-v1","episodes":1,"seed":9007199254740993}]}'
    evaluation = submit(tenant_a, json.loads(raw), raw=raw)
    html = web.get(f"/evaluations/{evaluation.public_id}/configuration").content.decode()
    formatted = html.split('id="request-formatted"')[1].split('id="request-exact"')[0]
    assert "9007199254740993" in formatted and formatted.count("\n") > 8  # indented, the big seed exact
    assert 'data-request-view="exact"' in html and 'id="request-exact"' in html
    embedded = html.split('<script id="raw-request" type="application/json">')[1].split("</script>")[0]
    assert json.loads(embedded) == raw  # Copy stays byte-exact
    assert web.get(f"/evaluations/{evaluation.public_id}/request.json").content == raw.encode()  # and Download
    # an already formatted request needs no second view
    pretty = json.dumps(json.loads(raw), indent=2)
    html = web.get(f"/evaluations/{submit(tenant_a, json.loads(pretty), raw=pretty).public_id}/configuration").content.decode()
    assert 'id="request-formatted"' not in html and 'id="request-exact"' in html


@pytest.mark.parametrize("url", ["/evaluations/{id}/episodes", "/evaluations/{id}/configuration", "/evaluations/{id}/overview?groupBy=model",
                                 "/evaluations?status=queued"])
def test_history_restore_requests_get_the_full_page(web, tenant_a, url):
    """Field case: Back after htmx's history cache missed got a bare fragment (no header, no tabs)."""
    evaluation = submit(tenant_a)
    url = url.format(id=evaluation.public_id)
    restored = web.get(url, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    html = restored.content.decode()
    assert restored.status_code == 200 and "<html" in html and 'class="topbar"' in html
    assert "HX-History-Restore-Request" in restored["Vary"] and "HX-Request" in restored["Vary"]
    if "/evaluations/eval_" in url:
        assert 'nav class="tabs"' in html
    assert b"<html" not in web.get(url, HTTP_HX_REQUEST="true").content  # a plain swap still gets its fragment


def test_logs_tab(web, tenant_a):
    evaluation = submit(tenant_a)
    html = web.get(f"/evaluations/{evaluation.public_id}/logs").content.decode()
    assert "submitted: 1 workload, 1 shard, 3 episodes" in html


def test_progress_polls_until_terminal_then_refreshes(web, tenant_a):
    evaluation = submit(tenant_a)
    html = web.get(f"/evaluations/{evaluation.public_id}/progress").content.decode()
    assert 'hx-trigger="every 2s"' in html and "HX-Refresh" not in html
    Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.COMPLETED)
    r = web.get(f"/evaluations/{evaluation.public_id}/progress?was=running")
    assert 'hx-trigger="every 2s"' not in r.content.decode() and r["HX-Refresh"] == "true"


def test_a_waiting_evaluation_says_when_no_worker_is_alive(web, tenant_a):
    """A field case: with the worker killed, the page showed "running 8/80" for ever without a word."""
    evaluation = submit(tenant_a)
    Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.RUNNING)
    for url in (f"/evaluations/{evaluation.public_id}", f"/evaluations/{evaluation.public_id}/progress"):
        assert 'id="no-worker"' in web.get(url).content.decode(), url
    worker = WorkerProcess.objects.create(identity="testhost:1", hostname="testhost", pid=1)
    assert 'id="no-worker"' not in web.get(f"/evaluations/{evaluation.public_id}/progress").content.decode()
    worker.delete()
    Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.COMPLETED)
    assert 'id="no-worker"' not in web.get(f"/evaluations/{evaluation.public_id}").content.decode()


def test_cancel_from_the_page(web, tenant_a):
    evaluation = submit(tenant_a)
    r = web.post(f"/evaluations/{evaluation.public_id}/cancel", HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and b"cancelled" in r.content
    evaluation.refresh_from_db()
    assert evaluation.status == "cancelled"


def test_another_organizations_evaluation_is_a_404_everywhere(web, tenant_b):
    other = submit(tenant_b)
    for url in (f"/evaluations/{other.public_id}", f"/evaluations/{other.public_id}/episodes",
                f"/evaluations/{other.public_id}/configuration", f"/evaluations/{other.public_id}/logs",
                f"/evaluations/{other.public_id}/progress", f"/evaluations/{other.public_id}/request.json",
                f"/evaluations/new?from={other.public_id}"):
        assert web.get(url).status_code == 404, url
    assert web.post(f"/evaluations/{other.public_id}/cancel").status_code == 404
    assert other.public_id not in web.get("/evaluations").content.decode()
    assert other.public_id not in web.get(f"/compare?evaluations={other.public_id}").content.decode().split("<main>")[1]
    other.refresh_from_db()
    assert other.status == "queued"


def test_organization_switcher(web, tenant_a, tenant_b):
    Membership.objects.create(user=tenant_a.user, organization=tenant_b.org, role=Role.VIEWER)
    theirs = submit(tenant_b)
    assert theirs.public_id not in web.get("/evaluations").content.decode()
    r = web.post("/organizations/switch", {"organization": tenant_b.org.provider_id})
    assert r.status_code == 302
    page = web.get("/evaluations").content.decode()
    assert theirs.public_id in page and "Launch evaluation" not in page  # a viewer there
    assert web.get(f"/evaluations/{theirs.public_id}").status_code == 200
    assert web.post("/organizations/switch", {"organization": "org_notmine"}).status_code == 404
    assert web.post("/organizations/switch", {}).status_code == 400  # a form without the field is a bad request


class TestList:
    def test_filters_update_the_results_fragment(self, web, tenant_a):
        a = submit(tenant_a, cartpole_request(name="alpha run", tags={"team": "robotics"}))
        b = submit(tenant_a, cartpole_request(name="beta", models=["prebuilt/random"]))
        Evaluation.objects.filter(pk=b.pk).update(status=EvaluationStatus.COMPLETED)

        def ids(query):
            html = web.get(f"/evaluations?{query}", HTTP_HX_REQUEST="true").content.decode()
            assert "<html" not in html
            return {e for e in (a.public_id, b.public_id) if e in html}

        assert ids("") == {a.public_id, b.public_id}
        assert ids("q=&status=&tag=&model=&env=&creator=") == {a.public_id, b.public_id}  # the empty filter bar
        assert ids("q=alpha") == {a.public_id}
        assert ids("status=completed") == {b.public_id}
        assert ids("tag=team:robotics") == {a.public_id}
        assert ids("model=prebuilt/random") == {b.public_id}
        assert ids("env=prebuilt/classic-control") == {a.public_id, b.public_id}
        assert ids(f"creator={tenant_a.user.username}") == {a.public_id, b.public_id}
        assert ids("creator=nobody") == set()
        assert "must look like key:value" in web.get("/evaluations?tag=nocolon").content.decode()

    def test_running_rows_poll_until_nothing_is_active(self, web, tenant_a):
        evaluation = submit(tenant_a)
        assert 'hx-trigger="every 3s"' in web.get("/evaluations").content.decode()
        Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.COMPLETED)
        assert 'hx-trigger="every 3s"' not in web.get("/evaluations", HTTP_HX_REQUEST="true").content.decode()

    def test_empty_state_says_what_to_do(self, web):
        html = web.get("/evaluations").content.decode()
        assert "No evaluations yet" in html and "rlmesh eval submit" in html

    def test_headline_and_pagination(self, web, tenant_a):
        evaluation = submit(tenant_a)
        add_episodes(evaluation, [("completed", True, 1.0), ("completed", False, 0.0)])
        for _ in range(25):
            submit(tenant_a)
        html = web.get("/evaluations").content.decode()
        assert "page 1 of 2 · 26 evaluations" in html
        html2 = web.get("/evaluations?page=2").content.decode()
        assert evaluation.public_id in html2 and "0.50" in html2

    def test_the_list_scores_each_model_never_pools_them(self, web, tenant_a):
        from tests.support.comparisons import HEURISTICS, RANDOM, add_outcomes, finished

        evaluation = finished(tenant_a, models=(HEURISTICS, RANDOM))
        add_outcomes(evaluation, [(0, True), (1, True)], model=HEURISTICS)
        add_outcomes(evaluation, [(0, False), (1, False)], model=RANDOM)
        row = web.get("/evaluations").content.decode().split(f'data-id="{evaluation.public_id}"')[1].split("</tr>")[0]
        cell = row.split('class="headlines"')[1]
        assert "classic-control-heuristics</span> <strong>1.00</strong>" in cell
        assert "random</span> <strong>0.00</strong>" in cell and "0.50" not in cell


class TestLaunch:
    def test_submitting_the_raw_request_creates_it_byte_for_byte(self, web, tenant_a):
        raw = '{"models": ["prebuilt/random"],   "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 2}]}'
        r = web.post("/evaluations/new", {"request_json": raw})
        assert r.status_code == 302
        evaluation = Evaluation.objects.get()
        assert r["Location"] == evaluation.get_absolute_url() and evaluation.request_raw == raw
        assert evaluation.creator == tenant_a.user
        r = web.post("/evaluations/new", {"request_json": raw.replace(" [", "\r\n[")}, HTTP_HX_REQUEST="true")
        assert r.status_code == 200 and r["HX-Redirect"].startswith("/evaluations/eval_")
        latest = Evaluation.objects.order_by("-id").first()
        assert latest.request_raw == raw.replace(" [", "\n[")  # the textarea's CRLF comes back as the LF the editor showed

    def test_without_javascript_the_fields_build_the_request(self, web):
        r = web.post("/evaluations/new", {
            "models": ["prebuilt/random", "prebuilt/ppo/cartpole"], "env": "prebuilt/classic-control",
            "task_ids": "classic/CartPole-v1", "episodes": 4, "seed": 3, "workers": 2, "tags": "team:rl, run:1",
            "env_vars": "A=1", "name": "from fields",
        })
        assert r.status_code == 302
        evaluation = Evaluation.objects.get()
        req = evaluation.request
        assert req["name"] == "from fields" and req["tags"] == {"team": "rl", "run": "1"}
        assert [m["model"] for m in req["models"]] == ["prebuilt/random", "prebuilt/ppo/cartpole"]
        assert req["models"][0]["envVars"] == {"A": "1"}
        assert req["tasks"] == [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 4, "seed": 3, "workers": 2}]

    def test_without_javascript_every_request_field_has_a_field(self, web):
        """Several tasks (picked scenarios plus typed ids), a perturbation sweep, record, success, params, label and
        timeout: the form covers the request, and "Launch from these fields" wins over the (hidden) JSON."""
        r = web.post("/evaluations/new", {
            "source": "fields", "request_json": '{"stale": true}',
            "models": ["prebuilt/classic-control-heuristics"], "env": "prebuilt/classic-control",
            "scenarios": ["classic/MountainCar-v0", "classic/CartPole-v1"], "task_ids": "classic/Acrobot-v1\nclassic/CartPole-v1",
            "episodes": 1, "seed": 9007199254740993, "max_steps": 50, "perturbation": "obs_noise", "strengths": "none, 0.05",
            "record": "first", "record_first": 1, "success_kind": "return_at_least", "success_threshold": "-60",
            "label": "nightly", "timeout_seconds": "600",
        })
        assert r.status_code == 302, r.content.decode()[:3000]
        req = Evaluation.objects.get().request
        assert [(t["taskId"], t.get("perturbation")) for t in req["tasks"]] == [
            ("classic/Acrobot-v1", None), ("classic/Acrobot-v1", "obs_noise:0.05"),
            ("classic/CartPole-v1", None), ("classic/CartPole-v1", "obs_noise:0.05"),
            ("classic/MountainCar-v0", None), ("classic/MountainCar-v0", "obs_noise:0.05")]
        task = req["tasks"][1]
        assert (task["seed"], task["maxSteps"], task["record"]) == (9007199254740993, 50, "first:1")
        assert task["successCriterion"] == {"kind": "return_at_least", "threshold": -60.0}
        assert req["metadata"] == {"evaluationLabel": "nightly"} and req["timeoutSeconds"] == 600.0

    @pytest.mark.parametrize(("field", "value", "message"), [
        ("tags", "team:robotics, badtag", 'tags must be key:value (not &quot;badtag&quot;)'),
        ("env_vars", "A=1\nNOEQUALS", 'envVars lines must be KEY=value (not &quot;NOEQUALS&quot;)'),
    ])
    def test_a_malformed_tag_or_env_var_is_named_not_dropped(self, web, field, value, message):
        r = web.post("/evaluations/new", {
            "source": "fields", "models": ["prebuilt/classic-control-heuristics"], "env": "prebuilt/classic-control",
            "task_ids": "classic/CartPole-v1", "episodes": 1, field: value})
        assert r.status_code == 400 and message in r.content.decode() and Evaluation.objects.count() == 0

    def test_the_form_renders_the_catalog_picker_and_param_widgets(self, web):
        html = web.get("/evaluations/new").content.decode()
        assert "{#" not in html and "htmx may not eval" not in html  # base.html's comment no longer shows on the page
        assert 'data-catalog-env="prebuilt/metaworld"' in html and 'data-select-benchmark="mt10"' in html
        assert "All of mt10 (10)" in html and 'value="mt10/pick-place-v3"' in html
        assert "success: the pole stayed up until the time limit (500 steps)" in html
        # Meta-World's declared parameters, minus the scenario's own and physics (a perturbation)
        assert 'name="param:prebuilt/metaworld:image_size"' in html and 'name="param:prebuilt/metaworld:task"' not in html
        assert 'name="param:prebuilt/metaworld:physics"' not in html
        assert 'inputmode="numeric"' in html and 'name="seed"' in html and 'type="number" name="seed"' not in html

    def test_the_picker_lists_all_130_libero_scenarios_with_their_instructions(self, web):
        html = web.get("/evaluations/new").content.decode()
        assert "All of libero_90 (90)" in html and "All of libero_goal (10)" in html
        assert html.count('name="scenarios" value="libero_') == 130
        assert ('<code>libero_goal/0</code> LIBERO-Goal #0 <span class="small scenario-instruction">“open the middle '
                'drawer of the cabinet”</span>') in html
        assert 'name="param:prebuilt/libero:cameras"' in html and 'name="param:prebuilt/libero:perturbation"' not in html

    def test_params_from_the_widgets_reach_the_request_typed(self, web):
        r = web.post("/evaluations/new", {
            "source": "fields", "models": ["prebuilt/metaworld-expert"], "env": "prebuilt/metaworld",
            "scenarios": ["mt10/reach-v3"], "episodes": 1, "param:prebuilt/metaworld:render_size": "64",
            "param:prebuilt/classic-control:env_id": "ignored: another env's widget",
        })
        assert r.status_code == 302, r.content.decode()[:2000]
        assert Evaluation.objects.get().request["tasks"][0]["params"] == {"render_size": 64}

    def test_an_undeclared_param_is_refused_by_its_path_as_the_api_does(self, web):
        """A field case: a hand-made fields POST with ``param:prebuilt/classic-control:x=1`` created an evaluation
        without the parameter; the API refuses the same request at ``tasks[0].params.x``."""
        r = web.post("/evaluations/new", {
            "source": "fields", "models": ["prebuilt/classic-control-heuristics"], "env": "prebuilt/classic-control",
            "task_ids": "classic/CartPole-v1", "episodes": 1, "param:prebuilt/classic-control:x": "1",
        })
        assert r.status_code == 400 and "<code>tasks[0].params.x</code>" in r.content.decode()
        assert Evaluation.objects.count() == 0

    def test_errors_are_the_apis_and_nothing_is_created(self, web):
        raw = '{"models": ["prebuilt/nope"], "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 0}]}'
        r = web.post("/evaluations/new", {"request_json": raw})
        html = r.content.decode()
        assert r.status_code == 400 and "<code>tasks[0].episodes</code>" in html
        assert Evaluation.objects.count() == 0
        r = web.post("/evaluations/new", {"request_json": "[1]"})
        assert r.status_code == 400 and "must be a JSON object" in r.content.decode()

    def test_preview_partial(self, web):
        ok = web.post("/evaluations/preview", {"request_json": json.dumps(cartpole_request())}, HTTP_HX_REQUEST="true").content.decode()
        assert "<html" not in ok and "1 workload</strong>" in ok and "3 episodes in 1 shard;" in ok
        bad = web.post("/evaluations/preview", {"request_json": json.dumps(cartpole_request(models=["x/y"]))}).content.decode()
        assert "<code>models[0]</code>: unknown model &quot;x/y&quot;" in bad  # the string entry itself
        assert Evaluation.objects.count() == 0

    def test_run_again_prefills_the_raw_request(self, web, tenant_a):
        raw = '{"tasks":[{"env":"prebuilt/classic-control","taskId":"classic/Acrobot-v1","episodes":1}],"model":"prebuilt/random"}'
        evaluation = submit(tenant_a, json.loads(raw), raw=raw)
        html = web.get(f"/evaluations/new?from={evaluation.public_id}").content.decode()
        assert "Prefilled with the raw request" in html
        assert raw.replace('"', "&quot;") in html

    def test_catalog_choices_in_the_form(self, web):
        html = web.get("/evaluations/new").content.decode()
        assert 'value="prebuilt/ppo/cartpole"' in html and 'value="prebuilt/classic-control"' in html
        assert "classic/MountainCar-v0" in html  # scenario catalog for the env picker
        assert 'value="prebuilt/agent-endpoint"' not in html  # only /agents runs can configure the bridge

    def test_a_viewer_cannot_launch(self, client, tenant_a):
        viewer = make_user("vic", tenant_a.org, Role.VIEWER)
        client.force_login(viewer)
        r = client.post("/evaluations/new", {"request_json": json.dumps(cartpole_request())})
        assert r.status_code == 403 and Evaluation.objects.count() == 0


class TestSettings:
    def test_create_a_key_shown_once_and_usable(self, web, tenant_a, client):
        r = web.post("/settings", {"name": "ci", "role": "member"}, HTTP_HX_REQUEST="true")
        html = r.content.decode()
        assert "<html" not in html and "it is not shown again" in html
        plaintext = html.split('<pre id="new-key-value">')[1].split("</pre>")[0]
        key = ApiKey.objects.get(name="ci")
        assert key.hashed != plaintext and plaintext not in web.get("/settings").content.decode()
        from rest_framework.test import APIClient

        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
        assert api.get("/v1/evaluations").status_code == 200

    def test_revoke(self, web, tenant_a):
        r = web.post(f"/settings/api-keys/{tenant_a.api_key.pk}/revoke", HTTP_HX_REQUEST="true")
        assert r.status_code == 200 and b"revoked" in r.content and b"<html" not in r.content
        assert tenant_a.client().get("/v1/evaluations").status_code == 401

    def test_members_cannot_manage_keys_and_keys_stay_in_their_org(self, client, tenant_a, tenant_b):
        member = make_user("mo", tenant_a.org, Role.MEMBER)
        client.force_login(member)
        assert client.post("/settings", {"name": "x", "role": "member"}).status_code == 403
        assert client.post(f"/settings/api-keys/{tenant_a.api_key.pk}/revoke").status_code == 403
        client.force_login(tenant_a.user)
        assert client.post(f"/settings/api-keys/{tenant_b.api_key.pk}/revoke").status_code == 404
        tenant_b.api_key.refresh_from_db()
        assert tenant_b.api_key.revoked_at is None
        assert tenant_b.api_key.prefix not in client.get("/settings").content.decode()

    @pytest.mark.parametrize("days", ["-5", "0", "abc", "99999"])
    def test_a_bad_expiry_is_an_error_not_silence(self, web, days):
        html = web.post("/settings", {"name": "x", "role": "member", "expires_in_days": days},
                        HTTP_HX_REQUEST="true").content.decode()
        assert not ApiKey.objects.filter(name="x").exists()
        assert 'class="errorlist"' in html and ("Ensure this value" in html or "Enter a whole number" in html)

    def test_a_key_cannot_outrank_its_creator(self, client, tenant_a):
        admin = make_user("adm", tenant_a.org, Role.ADMIN)
        client.force_login(admin)
        html = client.post("/settings", {"name": "x", "role": "owner"}).content.decode()
        assert "higher role than yours" in html and not ApiKey.objects.filter(name="x").exists()


def test_compare_highlights_the_best_per_task(web, tenant_a):
    e1 = submit(tenant_a)
    add_episodes(e1, [("completed", True, 1.0), ("completed", True, 1.0)])
    e2 = submit(tenant_a, cartpole_request(models=["prebuilt/random"]))
    add_episodes(e2, [("completed", False, 1.0), ("completed", True, 1.0)])
    html = web.get(f"/compare?evaluations={e1.public_id}&evaluations={e2.public_id}").content.decode()
    table = html.split('id="compare-table"')[1].split("</table>")[0]
    assert table.count('class="best"') == 1 and "prebuilt/random" in table
    assert 'id="chart-compare"' in html


def test_catalog_page(web):
    html = web.get("/images").content.decode()
    assert "prebuilt/classic-control" in html and "classic/CartPole-v1" in html and "prebuilt/ppo/cartpole" in html


def test_password_change_page(web):
    assert web.get("/accounts/password/").status_code == 200


# ------------------------------------------------------------- query counts
@pytest.fixture
def big_org(tenant_a):
    """1,000 evaluations and 10,000 episodes in organization A."""
    template = submit(tenant_a)
    workload = template.workloads.get()
    evals = Evaluation.objects.bulk_create(
        Evaluation(organization=tenant_a.org, creator=tenant_a.user, name=f"e{i}", request_raw="{}", request={},
                   status="completed", total_episodes=10, completed_episodes=10)
        for i in range(999)
    )
    workloads = Workload.objects.bulk_create(
        Workload(evaluation=e, index=0, model_ref=workload.model_ref, model_version=workload.model_version,
                 env_ref=workload.env_ref, env_version=workload.env_version, task_id=workload.task_id, episodes=10)
        for e in evals
    )
    Episode.objects.bulk_create(
        Episode(evaluation=w.evaluation, workload=w, index=i, seed=i, status="completed", success=i % 2 == 0,
                success_source="criterion", reward=float(i), steps=10, stop_condition="time_limit")
        for w in workloads for i in range(10)
    )
    return evals[0]


def test_list_query_count_is_pinned(web, big_org, django_assert_num_queries):
    # session, user, memberships, count, page, workloads prefetch, headline aggregate, catalog for the filters
    with django_assert_num_queries(8):
        r = web.get("/evaluations")
    assert r.status_code == 200 and "1000 evaluations" in r.content.decode()
    with django_assert_num_queries(8):
        web.get("/evaluations?page=20&status=completed")


def test_detail_query_count_is_pinned(web, big_org, django_assert_num_queries):
    url = f"/evaluations/{big_org.public_id}"
    with django_assert_num_queries(10):  # session, user, memberships, evaluation, workloads, score aggregate, returns,
        web.get(url)                    # published numbers of its models, episodes' timings, shards' timings
    with django_assert_num_queries(7):  # ... evaluation, workloads, episode count, episode page
        web.get(url + "/episodes?page=2&sort=-reward")


def test_a_perturbation_sweep_shows_one_row_per_level(web, tenant_a):
    body = cartpole_request(models=["prebuilt/random", "prebuilt/classic-control-heuristics"])
    body["tasks"] = [{**body["tasks"][0], "perturbation": p} for p in ("none", "obs_noise:0.5")]
    evaluation = submit(tenant_a, body)
    for w in evaluation.workloads.all():
        ok = w.perturbation == "none" and "heuristics" in w.model_ref
        Episode.objects.create(evaluation=evaluation, workload=w, index=0, seed=0, status="completed", success=ok,
                               success_source="criterion", reward=1.0, steps=1, stop_condition="terminated")
    html = web.get(f"/evaluations/{evaluation.public_id}").content.decode()
    assert "classic/CartPole-v1 · obs_noise:0.5" in html  # the models × tasks matrix keeps the levels apart
    assert html.count("<td>obs_noise:0.5</td>") >= 2  # workload table and scores table


def test_a_libero_episode_row_and_its_video_show_the_instruction(web, tenant_a):
    body = {"models": ["prebuilt/random"],
            "tasks": [{"env": "prebuilt/libero", "taskId": "libero_goal/0", "episodes": 1, "record": "all"}]}
    evaluation = submit(tenant_a, body)
    add_episodes(evaluation, [("completed", False, 0.0)])
    Episode.objects.filter(evaluation=evaluation).update(video="videos/x.mp4", video_meta={"frames": 3, "bytes": 10})
    html = web.get(f"/evaluations/{evaluation.public_id}/episodes", HTTP_HX_REQUEST="true").content.decode()
    assert '<div class="muted small instruction" title="instruction">“open the middle drawer of the cabinet”</div>' in html
    assert "Instruction: “open the middle drawer of the cabinet”" in html
