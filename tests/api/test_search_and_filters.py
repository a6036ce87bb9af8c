"""Search and filters of the list endpoints and the dashboard's filter bar, the same on both databases.

Text search (``q``) folds both sides in Python (domain.text.folded), so every script gives the same answers on
SQLite (whose LIKE folds ASCII only) and PostgreSQL (whose ILIKE follows the server's locale). The exact filters
(tag, model, env, creator, task) compare code points on both. Every filter value the API cannot read is a 400
naming the parameter; an empty value is unset, in the API and the dashboard alike.

These tests run on SQLite here and on PostgreSQL in tests/live/test_postgres_rerun.py, which runs this file
again against a PostgreSQL server it starts (``make test`` runs both).
"""

from __future__ import annotations

import json
import os

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from evaluations.choices import Role
from evaluations.domain.text import folded
from evaluations.models import Episode, Evaluation, Membership
from evaluations.planning import plan_evaluation
from evaluations.runs.lifecycle import create_evaluation
from tests.conftest import cartpole_request

pytestmark = pytest.mark.django_db


def test_runs_on_the_database_it_was_asked_for():
    """tests/live/test_postgres_rerun.py sets RLMESH_EXPECT_VENDOR=postgresql when it runs this file again."""
    assert connection.vendor == os.environ.get("RLMESH_EXPECT_VENDOR", "sqlite")


def submit(tenant, creator=None, **overrides) -> Evaluation:
    body = cartpole_request(**overrides)
    return create_evaluation(plan=plan_evaluation(body, organization=tenant.org), raw_body=json.dumps(body),
                             organization=tenant.org, creator=creator or tenant.user)


# (stored name, query, found?): Cyrillic, Greek (final sigma), accented Latin, German ß, CJK, full-width,
# Turkish dotted and dotless i, and a LIKE wildcard that must be literal.
SEARCHES = [
    ("Импорт", "импорт", True),
    ("импорт данных", "ИМПОРТ", True),
    ("Импорт", "экспорт", False),
    ("ΣΟΦΟΣ run", "σοφος", True),  # final sigma ς and capital Σ fold to σ
    ("σοφός", "ΣΟΦΌΣ", True),
    ("Éclair", "éCLAIR", True),
    ("Éclair", "eclair", False),  # accents are not folded away
    ("Straße", "STRASSE", True),  # ß folds to ss
    ("STRASSE", "straße", True),
    ("東京の評価", "東京", True),
    ("東京", "京都", False),
    ("ＡＢＣ test", "abc", True),  # full-width letters are their ASCII letters (NFKC)
    ("İstanbul", "i̇stanbul", True),  # İ folds to i + combining dot above (Unicode's default, not Turkish, rules)
    ("İstanbul", "İSTANBUL", True),
    ("ılık", "ILIK", False),  # dotless ı has no capital in the default folding: I folds to i
    ("100% done", "0% d", True),
    ("100% done", "1_0", False),  # _ and % are literal characters, not wildcards
]


def _listed(client, url: str, key: str = "items") -> set[str]:
    r = client.get(url)
    assert r.status_code == 200, r.content
    return {item["id"] for item in r.json()[key]}


@pytest.mark.parametrize("name, query, found", SEARCHES)
def test_q_finds_the_name_in_every_script_in_the_api_and_the_dashboard(api, client, tenant_a, name, query, found):
    target = submit(tenant_a, name=name)
    submit(tenant_a, name="unrelated")
    expected = {target.public_id} if found else set()
    assert _listed(api, f"/v1/evaluations?q={query}") == expected, connection.vendor
    client.force_login(tenant_a.user)
    html = client.get("/evaluations", {"q": query}, HTTP_HX_REQUEST="true").content.decode()
    assert (target.public_id in html) is found, connection.vendor


@pytest.mark.parametrize("label, query, found", [(n, q, f) for n, q, f in SEARCHES if n.isascii() is False][:6])
def test_q_finds_the_evaluation_label_in_every_script(api, tenant_a, label, query, found):
    target = submit(tenant_a, metadata={"evaluationLabel": label})
    assert _listed(api, f"/v1/evaluations?q={query}") == ({target.public_id} if found else set())


