"""gunicorn settings shared by ``make demo``, the live tests and ``deploy/rlmesh-web.service``.

Run as ``gunicorn -c python:rlmesh_site.gunicorn_conf rlmesh_site.asgi``. Each process runs uvicorn's event loop
(``rlmesh_site.web_worker.Worker``): Django runs each view in a thread of its own, and file transfers go out from the
loop (``rlmesh_site.streaming``), so slow downloads hold no thread that other requests need. Each variable below is
in the settings page of the manual.
"""

from __future__ import annotations

import os

#: Where to listen: ``RLMESH_BIND`` (comma-separated ``host:port`` or ``unix:/path``), else 127.0.0.1:$PORT.
bind = os.environ.get("RLMESH_BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}").split(",")
worker_class = "rlmesh_site.web_worker.Worker"
#: Processes (``WEB_CONCURRENCY``, gunicorn's own variable): one per core, at most 4, by default.
workers = int(os.environ.get("WEB_CONCURRENCY") or min(4, os.cpu_count() or 1))
#: A process whose event loop has not answered gunicorn's heartbeat for this many seconds is restarted
#: (``RLMESH_WEB_TIMEOUT``).
timeout = int(os.environ.get("RLMESH_WEB_TIMEOUT") or 120)
graceful_timeout = 30
#: Access log: a file (``RLMESH_ACCESS_LOG``), or "-" for stdout (journald under systemd).
accesslog = os.environ.get("RLMESH_ACCESS_LOG") or "-"
errorlog = "-"
# No gunicornc control socket: its default path ($HOME/.gunicorn/gunicorn.ctl) is shared by every gunicorn of
# the user, so two sites (or a site and its tests) would take it from each other; signals do the same job.
control_socket_disable = True
# gunicorn trusts X-Forwarded-Proto only from FORWARDED_ALLOW_IPS (its own variable; default 127.0.0.1,::1):
# set it to the proxy's address when the proxy runs on another host.
