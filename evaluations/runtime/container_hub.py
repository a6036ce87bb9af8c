"""The host's inference process of a batched image (``runtime.inference``), as a local process that owns its
container: the shards' leases (``runtime.shared``) need a process on this host whose life is the container's.

Started by the local runtime for a ``kind="inference"`` spec of an ``oci://`` source, on the worker's interpreter:
``python -m evaluations.runtime.container_hub --source oci://… --address unix:///<dir>/inference.sock --label L
--kwargs-json '{…}'``. It starts the container (:func:`~.docker.start_hub_container`: no network, the socket folder
``<dir>`` mounted), links the platform's batch-sizes file to the container's, copies the container's output to its
own (the process's log), and removes the container when it is told to stop (SIGTERM, which it also gets when the
worker that started it dies) or when the container exits (exiting with its code).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="oci://host/ns/name@sha256:… of the model")
    parser.add_argument("--address", required=True, help="unix:///dir/inference.sock (dir is mounted)")
    parser.add_argument("--label", required=True, help="the container's name label (the reaper keeps live ones)")
    parser.add_argument("--kwargs-json", default="{}", help="the model's load kwargs and the batch shape")
    parser.add_argument("--env-json", default="{}", help="the request's envVars, set in the container")
    args = parser.parse_args(argv)

    from .forkchild import die_with_parent

    # Told to stop, the main thread removes the container (never the handler: it may interrupt a call on the client);
    # a stop that arrives while the container starts removes it once it has.
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    die_with_parent(signal.SIGTERM)  # the worker's death stops the container too (the default is SIGKILL)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rlmesh_site.settings")
    import django

    django.setup()
    from ..prebuilt.lerobot.batching import STATS_ENV
    from ..prebuilt.lerobot.remote import KEY_ENV, address_path
    from .base import ServerSpec
    from .docker import client, start_hub_container

    hub_dir = Path(address_path(args.address)).parent
    hub_dir.chmod(0o777)  # the container's user (10001) creates the socket there
    secrets = {KEY_ENV: os.environ[KEY_ENV]}
    spec = ServerSpec("inference", args.source, json.loads(args.kwargs_json), json.loads(args.env_json), secrets=secrets)
    container = start_hub_container(spec, str(hub_dir), name=args.label, label=args.label)
    stats = os.environ.get(STATS_ENV)
    if stats:  # the platform reads the batch sizes where it reads any model server's
        Path(stats).unlink(missing_ok=True)
        Path(stats).symlink_to(hub_dir / "model.batches.json")

    ended = threading.Event()
    c = client()
    container = c.containers.get(container.id)

    def copy_output() -> None:
        own = client()  # a connection of its own: the main thread's calls never wait on the stream
        try:
            for chunk in own.containers.get(container.id).logs(stream=True, follow=True):
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
        except Exception:  # noqa: BLE001 - the stream broke: the container is checked below
            pass
        finally:
            own.close()
            ended.set()

    threading.Thread(target=copy_output, name="container-output", daemon=True).start()
    while not (stopping.wait(0.5) or ended.is_set()):
        pass
    code = 0
    try:
        if not stopping.is_set():  # the container exited on its own: its code is ours
            code = int(container.wait(timeout=30).get("StatusCode", 1)) or 1
    except Exception:  # noqa: BLE001 - gone already
        code = 1
    finally:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - removed already (the reaper, an operator)
            pass
        c.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
