"""Catalog operations: keep the prebuilt repositories in sync with the code, and resolve references."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from ..choices import ImageKind, ProbeStatus
from ..models import ImageRepository, ImageVersion, Organization
from ..models.images import PREBUILT_NAMESPACE
from ..prebuilt.lerobot.entry import LEROBOT_SOURCE
from ..prebuilt.lerobot.smolvla import SMOLVLA_SOURCE

__all__ = ["MalformedReference", "ReferenceError_", "ResolvedImage", "parse_reference", "reference_problem", "pick_version", "resolve_reference", "sync_prebuilt", "tag_problem"]


@transaction.atomic
def sync_prebuilt() -> None:
    """Create or update one repository and current version per entry of ``prebuilt.catalog.PREBUILT``, and
    ``prebuilt/lerobot`` with the checkpoints installed under ``RLMESH_LEROBOT_CHECKPOINTS`` now.

    Idempotent: an unchanged entry keeps its version; a changed one gets a new version (new digest) that
    becomes current, and older versions stay for the evaluations that pinned them.
    """
    from django.conf import settings

    from ..prebuilt.catalog import PREBUILT, describe_source
    from ..prebuilt.lerobot.entry import lerobot_image
    from .weights import hub_settings

    for image in (*PREBUILT, lerobot_image(str(settings.RLMESH_LEROBOT_CHECKPOINTS or ""), hub_settings())):
        repo, _ = ImageRepository.objects.update_or_create(
            namespace=PREBUILT_NAMESPACE,
            name=image.name,
            defaults={"kind": image.kind, "description": image.description},
        )
        version, created = ImageVersion.objects.get_or_create(
            repository=repo,
            digest=image.digest,
            defaults={
                "tags": ["latest"],
                "source": image.source,
                "scenarios": image.scenarios,
                "checkpoints": image.checkpoints,
                "labels": image.labels,
                "probe_status": ProbeStatus.PASSED,
                "kind": image.kind,
            },
        )
        if created or not version.describe:
            version.describe = describe_source(image.source)
            if version.describe:
                version.save(update_fields=["describe"])
        if created:
            for old in repo.versions.exclude(pk=version.pk):
                if "latest" in old.tags:
                    old.tags = [t for t in old.tags if t != "latest"]
                    old.save(update_fields=["tags"])
        if repo.current_version_id != version.pk:
            repo.current_version = version
            repo.save(update_fields=["current_version"])


_PATH = r"[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*){1,2}"
_TAG_PART = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}"
_REF = re.compile(rf"^(?P<path>{_PATH})(?::(?P<tag>{_TAG_PART}))?(?:@(?P<digest>sha256:[0-9a-f]{{64}}))?$")
#: A reference without its digest, ``namespace/repository[/checkpoint][:tag]``, as an OpenAPI ``pattern``: what the
#: schema states of every reference path parameter, so a generated one is well-formed (and a 404 at worst).
REFERENCE_PATTERN = rf"^{_PATH}(?::{_TAG_PART})?$"


class ReferenceError_(ValueError):
    """A model or env reference that cannot be used; ``str()`` is the message shown to the user."""


class MalformedReference(ReferenceError_):
    """A reference that is not well-formed (the API answers 400 ``invalid_reference``, never 404)."""


@dataclass(frozen=True)
class ParsedReference:
    namespace: str
    repository: str
    checkpoint: str | None
    tag: str | None
    digest: str | None


_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_FORM = "namespace/repository[/checkpoint][:tag|@sha256:<64 hex digits>]"


def _lowercase_names(ref: str) -> str:
    """``ref`` with every name component lowercased and its tag or digest kept as written (tags may hold capitals):
    the suggestion an uppercase-letters error makes (``Prebuilt/Random:V1`` → ``prebuilt/random:V1``)."""
    cut = min((i for i in (ref.find(":"), ref.find("@")) if i >= 0), default=len(ref))
    return ref[:cut].lower() + ref[cut:]


def _name_problem(part: str, what: str, ref: str) -> str | None:
    if not part:
        return f"has an empty {what}"
    if _NAME.match(part):
        return None
    if part.lower() != part and _NAME.match(part.lower()):
        return f'has uppercase letters in its {what} "{part}": names are lowercase ({_lowercase_names(ref)})'
    bad = next((c for c in part if not re.match(r"[a-z0-9._-]", c.lower())), None)
    if bad is not None:
        return f'has {f"a {bad!r}" if bad.strip() else "whitespace"} in its {what} "{part}": a name holds lowercase letters, digits, ".", "_" and "-"'
    return f'has a {what} "{part}" that starts with "{part[0]}": a name starts with a lowercase letter or a digit'


def _suffix_problem(tag: str | None, digest: str | None, path: str) -> str | None:
    if digest is not None:
        if not digest.startswith("sha256:"):
            hint = f" (a tag is written {path}:{digest})" if _TAG.match(digest) else ""
            return f'has "@{digest}" where a digest is expected: @sha256:<64 lowercase hex digits>{hint}'
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            return f'has a malformed digest "{digest}": sha256: followed by 64 lowercase hex digits'
    if tag is not None and not _TAG.match(tag):
        return ("has an empty tag after \":\"" if not tag else
                f'has a malformed tag "{tag}": up to 128 letters, digits, ".", "_" and "-", not starting with "." or "-"')
    return None


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be an image tag (the distribution reference grammar), or None."""
    if not _TAG.match(tag):
        return 'up to 128 letters, digits, ".", "_" and "-", not starting with "." or "-"'
    return None


