#!/usr/bin/env bash
# Stop what start-services.sh started (by pid files) and remove any platform containers left behind.
set -u
cd "$(dirname "$0")/.."
VAR=${RLMESH_VAR_DIR:-var}
instance=$(.venv/bin/python -c 'import django, os; os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings"); django.setup(); from django.conf import settings; print(settings.RLMESH_INSTANCE_ID)' 2>/dev/null)
[ -n "$instance" ] && podman ps -aq --filter "label=dev.rlmesh.platform.instance=$instance" | xargs -r podman rm -f >/dev/null 2>&1
for name in registry podman; do
  f="$VAR/$name.pid"; [ -f "$f" ] || continue
  pid=$(cat "$f"); kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; rm -f "$f"
done
