"""``GET /agents/outputs/runs/{run_id}``: a run's output bundle, a zip of ``results.json`` (the status document)
and ``transcripts/<rollout_id>.json`` (one per rollout that has one)."""

from __future__ import annotations

import json
import tempfile
import zipfile

from django.core.files.storage import default_storage
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema

from ...reports.agents import rollout_id, status_document
from ...media import file_response
from ..base import DownloadNegotiation, file_answer
from .base import AgentView
from ..serializers import errors

__all__ = ["RunOutputView"]


def write_bundle(evaluation, fh) -> None:
    """Write the run's zip into the binary file ``fh``."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("results.json", json.dumps(status_document(evaluation), indent=2, ensure_ascii=False))
        for episode in evaluation.episodes.exclude(transcript="").select_related("workload"):
            name = f"transcripts/{rollout_id(evaluation.run_id, episode.workload.index, episode.index)}.json"
            try:
                with default_storage.open(episode.transcript.name, "rb") as src:
                    bundle.writestr(name, src.read())
            except FileNotFoundError:
                continue


class RunOutputView(AgentView):
    content_negotiation_class = DownloadNegotiation  # the zip whatever Accept asks for, never a 406
    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY, **errors(401, 404, 429)},
                   summary="A run's results and transcripts as a zip", operation_id="agents_run_output")
    def get(self, request, run_id: str):
        evaluation = self.get_run(run_id)
        fh = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
        write_bundle(evaluation, fh)
        fh.seek(0)
        return file_answer(file_response(request, fh, as_attachment=True, filename=f"run-{evaluation.run_id}.zip",
                                         content_type="application/zip"), "bundle")
