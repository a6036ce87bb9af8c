"""Step 4 of planning: every model × task pair must be able to run before any rollout — a checkpoint that declares
its scenarios runs only there, a model labelled for some envs only acts there, and a model with a ``model_spec``
must resolve an rlmesh adapter against the env's recorded tags and spaces (:mod:`evaluations.planning.adapters`)."""

from __future__ import annotations

from ..prebuilt.catalog import ENVS_LABEL
#: The env a LeRobot checkpoint acts in (its features are LIBERO's: ``prebuilt.lerobot.policy``).
LIBERO_ENV = "prebuilt/libero"
from .adapters import adapter_problem
from .parse import model_path
from .plan import PlannedModel, PlannedTask

__all__ = ["pair_problem", "compatibility_errors", "compatibility_warnings"]


def pair_problem(model: PlannedModel, task: PlannedTask, j: int, adapters: dict) -> str | None:
    """Why ``model`` cannot run ``task`` (tasks[j]), or None. ``adapters`` caches adapter resolution per
    (model version, env version) pair."""
    image, env = model.image, task.env
    if image.scenarios is not None and task.task_id not in image.scenarios:
        return (f'{image.reference} is incompatible with tasks[{j}] ({env.reference} {task.task_id}): '
                f'it was trained for {", ".join(image.scenarios)}')
    if image.version.lerobot and env.version.repository.path != LIBERO_ENV:
        return (f"{image.reference} is a LeRobot checkpoint ({image.version.lerobot.get('type')}): it acts only in "
                f"{LIBERO_ENV}; tasks[{j}].env is {env.reference}")
    allowed = (image.version.labels or {}).get(ENVS_LABEL)
    if allowed and env.version.repository.path not in allowed.split(","):
        return f"{image.reference} acts only in {allowed.replace(',', ', ')}; tasks[{j}].env is {env.reference}"
    if (image.version.describe or {}).get("model_spec"):
        key = (image.version.pk, env.version.pk)
        if key not in adapters:
            adapters[key] = adapter_problem(image.version.describe, env.version.describe)
        if adapters[key]:
            return f"{image.reference} cannot be adapted to tasks[{j}].env ({env.reference} {task.task_id}): {adapters[key]}"
    return None


def compatibility_errors(data: dict, models: list[PlannedModel | None], tasks: list[PlannedTask]) -> list[dict]:
    """A field error on the model's path for every pair that cannot run (models that did not resolve are skipped)."""
    errors: list[dict] = []
    adapters: dict = {}
    for i, model in enumerate(models):
        if model is None:
            continue
        for j, task in enumerate(tasks):
            problem = pair_problem(model, task, j, adapters)
            if problem:
                errors.append({"path": model_path(data, i), "message": problem})
    return errors


def compatibility_warnings(data: dict, models: list[PlannedModel | None], tasks: list[PlannedTask]) -> list[str]:
    """What cannot be decided before the first predict but will fail if the image did not plan for it: a pushed model
    without a ``model_spec`` on an env that publishes adapter tags runs only if it declares ``spec=NO_ADAPTER`` (rlmesh
    refuses ``spec=None`` there; the describe envelope records neither). Prebuilt models declare it."""
    warnings = []
    for i, model in enumerate(models):
        if model is None or not model.image.version.source.startswith("oci://") or model.image.version.lerobot:
            continue
        if (model.image.version.describe or {}).get("model_spec"):
            continue
        tagged = sorted({t.env.reference for t in tasks if (t.env.version.describe or {}).get("env_tags")})
        if tagged:
            warnings.append(f"{model_path(data, i)}: {model.image.reference} declares no model_spec and {', '.join(tagged)} "
                            "publishes adapter tags: rlmesh serves it there only if the model declares spec=NO_ADAPTER "
                            "(it reads the raw observation); otherwise every episode errors")
    return warnings
