"""Batching an rlmesh model's own batched corner across episodes (issue 36): ``predict_batch`` (or
``predict_chunk_batch``) over the episodes a host runs at once, each row with its own episode context.

**Why not rlmesh's server.** rlmesh 0.1.0 fuses a model's batched corner only for the lanes of one vector session;
the predicts of concurrent sessions run one after the other (tests/prebuilt/lerobot/test_batching.py keeps it), and
each shard drives its own session. So, as for a LeRobot checkpoint (:mod:`.lerobot.inference`), the model is loaded
once, in the host's inference process (:func:`serve`), and each shard runs a thin rlmesh model server
(:func:`thin_model`) that declares the model's spec and framework but loads nothing: rlmesh applies the model's
adapter in the thin server as it would in the model's own, and the thin server hands the model input and the
episode's context to the process.

**What a row carries.** The model input (as rlmesh's engine gives it to ``predict``) and rlmesh's raw context of its
episode: ``{"episode_id", "episode_seed"}``. The process calls the model's batched corner through rlmesh's own
wrapping, so the model's episode store gives each row its ``predict_index``, ``predict_seed`` and ``state`` exactly as
rlmesh's server would; an episode's end (rlmesh calls the thin server's ``on_episode_end``) is passed on, so the
model's own hook runs and its state is dropped.

**A seed still names one episode.** Every pass has ``batch`` rows (:class:`~.lerobot.batching.ChunkBatcher`): the
free rows are copies of the first row's input with an anonymous context (rlmesh's ``episode_id`` ``""``: a context
never stored, so no episode's ``predict_index`` or ``state`` moves). A model that declares a batched corner with
``allow_fusion`` on promises a row-independent forward (rlmesh's own terms), so at a fixed shape an episode's
actions do not depend on its neighbours; measured, not assumed (tests/prebuilt/test_fused.py). A model with
``allow_fusion = False`` (its batched forward assumes one episode's rows) is served one call at a time, through its
single-row ``predict``, and the batch sizes say so (passes of 1 row, ``size`` 1).

Run the process as ``python -m evaluations.prebuilt.fused --target module:Class --address unix:///… --kwargs-json
'{…}'`` (the model's ``load`` kwargs and :data:`BATCH_KWARG` / :data:`WAIT_KWARG`); the thin server as
``rlmesh.serve evaluations.prebuilt.fused:Thin --kwargs-json '{"inference": "unix:///…"}'`` with
:data:`TARGET_ENV` naming the model. The wire and its key are :mod:`.lerobot.remote`'s. No Django, and nothing
but the standard library, numpy and rlmesh: for a pushed image both run in containers of the image, this module and
what it imports mounted read-only (``runtime.docker.FUSED_FILES``; the process's container is started and removed by
``runtime.container_hub``), the model named by :data:`TARGET_KWARG`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading

from .lerobot.batching import STATS_ENV, ChunkBatcher
from .lerobot.remote import InferenceClient

__all__ = ["BATCH_KWARG", "TARGET_ENV", "TARGET_KWARG", "WAIT_KWARG", "FusedModel", "batch_corners", "serve", "thin_model"]

#: The load kwargs the platform adds for a batched rlmesh model (recorded on the workload: the batch shape is part
#: of what fixes an episode's actions); never passed to the model's ``load``. Not identifiers, so no model's
#: parameter can share their names.
BATCH_KWARG = "rlmesh.batch"
WAIT_KWARG = "rlmesh.batchWaitMs"
#: The model's ``module:Class`` in an image (its describe envelope's ``target.qualname``), recorded beside the shape;
#: a trusted source names it in the source itself.
TARGET_KWARG = "rlmesh.target"
#: The environment variable naming the model (``module:Class``) whose thin server :data:`Thin` is.
TARGET_ENV = "RLMESH_FUSED_TARGET"
#: rlmesh's corners that batch across episodes (``describe``'s ``corners``).
BATCH_CORNERS = ("predict_batch", "predict_chunk_batch")
#: rlmesh's context of a row that belongs to no episode: never stored by the model's episode store.
ANONYMOUS = {"episode_id": "", "episode_seed": None}


def batch_corners(describe: dict) -> bool:
    """Whether a model's describe envelope (``rlmesh.describe``) lists a corner that batches across episodes."""
    return any(c in BATCH_CORNERS for c in (describe or {}).get("corners") or ())


