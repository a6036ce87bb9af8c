"""Give every existing evaluation its own run id (a uuid4 per row), before 0009 makes the column unique."""

import uuid

from django.db import migrations


def fill(apps, schema_editor):
    Evaluation = apps.get_model("evaluations", "Evaluation")
    for pk in Evaluation.objects.filter(run_id__isnull=True).values_list("pk", flat=True).iterator():
        Evaluation.objects.filter(pk=pk).update(run_id=uuid.uuid4())


class Migration(migrations.Migration):

    dependencies = [("evaluations", "0007_agent_runs")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
