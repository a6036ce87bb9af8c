"""``/v1/comparisons``: is model B better than model A on the episodes they share, or is it noise?"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from ..reports.comparisons import SideError, compare_sides, parse_alpha, resolve_side
from .base import OrgScopedView
from .pagination import query_value
from .serializers import ComparisonSerializer, errors

__all__ = ["ComparisonView"]

_SIDE = ("eval_… (an evaluation with one model) or eval_…:<model reference> (one of its models; only the first "
         "colon separates, so `eval_x:repo:tag` names model `repo:tag`)")


def _alpha(request) -> float:
    try:
        return parse_alpha(query_value(request, "alpha"))
    except ValueError as exc:
        raise ValidationError({"alpha": [str(exc)]}) from None


class ComparisonView(OrgScopedView):
    @extend_schema(
        parameters=[
            OpenApiParameter("a", {"type": "string", "pattern": r"\S"}, required=True, description=f"the reference (e.g. the baseline): {_SIDE}"),
            OpenApiParameter("b", {"type": "string", "pattern": r"\S"}, required=True, description="the challenger, named the same way; may be another "
                                                                  "model of the same evaluation"),
            OpenApiParameter("alpha", {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 0.5},
                             description="family-wise error rate of the per-task verdicts, in (0, 0.5]; default 0.05"),
        ],
        responses={200: ComparisonSerializer, **errors(400, 401, 404, _400=(
            "`a` or `b` is missing or names an evaluation with several models without naming one, or a model the "
            "evaluation did not run; or `alpha` is out of range. `details` names the parameter."),
            _404="`a` or `b` names an evaluation that is not in the caller's organization.")},
        summary="Paired comparison of two models on the episodes they share",
        description=(
            "Episodes pair on (task = `<env>/<taskId>`, perturbation, seed). Per task and overall: Δ success rate "
            "B − A with Newcombe's 95% interval and McNemar's exact test; Δ mean return with a t interval and the "
            "Wilcoxon signed-rank test; Holm's correction across tasks; a verdict per task (better, worse, no "
            "detectable difference). Unpaired and errored episodes are counted per side; `paired: 0` with a "
            "`message` when nothing pairs."
        ),
    )
    def get(self, request):
        alpha = _alpha(request)
        missing = {p: [f"`{p}` is required: eval_… (an evaluation with one model) or eval_…:<model>"]
                   for p in ("a", "b") if not (query_value(request, p) or "").strip()}
        if missing:  # before resolving the other side: its problems are not what is wrong
            raise ValidationError(missing)
        sides = []
        for param in ("a", "b"):
            try:
                sides.append(resolve_side(self.organization, param, request.query_params.get(param)))
            except SideError as exc:
                if exc.not_found:
                    raise NotFound(str(exc)) from None
                raise ValidationError({param: [str(exc)]}) from None
        return Response(ComparisonSerializer(compare_sides(*sides, alpha=alpha)).data)
