from django.apps import AppConfig


class EvaluationsConfig(AppConfig):
    name = "evaluations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from . import signals  # noqa: F401  (connects the catalog sync)
        from .api import schema  # noqa: F401  (spectacular extensions)

        post_migrate.connect(signals.sync_prebuilt_catalog, sender=self)
        from django.contrib.auth.signals import user_login_failed

        from .auth import count_failed_sign_in

        user_login_failed.connect(count_failed_sign_in, dispatch_uid="evaluations.count_failed_sign_in")
