from django.contrib import admin

from .models import ApiKey, Evaluation, ImageRepository, ImageVersion, Membership, Organization, PublishedScore

admin.site.register([Organization, Membership, ImageRepository, ImageVersion])


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "user", "prefix", "role", "last_used_at", "revoked_at"]
    exclude = ["hashed"]


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ["public_id", "organization", "name", "status", "completed_episodes", "total_episodes", "created_at"]
    list_filter = ["status"]


@admin.register(PublishedScore)
class PublishedScoreAdmin(admin.ModelAdmin):
    """An operator adds published numbers every organization sees (leave the organization empty); the catalog's own
    rows (``builtin``) are rewritten on every migrate."""

    list_display = ["model", "benchmark", "success_rate", "episodes", "organization", "builtin", "source"]
    list_filter = ["builtin", "benchmark"]
    search_fields = ["model", "source"]
