"""The platform as the token service of its OCI registry (CNCF Distribution "token" auth), and push events.

Credentials the token endpoint accepts (HTTP Basic): (user id ``user_N``, a platform access token) as the
rlmesh credential helper sends them, (any name, an API key), and the workers' own pull secret. Tokens are
RS256 JWTs whose ``kid`` is the libtrust id of the key in ``rootcertbundle`` (spec/CONTAINERS.md §4).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import jwt
from django.conf import settings
from django.db import transaction
from django.db.models import F as models_F
from django.db.models import Q as models_Q
from django.utils import timezone

from ..choices import ACTIVE_STATUSES, WRITE_ROLES, ProbeStatus
from ..models import ApiKey, ImageRepository, ImageVersion, Membership, Organization, Workload
from ..models.images import PREBUILT_NAMESPACE
from .identity import InvalidToken, decode_access_token

__all__ = ["Grantee", "authenticate_basic", "builder_credential", "ensure_keys", "granted_actions", "is_repository_name", "issue_token", "record_push",
           "registry_config"]

SERVICE = "rlmesh-registry"
ISSUER = "rlmesh-platform"


# ------------------------------------------------------------------- keys
def _key_paths() -> tuple[Path, Path]:
    auth = Path(settings.RLMESH_REGISTRY_DIR) / "auth"
    return auth / "token.key", auth / "token.crt"


def ensure_keys() -> tuple[Path, Path]:
    """Create the RSA signing key and its self-signed certificate once; return their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key_path, cert_path = _key_paths()
    if key_path.exists() and cert_path.exists():
        return key_path, cert_path
    key_path.parent.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rlmesh-registry-token-issuer")])
    now = timezone.now()
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - timezone.timedelta(days=1))
        .not_valid_after(now + timezone.timedelta(days=3650)).sign(key, hashes.SHA256())
    )
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def _libtrust_kid(cert_pem: bytes) -> str:
    """libtrust key id: base32 of the first 30 bytes of sha256(DER SubjectPublicKeyInfo), 12 groups of 4."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    spki = x509.load_pem_x509_certificate(cert_pem).public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    b32 = base64.b32encode(hashlib.sha256(spki).digest()[:30]).decode().rstrip("=")
    return ":".join(b32[i : i + 4] for i in range(0, 48, 4))


def registry_config() -> str:
    """The Distribution registry's config.yml: token auth through this platform, push events to it."""
    _, cert = ensure_keys()
    root = Path(settings.RLMESH_REGISTRY_DIR)
    return f"""version: 0.1
log: {{level: info, fields: {{service: registry}}}}
storage:
  filesystem: {{rootdirectory: {root / 'data'}}}
  delete: {{enabled: true}}
  cache: {{blobdescriptor: inmemory}}
http:
  addr: {settings.RLMESH_REGISTRY_HOST}
  secret: {hashlib.sha256(settings.SECRET_KEY.encode()).hexdigest()[:32]}
auth:
  token:
    realm: {settings.PUBLIC_URL}/v1/registry/token
    service: {SERVICE}
    issuer: {ISSUER}
    rootcertbundle: {cert}
notifications:
  events: {{includereferences: true}}
  endpoints:
    - name: rlmesh-platform
      url: {settings.PUBLIC_URL}/v1/registry/events
      headers: {{Authorization: [Bearer {settings.RLMESH_REGISTRY_NOTIFY_SECRET}]}}
      timeout: 5s
      threshold: 5
      backoff: 2s
      ignoredmediatypes: [application/octet-stream]
"""


# ------------------------------------------------------------------- auth
@dataclass(frozen=True)
class Grantee:
    """Who asks: ``name`` for the token's ``sub``; ``pull``/``push`` are the namespaces each action is allowed in."""

    name: str
    pull: frozenset[str]
    push: frozenset[str]
    pull_everything: bool = False


#: User name prefix of the platform's own builder (dashboard uploads of model-car images): ``<it><namespace>``.
BUILDER_PREFIX = "rlmesh-builder."


def builder_credential(namespace: str) -> tuple[str, str]:
    """The registry credential the platform pushes an organization's uploaded checkpoint with
    (``services.model_cars``): it pushes and pulls ``namespace`` only. Derived from ``SECRET_KEY``, never stored."""
    password = hmac.new(settings.SECRET_KEY.encode(), f"registry-builder/{namespace}".encode(), hashlib.sha256).hexdigest()
    return f"{BUILDER_PREFIX}{namespace}", password


