"""The LIBERO expert and SmolVLA moved into ``evaluations/prebuilt/libero/`` (one folder per benchmark): rewrite the
sources of the prebuilt versions recorded before, so evaluations pinned to them still start their servers. The env
factories kept their sources (``evaluations.prebuilt.libero:Libero`` and the Meta-World and MiniWoB ones): each
package re-exports its factory."""

from django.db import migrations

MOVED = {
    "evaluations.prebuilt.libero_expert:": "evaluations.prebuilt.libero.expert:",
    "evaluations.prebuilt.smolvla:": "evaluations.prebuilt.libero.smolvla:",
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
        ("evaluations", "0018_recorded_steps_dataset_exports"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
