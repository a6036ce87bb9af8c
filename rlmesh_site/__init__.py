"""Django project for the RLMesh evaluation platform."""

from .celery import app as celery_app

__all__ = ["celery_app"]
