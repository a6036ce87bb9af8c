"""Pure Plotly figure builders: plain lists in, ``fig.to_dict()`` out (rendered with json_script).

No request, no ORM. Colours follow Plotly's default qualitative sequence.

Plotly reads a subset of HTML in every text it draws (``<a href>``, ``<b>``, ``<br>``…), so each label that
comes from data (model names, task ids, titles) goes through ``_plain``: entity-escaped, which Plotly shows as
the literal characters. A model named ``<a href=…>Click</a>`` stays that text, never a link.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

__all__ = ["reward_distribution", "success_bars"]

_LAYOUT = dict(margin=dict(l=50, r=20, t=40, b=80), height=360, template="plotly_white", legend=dict(orientation="h", y=-0.25))


def _plain(text: str) -> str:
    """``text`` as Plotly should display it, character for character (its markup is not interpreted)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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
    fig = go.Figure()
    for model, items in by_model.items():
        x = [_plain(" / ".join(str(g["key"].get(f) or "—") for f in label_fields) or model) for g in items]
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
    fig.update_layout(title=_plain(title), yaxis=dict(title="success rate", range=[0, 1.05], tickformat=".0%"), barmode="group", **_LAYOUT)
    return _to_dict(fig)


def reward_distribution(rewards_by_model: Mapping[str, Sequence[float]], *, title: str = "Episode return per model") -> dict:
    """Box plot (with points) of episode returns for each model."""
    fig = go.Figure()
    for model, rewards in rewards_by_model.items():
        fig.add_box(name=_plain(model), y=list(rewards), boxpoints="all", jitter=0.4, pointpos=0, marker=dict(size=4))
    fig.update_layout(title=_plain(title), yaxis=dict(title="episode return"), showlegend=False, **_LAYOUT)
    return _to_dict(fig)
