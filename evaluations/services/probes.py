"""Probe a pushed image version before anyone may use it.

Pull it, read its config and ``dev.rlmesh.describe`` label, apply the admission rules of
spec/PLATFORM_API.md §7 that can be checked on the config, start it with the isolation profile, check it
serves the kind it claims (an env answers the rlmesh env handshake; a model does not), smoke-test an env
(reset + one step) or a spec'd model (one predict on an observation synthesized from its spec), record its scenario catalog, and end ``passed`` or ``failed`` with a log a user can act on.
"""

from __future__ import annotations

import json
import logging

import numpy as np

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ..choices import ProbeStatus
from ..domain.outcomes import SUCCESS_LABEL, criterion_problems
from ..domain.text import nul_free
from ..models import ImageRepository, ImageVersion
from .. import dispatch
from ..runtime import RuntimeBackendError, ServerSpec
from .model_cars import LABEL as MODEL_CAR_LABEL
from .model_cars import CheckpointRefused, folder_spec, inspect_folder, label_path, materialize

__all__ = ["ProbeFailed", "probe_version", "queue_probe"]

logger = logging.getLogger(__name__)


class ProbeFailed(Exception):
    """The image may not be used; ``str()`` is the reason shown to the user."""


def _describe_label(labels: dict, log: list[str]) -> dict:
    raw = labels.get("dev.rlmesh.describe")
    if raw is None:
        log.append("skip  no dev.rlmesh.describe label: kind and catalog come from the served peer")
        return {}
    try:
        envelope = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProbeFailed(f"label dev.rlmesh.describe is not JSON ({exc.msg})") from None
    if not isinstance(envelope, dict):
        raise ProbeFailed("label dev.rlmesh.describe is not a JSON object")
    if envelope.get("schema_version") != 1:
        raise ProbeFailed(f"label dev.rlmesh.describe has schema_version {envelope.get('schema_version')!r}, expected 1")
    if envelope.get("kind") not in ("env", "model"):
        raise ProbeFailed(f"label dev.rlmesh.describe has kind {envelope.get('kind')!r}, expected env or model")
    runtime_os = (envelope.get("runtime") or {}).get("os")
    if runtime_os not in (None, "linux"):
        raise ProbeFailed(f"label dev.rlmesh.describe was generated on {runtime_os}; bake it inside the image")
    if envelope["kind"] == "env" and "env_tags" not in envelope:
        raise ProbeFailed("env label dev.rlmesh.describe has no env_tags")
    if envelope["kind"] == "env" and isinstance(envelope.get("env_spec"), dict) and "error" in envelope["env_spec"]:
        raise ProbeFailed(f"env_spec of the label reports an error: {envelope['env_spec']['error']}")
    _admission_checks(labels, log)
    log.append(f"ok    dev.rlmesh.describe label: kind {envelope['kind']}, target {(envelope.get('target') or {}).get('entrypoint')}")
    return envelope


def _admission_checks(labels: dict, log: list[str]) -> None:
    """rlmesh's own label admission rules (the ones ``rlmesh check-image`` applies, PLATFORM_API.md §7): tags or a
    spec that do not resolve even against themselves, error badges, edition mismatches.

    One deliberate difference: an env without adapter tags is admitted with a warning, because spec-less models
    (all of classic control) take its raw observation; pairing it with a spec'd model is refused at submit.
    """
    from rlmesh._describe import check_labels

    report = check_labels({"dev.rlmesh.describe": labels["dev.rlmesh.describe"]})
    for line in report.warnings:
        log.append(f"warn  {line}")
    failed = []
    for line in report.failed:
        if "declares no tags" in line:
            log.append(f"warn  {line}; only models without a model_spec can run on it")
        else:
            failed.append(line)
    if failed:
        raise ProbeFailed("; ".join(failed))