def authenticate_basic(username: str, password: str) -> Grantee | None:
    """Check registry credentials; None if they are not valid.

    A session token grants its user's organizations (push where the role may write); an API key grants
    its organization with its effective role — never more than its creator has now, and nothing once the creator left
    (as on /v1); the worker secret pulls everything; the builder's credential of a namespace pushes there only
    (:func:`builder_credential`). Everyone pulls ``prebuilt/``.
    """
    if username.startswith(BUILDER_PREFIX):
        namespace = username.removeprefix(BUILDER_PREFIX)
        if hmac.compare_digest(password, builder_credential(namespace)[1]) and Organization.objects.filter(slug=namespace).exists():
            return Grantee(username, frozenset({namespace}), frozenset({namespace}))
        return None
    if username == settings.RLMESH_REGISTRY_WORKER_ACCOUNT:
        if hmac.compare_digest(password, settings.RLMESH_REGISTRY_WORKER_SECRET):
            return Grantee(settings.RLMESH_REGISTRY_WORKER_ACCOUNT, frozenset(), frozenset(), pull_everything=True)
        return None
    if password.startswith("rlm_"):
        key = ApiKey.objects.for_key(password)
        role = key.effective_role() if key is not None and key.is_usable else None
        if role is None:
            return None
        ns = key.organization.slug
        return Grantee(f"apikey:{key.prefix}", frozenset({ns, PREBUILT_NAMESPACE}), frozenset({ns}) if role in WRITE_ROLES else frozenset())
    try:
        auth = decode_access_token(password)
    except InvalidToken:
        return None
    user = auth.session.user
    if username and username != f"user_{user.pk}":
        return None
    memberships = list(Membership.objects.filter(user=user).select_related("organization"))
    pull = frozenset({m.organization.slug for m in memberships} | {PREBUILT_NAMESPACE})
    push = frozenset(m.organization.slug for m in memberships if m.role in WRITE_ROLES)
    return Grantee(f"user_{user.pk}", pull, push)


#: A path component of a repository name in the distribution reference grammar (distribution/reference,
#: ``reference.go``): lowercase alphanumerics, separated by one ``.``, one or two ``_``, or any number of ``-``.
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*")
#: The grammar's limit on a whole repository name, in characters.
MAX_REPOSITORY_NAME = 255


def is_repository_name(name: str) -> bool:
    """Whether ``name`` (``ns/repo[/more]``, no registry host) is a repository name the distribution reference grammar
    allows: path components joined by ``/``, at most 255 characters. ``ns/../other/x``, ``ns//x``, ``NS/x`` and
    ``ns/x:tag`` are not."""
    return len(name) <= MAX_REPOSITORY_NAME and all(_PATH_COMPONENT.fullmatch(c) for c in name.split("/"))


def granted_actions(grantee: Grantee, scope: str) -> dict | None:
    """The ``access`` entry for one requested scope (``repository:ns/name:pull,push``), keeping only what is allowed;
    None (nothing granted, not even an empty entry) for a scope of another type or a name that is not a repository
    name (:func:`is_repository_name`)."""
    parts = scope.split(":")
    if len(parts) < 3 or parts[0] != "repository":
        return None
    name, requested = ":".join(parts[1:-1]), set(parts[-1].split(","))
    if not is_repository_name(name):
        return None
    namespace = name.split("/", 1)[0]
    allowed = set()
    if "pull" in requested and (grantee.pull_everything or namespace in grantee.pull):
        allowed.add("pull")
    if "push" in requested and namespace in grantee.push:
        allowed.add("push")
    return {"type": "repository", "name": name, "actions": sorted(allowed)}


def issue_token(grantee: Grantee, scopes: list[str], ttl: int = 300) -> dict:
    """A registry bearer token for the allowed part of ``scopes`` (an empty ``access`` list is a valid answer)."""
    access = [a for a in (granted_actions(grantee, s) for s in scopes) if a is not None]
    token = _sign(grantee.name, access, ttl)
    return {"token": token, "access_token": token, "expires_in": ttl, "issued_at": timezone.now().isoformat()}


def _sign(subject: str, access: list[dict], ttl: int) -> str:
    key_path, cert_path = ensure_keys()
    now = int(time.time())
    claims = {"iss": ISSUER, "sub": subject, "aud": SERVICE, "exp": now + ttl, "nbf": now - 5, "iat": now,
              "jti": secrets.token_hex(8), "access": access}
    return jwt.encode(claims, key_path.read_bytes(), algorithm="RS256", headers={"kid": _libtrust_kid(cert_path.read_bytes())})


# ----------------------------------------------------------------- events
MANIFEST_TYPES = {
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
}


