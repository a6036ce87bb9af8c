"""The evaluation page's LeRobot dataset panel (Episodes tab): build the export, watch it, download the zip. The same
export as ``/v1/evaluations/{id}/lerobot-dataset`` (``datasets.exports``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST, require_safe

from ..choices import WRITE_ROLES
from ..datasets.exports import ExportRefused, latest_export, ready_export, recorded_episodes, request_export
from ..htmx import is_partial
from ..media import ranged_file_response
from ..models import DatasetExport, Evaluation
from ..tenancy import active_membership, org_evaluation, role_required

__all__ = ["dataset_panel_context", "lerobot_dataset_download", "lerobot_dataset_export", "lerobot_dataset_panel"]


def dataset_panel_context(request: HttpRequest, evaluation: Evaluation, workloads=None) -> dict:
    """``dataset_panel``: None when no episode kept its steps (nothing to export), else ``{"recorded"`` (episodes
    with steps), ``"export"`` (the latest DatasetExport or None), ``"ready"`` (the newest ready one, downloadable
    while a newer one builds, or None), ``"building"``, ``"can_write"}``. ``workloads``
    (the evaluation's, already read) spares the page a query when none asked for ``recordSteps``."""
    workloads = evaluation.workloads.all() if workloads is None else workloads
    if all(w.record_steps == "none" for w in workloads):
        return {"dataset_panel": None}
    recorded = recorded_episodes(evaluation).count()
    if not recorded:
        return {"dataset_panel": None}
    export = latest_export(evaluation)
    building = export is not None and export.status in (DatasetExport.Status.QUEUED, DatasetExport.Status.RUNNING)
    return {"dataset_panel": {"recorded": recorded, "export": export, "building": building,
                              "ready": ready_export(evaluation) if export is not None else None,
                              "can_write": active_membership(request).role in WRITE_ROLES}}


def _panel(request: HttpRequest, evaluation: Evaluation) -> HttpResponse:
    context = {"evaluation": evaluation, **dataset_panel_context(request, evaluation)}
    return render(request, "evaluations/_dataset_panel.html", context)


@login_required
@require_GET
def lerobot_dataset_panel(request: HttpRequest, public_id: str) -> HttpResponse:
    """The panel alone: it polls itself while the export is built."""
    return _panel(request, org_evaluation(request, public_id))


@login_required
@require_POST
@role_required(WRITE_ROLES, "viewers cannot export datasets")
def lerobot_dataset_export(request: HttpRequest, public_id: str) -> HttpResponse:
    """Ask for the export (images as PNG, exact); the panel, or back to the Episodes tab without htmx."""
    evaluation = org_evaluation(request, public_id)
    try:
        request_export(evaluation)
    except ExportRefused as exc:
        if is_partial(request):
            return HttpResponse(exc.message, status=exc.status)
        messages.error(request, exc.message)
    if is_partial(request):
        return _panel(request, evaluation)
    return redirect("evaluations:evaluation_tab", evaluation.public_id, "episodes")


@login_required
@require_safe
def lerobot_dataset_download(request: HttpRequest, public_id: str) -> HttpResponse:
    """The newest ready export's zip (range requests honoured), also while a newer one builds; 404 while there is
    none."""
    evaluation = org_evaluation(request, public_id)
    export = ready_export(evaluation)
    if export is None:
        raise Http404("no dataset export of this evaluation is ready")
    try:
        response = ranged_file_response(request, export.file.name, content_type="application/zip")
    except FileNotFoundError:
        raise Http404("the dataset's zip is missing from storage") from None
    response["Content-Disposition"] = f'attachment; filename="{evaluation.public_id}-lerobot.zip"'
    return response