def test_the_folded_columns_follow_every_save(tenant_a):
    evaluation = submit(tenant_a, name="Импорт", metadata={"evaluationLabel": "ΣΟΦΟΣ"})
    assert (evaluation.folded_name, evaluation.folded_label) == ("импорт", "σοφοσ")
    evaluation.name = "Straße"
    evaluation.save(update_fields=["name"])
    assert Evaluation.objects.filter(folded_name="strasse").count() == 1
    assert folded("ℌ") == "h" and not any(c.isupper() for c in folded("ΣΟΦΟΣ ℌ ＡＢＣ Straße İ"))


# The exact filters: non-Latin values match themselves only, and another letter case is another value, on both
# databases (the comparison is by code point; tags and usernames are not folded).
def test_exact_filters_with_non_latin_values(api, tenant_a):
    user = get_user_model().objects.create_user(username="Дмитрий", password="x")
    Membership.objects.create(user=user, organization=tenant_a.org, role=Role.MEMBER)
    cyrillic = submit(tenant_a, creator=user, tags={"команда": "роботы", "τομέας": "Ἀθῆναι"})
    latin = submit(tenant_a, tags={"team": "robots"}, models=["prebuilt/random"])
    cases = {
        "tag=команда:роботы": {cyrillic.public_id},
        "tag=команда:РОБОТЫ": set(),
        "tag=τομέας:Ἀθῆναι": {cyrillic.public_id},
        "tag=команда:роботы&tag=team:robots": set(),  # all must match
        "creator=Дмитрий": {cyrillic.public_id},
        "creator=дмитрий": set(),
        "model=prebuilt/random": {latin.public_id},
        "model=prebuilt/RANDOM": set(),
        "env=prebuilt/classic-control": {cyrillic.public_id, latin.public_id},
        "env=東京/classic-control": set(),
    }
    for query, expected in cases.items():
        assert _listed(api, f"/v1/evaluations?{query}") == expected, (query, connection.vendor)


def test_episode_filters_task_and_model(api, tenant_a):
    evaluation = submit(tenant_a)
    workload = evaluation.workloads.get()
    Episode.objects.bulk_create(Episode(evaluation=evaluation, workload=workload, index=i, seed=i, status="completed",
                                        success=i == 0, stop_condition="terminated") for i in range(2))
    url = f"/v1/evaluations/{evaluation.public_id}/episodes"
    assert len(api.get(f"{url}?task=classic/CartPole-v1").json()["items"]) == 2
    assert api.get(f"{url}?task=classic/cartpole-v1").json()["items"] == []
    assert api.get(f"{url}?task=Импорт").json()["items"] == []
    assert len(api.get(f"{url}?model=prebuilt/classic-control-heuristics").json()["items"]) == 2
    assert api.get(f"{url}?model=東京").json()["items"] == []


# ------------------------------------------------------------------ values the API cannot read: 400 at the parameter
EVALUATIONS = "/v1/evaluations"
EPISODES = "/v1/evaluations/{id}/episodes"
UNREADABLE = [
    (EVALUATIONS, "status", "finished"),
    (EVALUATIONS, "tag", "nocolon"),
    (EVALUATIONS, "limit", "ten"),
    (EVALUATIONS, "limit", "0"),
    (EVALUATIONS, "cursor", "not-a-cursor"),
    (EPISODES, "success", "maybe"),
    (EPISODES, "success", "yes"),
    (EPISODES, "video", "sometimes"),
    (EPISODES, "status", "done"),
    (EPISODES, "show", "x"),
    (EPISODES, "limit", "-1"),
    (EPISODES, "cursor", "%%%"),
    ("/v1/evaluations/{id}/logs", "limit", "1.5"),
    ("/v1/evaluations/{id}/logs", "cursor", "12.34"),  # a list cursor where a row id is expected
    (EVALUATIONS, "cursor", "1234"),  # a row id where a time and an id are expected
    (EVALUATIONS, "cursor", "1" * 17 + ".1"),  # past the year 2286
    ("/v1/evaluations/{id}/scores", "groupBy", "colour"),
    ("/v1/comparisons?a={id}&b={id}", "alpha", "0.9"),
    ("/v1/comparisons?a={id}&b={id}", "alpha", "NaN"),
    ("/v1/images", "kind", "dataset"),
    ("/agents/evaluations", "environment_id", "Not A Name"),
    ("/agents/evaluations", "limit", "many"),
    ("/agents/evaluations", "cursor", "zzz"),
    # Field case: what Python's int()/float() read beyond a whole (or plain decimal) number — underscores, a sign,
    # spaces, other scripts' digits (full-width １) — was served (?limit=1_0 listed 10 items)
    *[(url, "limit", value) for url in (EVALUATIONS, EPISODES, "/v1/evaluations/{id}/logs", "/agents/evaluations")
      for value in ("1_0", "\uff11", "+1", " 1", "1 ", "\u0661")],
    *[("/v1/comparisons?a={id}&b={id}", "alpha", value) for value in ("0.0_5", "\uff10.05", "+0.05", " 0.05")],
]


