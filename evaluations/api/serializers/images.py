"""Images: repositories with their versions and scenario catalog, a list page and the probe response."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ...choices import ProbeStatus
from ...services.weights import weights_status

__all__ = ["ImageListSerializer", "ImageSerializer", "ProbeQueuedSerializer"]


class ImageScenarioSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="the taskId to request")
    name = serializers.CharField()
    successCriterion = serializers.JSONField(allow_null=True, help_text="the declared criterion, null without one")  # noqa: N815
    instruction = serializers.CharField(required=False, help_text="the language instruction, when the scenario has one")


class CheckpointWeightsSerializer(serializers.Serializer):
    checkpoint = serializers.CharField()
    installed = serializers.BooleanField(help_text="false: the model is refused until an operator installs them")
    settings = serializers.ListField(child=serializers.CharField(), help_text="the settings naming the folders")
    docs = serializers.CharField(help_text="the operator's page on installing them")


class LeRobotCheckpointSerializer(serializers.Serializer):
    checkpoint = serializers.CharField(help_text="the folder under RLMESH_LEROBOT_CHECKPOINTS (prebuilt/lerobot/<it>), "
                                       "or the folder in a model-car image (its label dev.rlmesh.lerobot.checkpoint)")
    type = serializers.CharField(allow_null=True, help_text="the policy type its config.json names (act, pi05, …)")
    inputs = serializers.DictField(child=serializers.ListField(child=serializers.IntegerField()),
                                   help_text="input feature → shape")
    outputs = serializers.DictField(child=serializers.ListField(child=serializers.IntegerField()),
                                    help_text="output feature → shape")
    sha256 = serializers.CharField(allow_null=True, help_text="SHA-256 over its files (paths and bytes)")
    loads = serializers.BooleanField(help_text="whether it loads here")
    problem = serializers.CharField(allow_null=True, help_text="what it needs or why it is refused, when it does not")


class ImageVersionSerializer(serializers.Serializer):
    digest = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    probeStatus = serializers.ChoiceField(ProbeStatus.choices, source="probe_status")  # noqa: N815
    probeLog = serializers.CharField(source="probe_log")  # noqa: N815
    size = serializers.IntegerField()
    pushedAt = serializers.DateTimeField(source="pushed_at")  # noqa: N815
    checkpoints = serializers.SerializerMethodField(help_text="checkpoint names a model reference may add")

    weights = serializers.SerializerMethodField(
        help_text="checkpoints whose weights an operator installs: whether they are installed, the settings naming "
        "their folders and the docs page (empty for every other image)")

    lerobot = serializers.SerializerMethodField(
        help_text="LeRobot checkpoints: those an operator installed (prebuilt/lerobot), each one's type, features, "
        "whether it loads here and what it needs; a model-car image's own checkpoint once its probe loaded it (empty "
        "for every other image)")

    def get_checkpoints(self, obj) -> list[str]:
        return list(obj.checkpoints)

    @extend_schema_field(LeRobotCheckpointSerializer(many=True))
    def get_lerobot(self, obj) -> list[dict]:
        return [{"checkpoint": name, **{k: c["lerobot"].get(k) for k in ("type", "inputs", "outputs", "sha256", "loads",
                                                                          "problem")}}
                for name, c in obj.checkpoints.items() if isinstance(c, dict) and c.get("lerobot")] + (
            [{"checkpoint": obj.lerobot["path"], **{k: obj.lerobot.get(k) for k in ("type", "inputs", "outputs", "sha256")},
              "loads": True, "problem": None}] if obj.lerobot else [])

    @extend_schema_field(CheckpointWeightsSerializer(many=True))
    def get_weights(self, obj) -> list[dict]:
        return [{k: r[k] for k in ("checkpoint", "installed", "settings", "docs")} for r in weights_status(obj.checkpoints)]


class ImageSerializer(serializers.Serializer):
    reference = serializers.CharField(source="path")
    kind = serializers.CharField(source="served_kind", help_text="env or model (empty until the first probe says)")
    description = serializers.CharField()
    currentVersion = serializers.CharField(source="current_version.digest", allow_null=True)  # noqa: N815
    scenarios = serializers.SerializerMethodField()
    versions = ImageVersionSerializer(many=True, source="versions.all")

    @extend_schema_field(ImageScenarioSerializer(many=True))
    def get_scenarios(self, obj) -> list[dict]:
        if obj.current_version is None:
            return []
        return [
            {"id": s["id"], "name": s.get("name", s["id"]), "successCriterion": s.get("success"),
             **({"instruction": s["instruction"]} if s.get("instruction") else {})}
            for s in obj.current_version.scenarios
        ]


class ImageListSerializer(serializers.Serializer):
    items = ImageSerializer(many=True, help_text="the organization's own namespace and prebuilt")


class ProbeQueuedSerializer(serializers.Serializer):
    reference = serializers.CharField(help_text="namespace/repository@sha256:… of the version")
    probeStatus = serializers.CharField(help_text="always queued")  # noqa: N815
