"""The forest plot and the performance profile: plain lists in, escaped labels, the zero line in view."""

from __future__ import annotations

import pytest

from evaluations.reports import charts


def test_the_forest_plot_escapes_labels_keeps_zero_in_view_and_marks_the_overall_row():
    rows = [
        {"label": "<a href=x>t1</a>", "difference": 0.3, "low": 0.1, "high": 0.5, "verdict": "better"},
        {"label": "t2", "difference": None, "low": None, "high": None, "verdict": None},  # nothing pairs: left out
        {"label": "overall", "difference": 0.2, "low": 0.05, "high": 0.35, "verdict": "better", "overall": True},
    ]
    fig = charts.forest_plot(rows, title="<b>B − A</b>", x_title="Δ")
    (trace,) = fig["data"]
    assert trace["y"] == ["&lt;a href=x&gt;t1&lt;/a&gt;", "overall"] and trace["marker"]["symbol"] == ["circle", "diamond"]
    assert trace["error_x"]["array"] == pytest.approx([0.2, 0.15]) and trace["error_x"]["arrayminus"] == pytest.approx([0.2, 0.15])
    low, high = fig["layout"]["xaxis"]["range"]
    assert low < 0 < 0.5 < high  # zero and every interval end inside the frame
    assert fig["layout"]["shapes"][0]["x0"] == 0 and fig["layout"]["title"]["text"] == "&lt;b&gt;B − A&lt;/b&gt;"
    assert fig["layout"]["yaxis"]["categoryarray"] == ["overall", "&lt;a href=x&gt;t1&lt;/a&gt;"]  # first row on top


def test_the_performance_profile_is_a_step_line_in_its_band_per_model():
    profile = {"thresholds": [0.0, 0.5, 1.0], "fraction": [1.0, 0.5, 0.0], "low": [1.0, 0.0, 0.0], "high": [1.0, 1.0, 0.0]}
    fig = charts.performance_profile({"<m>": profile, "n": profile}, title="p")
    lines = [t for t in fig["data"] if t.get("name")]
    assert [t["name"] for t in lines] == ["&lt;m&gt;", "n"] and all(t["line"]["shape"] == "hv" for t in lines)
    assert sum(1 for t in fig["data"] if t.get("fill") == "tonexty") == 2


def test_long_titles_wrap_to_fit_a_phone_and_the_margin_makes_room():
    title = "Performance profile: fraction of tasks above each success rate (95% bootstrap band)"
    fig = charts.performance_profile({"m": {"thresholds": [0, 1], "fraction": [1, 0], "low": [1, 0], "high": [1, 0]}},
                                     title=title)
    lines = fig["layout"]["title"]["text"].split("<br>")
    assert len(lines) > 1 and all(len(line) <= charts.TITLE_LINE for line in lines)
    assert " ".join(lines) == title
    assert fig["layout"]["margin"]["t"] >= 18 * len(lines)
    short = charts.success_bars([], label_fields=["task"], title="Short")
    assert short["layout"]["title"]["text"] == "Short" and short["layout"]["margin"]["t"] < fig["layout"]["margin"]["t"]
