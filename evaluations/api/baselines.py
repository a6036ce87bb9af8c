"""``/v1/baselines``: the evaluation each tag value's later evaluations are judged against (regression verdicts)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from ..models import Baseline
from ..services.baselines import BaselineRefused, parse_tag, set_baseline, unset_baseline
from .base import OrgScopedView
from .exceptions import error_response
from .serializers import BaselineListSerializer, BaselineRequestSerializer, BaselineSerializer, errors

__all__ = ["BaselineDetailView", "BaselineListView"]

#: ``key:value``: a key without a colon, then the value (which may hold colons); no NUL anywhere.
TAG_PATTERN = r"^[^:\u0000]+:[^\u0000]*$"

_TAG = OpenApiParameter("tag", str, OpenApiParameter.PATH, pattern=TAG_PATTERN,
                        description="key:value, e.g. suite:nightly (the value may hold colons)")


def _baselines(organization):
    return Baseline.objects.for_org(organization).select_related("evaluation", "created_by")


class BaselineListView(OrgScopedView):
    @extend_schema(responses={200: BaselineListSerializer, **errors(401)}, operation_id="baselines_list",
                   summary="The organization's baselines, by tag")
    def get(self, request):
        return Response(BaselineListSerializer({"items": _baselines(self.organization)}).data)


class BaselineDetailView(OrgScopedView):
    def _parse(self, tag: str) -> tuple[str, str]:
        try:
            return parse_tag(tag)
        except BaselineRefused as exc:
            raise ValidationError({"tag": [str(exc)]}) from None

    def _get(self, tag: str) -> Baseline:
        key, value = self._parse(tag)
        baseline = _baselines(self.organization).filter(tag_key=key, tag_value=value).first()
        if baseline is None:
            raise NotFound(f"no baseline for {key}:{value}")
        return baseline

    @extend_schema(parameters=[_TAG], responses={200: BaselineSerializer, **errors(400, 401, 404)},
                   summary="The baseline of a tag")
    def get(self, request, tag: str):
        return Response(BaselineSerializer(self._get(tag)).data)

    @extend_schema(
        parameters=[_TAG], request=BaselineRequestSerializer,
        responses={200: BaselineSerializer, 201: BaselineSerializer, **errors(
            400, 401, 403, 404, 409, 413, 415,
            _400="A malformed tag or body.",
            _404="The evaluation is not in the caller's organization.",
            _409="The evaluation has not completed (only a completed evaluation can be a baseline) or does not carry the tag.")},
        summary="Make a completed evaluation the baseline of a tag (members and above)",
        description="Replaces the tag's baseline (200) or creates it (201). Every later completed evaluation with the "
                    "tag then carries `regression` in `GET /v1/evaluations/{id}`.",
    )
    def put(self, request, tag: str):
        self._parse(tag)
        _, data = self.read_request_body()
        body = BaselineRequestSerializer(data=data)
        body.is_valid(raise_exception=True)
        evaluation = self.get_evaluation(body.validated_data["evaluation"])
        try:
            baseline, created = set_baseline(organization=self.organization, tag=tag, evaluation=evaluation,
                                             user=request.user)
        except BaselineRefused as exc:
            if exc.conflict:  # a well-formed request the evaluation's state refuses
                return error_response(409, "conflict", str(exc), [{"path": "evaluation", "message": str(exc)}])
            raise ValidationError({"evaluation": [str(exc)]}) from None
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(BaselineSerializer(baseline).data, status=code)

    @extend_schema(parameters=[_TAG], responses={200: BaselineSerializer, **errors(400, 401, 403, 404)},
                   summary="Stop having a baseline for a tag (members and above); answers with the one removed")
    def delete(self, request, tag: str):
        baseline = self._get(tag)
        unset_baseline(organization=self.organization, tag=tag)
        return Response(BaselineSerializer(baseline).data)
