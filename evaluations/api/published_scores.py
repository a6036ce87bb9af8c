"""``/v1/published-scores``: the published success rates score rows are set against (reproduction verdicts): the
catalog's, an operator's, and the organization's own, which it adds and removes here."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from ..models import PublishedScore
from ..services.published_scores import add_published_score
from .base import OrgScopedView
from .serializers import PublishedScoreListSerializer, PublishedScoreRequestSerializer, PublishedScoreSerializer, errors

__all__ = ["PublishedScoreDetailView", "PublishedScoreListView"]


class PublishedScoreListView(OrgScopedView):
    @extend_schema(responses={200: PublishedScoreListSerializer, **errors(401)}, operation_id="published_scores_list",
                   summary="Published success rates visible to the organization: the catalog's, an operator's, yours")
    def get(self, request):
        rows = PublishedScore.objects.visible_to(self.organization).order_by("model", "benchmark", "pk")
        return Response(PublishedScoreListSerializer({"items": rows}).data)

    @extend_schema(
        request=PublishedScoreRequestSerializer,
        responses={200: PublishedScoreSerializer, 201: PublishedScoreSerializer, **errors(400, 401, 403, 413, 415)},
        summary="Add the organization's own published number for a model and benchmark (members and above)",
        description="Replaces the organization's row for the same model and benchmark (200) or creates it (201). "
                    "It takes precedence over the catalog's and an operator's in the organization's reproduction "
                    "verdicts (`reference` of `GET /v1/evaluations/{id}/scores?groupBy=benchmark`).",
    )
    def post(self, request):
        _, data = self.read_request_body()
        body = PublishedScoreRequestSerializer(data=data)
        body.is_valid(raise_exception=True)
        v = body.validated_data
        row, created = add_published_score(organization=self.organization, user=request.user, model=v["model"],
                                           benchmark=v["benchmark"], success_rate=v["successRate"], source=v["source"],
                                           episodes=v.get("episodes"))
        return Response(PublishedScoreSerializer(row).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class PublishedScoreDetailView(OrgScopedView):
    @extend_schema(responses={200: PublishedScoreSerializer, **errors(401, 403, 404)},
                   summary="Remove one of the organization's own published numbers (members and above); answers with it",
                   description="The catalog's and an operator's rows are not the organization's: a 404.")
    def delete(self, request, score_id: int):
        row = PublishedScore.objects.filter(pk=score_id, organization=self.organization).first()
        if row is None:
            raise NotFound(f"no published score {score_id} of this organization")
        answer = PublishedScoreSerializer(row).data
        row.delete()
        return Response(answer)
