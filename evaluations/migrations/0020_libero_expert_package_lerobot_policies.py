"""The LIBERO expert became a package (``evaluations/prebuilt/libero/expert/``, its model in ``expert/model.py``) and
SmolVLA moved to the LeRobot policies' folder (``evaluations/prebuilt/lerobot/``): rewrite the sources of the prebuilt
versions recorded before, so evaluations pinned to them still start their servers."""

from django.db import migrations

MOVED = {
    "evaluations.prebuilt.libero.expert:": "evaluations.prebuilt.libero.expert.model:",
    "evaluations.prebuilt.libero.smolvla:": "evaluations.prebuilt.lerobot.smolvla:",
}


def _rewrite(apps, mapping):
    ImageVersion = apps.get_model("evaluations", "ImageVersion")
    for old, new in mapping.items():
        for version in ImageVersion.objects.filter(source__contains=old).only("pk", "source"):
            version.source = version.source.replace(old, new)
            version.save(update_fields=["source"])


def forwards(apps, schema_editor):
    _rewrite(apps, MOVED)


def backwards(apps, schema_editor):
    _rewrite(apps, {new: old for old, new in MOVED.items()})


class Migration(migrations.Migration):

    dependencies = [
        ("evaluations", "0019_prebuilt_sources_in_benchmark_folders"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