def _package_checkpoints(labels: dict, log: list[str]) -> dict:
    """Checkpoints declared by the ``dev.rlmesh.package`` label: ``{name: {"load": {...}, "scenarios": [...]}}``."""
    raw = labels.get("dev.rlmesh.package")
    if raw is None:
        return {}
    try:
        package = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProbeFailed(f"label dev.rlmesh.package is not JSON ({exc.msg}); the platform will ignore the label") from None
    if not isinstance(package, dict) or package.get("schemaVersion") != 1 or not isinstance(package.get("checkpoints", {}), dict):
        raise ProbeFailed("label dev.rlmesh.package is malformed (schemaVersion must be 1, checkpoints an object)")
    checkpoints = {}
    for name, entry in package.get("checkpoints", {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("load", {}), dict):
            raise ProbeFailed(f"checkpoint {name!r} of dev.rlmesh.package is malformed")
        checkpoints[name] = {"load": entry.get("load", {}), **({"scenarios": entry["scenarios"]} if isinstance(entry.get("scenarios"), list) else {})}
    log.append(f"ok    dev.rlmesh.package: checkpoints {', '.join(checkpoints) or 'none'}")
    return checkpoints


def _success_label(labels: dict, log: list[str]) -> dict:
    """The ``dev.rlmesh.platform.success`` label: success criteria by scenario id (``"*"``: every task). Raises
    ProbeFailed when it is not a JSON object of valid criteria (the image then says something the platform cannot
    apply)."""
    raw = labels.get(SUCCESS_LABEL)
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProbeFailed(f"label {SUCCESS_LABEL} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ProbeFailed(f'label {SUCCESS_LABEL} must be a JSON object {{"<scenario id>": {{"kind": …}}, "*": …}}')
    for key, criterion in value.items():
        problems = criterion_problems(criterion)
        if problems:
            sub, message = problems[0]
            raise ProbeFailed(f"label {SUCCESS_LABEL}: {key}{sub} {message}")
    log.append(f"ok    {SUCCESS_LABEL}: criteria for {', '.join(value) or 'nothing'}")
    return value


def scenario_catalog(envelope: dict, labels: dict, log: list[str]) -> list[dict]:
    """The scenario catalog to record from a describe envelope's variants: id, name, params and — when the env
    declares one — ``success``, from the image's ``dev.rlmesh.platform.success`` label, else the variant's own
    metadata (``rlmesh.Variant(..., success={...})``; an unusable one is ignored with a warning)."""
    by_label = _success_label(labels, log)
    scenarios, declared = [], 0
    for v in ((envelope.get("variants") or {}).get("catalog")) or []:
        if not isinstance(v, dict) or not v.get("id"):
            continue
        meta = v.get("metadata") or {}
        entry = {"id": v["id"], "name": meta.get("name", v["id"]), "params": v.get("params", {})}
        criterion = by_label.get(v["id"], meta.get("success"))
        if criterion is not None and criterion_problems(criterion):
            sub, message = criterion_problems(criterion)[0]
            log.append(f"warn  scenario {v['id']}: success criterion ignored: success{sub} {message}")
        elif criterion is not None:
            entry["success"] = dict(criterion)
            declared += 1
        scenarios.append(entry)
    unknown = set(by_label) - {s["id"] for s in scenarios} - {"*"}
    if unknown:
        log.append(f"warn  {SUCCESS_LABEL} names scenarios the catalog does not have: {', '.join(sorted(unknown))}")
    if scenarios:
        undefined = len(scenarios) - declared
        log.append(f"{'ok  ' if not undefined or '*' in by_label else 'warn'}  success criteria: {declared} of "
                   f"{len(scenarios)} scenarios declare one" + (f" ({undefined} without: their success is undefined "
                   "unless the env reports info[\"success\"])" if undefined and "*" not in by_label else ""))
    return scenarios


def _claimed_kind(config: dict, envelope: dict) -> str | None:
    if envelope.get("kind"):
        return envelope["kind"]
    command = " ".join((config.get("Entrypoint") or []) + (config.get("Cmd") or []))
    if "rlmesh.serve" in command:
        return "env" if "--env" in command else "model"
    return None


def _served_target(command: list[str]) -> str | None:
    """The ``module:Class`` that ``python -m rlmesh.serve`` is given in the image's command, if any."""
    if "rlmesh.serve" not in command:
        return None
    args = command[command.index("rlmesh.serve") + 1 :]
    if "--env" in args and args.index("--env") + 1 < len(args):
        return args[args.index("--env") + 1]
    return next((a for a in args if ":" in a and not a.startswith("-")), None)


def _serves_env(address: str) -> bool:
    import rlmesh

    try:
        rlmesh.RemoteEnv(address, connect_timeout_seconds=3.0).close()
        return True
    except ConnectionError:
        return False


def _smoke_env(address: str, log: list[str]) -> None:
    import rlmesh

    env = rlmesh.numpy.RemoteEnv(address, connect_timeout_seconds=5, request_timeout_seconds=30)
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        env.step(env.action_space.sample())
        log.append(f"ok    smoke test: reset + one step (observation {env.observation_space}, action {env.action_space})")
    except Exception as exc:  # noqa: BLE001 - the env's own error is the reason
        raise ProbeFailed(f"smoke test failed: {type(exc).__name__}: {exc}") from None
    finally:
        env.close()


def _smoke_model(address: str, spec: dict, log: list[str]) -> None:
    """One predict through the served model's own adapter, on an observation synthesized from its spec: a
    stand-in env offering exactly the declared inputs is served on loopback next to the probe."""
    import rlmesh

    from ..planning.adapters import SpaceUnreadable, synthetic_env_from_spec

    try:
        env, tags = synthetic_env_from_spec(spec)
    except SpaceUnreadable as exc:
        log.append(f"skip  predict smoke test: cannot synthesize an observation from the spec ({exc})")
        return
    server = rlmesh.EnvServer(env, "127.0.0.1:0", tags=tags)
    server.start()
    try:
        remote_env = rlmesh.numpy.RemoteEnv(server.address, connect_timeout_seconds=5, request_timeout_seconds=30)
        model = rlmesh.numpy.RemoteModel(address, connect_timeout_seconds=10, request_timeout_seconds=60)
        with rlmesh.session(model, remote_env, close_env=True) as session:
            observation, _ = session.reset(seed=0)
            action = np.asarray(session.predict(observation))
    except Exception as exc:  # noqa: BLE001 - the model's own error is the reason
        raise ProbeFailed(f"predict smoke test failed: {type(exc).__name__}: {exc}") from None
    finally:
        server.shutdown()
    expected = env.action_space.shape
    if action.shape != expected:
        raise ProbeFailed(f"predict smoke test: the model returned an action of shape {list(action.shape)}, "
                          f"its spec declares {list(expected)}")
    log.append(f"ok    predict smoke test: one predict on an observation synthesized from the spec "
               f"(inputs {', '.join(env.observation_space.spaces)}; action shape {list(expected)})")


def _inspect(version: ImageVersion, log: list[str], found: dict) -> None:
    """Pull the image and check what its config and labels claim: platform, describe label, checkpoints, the kind it
    serves, the target its label describes. Fills ``found`` (``kind``, ``envelope``, ``labels``, ``checkpoints``,
    ``scenarios``) as it learns them, so a failed probe still records what it read; raises ProbeFailed."""
    from ..runtime.docker import client, pull

    repo = version.repository
    image = version.source.removeprefix("oci://")
    try:
        pull(image)
    except RuntimeBackendError as exc:
        raise ProbeFailed(str(exc)) from None
    c = client()
    try:
        attrs = c.images.get(image).attrs
    finally:
        c.close()
    config = attrs.get("Config") or {}
    os_, arch = attrs.get("Os"), attrs.get("Architecture")
    if os_ and arch and (os_, arch) != ("linux", "amd64"):
        raise ProbeFailed(f"image is {os_}/{arch}; build with --platform linux/amd64")
    log.append(f"ok    platform {os_}/{arch}")
    labels = found["labels"] = config.get("Labels") or {}
    try:
        found["model_car"] = label_path(labels)
    except CheckpointRefused as exc:
        raise ProbeFailed(str(exc)) from None
    if found["model_car"]:
        log.append(f"ok    label {MODEL_CAR_LABEL}: a LeRobot checkpoint at {found['model_car']} (a model car: the image "
                   "is read, never run)")
        if repo.kind == "env":
            raise ProbeFailed(f"{repo.path} holds env images; a LeRobot checkpoint is a model")
        found["kind"] = "model"
        return
    envelope = found["envelope"] = _describe_label(labels, log)
    found["checkpoints"] = _package_checkpoints(labels, log)
    kind = _claimed_kind(config, envelope)
    served_target = _served_target((config.get("Entrypoint") or []) + (config.get("Cmd") or []))
    label_target = (envelope.get("target") or {}).get("entrypoint")
    if served_target and label_target and served_target != label_target:
        raise ProbeFailed(f"label dev.rlmesh.describe describes {label_target} but the image serves {served_target}; regenerate the label")
    if repo.kind and kind and kind != repo.kind:
        raise ProbeFailed(f"{repo.path} holds {repo.kind} images; this one is labelled {kind}")
    found["scenarios"] = scenario_catalog(envelope, labels, log)
    found["kind"] = kind or repo.kind or None


def _serve_and_smoke_test(version: ImageVersion, found: dict, log: list[str]) -> str:
    """Start the image with the isolation profile, check it serves the kind it claims, smoke-test it; return the kind
    it serves. Raises ProbeFailed. The container is always removed."""
    from ..runtime.docker import DockerRuntime

    kind, scenarios, envelope = found["kind"], found["scenarios"], found["envelope"]
    # Readiness by TCP only ("image" is neither env nor model): whether it really serves what it claims is
    # checked next, with a clear message instead of a readiness timeout.
    spec = ServerSpec("image", version.source, dict(scenarios[0]["params"]) if scenarios and kind == "env" else {})
    try:
        server = DockerRuntime().start(spec, name=f"probe-{version.pk}", labels={"dev.rlmesh.platform.probe": str(version.pk)})
    except RuntimeBackendError as exc:
        raise ProbeFailed(f"{exc}" + (f"; last output:\n{exc.log_tail}" if exc.log_tail else "")) from None
    try:
        log.append(f"ok    started with the isolation profile; listening after {server.ready_seconds:.2f} s")
        served = "env" if _serves_env(server.address) else "model"
        if kind and served != kind:
            raise ProbeFailed(f"the image serves a{'n' if served == 'env' else ''} {served} where a{'n' if kind == 'env' else ''} {kind} is expected")
        log.append(f"ok    serves an rlmesh {served}")
        if served == "env":
            _smoke_env(server.address, log)
        elif not envelope.get("model_spec"):
            log.append("warn  the model declares no model_spec: predict is smoke-tested when it first runs against an env")
        else:
            _smoke_model(server.address, envelope["model_spec"], log)
        return served
    finally:
        server.stop()


def _probe_model_car(version: ImageVersion, found: dict, log: list[str]) -> None:
    """Read the checkpoint out of a model-car image, inspect it as an installed checkpoint is inspected, check it fits
    the organization's storage quota, and load it in the platform's LeRobot model server (one load, then stopped).
    Fills ``found["lerobot"]``; raises ProbeFailed naming what is refused or missing."""
    from ..models import Organization
    from ..runtime import backend_for

    path = found["model_car"]
    try:
        folder = materialize(version.source.removeprefix("oci://"), version.digest, path)
    except CheckpointRefused as exc:
        raise ProbeFailed(f"the LeRobot checkpoint at {path}: {exc}") from None
    except RuntimeBackendError as exc:
        raise ProbeFailed(str(exc)) from None
    report = inspect_folder(folder)
    log.append(f"ok    read {path} out of the image: type {report['type']}, inputs "
               f"{', '.join(f'{k} {v}' for k, v in report['inputs'].items()) or 'none'}; {report['sha256']}")
    if report["problem"]:
        raise ProbeFailed(f"the LeRobot checkpoint at {path}: {report['problem']}")
    previous = ImageVersion.objects.filter(pk=version.pk).values_list("lerobot", flat=True).first() or {}
    counted = int(previous.get("storedBytes") or 0)
    organization = Organization.objects.get(slug=version.repository.namespace)
    if version.size - counted > organization.storage_left():
        raise ProbeFailed(f"the checkpoint image takes {version.size} bytes but the organization has "
                          f"{max(organization.storage_left(), 0)} bytes of its storage quota left "
                          "(RLMESH_ORG_STORAGE_QUOTA_BYTES): delete older versions or uploads")
    spec = folder_spec(folder, {"sha256": report["sha256"]})
    try:
        server = backend_for(spec.source).start(spec, name=f"probe-{version.pk}")
    except RuntimeBackendError as exc:
        raise ProbeFailed(f"the LeRobot model server could not load it: {exc}"
                          + (f"; last output:\n{exc.log_tail}" if exc.log_tail else "")) from None
    server.stop()
    log.append(f"ok    loaded by the LeRobot model server in {server.ready_seconds:.2f} s")
    found["lerobot"] = {"path": path, **{k: report[k] for k in ("type", "inputs", "outputs", "sha256")},
                        "storedBytes": version.size}


def probe_version(version_id: int) -> str | None:
    """Probe one version (queued, failed or passed: a re-probe); return the final status, or None if another
    probe holds it."""
    with transaction.atomic():
        claimed = ImageVersion.objects.filter(pk=version_id).exclude(probe_status=ProbeStatus.PROBING).update(
            probe_status=ProbeStatus.PROBING)
    if not claimed:
        return None
    version = ImageVersion.objects.select_related("repository").get(pk=version_id)
    log: list[str] = [f"probing {version.repository.path}@{version.digest}"]
    status = ProbeStatus.FAILED
    found = {"kind": None, "envelope": {}, "labels": {}, "checkpoints": {}, "scenarios": [], "model_car": None,
             "lerobot": {}}
    try:
        _inspect(version, log, found)
        if found["model_car"]:
            _probe_model_car(version, found, log)
        else:
            found["kind"] = _serve_and_smoke_test(version, found, log)
        if found["scenarios"]:
            ids = [s["id"] for s in found["scenarios"]]
            log.append(f"ok    scenario catalog: {len(ids)} scenarios ({', '.join(ids[:5])}{'…' if len(ids) > 5 else ''})")
        status = ProbeStatus.PASSED
    except ProbeFailed as exc:
        log.append(f"FAIL  {exc}")
    except Exception as exc:  # noqa: BLE001 - a probe must always end with a readable status
        logger.exception("probe of version %s crashed", version_id)
        log.append(f"FAIL  probe error: {type(exc).__name__}: {exc}")
    log.append(f"result: {status}")
    _record_probe(version, status, log, found)
    return status


def _record_probe(version: ImageVersion, status: str, log: list[str], found: dict) -> None:
    """Write the probe's result; a model car's size counts in its organization's storage quota while it passes (the
    difference to what was counted before: a re-probe counts nothing twice, a failed one gives it back)."""
    from ..models import Organization

    lerobot = found["lerobot"] if status == ProbeStatus.PASSED else {}
    with transaction.atomic():
        before = ImageVersion.objects.select_for_update().filter(pk=version.pk).values_list("lerobot", flat=True).first() or {}
        delta = int(lerobot.get("storedBytes") or 0) - int(before.get("storedBytes") or 0)
        if delta:
            Organization.objects.filter(slug=version.repository.namespace).update(storage_bytes=F("storage_bytes") + delta)
        ImageVersion.objects.filter(pk=version.pk).update(
            lerobot=lerobot,
            probe_status=status, kind=(found["kind"] or "") if status == ProbeStatus.PASSED else "",
            probe_log=nul_free("\n".join(log)), probed_at=timezone.now(),
            describe=nul_free(found["envelope"]), scenarios=nul_free(found["scenarios"]), labels=nul_free(found["labels"]),
            checkpoints=nul_free(found["checkpoints"]),
        )
        if status == ProbeStatus.PASSED and not version.repository.kind:
            ImageRepository.objects.filter(pk=version.repository_id, kind="").update(kind=found["kind"])


def queue_probe(version: ImageVersion) -> None:
    """Mark a version ``queued`` (unless a probe runs right now) and send its probe task on commit.

    Raises ProbeFailed for a deleted version: push it again instead.
    """
    if version.probe_status == ProbeStatus.DELETED:
        raise ProbeFailed("this version was deleted; push it again to use it")
    ImageVersion.objects.filter(pk=version.pk).exclude(probe_status=ProbeStatus.PROBING).update(probe_status=ProbeStatus.QUEUED)
    dispatch.send_probe(version.pk)
