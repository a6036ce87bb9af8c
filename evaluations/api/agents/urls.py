"""``/agents`` routes (seed 004, host replaced by ``$PUBLIC_URL/agents``): exact paths, no trailing slashes."""

from django.urls import path

from . import evaluations, outputs, runs, tasks

app_name = "agents-api"

urlpatterns = [
    path("evaluations/tasks", tasks.TaskCatalogView.as_view(), name="tasks"),
    path("evaluations/run", runs.RunCreateView.as_view(), name="run"),
    path("evaluations/run/<str:run_id>/status", runs.RunStatusView.as_view(), name="run-status"),
    path("evaluations/run/<str:run_id>/transcripts/<str:rollout_id>", runs.TranscriptView.as_view(),
         name="run-transcript"),
    path("evaluations/run/<str:run_id>", runs.RunCancelView.as_view(), name="run-cancel"),
    path("evaluations", evaluations.AgentEvaluationListView.as_view(), name="evaluations"),
    path("evaluations/<str:evaluation_id>", evaluations.AgentEvaluationDetailView.as_view(), name="evaluation"),
    path("outputs/runs/<str:run_id>", outputs.RunOutputView.as_view(), name="run-output"),
    path("runs/open", runs.OpenRunView.as_view(), name="runs-open"),
]