def reference_problem(ref: str) -> str | None:
    """Why ``ref`` is not a well-formed ``namespace/repository[/checkpoint][:tag|@sha256:…]``, in words naming the
    offending part (uppercase, a character a name cannot hold, a tag where a digest is expected, a missing
    namespace…), or None when it is well-formed."""
    if not ref.strip():
        return f"is empty; expected {_FORM}"
    if "://" in ref:
        return f'is a URL; name an image of the catalog as {_FORM} (no scheme)'
    rest, at, digest = ref.partition("@")
    path, colon, tag = rest.rpartition(":") if ":" in rest.split("/")[-1] else (rest, "", "")
    parts = path.split("/")
    if len(parts) >= 3 and (":" in parts[0] or parts[0] == "localhost" or re.fullmatch(r"[0-9.]+", parts[0])):
        return f'starts with a registry host "{parts[0]}": drop it ({ref.split("/", 1)[1]})'
    if len(parts) == 1:
        return _name_problem(parts[0], "name", ref) or f'names no namespace; write namespace/repository, e.g. "prebuilt/{parts[0]}"'
    if len(parts) > 3:
        return f"has {len(parts)} path parts; expected {_FORM} (no registry host)"
    for part, what in zip(parts, ("namespace", "repository name", "checkpoint")):
        problem = _name_problem(part, what, ref)
        if problem:
            return problem
    return _suffix_problem(tag if colon else None, digest if at else None, path)


#: The longest namespace, repository name and checkpoint name an image can have (ImageRepository's columns).
_NAME_LENGTHS = (("namespace", 64), ("repository name", 128))


def parse_reference(ref: str) -> ParsedReference:
    """Parse ``namespace/repo[/checkpoint][:tag][@sha256:…]``; raises MalformedReference naming what is wrong."""
    m = _REF.match(ref)
    shown = ref if len(ref) <= 100 else ref[:100] + "…"
    if not m:
        problem = reference_problem(ref) or f"is not a valid reference; expected {_FORM}"
        raise MalformedReference(f'"{shown}" {problem}')
    parts = m["path"].split("/")
    for part, (what, longest) in zip(parts, _NAME_LENGTHS):
        if len(part) > longest:  # no image can have it (the catalog's columns hold no more): a 400, not a 404
            raise MalformedReference(f'"{shown}" has a {what} of {len(part)} characters: at most {longest}')
    return ParsedReference(parts[0], parts[1], parts[2] if len(parts) == 3 else None, m["tag"], m["digest"])


