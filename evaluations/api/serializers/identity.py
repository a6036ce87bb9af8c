"""Discovery and identity: ``/v1/info``, ``/v1/me``, ``/v1/me/organizations`` and ``/v1/registry/info``
(spec/PLATFORM_API.md §3.1, §3.5, §3.6, §3.8). The views build these small dicts themselves; the serializers say
what the CLI reads."""

from __future__ import annotations

from rest_framework import serializers

from ...choices import Role

__all__ = ["InfoSerializer", "MeSerializer", "MyOrganizationsSerializer", "OrganizationSerializer", "RegistryInfoSerializer"]


class InfoCliClientSerializer(serializers.Serializer):
    clientId = serializers.CharField(help_text="OAuth public client id the CLI sends as client_id")  # noqa: N815


class InfoAuthSerializer(serializers.Serializer):
    cli = InfoCliClientSerializer()
    deviceAuthorizationEndpoint = serializers.URLField(help_text="RFC 8628 device authorization")  # noqa: N815
    tokenEndpoint = serializers.URLField(help_text="device-code and refresh grants")  # noqa: N815
    issuer = serializers.URLField()


class InfoUrlsSerializer(serializers.Serializer):
    dashboard = serializers.URLField(help_text="no trailing slash: the CLI appends /evaluations/<id>")
    api = serializers.URLField()
    docs = serializers.URLField()


class InfoSerializer(serializers.Serializer):
    """The discovery document, built from the configured PUBLIC_URL (never the Host header)."""

    name = serializers.CharField()
    version = serializers.CharField()
    rlmesh = serializers.CharField(help_text="the rlmesh version the platform speaks")
    workflowEditions = serializers.ListField(child=serializers.CharField())  # noqa: N815
    auth = InfoAuthSerializer()
    urls = InfoUrlsSerializer()


class OrganizationSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="the platform's own id (the clients do not read it)")
    providerId = serializers.CharField(help_text="the id `rlmesh org switch` takes and compares")  # noqa: N815
    name = serializers.CharField()
    registryNamespace = serializers.CharField(help_text="the organization's namespace in the registry")  # noqa: N815


class MeSubjectSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="user_<id>; the docker username of the credential helper")
    email = serializers.CharField(allow_blank=True)
    displayName = serializers.CharField(allow_blank=True)  # noqa: N815


class MeSerializer(serializers.Serializer):
    subject = MeSubjectSerializer()
    organization = OrganizationSerializer()
    role = serializers.ChoiceField(choices=Role.choices,
                                   help_text="effective role (an API key's is capped by its creator's)")
    credential = serializers.ChoiceField(choices=["session", "api_key"])
    session = serializers.CharField(required=False, help_text="the session's id (session credentials only)")
    apiKey = serializers.CharField(required=False, help_text="rlm_<prefix>… (API keys only)")  # noqa: N815


class OrganizationMembershipSerializer(OrganizationSerializer):
    active = serializers.BooleanField(help_text="the organization the credential acts in (required by the CLI)")
    role = serializers.ChoiceField(choices=Role.choices)


class MyOrganizationsSerializer(serializers.Serializer):
    organizations = OrganizationMembershipSerializer(many=True, help_text="a session's memberships; an API key's one organization")


class RegistryInfoSerializer(serializers.Serializer):
    host = serializers.CharField(help_text="host[:port] docker pushes to")
    namespaces = serializers.ListField(child=serializers.CharField(), help_text="namespaces the credential may push to")
