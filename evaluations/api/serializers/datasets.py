"""A dataset export of an evaluation (``/lerobot-dataset``): what to POST, and the export document the views build
(``datasets.exports.export_document``)."""

from __future__ import annotations

from rest_framework import serializers

from ...datasets.lerobot_frames import IMAGE_MODES
from ...models import DatasetExport

__all__ = ["DatasetExportRequestSerializer", "DatasetExportSerializer"]


class DatasetExportRequestSerializer(serializers.Serializer):
    images = serializers.ChoiceField(
        IMAGE_MODES, required=False, default="image",
        help_text="`image` (default): each frame's images as PNG inside the parquet files, so they read back exactly; "
        "`video`: AV1 MP4 videos per camera (LeRobot's default storage), smaller but lossy.")


class DatasetFeatureSerializer(serializers.Serializer):
    dtype = serializers.CharField(help_text="image, video, float32 or bool")
    shape = serializers.ListField(child=serializers.IntegerField())


class DatasetExportSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(DatasetExport.Status.choices,
                                     help_text="queued → running → ready | failed (poll until ready, then download)")
    images = serializers.ChoiceField(IMAGE_MODES)
    error = serializers.CharField(allow_null=True, help_text="why it failed")
    waiting = serializers.CharField(allow_null=True, help_text="what a queued export waits for (a build slot: the "
                                    "site builds RLMESH_DATASET_EXPORTS_RUNNING at once)")
    episodes = serializers.IntegerField(allow_null=True, help_text="episodes in the dataset (when ready)")
    frames = serializers.IntegerField(allow_null=True, help_text="frames in the dataset: the sum of the episodes' steps")
    bytes = serializers.IntegerField(allow_null=True, help_text="size of the zip")
    features = serializers.DictField(child=DatasetFeatureSerializer(), allow_null=True,
                                     help_text="LeRobot feature → dtype and shape (observation.images.*, "
                                     "observation.state, action, next.reward, next.done, next.success)")
    fps = serializers.IntegerField(allow_null=True, help_text="the env's control rate")
    repoId = serializers.CharField(allow_null=True, help_text="the dataset's repo_id: rlmesh/<evaluation id>")  # noqa: N815
    lerobotVersion = serializers.CharField(allow_null=True, help_text="the lerobot that wrote it")  # noqa: N815
    buildSeconds = serializers.FloatField(allow_null=True)  # noqa: N815
    downloadUrl = serializers.CharField(allow_null=True, help_text="GET it when ready: /v1/evaluations/{id}/lerobot-dataset.zip")  # noqa: N815
    createdAt = serializers.DateTimeField()  # noqa: N815
    startedAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    finishedAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
