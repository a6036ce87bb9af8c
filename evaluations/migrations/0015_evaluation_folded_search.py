"""Evaluations keep their name and label folded (domain.text.folded) for ``?q=``; existing rows are filled in."""

from django.db import migrations, models


def fold_existing(apps, schema_editor):
    from evaluations.domain.text import folded

    Evaluation = apps.get_model("evaluations", "Evaluation")
    batch = []
    for evaluation in Evaluation.objects.only("id", "name", "metadata").iterator(chunk_size=500):
        evaluation.folded_name = folded(evaluation.name)
        evaluation.folded_label = folded(str((evaluation.metadata or {}).get("evaluationLabel") or ""))
        batch.append(evaluation)
        if len(batch) == 500:
            Evaluation.objects.bulk_update(batch, ["folded_name", "folded_label"])
            batch = []
    Evaluation.objects.bulk_update(batch, ["folded_name", "folded_label"])


class Migration(migrations.Migration):

    dependencies = [
        ("evaluations", "0014_success_undefined"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="folded_label",
            field=models.TextField(blank=True, default="", editable=False),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="folded_name",
            field=models.TextField(blank=True, default="", editable=False),
        ),
        migrations.RunPython(fold_existing, migrations.RunPython.noop),
    ]