@pytest.mark.parametrize("path, parameter, value", UNREADABLE)
def test_a_value_the_api_cannot_read_is_a_400_naming_the_parameter(api, tenant_a, path, parameter, value):
    evaluation = submit(tenant_a)
    url = path.format(id=evaluation.public_id)
    r = api.get(url, {parameter: value}) if "?" not in url else api.get(f"{url}&{parameter}={value}")
    assert r.status_code == 400, (url, parameter, value, r.content)
    error = r.json()["error"]
    assert error["code"] == "invalid_request" and [d["path"] for d in error["details"]] == [parameter], error


@pytest.mark.parametrize("value, expected", [("true", [0]), ("false", [1]), ("1", [0]), ("0", [1]), ("TRUE", [0]),
                                             ("", [0, 1])])
def test_success_reads_true_false_and_empty_is_unset(api, tenant_a, value, expected):
    evaluation = submit(tenant_a)
    workload = evaluation.workloads.get()
    Episode.objects.bulk_create(Episode(evaluation=evaluation, workload=workload, index=i, seed=i, status="completed",
                                        success=i == 0, stop_condition="terminated") for i in range(2))
    r = api.get(f"/v1/evaluations/{evaluation.public_id}/episodes", {"success": value})
    assert [e["index"] for e in r.json()["items"]] == expected


@pytest.mark.parametrize("path", ["/v1/evaluations?status=&q=&tag=&model=&env=&creator=&limit=&cursor=",
                                  "/v1/evaluations/{id}/episodes?status=&success=&video=&show=&task=&model=&limit=",
                                  "/v1/evaluations/{id}/logs?limit=&cursor=", "/v1/evaluations/{id}/scores?groupBy=",
                                  "/v1/images?kind=", "/agents/evaluations?environment_id=&limit=&cursor="])
def test_an_empty_value_is_unset_in_the_api(api, tenant_a, path):
    r = api.get(path.format(id=submit(tenant_a).public_id))
    assert r.status_code == 200, r.content


def test_the_dashboards_filter_bar_treats_empty_as_unset_and_says_what_it_cannot_read(client, tenant_a):
    evaluation = submit(tenant_a)
    workload = evaluation.workloads.get()
    Episode.objects.create(evaluation=evaluation, workload=workload, index=0, seed=0, status="completed", success=True,
                           stop_condition="terminated")
    client.force_login(tenant_a.user)
    page = f"/evaluations/{evaluation.public_id}/episodes"
    empty = client.get(page, {"show": "", "task": "", "model": "", "success": ""}, HTTP_HX_REQUEST="true")
    assert empty.status_code == 200 and "classic/CartPole-v1" in empty.content.decode()
    listed = client.get("/evaluations", {"q": "", "status": "", "tag": ""}, HTTP_HX_REQUEST="true")
    assert evaluation.public_id in listed.content.decode()


@pytest.mark.parametrize("path, parameter, value, choices", [
    (EVALUATIONS, "status", "finished", "queued, running, cancelling, completed, failed, cancelled"),
    (EPISODES, "status", "done", "completed, error"),
    (EPISODES, "show", "x", "all, failed, errors, videos"),
])
def test_a_value_outside_a_choice_filter_names_the_choices(api, tenant_a, path, parameter, value, choices):
    evaluation = submit(tenant_a)
    error = api.get(path.format(id=evaluation.public_id), {parameter: value}).json()["error"]
    assert error["details"][0]["message"] == f"{value} is not one of the choices: {choices}", error
    assert error["docs"].endswith("/docs/using/search-and-filters/")
