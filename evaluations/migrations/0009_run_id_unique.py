import uuid

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("evaluations", "0008_fill_run_ids")]

    operations = [
        migrations.AlterField(
            model_name="evaluation",
            name="run_id",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
