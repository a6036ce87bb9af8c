"""FilterSets shared by the API list endpoints and the dashboard lists."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Exists, OuterRef, Q
from django.db.models.fields.json import KeyTransform

from .choices import EvaluationStatus
from .models import Evaluation, Workload


class TagField(forms.Field):
    """Repeated ``tag=key:value`` parameters, each ``key:value``."""

    def to_python(self, value):
        values = value if isinstance(value, list) else ([value] if value else [])
        pairs = []
        for raw in values:
            key, sep, val = raw.partition(":")
            if not sep or not key:
                raise forms.ValidationError(f'tag "{raw}" must look like key:value')
            pairs.append((key, val))
        return pairs


class TagFilter(django_filters.Filter):
    field_class = TagField

    def filter(self, qs, pairs):
        for i, (key, value) in enumerate(pairs or []):
            alias = f"_tag_{i}"
            qs = qs.alias(**{alias: KeyTransform(key, "tags")}).filter(**{alias: value})
        return qs


class EvaluationFilterSet(django_filters.FilterSet):
    """``status`` (repeatable: any of), ``q`` (case-insensitive substring of the name or metadata.evaluationLabel),
    repeated ``tag=key:value`` (all must match), ``model`` / ``env`` (a workload uses that reference),
    ``creator`` (username)."""

    status = django_filters.MultipleChoiceFilter(choices=EvaluationStatus.choices)
    q = django_filters.CharFilter(method="filter_q")
    tag = TagFilter()

    model = django_filters.CharFilter(method="filter_model", label="Model")
    env = django_filters.CharFilter(method="filter_env", label="Environment")
    creator = django_filters.CharFilter(field_name="creator__username", label="Created by")

    class Meta:
        model = Evaluation
        fields = ["status", "q", "tag", "model", "env", "creator"]

    def filter_model(self, qs, name, value):
        return qs.filter(Exists(Workload.objects.filter(evaluation=OuterRef("pk"), model_ref=value)))

    def filter_env(self, qs, name, value):
        return qs.filter(Exists(Workload.objects.filter(evaluation=OuterRef("pk"), env_ref=value)))

    def filter_q(self, qs, name, value):
        return qs.filter(Q(name__icontains=value) | Q(metadata__evaluationLabel__icontains=value))

    def __init__(self, data=None, *args, **kwargs):
        if data is not None and hasattr(data, "getlist"):
            data = data.copy()
            # Empty values (an unset select or text box in the dashboard's filter bar) mean "no filter".
            multi = {k: [v for v in data.getlist(k) if v] for k in ("tag", "status")}
            data = {k: data.get(k) for k in data if data.get(k)}
            data.update({k: v for k, v in multi.items() if v})
        super().__init__(data, *args, **kwargs)
