"""An organization's own LeRobot checkpoint, carried by an image in its registry: the model-car pattern (KServe's
"modelcars": the weights travel as an OCI image, the serving code is the platform's).

**The image.** Any image whose config has the label ``dev.rlmesh.lerobot.checkpoint`` naming the folder that holds a
LeRobot ``pretrained_model/`` (documented path ``/checkpoint``; ``FROM scratch`` is enough). It is built and pushed
with the tools the image docs already use (``podman build`` / ``podman push``), or made by the dashboard from an
uploaded archive of the folder (:func:`build_and_push`), which pushes the same image.

**Pinned and probed as any image.** The push is a version by digest with its tags; the probe
(``services.probes``) copies the folder out of the image (:func:`materialize`), inspects it as an installed
checkpoint is inspected (JSON and safetensors only, hub-only files refused: ``prebuilt.lerobot.checkpoints``), loads
it in a LeRobot model server, and records what it read on ``ImageVersion.lerobot``. Its compressed size counts in the
organization's storage quota while it is usable.

**Never code.** The image is never run: its folder is read out of it as a tar stream with the protections imports
have (a size limit, at most :data:`MAX_MEMBERS` entries, plain files and folders only: no links, no device files, no
path out of the folder), and the checkpoint runs in the platform's own LeRobot model server
(``prebuilt.lerobot.policy.LeRobotPolicy``) on the worker host, from a per-host cache keyed by the image digest.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import shutil
import tarfile
import tempfile
from pathlib import Path

from django.conf import settings

from ..prebuilt.lerobot.checkpoints import inspect
from ..prebuilt.lerobot.entry import LEROBOT_SOURCE
from ..runtime import RuntimeBackendError, ServerSpec

__all__ = ["CheckpointRefused", "DEFAULT_PATH", "LABEL", "LEROBOT_SOURCE", "build_and_push", "check_tar", "folder_spec", "inspect_folder",
           "label_path", "materialize", "server_spec", "build_upload", "unpack_upload",
           "upload_folder"]

#: The image label naming the folder that holds the checkpoint (an absolute path inside the image).
LABEL = "dev.rlmesh.lerobot.checkpoint"
#: Where the docs and the dashboard's uploads put it.
DEFAULT_PATH = "/checkpoint"
#: The platform's LeRobot model server, which runs every LeRobot checkpoint (the catalog's ``prebuilt/lerobot``).
#: Most entries a checkpoint folder may hold.
MAX_MEMBERS = 10_000
#: Seconds the model server may take to load a checkpoint before it listens.
READY_SECONDS = 300.0
_COMPLETE = ".complete"


class CheckpointRefused(Exception):
    """The image's checkpoint folder cannot be used; ``str()`` says why, naming the entry."""


def label_path(labels: dict) -> str | None:
    """The folder the label names (normalised), or None when the image is not a model car. CheckpointRefused for a
    path that is not an absolute folder below ``/``."""
    raw = (labels or {}).get(LABEL)
    if raw is None:
        return None
    path = posixpath.normpath(str(raw).strip())
    if not path.startswith("/") or path == "/" or ".." in path.split("/"):
        raise CheckpointRefused(f'label {LABEL} is "{raw}": an absolute folder inside the image, e.g. {DEFAULT_PATH}')
    return path


def check_tar(archive: tarfile.TarFile, top: str | None, *, max_bytes: int) -> list[tarfile.TarInfo]:
    """The members of ``archive`` below the folder ``top`` (its own entry included; None: anywhere in the archive),
    checked: every one a plain file or folder inside it, at most :data:`MAX_MEMBERS`, files summing to at most
    ``max_bytes``. CheckpointRefused naming the first entry that is not (a link, a device file, an absolute name,
    ``..``, another top folder)."""
    members, total = [], 0
    for info in archive:
        name = info.name.rstrip("/")
        if name.startswith("/") or ".." in name.split("/") or "\\" in name:
            raise CheckpointRefused(f"{info.name} leads out of the checkpoint's folder")
        if top is not None and name != top and not name.startswith(top + "/"):
            raise CheckpointRefused(f"{info.name} is outside the checkpoint's folder {top}/")
        if info.issym() or info.islnk():
            raise CheckpointRefused(f"{name} is a link (a checkpoint is plain files)")
        if not (info.isfile() or info.isdir()):
            raise CheckpointRefused(f"{name} is not a plain file or folder")
        members.append(info)
        total += info.size
        if len(members) > MAX_MEMBERS:
            raise CheckpointRefused(f"the checkpoint holds more than {MAX_MEMBERS} entries")
        if total > max_bytes:
            raise CheckpointRefused(f"the checkpoint is larger than {max_bytes} bytes (RLMESH_MODEL_CAR_MAX_BYTES)")
    if top is not None and not members:
        raise CheckpointRefused(f"the archive holds no folder {top}/")
    return members


