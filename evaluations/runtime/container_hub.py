"""The host's inference process of a batched image (``runtime.inference``), as a local process that owns its
container: the shards' leases (``runtime.shared``) need a process on this host whose life is the container's.

Started by the local runtime for a ``kind="inference"`` spec of an ``oci://`` source, on the worker's interpreter:
``python -m evaluations.runtime.container_hub --source oci://… --address unix:///<dir>/inference.sock --label L
--kwargs-json '{…}'``. It starts the container (:func:`~.docker.start_hub_container`: no network, the socket folder
``<dir>`` mounted), copies the batch sizes the container writes there to the platform's file (:func:`copy_stats`:
the folder is the image's to write, so it is read with care), copies the container's output to its own (the
process's log, at most :data:`LOG_MAX`), and removes the container when it is told to stop (SIGTERM, which it also
gets when the worker that started it dies) or when the container exits (exiting with its code). Nothing the
container sends is unpickled here or by the worker (a ping's reply is JSON: ``prebuilt.lerobot.remote``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path

__all__ = ["copy_stats", "main"]

#: The most of the container's output copied into the process's log, and of its batch-sizes file read.
LOG_MAX = 8 * 2**20
STATS_MAX = 64 * 2**10


def copy_stats(source: Path, dest: str) -> bool:
    """Copy the batch sizes the container wrote at ``source`` (in the folder it shares with the host) to ``dest``,
    the platform's file, atomically; whether it did. Only a regular file of at most :data:`STATS_MAX` bytes holding
    JSON is copied: the folder is the image's to write, so the host never follows a link, opens a FIFO or a device,
    or reads without bound there."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        data = os.read(fd, STATS_MAX + 1)
    finally:
        os.close(fd)
    try:
        if len(data) > STATS_MAX or not isinstance(json.loads(data), dict):
            return False
    except ValueError:
        return False
    tmp = f"{dest}.tmp"
    with open(tmp, "wb") as out:
        out.write(data)
    os.replace(tmp, dest)
    return True


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
    from .docker import CONTAINER_UID, client, start_hub_container

    hub_dir = Path(address_path(args.address)).parent
    if os.geteuid() == 0:  # only the containers' user (10001: its socket and batch sizes) and root enter it
        os.chown(hub_dir, CONTAINER_UID, CONTAINER_UID)
        hub_dir.chmod(0o700)
    else:  # a worker that is not root cannot give it away: anyone may create there, none remove another's
        hub_dir.chmod(0o1777)
    secrets = {KEY_ENV: os.environ[KEY_ENV]}
    spec = ServerSpec("inference", args.source, json.loads(args.kwargs_json), json.loads(args.env_json), secrets=secrets)
    container = start_hub_container(spec, str(hub_dir), name=args.label, label=args.label)
    stats = os.environ.get(STATS_ENV)

    ended = threading.Event()
    c = client()
    container = c.containers.get(container.id)

    def copy_output() -> None:
        own = client()  # a connection of its own: the main thread's calls never wait on the stream
        written = 0
        try:
            for chunk in own.containers.get(container.id).logs(stream=True, follow=True):
                if written <= LOG_MAX:  # past it, drained and dropped: the image does not fill the host's disk
                    sys.stdout.buffer.write(chunk if written + len(chunk) <= LOG_MAX else
                                            b"\n[the inference process's output is cut here: 8 MiB]\n")
                    sys.stdout.buffer.flush()
                    written += len(chunk)
        except Exception:  # noqa: BLE001 - the stream broke: the container is checked below
            pass
        finally:
            own.close()
            ended.set()

    threading.Thread(target=copy_output, name="container-output", daemon=True).start()
    while not (stopping.wait(0.5) or ended.is_set()):
        if stats:  # the platform reads the batch sizes where it reads any model server's
            copy_stats(hub_dir / "model.batches.json", stats)
    if stats:
        copy_stats(hub_dir / "model.batches.json", stats)
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
