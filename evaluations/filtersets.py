"""FilterSets shared by the API list endpoints and the dashboard lists."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Exists, OuterRef, Q
from django.db.models.fields.json import KeyTransform

from .choices import EpisodeStatus, EvaluationStatus
from .domain.text import folded
from .models import Episode, Evaluation, Workload


class TagField(forms.Field):
    """Repeated ``tag=key:value`` parameters, each ``key:value``."""

    def to_python(self, value):
        values = value if isinstance(value, list) else ([value] if value else [])
        pairs = []
        for raw in values:
            key, sep, val = raw.partition(":")
            if not sep or not key:
                raise forms.ValidationError(f'tag "{raw}" must look like key:value')
            if "\x00" in raw:  # as Django's text fields say; PostgreSQL cannot compare jsonb with it
                raise forms.ValidationError("Null characters are not allowed.")
            pairs.append((key, val))
        return pairs


class StrictBooleanField(forms.Field):
    """``true`` or ``false`` (also ``1``/``0``, any letter case); empty is unset (None). Anything else is a
    ValidationError: django-filter's own boolean field reads an unknown value as "no filter" and drops it
    silently (``?success=maybe`` listed every episode)."""

    widget = forms.TextInput  # the raw value reaches to_python (NullBooleanSelect maps unknown values to None)
    VALUES = {"true": True, "1": True, "false": False, "0": False}

    def to_python(self, value):
        if value in (None, ""):
            return None
        if isinstance(value, bool):
            return value
        try:
            return self.VALUES[str(value).lower()]
        except KeyError:
            raise forms.ValidationError(f"must be true or false (got {str(value)[:50]!r})") from None


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class TagFilter(django_filters.Filter):
    field_class = TagField

    def filter(self, qs, pairs):
        for i, (key, value) in enumerate(pairs or []):
            alias = f"_tag_{i}"
            qs = qs.alias(**{alias: KeyTransform(key, "tags")}).filter(**{alias: value})
        return qs


class BlankMeansUnset:
    """Empty values (an unset select or text box in the dashboard's filter bar) mean "no filter"; repeatable
    parameters (``MULTI``) keep all their non-empty values."""

    MULTI: tuple[str, ...] = ()

    def __init__(self, data=None, *args, **kwargs):
        if data is not None and hasattr(data, "getlist"):
            multi = {k: [v for v in data.getlist(k) if v] for k in self.MULTI}
            data = {k: data.get(k) for k in data if data.get(k)}
            data.update({k: v for k, v in multi.items() if v})
        super().__init__(data, *args, **kwargs)

    @property
    def form(self):
        """The filter form; a choice field's error lists its choices (``?status=finished`` says which exist)."""
        form = super().form
        for field in form.fields.values():
            choices = [str(value) for value, _ in getattr(field, "choices", ()) if value != ""]
            if choices and "invalid_choice" in field.error_messages:
                field.error_messages = {**field.error_messages, "invalid_choice":
                                        f"%(value)s is not one of the choices: {', '.join(choices)}"}
        return form


class EvaluationFilterSet(BlankMeansUnset, django_filters.FilterSet):
    """``status`` (repeatable: any of), ``q`` (substring of the name or metadata.evaluationLabel, both folded by
    :func:`evaluations.domain.text.folded`: case-insensitive in every script),
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
        # Both sides folded by the platform (domain.text.folded), compared with a case-sensitive substring test:
        # the same answer on SQLite and PostgreSQL in every script (SQLite's LIKE folds ASCII only).
        value = folded(value)
        return qs.filter(Q(folded_name__contains=value) | Q(folded_label__contains=value))

    MULTI = ("tag", "status")


#: The dashboard's "show" choices, as filters any client may use.
EPISODE_VIEWS = {
    "all": Q(),
    "failed": Q(status=EpisodeStatus.COMPLETED, success=False),
    "errors": Q(status=EpisodeStatus.ERROR),
    "videos": ~Q(video=""),
}


class EpisodeFilterSet(BlankMeansUnset, django_filters.FilterSet):
    """Episodes of one evaluation, for ``/v1/evaluations/{id}/episodes`` and the Episodes tab alike: ``status``
    (completed | error), ``success`` (true | false), ``task`` (a taskId), ``model`` (a model reference),
    ``video`` (true: only recorded episodes) and ``show`` (all | failed | errors | videos, the tab's shortcuts)."""

    status = django_filters.ChoiceFilter(choices=EpisodeStatus.choices)
    success = StrictBooleanFilter()
    task = django_filters.CharFilter(field_name="workload__task_id", label="Task")
    model = django_filters.CharFilter(field_name="workload__model_ref", label="Model")
    video = StrictBooleanFilter(method="filter_video")
    show = django_filters.ChoiceFilter(choices=[(k, k) for k in EPISODE_VIEWS], method="filter_show")

    class Meta:
        model = Episode
        fields = ["status", "success", "task", "model", "video", "show"]

    def filter_video(self, qs, name, value):
        return qs.exclude(video="") if value else qs.filter(video="")

    def filter_show(self, qs, name, value):
        return qs.filter(EPISODE_VIEWS[value])
