"""WSGI entry point: Django's test client and `manage.py runserver` (`make dev`); the deployed web server runs
the ASGI one (rlmesh_site.asgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings")
application = get_wsgi_application()