def _target(spec: str):
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"a model target is module:Class, not {spec!r}")
    return getattr(importlib.import_module(module), name)


#: The rlmesh frameworks whose model inputs and actions cross the wire (numpy arrays, torch and jax tensors pickle
#: by value); the raw-Value ``rlmesh.Model``'s native tensors do not.
FRAMEWORKS = ("rlmesh.numpy", "rlmesh.torch", "rlmesh.jax")


def _framework(model_class):
    """The rlmesh framework base of ``model_class`` (``rlmesh.numpy.Model``, ``rlmesh.torch.Model`` or
    ``rlmesh.jax.Model``): what fixes how rlmesh decodes a model input and encodes an action. TypeError, saying
    why, for anything else (a policy object rlmesh wraps, a raw-Value model): those are served by ``rlmesh.serve``."""
    for base in getattr(model_class, "__mro__", ()):
        if base.__name__ == "Model" and base.__module__ in FRAMEWORKS:
            return base
    raise TypeError(f"{getattr(model_class, '__qualname__', model_class)} cannot be batched across episodes: only "
                    f"a subclass of {', '.join(f + '.Model' for f in FRAMEWORKS)} is (set RLMESH_MODEL_BATCH=0 to "
                    "serve it with rlmesh.serve)")


class FusedModel:
    """A loaded rlmesh model answering rows from thin servers: :meth:`predict` (one row, batched with the others that
    arrive within ``max_wait``) and :meth:`end` (an episode ended). ``batch`` rows a pass; ``stats_path`` and
    ``peers`` as :class:`~.lerobot.batching.ChunkBatcher`'s."""

    def __init__(self, model, batch: int, max_wait: float, stats_path: str | None = None, peers=None):
        from rlmesh._models.base import accepts_context

        self.model = model
        self.bridge = model._bridge
        fused = model._raw_predict_batch
        #: Why the rows are not batched, or "" when they are.
        self.unbatched = ("the model defines no batched corner" if fused is None else
                          "the model sets allow_fusion = False" if not getattr(model, "allow_fusion", True) else "")
        if self.unbatched:
            self._fn, size, max_wait = model._raw_predict, 1, 0.0
            self._takes_context = accepts_context(self._fn, 1)
            compute = self._one
        else:
            self._fn, size = fused, int(batch)
            self._takes_context = accepts_context(fused, 1)
            compute = self._pass
        self.batcher = ChunkBatcher(compute, size=size, max_wait=max_wait, stats_path=stats_path, peers=peers)
        #: Held by a pass and by an episode's end: the model is never in its forward and its end hook at once.
        self._model_lock = threading.Lock()

    def predict(self, observation, context: dict):
        """The action for one row: ``observation`` the model input, ``context`` rlmesh's raw ``{"episode_id",
        "episode_seed"}`` of its episode."""
        return self.batcher.submit({"observation": observation, "context": dict(context or ANONYMOUS)})

    def end(self, episode_id: str) -> None:
        """Episode ``episode_id`` ended: the model's episode store drops it and the model's own hook runs."""
        with self._model_lock:
            self.model._on_episode_end(episode_id)

    def _one(self, rows: list) -> list:
        row = rows[0]
        with self._model_lock:
            obs = self.model._to_device(row["observation"])
            return [self._fn(obs, row["context"]) if self._takes_context else self._fn(obs)]

    def _pass(self, rows: list) -> list:
        # The batcher fills free rows with the first row itself: those get the anonymous context.
        contexts = [r["context"] if i == 0 or r is not rows[0] else dict(ANONYMOUS) for i, r in enumerate(rows)]
        with self._model_lock:
            fused = self.bridge.tree_stack([self.model._to_device(r["observation"]) for r in rows])
            actions = self._fn(fused, contexts) if self._takes_context else self._fn(fused)
            return self.bridge.tree_unstack(actions, len(rows))