def record_push(event: dict) -> ImageVersion | None:
    """Record a registry push event: the repository (in an organization's namespace), the version by digest with
    its tag; a ``:latest`` push makes it the repository's current version. Returns the version when it is new
    (its probe must be queued), else None."""
    target = event.get("target", {})
    if event.get("action") != "push" or target.get("mediaType") not in MANIFEST_TYPES:
        return None
    repository, digest, tag = target.get("repository", ""), target.get("digest", ""), target.get("tag") or ""
    if "/" not in repository or not is_repository_name(repository) or not digest.startswith("sha256:"):
        return None
    namespace, name = repository.split("/", 1)
    if namespace == PREBUILT_NAMESPACE or not Organization.objects.filter(slug=namespace).exists():
        return None
    size = sum(int(r.get("size", 0)) for r in target.get("references", []))
    with transaction.atomic():
        repo, _ = ImageRepository.objects.get_or_create(namespace=namespace, name=name, defaults={"kind": ""})
        # Notifications of one push arrive close together (several per push when blobs already existed): the
        # repository row is locked while its versions and tags change, so concurrent ones apply one after the other
        # (a tag is never lost or left on two versions; PostgreSQL; SQLite serializes writers anyway).
        repo = ImageRepository.objects.select_for_update().get(pk=repo.pk)
        version, created = ImageVersion.objects.get_or_create(
            repository=repo, digest=digest,
            defaults={"source": f"oci://{settings.RLMESH_REGISTRY_HOST}/{repository}@{digest}", "probe_status": ProbeStatus.QUEUED, "size": size},
        )
        if tag:
            # A tag names one version at a time: move it here.
            for other in repo.versions.exclude(pk=version.pk):
                if tag in other.tags:
                    other.tags = [t for t in other.tags if t != tag]
                    other.save(update_fields=["tags"])
            if tag not in version.tags:
                version.tags = [*version.tags, tag]
                version.save(update_fields=["tags"])
            if tag == "latest" and repo.current_version_id != version.pk:
                repo.current_version = version
                repo.save(update_fields=["current_version"])
    if not created and version.probe_status == ProbeStatus.DELETED:
        # Pushed again after a delete: a new life, probed again.
        ImageVersion.objects.filter(pk=version.pk).update(probe_status=ProbeStatus.QUEUED)
        version.probe_status = ProbeStatus.QUEUED
        return version
    return version if created else None



class VersionInUse(Exception):
    """The version is used by an evaluation that has not ended."""


def delete_version(version: ImageVersion) -> None:
    """Delete a pushed version from the platform and the registry; refused while an active evaluation uses it.

    Finished evaluations keep their record of the digest (their effective config); the workload rows keep
    pointing at the version, so it is only hidden (probe status ``deleted``) when any workload references it.
    """
    import urllib.request


    in_use = Workload.objects.filter(evaluation__status__in=ACTIVE_STATUSES).filter(
        models_Q(model_version=version) | models_Q(env_version=version)
    )
    if in_use.exists():
        ids = sorted({w.evaluation.public_id for w in in_use.select_related("evaluation")[:5]})
        raise VersionInUse(f"{version.repository.path}@{version.digest} is used by running evaluations: {', '.join(ids)}")
    repo = version.repository
    # The platform holds the signing key, so it grants itself the delete scope for this one request
    # (users never get it from the token endpoint: deletion goes through this check).
    token = _sign("rlmesh-platform", [{"type": "repository", "name": repo.path, "actions": ["delete"]}], ttl=60)
    req = urllib.request.Request(f"http://{settings.RLMESH_REGISTRY_HOST}/v2/{repo.path}/manifests/{version.digest}",
                                 method="DELETE", headers={"Authorization": f"Bearer {token}"})
    try:
        urllib.request.urlopen(req, timeout=10)
    except Exception:  # noqa: BLE001 - an unreachable registry must not keep a record the user deleted
        pass
    with transaction.atomic():
        referenced = Workload.objects.filter(models_Q(model_version=version) | models_Q(env_version=version)).exists()
        # A model car's checkpoint stops counting in the storage quota (services.model_cars).
        lerobot = ImageVersion.objects.select_for_update().filter(pk=version.pk).values_list("lerobot", flat=True).first() or {}
        if lerobot.get("storedBytes"):
            Organization.objects.filter(slug=repo.namespace).update(storage_bytes=models_F("storage_bytes") - int(lerobot["storedBytes"]))
            ImageVersion.objects.filter(pk=version.pk).update(lerobot={**lerobot, "storedBytes": 0})
        if repo.current_version_id == version.pk:
            repo.current_version = None
            repo.save(update_fields=["current_version"])
        if referenced:
            ImageVersion.objects.filter(pk=version.pk).update(probe_status=ProbeStatus.DELETED, tags=[])
        else:
            version.delete()
