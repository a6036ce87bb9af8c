"""Pure Plotly figure builders: plain lists in, ``fig.to_dict()`` out (rendered with json_script).

No request, no ORM. Colours follow Plotly's default qualitative sequence.

Plotly reads a subset of HTML in every text it draws (``<a href>``, ``<b>``, ``<br>``…), so each label that
comes from data (model names, task ids, titles) goes through ``_plain``: entity-escaped, which Plotly shows as
the literal characters. A model named ``<a href=…>Click</a>`` stays that text, never a link.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.colors import qualitative

__all__ = ["forest_plot", "performance_profile", "reward_distribution", "success_bars"]

_LAYOUT = dict(margin=dict(l=50, r=20, t=40, b=80), height=360, template="plotly_white", legend=dict(orientation="h", y=-0.25))


def _plain(text: str) -> str:
    """``text`` as Plotly should display it, character for character (its markup is not interpreted)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: Characters per title line: a title wider than its chart is cut at both ends (Plotly centres it and never wraps),
#: and a phone's 390 px screen leaves a chart about 340 px, ≈ 40 characters of a 14 px title.
TITLE_LINE = 40


def _title(text: str) -> dict:
    """A Plotly title, ``_plain`` and wrapped at word boundaries into lines of ≤ TITLE_LINE characters."""
    lines = textwrap.wrap(str(text), TITLE_LINE, break_long_words=False) or [""]
    return dict(text="<br>".join(_plain(line) for line in lines), font=dict(size=14), x=0.5, xanchor="center",
                y=1, yref="container", yanchor="top", pad=dict(t=10))


def _top_margin(title: dict) -> int:
    """Pixels above the plot for ``title``'s lines (18 px each) and a little air."""
    return 28 + 18 * (title["text"].count("<br>") + 1)


def _layout(title: str, *, legend_on_top: bool = False, **overrides) -> dict:
    """The shared layout with ``title`` wrapped (``_title``) and the top margin it needs; ``overrides`` win, a
    ``margin`` override keeps the computed top unless it gives one. ``legend_on_top`` puts the legend between the
    title and the plot (for charts whose x labels take the space below)."""
    heading = _title(title)
    top = _top_margin(heading)
    if legend_on_top:
        overrides.setdefault("legend", dict(orientation="h", x=0, y=1.0, yanchor="bottom"))
        top += 26
    margin = {**_LAYOUT["margin"], "t": top, **overrides.pop("margin", {})}
    return {**_LAYOUT, "title": heading, **overrides, "margin": margin}


def _to_dict(fig: go.Figure) -> dict:
    # to_plotly_json keeps numpy-free plain types, so Django's json_script can encode it.
    return fig.to_plotly_json()


def success_bars(groups: Sequence[Mapping], *, label_fields: Sequence[str], title: str) -> dict:
    """Grouped bars of success rate per group with asymmetric 95 % interval error bars, one trace per model.

    ``groups`` are score groups as ``scoring.group_scores`` returns them; ``label_fields`` are the key
    fields (besides ``model``) that label the x axis. Groups without a rate are skipped.
    """
    by_model: dict[str, list[Mapping]] = {}
    for g in groups:
        if g.get("successRate") is None:
            continue
        by_model.setdefault(g["key"].get("model", "all"), []).append(g)
    # Label by the fields that tell the bars apart: one env's name on every bar only crowds the axis.
    rated = [g for items in by_model.values() for g in items]
    varying = [f for f in label_fields if len({str(g["key"].get(f)) for g in rated}) > 1] or list(label_fields[-1:])
    fig = go.Figure()
    for model, items in by_model.items():
        x = [_plain(" / ".join(str(g["key"].get(f) or "—") for f in varying) or model) for g in items]
        y = [g["successRate"] for g in items]
        fig.add_bar(
            name=_plain(model),
            x=x,
            y=y,
            error_y=dict(
                type="data",
                symmetric=False,
                array=[g["successRateCi"][1] - g["successRate"] for g in items],
                arrayminus=[g["successRate"] - g["successRateCi"][0] for g in items],
            ),
            customdata=[[g["episodes"], g["successRateCi"][0], g["successRateCi"][1]] for g in items],
            # The trace name is substituted by Plotly (already escaped), never pasted into the template.
            hovertemplate="%{x}<br>success %{y:.0%} [%{customdata[1]:.2f}, %{customdata[2]:.2f}]<br>n=%{customdata[0]}"
            "<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(yaxis=dict(title="success rate", range=[0, 1.05], tickformat=".0%"), barmode="group",
                      **_layout(title, legend_on_top=True, xaxis=dict(automargin=True)))
    return _to_dict(fig)