def _cache_dir(digest: str) -> Path:
    return Path(settings.RLMESH_RUN_DIR) / "model-cars" / digest.removeprefix("sha256:")


def _copy_out(image: str, path: str, into: Path) -> Path:
    """``path`` of ``image`` (pulled already) as a tar file in ``into``, read through the engine's archive endpoint
    from a created, never started, container; RuntimeBackendError from the engine, CheckpointRefused past the size
    limit."""
    from docker.errors import DockerException

    from ..runtime.docker import client

    limit = settings.RLMESH_MODEL_CAR_MAX_BYTES + 64 * 1024 * 1024  # tar headers on top of the files
    tar_path = into / "checkpoint.tar"
    c = container = None
    try:
        c = client()
        # A scratch image has no command; the container is only created, never started.
        container = c.containers.create(image, command=["/nonexistent"], network_disabled=True,
                                        labels={"dev.rlmesh.platform.model-car": "1"})
        stream, _ = container.get_archive(path)
        written = 0
        with tar_path.open("wb") as out:
            for chunk in stream:
                written += len(chunk)
                if written > limit:
                    raise CheckpointRefused(f"{path} is larger than {settings.RLMESH_MODEL_CAR_MAX_BYTES} bytes "
                                            "(RLMESH_MODEL_CAR_MAX_BYTES)")
                out.write(chunk)
    except DockerException as exc:
        message = getattr(exc, "explanation", None) or str(exc)
        if "no such file" in str(message).lower() or "not found" in str(message).lower():
            raise CheckpointRefused(f"the image has no folder {path} (its label {LABEL} names it)") from None
        raise RuntimeBackendError(f"reading {path} out of {image} failed: {message}") from None
    finally:
        if container is not None:
            try:
                container.remove(force=True)
            except DockerException:
                pass
        if c is not None:
            c.close()
    return tar_path


