"""Workloads whose task id ends in a bare index (``libero_object/0``) get the whole task id as their scenario
(domain.scoring.split_task_id), so ``groupBy=scenario`` no longer merges index 0 of two suites."""

from django.db import migrations
from django.db.models import F


def forwards(apps, schema_editor):
    Workload = apps.get_model("evaluations", "Workload")
    ids = [pk for pk, task_id in Workload.objects.exclude(benchmark="").values_list("pk", "task_id")
           if task_id.split("/", 1)[-1].isdigit()]
    Workload.objects.filter(pk__in=ids).update(scenario=F("task_id"))


def backwards(apps, schema_editor):
    Workload = apps.get_model("evaluations", "Workload")
    for pk, task_id in Workload.objects.exclude(benchmark="").values_list("pk", "task_id"):
        if task_id.split("/", 1)[-1].isdigit():
            Workload.objects.filter(pk=pk).update(scenario=task_id.split("/", 1)[1])


class Migration(migrations.Migration):
    dependencies = [("evaluations", "0015_evaluation_folded_search")]
    operations = [migrations.RunPython(forwards, backwards)]