@dataclass(frozen=True)
class ResolvedImage:
    reference: str
    version: ImageVersion
    checkpoint: str | None

    @property
    def load_kwargs(self) -> dict:
        """Keyword arguments of the model's ``load()`` that select the checkpoint, with the folders of weights an
        operator installed (services.weights) as their settings name them now; a model car's: the SHA-256 of the
        checkpoint its probe read (the server refuses other files)."""
        if self.version.lerobot:
            return {"sha256": self.version.lerobot["sha256"], **torch_kwargs(LEROBOT_SOURCE)}
        if not self.checkpoint:
            return fused_kwargs(self.version)
        from .weights import weights_kwargs

        return {**self.version.checkpoints.get(self.checkpoint, {}).get("load", {}),
                **weights_kwargs(self.version.checkpoints, self.checkpoint),
                **torch_kwargs(self.version.source), **fused_kwargs(self.version)}

    @property
    def scenarios(self) -> list[str] | None:
        """The scenario ids the checkpoint declares it can act in, or None for no restriction."""
        return self.version.checkpoints.get(self.checkpoint, {}).get("scenarios") if self.checkpoint else None


#: The platform's torch model servers: every LeRobot checkpoint, and SmolVLA on LIBERO.
TORCH_SOURCES = (LEROBOT_SOURCE, SMOLVLA_SOURCE)


def torch_kwargs(source: str) -> dict:
    """The ``load`` kwargs that fix a torch model server's CPU arithmetic, for ``source`` (none for other servers):
    ``threads`` (``RLMESH_MODEL_THREADS``; ``prebuilt.lerobot.smolvla.pin_threads``) and, for the LeRobot server
    with ``RLMESH_MODEL_BATCH`` ≥ 1, the batch shape (``batch``, ``batch_wait_ms``; ``prebuilt.lerobot.batching``).
    Recorded on the workload, since they are part of what fixes an episode's actions."""
    if source not in TORCH_SOURCES:
        return {}
    size = int(settings.RLMESH_MODEL_BATCH) if source == LEROBOT_SOURCE else 0
    return {"threads": max(0, int(settings.RLMESH_MODEL_THREADS)),
            **({"batch": size, "batch_wait_ms": float(settings.RLMESH_MODEL_BATCH_WAIT_MS)} if size >= 1 else {})}


def fused_kwargs(version: ImageVersion) -> dict:
    """The batch shape of an rlmesh model (a trusted ``python://`` / ``python+<venv>://`` source, or a pushed image whose
    describe envelope names its class) whose describe envelope lists a batched corner (``predict_batch`` /
    ``predict_chunk_batch``), with ``RLMESH_MODEL_BATCH`` ≥ 1: its rows are then batched across the host's episodes
    (``prebuilt.fused``) and the shape is recorded on the workload, since it is part of what fixes an episode's
    actions; an image's also names the class (``fused.TARGET_KWARG``). {} for any other model."""
    from ..prebuilt import fused

    size = int(settings.RLMESH_MODEL_BATCH)
    if size < 1 or version.source == LEROBOT_SOURCE or getattr(version, "lerobot", None):
        return {}
    if not fused.batch_corners(version.describe):
        return {}
    shape = {fused.BATCH_KWARG: size, fused.WAIT_KWARG: float(settings.RLMESH_MODEL_BATCH_WAIT_MS)}
    if version.source.startswith("python"):
        return shape
    describe = version.describe or {}
    target = (describe.get("target") or {}).get("qualname")
    # The image's own rlmesh runs the platform's part of the inference process (prebuilt.fused), which reads rlmesh's
    # model internals: the version the platform was built and tested with, only.
    same_rlmesh = (describe.get("runtime") or {}).get("package_version") == rlmesh_version()
    if version.source.startswith("oci://") and isinstance(target, str) and ":" in target and same_rlmesh:
        return {**shape, fused.TARGET_KWARG: target}  # the model's class in the image, which its thin servers declare
    return {}


