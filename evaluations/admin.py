from django.contrib import admin

from .models import ApiKey, Evaluation, ImageRepository, ImageVersion, Membership, Organization

admin.site.register([Organization, Membership, ImageRepository, ImageVersion])


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "user", "prefix", "role", "last_used_at", "revoked_at"]
    exclude = ["hashed"]


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ["public_id", "organization", "name", "status", "completed_episodes", "total_episodes", "created_at"]
    list_filter = ["status"]
