"""Agent runs (seed 004) on the evaluation engine: a run id per evaluation (nullable here; 0008 fills it, 0009 makes
it unique), the encrypted endpoint key and webhook URL, rollout transcripts and summaries, the organization's webhook
secret, and the webhook delivery log."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("evaluations", "0006_organization_storage_bytes")]

    operations = [
        migrations.AddField(model_name="episode", name="agent", field=models.JSONField(blank=True, default=dict)),
        migrations.AddField(
            model_name="episode", name="transcript",
            field=models.FileField(blank=True, max_length=300, upload_to="transcripts/%Y/%m/"),
        ),
        migrations.AddField(model_name="episode", name="verifiers", field=models.JSONField(blank=True, default=list)),
        migrations.AddField(model_name="evaluation", name="endpoint_key", field=models.TextField(blank=True)),
        migrations.AddField(model_name="evaluation", name="run_id", field=models.UUIDField(editable=False, null=True)),
        migrations.AddField(model_name="evaluation", name="webhook_url",
                            field=models.CharField(blank=True, max_length=2048)),
        migrations.AddField(model_name="organization", name="webhook_secret",
                            field=models.CharField(blank=True, max_length=100)),
        migrations.CreateModel(
            name="WebhookDelivery",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("attempt", models.PositiveIntegerField()),
                ("webhook_id", models.CharField(max_length=100)),
                ("url", models.CharField(max_length=2048)),
                ("status_code", models.PositiveIntegerField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("duration_ms", models.FloatField(blank=True, null=True)),
                ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                ("at", models.DateTimeField(default=django.utils.timezone.now)),
                ("evaluation", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                 related_name="webhook_deliveries", to="evaluations.evaluation")),
            ],
            options={"ordering": ["evaluation", "attempt", "id"]},
        ),
    ]