def materialize(image: str, digest: str, path: str) -> Path:
    """The checkpoint folder ``path`` of the image ``image`` (``host/ns/name@sha256:…``) on this host: read out of
    the image once per digest (pulled with the worker's credential), checked (:func:`check_tar`), kept under
    ``RLMESH_RUN_DIR/model-cars/<digest>/``. Returns the folder. CheckpointRefused for an unusable folder,
    RuntimeBackendError when the engine fails."""
    from ..runtime.docker import pull

    done = _cache_dir(digest)
    folder = done / "checkpoint"
    if (done / _COMPLETE).is_file():
        return folder
    done.parent.mkdir(parents=True, exist_ok=True)
    pull(image)
    scratch = Path(tempfile.mkdtemp(prefix=f".{done.name[:12]}-", dir=done.parent))
    try:
        tar_path = _copy_out(image, path, scratch)
        top = posixpath.basename(path)
        with tarfile.open(tar_path) as archive:
            members = check_tar(archive, top, max_bytes=settings.RLMESH_MODEL_CAR_MAX_BYTES)
            archive.extractall(scratch / "x", members=members, filter="data")
        tar_path.unlink()
        (scratch / "x" / top).rename(scratch / "checkpoint")
        shutil.rmtree(scratch / "x")
        (scratch / _COMPLETE).write_text(json.dumps({"image": image, "path": path}))
        try:
            scratch.rename(done)
        except OSError:  # another shard of this host got there first: theirs is the same digest
            if not (done / _COMPLETE).is_file():
                raise
    except tarfile.TarError as exc:
        raise CheckpointRefused(f"{path} could not be read as an archive: {exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def server_spec(version, kwargs: dict) -> ServerSpec:
    """The model server of a model-car version (``ImageVersion.lerobot`` set): the platform's LeRobot server on the
    checkpoint read out of the image, refusing files other than the ones the probe read (``sha256``).
    RuntimeBackendError naming what failed."""
    image = version.source.removeprefix("oci://")
    try:
        folder = materialize(image, version.digest, version.lerobot["path"])
    except CheckpointRefused as exc:
        raise RuntimeBackendError(f"the LeRobot checkpoint of {version.repository.path}: {exc}") from None
    return folder_spec(folder, kwargs)


def folder_spec(folder: Path, kwargs: dict) -> ServerSpec:
    """The platform's LeRobot model server on the checkpoint ``folder``, with the load ``kwargs`` (``sha256``)."""
    load = {**kwargs, "root": str(folder.parent), "folder": folder.name}
    return ServerSpec("model", LEROBOT_SOURCE, load, ready_timeout=READY_SECONDS)


# ------------------------------------------------------------------ uploads
CONTAINERFILE = f"""FROM scratch
COPY checkpoint {DEFAULT_PATH}
LABEL {LABEL}={DEFAULT_PATH}
"""


def _context(folder: Path) -> io.BytesIO:
    """The build context: a Containerfile and the checkpoint folder as ``checkpoint/``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = CONTAINERFILE.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        tar.add(folder, arcname="checkpoint")
    buf.seek(0)
    return buf


def build_and_push(folder: str | os.PathLike, repository: str, tag: str) -> str:
    """Build the model-car image of the checkpoint ``folder`` (``FROM scratch``, the folder at :data:`DEFAULT_PATH`,
    the label) on the engine and push it to the platform registry as ``repository:tag`` (``ns/name``), with a
    credential that may push to that namespace only. Returns the pushed reference; RuntimeBackendError naming what
    failed. The push event then records the version and queues its probe, as for any push."""
    from docker.errors import DockerException

    from ..runtime.docker import client
    from .registry import builder_credential

    namespace = repository.split("/", 1)[0]
    username, password = builder_credential(namespace)
    remote = f"{settings.RLMESH_REGISTRY_HOST}/{repository}"
    c = None
    try:
        c = client()
        context = _context(Path(folder))
        c.images.build(fileobj=context, custom_context=True, tag=f"{remote}:{tag}", rm=True, pull=False)
        for event in c.api.push(remote, tag=tag, stream=True, decode=True,
                                auth_config={"username": username, "password": password}):
            if "error" in event or "errorDetail" in event:
                raise RuntimeBackendError(f"pushing {repository}:{tag} failed: {event.get('error') or event.get('errorDetail')}")
        try:
            c.images.remove(f"{remote}:{tag}")
        except DockerException:
            pass
    except DockerException as exc:
        raise RuntimeBackendError(f"building {repository}:{tag} failed: {getattr(exc, 'explanation', None) or exc}") from None
    finally:
        if c is not None:
            c.close()
    return f"{repository}:{tag}"


#: Archives a checkpoint may be uploaded as.
UPLOAD_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")
#: The zip external attribute's file-type bits (the high 16 bits hold a Unix mode): a link, a regular file, a folder.
_S_IFMT, _S_IFLNK, _S_IFREG, _S_IFDIR = 0o170000, 0o120000, 0o100000, 0o040000


def _check_zip(archive, max_bytes: int) -> None:
    """The zip's members as :func:`check_tar` checks a tar's (no unsafe names, links, special files; within the
    limits); CheckpointRefused naming the first that is not."""
    from ..imports.archive import unsafe_name

    infos, total = archive.infolist(), 0
    if len(infos) > MAX_MEMBERS:
        raise CheckpointRefused(f"the archive holds more than {MAX_MEMBERS} entries")
    for info in infos:
        problem = unsafe_name(info.filename)
        if problem:
            raise CheckpointRefused(f"{info.filename} {problem}")
        kind = (info.external_attr >> 16) & _S_IFMT
        if kind == _S_IFLNK:
            raise CheckpointRefused(f"{info.filename} is a link (a checkpoint is plain files)")
        if kind not in (0, _S_IFREG, _S_IFDIR):
            raise CheckpointRefused(f"{info.filename} is not a plain file or folder")
        if info.flag_bits & 0x1:
            raise CheckpointRefused(f"{info.filename} is encrypted")
        total += info.file_size
        if total > max_bytes:
            raise CheckpointRefused(f"the archive uncompresses to more than {max_bytes} bytes (RLMESH_MODEL_CAR_MAX_BYTES)")


def unpack_upload(fileobj, file_name: str, dest: Path) -> Path:
    """Unpack an uploaded ``.zip`` / ``.tar`` / ``.tar.gz`` of a checkpoint folder into ``dest`` with the protections
    imports have (:func:`check_tar`, :func:`_check_zip`); return the folder holding ``config.json``: the archive's
    top or its one folder. CheckpointRefused naming what is wrong (nothing is left in ``dest`` then)."""
    import zipfile

    from ..imports.archive import READ_ERRORS

    name = file_name.lower()
    if not name.endswith(UPLOAD_SUFFIXES):
        raise CheckpointRefused(f"{file_name} is not one of {', '.join(UPLOAD_SUFFIXES)}: upload the pretrained_model/ "
                                "folder as an archive")
    limit = settings.RLMESH_MODEL_CAR_MAX_BYTES
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(fileobj) as archive:
                _check_zip(archive, limit)
                archive.extractall(dest)
        else:
            with tarfile.open(fileobj=fileobj, mode="r:*") as archive:
                members = check_tar(archive, None, max_bytes=limit)
                archive.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, *READ_ERRORS) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise CheckpointRefused(f"{file_name} could not be read as an archive: {exc}") from None
    except CheckpointRefused:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    if (dest / "config.json").is_file():
        return dest
    tops = [p for p in dest.iterdir() if p.name != "__MACOSX"]
    if len(tops) == 1 and (tops[0] / "config.json").is_file():
        return tops[0]
    shutil.rmtree(dest, ignore_errors=True)
    raise CheckpointRefused(f"{file_name} holds no config.json at its top or in its one folder (a LeRobot "
                            "pretrained_model/ folder)")


def upload_folder(upload) -> Path:
    """Where an upload's unpacked archive waits for its build (shared storage: the web host writes, a worker builds)."""
    return Path(settings.MEDIA_ROOT) / "checkpoint-uploads" / str(upload.pk)


def build_upload(upload_id: int) -> None:
    """Build and push a queued :class:`~evaluations.models.CheckpointUpload` (its folder under :func:`upload_folder`),
    then delete the folder; the upload ends ``pushed`` or ``failed`` with the reason. A duplicate delivery does
    nothing."""
    from django.utils import timezone

    from ..models import CheckpointUpload

    Status = CheckpointUpload.Status
    if not CheckpointUpload.objects.filter(pk=upload_id, status=Status.QUEUED).update(status=Status.BUILDING):
        return
    upload = CheckpointUpload.objects.select_related("organization").get(pk=upload_id)
    scratch = upload_folder(upload)
    status, error = Status.FAILED, ""
    try:
        folder = next((p for p in (scratch, *scratch.iterdir()) if (p / "config.json").is_file()), None) if scratch.is_dir() else None
        if folder is None:
            error = "the uploaded folder is gone from shared storage (MEDIA_ROOT); upload it again"
        else:
            build_and_push(folder, f"{upload.organization.slug}/{upload.repository}", upload.tag)
            status = Status.PUSHED
    except RuntimeBackendError as exc:
        error = str(exc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        CheckpointUpload.objects.filter(pk=upload_id).update(status=status, error=error[:2000], finished_at=timezone.now())


def inspect_folder(folder: Path) -> dict:
    """:func:`~evaluations.prebuilt.lerobot.checkpoints.inspect` with the hub folders' settings of this platform."""
    from .weights import hub_settings

    return inspect(folder, hub_settings())
