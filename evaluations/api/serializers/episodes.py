"""What happened, episode by episode and line by line: the pages of ``/episodes`` and ``/logs``. The views build
these dicts (``api.episodes``); the serializers describe them."""

from __future__ import annotations

from rest_framework import serializers

from ...choices import EpisodeStatus, LogLevel, StopCondition, SuccessSource

__all__ = ["EpisodePageSerializer", "EpisodeSerializer", "LogPageSerializer"]


class EpisodeVideoSerializer(serializers.Serializer):
    """The recording's URL and whatever the recorder measured (each key only when known)."""

    url = serializers.CharField(help_text="GET it (Range requests honoured): /v1/evaluations/{id}/episodes/{episode}/video")
    codec = serializers.CharField(required=False)
    frames = serializers.IntegerField(required=False)
    fps = serializers.FloatField(required=False)
    width = serializers.IntegerField(required=False)
    height = serializers.IntegerField(required=False)
    bytes = serializers.IntegerField(required=False)
    encodeMs = serializers.FloatField(required=False)  # noqa: N815
    renderMs = serializers.FloatField(required=False)  # noqa: N815


class RecordedPartSerializer(serializers.Serializer):
    stored = serializers.BooleanField(help_text="whether it is in storage")
    error = serializers.CharField(allow_null=True, required=False, help_text="why it is not (whole): the quota, "
                                  "RLMESH_RECORD_MAX_BYTES, a failed write")
    stoppedAtStep = serializers.IntegerField(  # noqa: N815
        allow_null=True, required=False, help_text="the step where the recording stopped (the episode ran on)")
    note = serializers.CharField(allow_null=True, required=False)
    bytes = serializers.IntegerField(allow_null=True, required=False)
    steps = serializers.IntegerField(allow_null=True, required=False)


class EpisodeRecordingSerializer(serializers.Serializer):
    """What the episode's recording kept; null parts were not asked for by its task."""

    video = RecordedPartSerializer(allow_null=True)
    steps = RecordedPartSerializer(allow_null=True, help_text="the recorded steps (recordSteps) a dataset export reads")


class EpisodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    workload = serializers.IntegerField(help_text="the workload's index in the evaluation")
    model = serializers.CharField()
    env = serializers.CharField()
    taskId = serializers.CharField()  # noqa: N815
    index = serializers.IntegerField(help_text="the episode's index in its workload")
    seed = serializers.IntegerField()
    status = serializers.ChoiceField(EpisodeStatus.choices)
    success = serializers.BooleanField(allow_null=True)
    successSource = serializers.ChoiceField(SuccessSource.choices, allow_null=True, help_text="where the verdict came from")  # noqa: N815
    reward = serializers.FloatField(allow_null=True, help_text="undiscounted return")
    steps = serializers.IntegerField()
    terminated = serializers.BooleanField()
    truncated = serializers.BooleanField()
    stopCondition = serializers.ChoiceField(StopCondition.choices)  # noqa: N815
    error = serializers.CharField(allow_null=True)
    perturbation = serializers.DictField(allow_null=True, help_text="the perturbation applied to this episode, if any")
    video = EpisodeVideoSerializer(allow_null=True)
    recording = EpisodeRecordingSerializer(allow_null=True, help_text="what its recording kept, and why not all of "
                                           "it; null when its task recorded nothing")
    wallMs = serializers.FloatField(allow_null=True)  # noqa: N815
    predictMs = serializers.FloatField(allow_null=True, help_text="mean per-step model predict latency")  # noqa: N815
    stepMs = serializers.FloatField(allow_null=True, help_text="mean per-step env step latency")  # noqa: N815
    checkpointSha256 = serializers.CharField(  # noqa: N815
        allow_null=True, help_text="which checkpoint ran: the SHA-256 of an installed LeRobot checkpoint's files "
        "(prebuilt/lerobot/<folder>); null for other models")
    modelBatch = serializers.IntegerField(  # noqa: N815
        allow_null=True, help_text="the rows of every forward pass of a batching model server (RLMESH_MODEL_BATCH): "
        "part of what fixes the episode's actions, so digests compare at the same batch; null when unbatched")
    trajectoryDigest = serializers.CharField(  # noqa: N815
        allow_null=True, help_text="SHA-256 (64 hex characters) over the episode's observations (camera frames by "
        "shape only), actions, rewards and end flags in a canonical encoding: the same task, seed, model and model "
        "seed give the same digest, whatever the worker count, episode order or host. Null when unknown (an errored "
        "or imported episode without one)")
    digestComparable = serializers.BooleanField(  # noqa: N815
        allow_null=True, help_text="false when the digest cannot be compared with another run's: the env declares "
        "its episodes depend on wall-clock timing (browser envs), or the episode wall-time cap ended it; null "
        "without a digest")
    startedAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    finishedAt = serializers.DateTimeField()  # noqa: N815


class EpisodePageSerializer(serializers.Serializer):
    items = EpisodeSerializer(many=True, help_text="by id (workload, then index, as they were written)")
    nextCursor = serializers.CharField(allow_null=True, help_text="pass as ?cursor= for the next page; null on the last")  # noqa: N815


class LogLineSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    level = serializers.ChoiceField(LogLevel.choices)
    source = serializers.CharField(help_text="worker, runtime, … (may be empty)")
    message = serializers.CharField()


class LogPageSerializer(serializers.Serializer):
    items = LogLineSerializer(many=True, help_text="oldest first")
    nextCursor = serializers.CharField(allow_null=True, help_text="pass as ?cursor= for the next page; null on the last")  # noqa: N815