def _responder(fused: FusedModel):
    """The process's responder factory (``lerobot.inference.listen``): one responder per connection, which is one
    thin server's, running one episode at a time. An episode whose end never arrives (its thin server was stopped,
    restarted or cut off) is ended when the connection's next episode starts or the connection closes, so its state
    does not stay in the model for the life of the process; an end is never passed on twice."""
    from .lerobot.inference import IN_FLIGHT

    def make():
        current: list = [None]  # the connection's episode in progress
        ended: list = []  # its latest ends, so a late explicit end is not passed on again

        def end(episode: str) -> None:
            if episode and episode not in ended:
                ended[:] = [*ended[-7:], episode]
                fused.end(episode)

        def respond(request: dict) -> dict:
            if request.get("ping"):
                return {"stalledSeconds": IN_FLIGHT.oldest_seconds()}
            if "end" in request:
                episode = str(request["end"])
                if episode == current[0]:
                    current[0] = None
                end(episode)
                return {}
            episode = str((request.get("context") or {}).get("episode_id") or "")
            if current[0] and episode != current[0]:
                end(current[0])
            current[0] = episode or None
            with IN_FLIGHT:
                return {"action": fused.predict(request["observation"], request.get("context"))}

        respond.closed = lambda: current[0] and end(current[0])
        return respond

    return make


def load(target: str, kwargs: dict):
    """The model ``target`` (``module:Class``, an rlmesh Model subclass) loaded as ``rlmesh.serve`` loads it, with
    ``kwargs`` less the platform's batch keys."""
    from rlmesh._bootstrap.loaders import construct_authored_model

    model_class = _target(target)
    _framework(model_class)
    own = {k: v for k, v in kwargs.items() if k not in (BATCH_KWARG, WAIT_KWARG, TARGET_KWARG)}
    model = construct_authored_model(model_class, **own)
    if getattr(model, "spec", None) is not getattr(model_class, "spec", None):
        # rlmesh adapts with the spec the model holds after load(); the thin servers declare the class's.
        raise TypeError(f"{target} sets its spec in load(): it cannot be batched across episodes (its thin servers "
                        "declare the class's spec); set spec on the class, or RLMESH_MODEL_BATCH=0")
    return model


def serve(target: str, address: str, kwargs: dict) -> None:
    """Load ``target`` with ``kwargs`` (:func:`load`), then answer the thin servers at ``address`` forever."""
    from .lerobot.inference import CONNECTIONS, listen

    fused = FusedModel(load(target, kwargs), batch=int(kwargs.get(BATCH_KWARG, 1)),
                       max_wait=float(kwargs.get(WAIT_KWARG, 10.0)) / 1000, stats_path=os.environ.get(STATS_ENV),
                       peers=CONNECTIONS)
    how = (f"one call at a time: {fused.unbatched}" if fused.unbatched else
           f"batch {fused.batcher.size}, wait {fused.batcher.max_wait * 1000:g} ms")
    print(f"inference process ready at {address} ({target}, {how})", flush=True)
    listen(address, _responder(fused))


def thin_model(target: str):
    """The thin server's model class for ``target``: the target's rlmesh framework, ``spec`` and workflow edition,
    no weights; ``load(inference)`` connects to the host's inference process, ``predict(observation, context)``
    asks it for the row's action, ``on_episode_end`` tells it."""
    model_class = _target(target)

    def load(self, inference: str) -> None:
        self.client = InferenceClient(inference)

    def predict(self, observation, context=None):
        raw = ({"episode_id": context.get("episode_id") or "", "episode_seed": context.get("episode_seed")}
               if context else ANONYMOUS)
        return self.client.request({"observation": observation, "context": raw})["action"]

    def on_episode_end(self, episode_id: str = "") -> None:
        if episode_id and getattr(self, "client", None) is not None:
            self.client.request({"end": episode_id})

    return type(f"Thin{model_class.__name__}", (_framework(model_class),), {
        "__module__": __name__, "spec": model_class.spec,
        "workflow_edition": getattr(model_class, "workflow_edition", None),
        "load": load, "predict": predict, "on_episode_end": on_episode_end,
    })


def __getattr__(name: str):
    """``Thin``: the thin server's model class for :data:`TARGET_ENV`'s model (what ``rlmesh.serve`` loads)."""
    if name == "Thin":
        target = os.environ.get(TARGET_ENV, "")
        if not target:
            raise AttributeError(f"{TARGET_ENV} is not set: the platform starts thin servers with the model it serves")
        return thin_model(target)
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="module:Class of the rlmesh model")
    parser.add_argument("--address", required=True, help="unix:///path/inference.sock")
    parser.add_argument("--kwargs-json", default="{}", help="the model's load kwargs and the batch shape")
    args = parser.parse_args(argv)
    serve(args.target, args.address, json.loads(args.kwargs_json))


if __name__ == "__main__":
    sys.exit(main())
