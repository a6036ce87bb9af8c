"""App configs of the site itself."""

from django.contrib.staticfiles.apps import StaticFilesConfig


class StaticFiles(StaticFilesConfig):
    """collectstatic leaves out vendored files no page loads: Plotly's Jupyter widget bundle and sample datasets,
    and ReDoc (the API docs are Swagger UI). That halves var/static and the compression time."""

    ignore_patterns = [*StaticFilesConfig.ignore_patterns, "widgetbundle.js", "datasets", "drf_spectacular_sidecar/redoc/*"]