def reward_distribution(rewards_by_model: Mapping[str, Sequence[float]], *, title: str = "Episode return per model") -> dict:
    """Box plot (with points) of episode returns for each model."""
    fig = go.Figure()
    for model, rewards in rewards_by_model.items():
        fig.add_box(name=_plain(model), y=list(rewards), boxpoints="all", jitter=0.4, pointpos=0, marker=dict(size=4))
    fig.update_layout(yaxis=dict(title="episode return"), showlegend=False, **_layout(title))
    return _to_dict(fig)


#: Marker colours of forest-plot verdicts (green better, red worse, grey no detectable difference / untested).
_VERDICT_COLOURS = {"better": "#1b7f3b", "worse": "#c0392b", "no detectable difference": "#6b7280", None: "#9ca3af"}


def forest_plot(rows: Sequence[Mapping], *, title: str, x_title: str) -> dict:
    """Forest plot: each row's difference with its interval as a horizontal error bar, a vertical line at zero.

    ``rows`` are ``{"label", "difference", "low", "high", "verdict"}`` (plain numbers; rows without a difference are
    left out, rows without an interval get a bare marker); the first row is drawn on top. One trace per verdict,
    so the legend reads as the verdict key; a row labelled ``overall`` (``"overall": True``) is a diamond.
    """
    drawn = [r for r in rows if r.get("difference") is not None]
    order = {r["label"]: i for i, r in enumerate(drawn)}
    fig = go.Figure()
    for verdict, colour in _VERDICT_COLOURS.items():
        items = [r for r in drawn if r.get("verdict") == verdict]
        if not items:
            continue
        fig.add_scatter(
            name=_plain(verdict or "not tested"),
            x=[r["difference"] for r in items],
            y=[_plain(r["label"]) for r in items],
            mode="markers",
            marker=dict(color=colour, size=[13 if r.get("overall") else 9 for r in items],
                        symbol=["diamond" if r.get("overall") else "circle" for r in items]),
            error_x=dict(
                type="data", symmetric=False, color=colour, thickness=1.5, width=4,
                array=[(r["high"] - r["difference"]) if r.get("high") is not None else 0 for r in items],
                arrayminus=[(r["difference"] - r["low"]) if r.get("low") is not None else 0 for r in items],
            ),
            customdata=[[r.get("low"), r.get("high")] for r in items],
            hovertemplate="%{y}<br>Δ %{x:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
                          "<extra>%{fullData.name}</extra>",
        )
    labels = [_plain(r["label"]) for r in sorted(drawn, key=lambda r: order[r["label"]])]
    fig.add_vline(x=0, line=dict(color="#111827", width=1, dash="dash"))
    # Zero always in view, with a margin on both sides so neither it nor an interval's end sits on the frame.
    ends = [0.0, *(v for r in drawn for v in (r["difference"], r.get("low"), r.get("high")) if v is not None)]
    pad = 0.08 * ((max(ends) - min(ends)) or 1.0)
    # The task labels size the left margin (automargin), so a phone's narrow chart is not given 260 px of blank.
    layout = _layout(title, height=max(240, 120 + 36 * len(drawn)), margin=dict(l=40, r=20, b=70))
    fig.update_layout(
        xaxis=dict(title=_plain(x_title), zeroline=False, range=[min(ends) - pad, max(ends) + pad]),
        yaxis=dict(categoryorder="array", categoryarray=labels[::-1], automargin=True), **layout,
    )
    return _to_dict(fig)


def performance_profile(profiles: Mapping[str, Mapping], *, title: str) -> dict:
    """The rliable performance profile: per model, a step line of the fraction of tasks whose success rate is > τ
    over the thresholds τ, inside its bootstrap band (``domain.profiles.task_mean_profile`` results by model)."""
    fig = go.Figure()
    colours = qualitative.Plotly
    for i, (model, p) in enumerate(profiles.items()):
        colour, name = colours[i % len(colours)], _plain(model)
        band = dict(x=p["thresholds"], mode="lines", line=dict(width=0, shape="hv", color=colour), showlegend=False,
                    hoverinfo="skip", legendgroup=name)
        fig.add_scatter(y=p["high"], **band)
        fig.add_scatter(y=p["low"], fill="tonexty", fillcolor=_rgba(colour, 0.18), **band)
        fig.add_scatter(
            name=name, x=p["thresholds"], y=p["fraction"], mode="lines", legendgroup=name,
            line=dict(color=colour, width=2, shape="hv"),
            hovertemplate="τ = %{x:.2f}: %{y:.0%} of tasks above<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(
        xaxis=dict(title="success-rate threshold τ", range=[0, 1]),
        yaxis=dict(title="fraction of tasks with success rate > τ", range=[0, 1.05], tickformat=".0%"), **_layout(title),
    )
    return _to_dict(fig)


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"
