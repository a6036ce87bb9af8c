"""FilterSets shared by the API list endpoints and the dashboard lists."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from .choices import EvaluationStatus
from .models import Evaluation


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
    repeated ``tag=key:value`` (all must match)."""

    status = django_filters.MultipleChoiceFilter(choices=EvaluationStatus.choices)
    q = django_filters.CharFilter(method="filter_q")
    tag = TagFilter()

    class Meta:
        model = Evaluation
        fields = ["status", "q", "tag"]

    def filter_q(self, qs, name, value):
        return qs.filter(Q(name__icontains=value) | Q(metadata__evaluationLabel__icontains=value))

    def __init__(self, data=None, *args, **kwargs):
        if data is not None and hasattr(data, "getlist"):
            data = data.copy()
            multi = {k: data.getlist(k) for k in ("tag", "status")}
            data = {k: data.get(k) for k in data}
            data.update({k: v for k, v in multi.items() if v})
        super().__init__(data, *args, **kwargs)