def rlmesh_version() -> str:
    """The rlmesh version of this platform."""
    import rlmesh

    return str(rlmesh.__version__)


def recorded_batch(load_kwargs: dict) -> int | None:
    """The rows of every forward pass recorded in a workload's model ``load_kwargs`` (a LeRobot checkpoint's
    ``batch``, an rlmesh model's ``fused.BATCH_KWARG``), or None for a model that is not batched."""
    from ..prebuilt import fused

    value = (load_kwargs or {}).get("batch") or (load_kwargs or {}).get(fused.BATCH_KWARG)
    return int(value) if isinstance(value, (int, float)) and value >= 1 else None


def pick_version(repo: ImageRepository, parsed: ParsedReference) -> ImageVersion | None:
    """The version of ``repo`` a parsed reference names: by digest, else by tag, else the repository's current one;
    None when there is no such version. Reads ``repo.versions.all()`` (prefetch it when resolving many)."""
    if parsed.digest:
        return next((v for v in repo.versions.all() if v.digest == parsed.digest), None)
    if parsed.tag:
        return next((v for v in repo.versions.all() if parsed.tag in v.tags), None)
    return repo.current_version


def resolve_reference(ref: str, *, kind: str, organization: Organization) -> ResolvedImage:
    """Resolve a reference to a usable image version visible to ``organization``.

    No tag and no digest → the repository's current version. Raises ReferenceError_ with a message naming
    what is wrong: unknown repository (also for another organization's namespace, which is not
    revealed), wrong kind, unknown tag or digest, a version whose probe has not passed, a bad checkpoint.
    """
    noun = "environment" if kind == ImageKind.ENV else "model"
    parsed = parse_reference(ref)
    repo = (
        ImageRepository.objects.visible_to(organization)
        .filter(namespace=parsed.namespace, name=parsed.repository)
        .select_related("current_version")
        .first()
    )
    if repo is None:
        raise ReferenceError_(f'unknown {noun} "{ref}"')
    if repo.kind and repo.kind != kind:  # blank until a first probe passes: then the probe status says why
        raise ReferenceError_(f'"{repo.path}" is a{"n" if repo.kind == "env" else ""} {repo.kind}, not a{"n" if kind == "env" else ""} {kind}')
    version = pick_version(repo, parsed)
    if version is None:
        if parsed.digest:
            raise ReferenceError_(f"{repo.path} has no version {parsed.digest}")
        if parsed.tag:
            raise ReferenceError_(f'{repo.path} has no tag "{parsed.tag}"')
        raise ReferenceError_(f"{repo.path} has no current version yet")
    if version.probe_status == ProbeStatus.DELETED:
        raise ReferenceError_(f"{repo.path}@{version.digest} was deleted")
    if version.probe_status != ProbeStatus.PASSED:
        raise ReferenceError_(f"{repo.path}@{version.digest} is not usable: its probe is {version.probe_status}")
    if parsed.checkpoint is not None:
        if kind == ImageKind.ENV:
            raise ReferenceError_(f'environments take no checkpoint; use "{repo.path}"')
        if parsed.checkpoint not in version.checkpoints:
            known = ", ".join(f"{repo.path}/{c}" for c in version.checkpoints) or "none"
            raise ReferenceError_(f'{repo.path} has no checkpoint "{parsed.checkpoint}" (known: {known})')
    elif version.checkpoints:
        known = ", ".join(f"{repo.path}/{c}" for c in version.checkpoints)
        raise ReferenceError_(f"{repo.path} needs a checkpoint: {known}")
    return ResolvedImage(reference=ref, version=version, checkpoint=parsed.checkpoint)
