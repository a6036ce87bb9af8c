"""LIBERO env servers that hold less and start fast (issue 26): a server forked from the zygote runs the episodes a
freshly started server runs (same trajectory digests), is ready in under 2 s and adds little private memory; a
state-only env gives back its build memory; the describe builds answered with spaces have the spaces a built env
has, and a fresh server builds one env, not three. Runs for real in ``.venv-libero``; the worker's side of the
zygote (which servers it forks, the fallback to a fresh start) with test doubles."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.libero import LIBERO_PYTHON, run_json_in_libero

ROOT = Path(__file__).resolve().parents[3]

# libero_spatial/4 (a seeded fixture placement and a drawer sampler, see test_libero_reset), privileged for the
# expert, no cameras: what the planner asks for the expert. The fresh server is today's start: a new interpreter,
# RLMESH_LIBERO_LEAN=0 (the render context opened at construction, the build memory kept, and robosuite's two
# mj_forward per physics substep, libero/stepping.py): its episodes are the reference the forked servers must repeat.
_SCRIPT = """
    import hashlib, json, os, re, socket, subprocess, sys, tempfile, time
    import numpy as np, rlmesh
    from evaluations.domain.trajectory import TrajectoryDigest
    from evaluations.prebuilt.libero.expert.model import LiberoExpert
    from evaluations.prebuilt.libero.memory import resident

    STEPS, SEEDS = 40, [10, 60, 11]
    KWARGS = {"suite": "libero_spatial", "task_index": 4, "cameras": "none", "privileged": True}
    ARGS = ["--env", "evaluations.prebuilt.libero:Libero", "--kwargs-json", json.dumps(KWARGS)]
    tmp = tempfile.mkdtemp(prefix="rlm-zyg-test-")
    env = {**os.environ, "RLMESH_LIBERO_ZYGOTE_IDLE_SECONDS": "60", "OPENBLAS_NUM_THREADS": "1"}
    me = [os.getpid(), int(open(f"/proc/{os.getpid()}/stat").read().rsplit(")", 1)[1].split()[19])]

    def ready(addr):
        while True:
            try:
                rlmesh.numpy.RemoteEnv(addr, connect_timeout_seconds=1).close()
                return
            except Exception:
                time.sleep(0.05)

    def fork(name):
        addr = f"unix://{tmp}/{name}.sock"
        t0 = time.monotonic()
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(f"{tmp}/zygote.sock")
            f = s.makefile("rw")
            f.write(json.dumps({"args": [*ARGS, "--address", addr], "env": env, "log": f"{tmp}/{name}.log",
                                "cwd": os.getcwd(), "worker": me}) + "\\n")
            f.flush()
            pid = json.loads(f.readline())["pid"]
        ready(addr)
        return pid, addr, time.monotonic() - t0

    def episodes(addr, seeds):
        policy, out = LiberoExpert().predict, {}
        remote = rlmesh.numpy.RemoteEnv(addr)
        for seed in seeds:
            digest = TrajectoryDigest()
            obs, _ = remote.reset(seed=seed)
            for _ in range(STEPS):
                action = np.asarray(policy(obs), dtype=np.float32)
                nxt, reward, term, trunc, _ = remote.step(action)
                digest.step(obs, action, reward, term, trunc)
                obs = nxt
                if term or trunc:
                    break
            out[seed] = digest.hexdigest()
        remote.close()
        return out

    zygote = subprocess.Popen([sys.executable, "-m", "evaluations.prebuilt.libero.zygote", f"{tmp}/zygote.sock"],
                              env=env, start_new_session=True, stdout=open(f"{tmp}/zygote.log", "w"), stderr=subprocess.STDOUT)
    while not os.path.exists(f"{tmp}/zygote.sock"):
        time.sleep(0.1)
    fresh_addr = f"unix://{tmp}/fresh.sock"
    fresh = subprocess.Popen([sys.executable, "-m", "rlmesh.serve", *ARGS, "--address", fresh_addr],
                             env={**env, "RLMESH_LIBERO_LEAN": "0"}, stdout=open(f"{tmp}/fresh.log", "w"),
                             stderr=subprocess.STDOUT, start_new_session=True)
    out = {}
    try:
        first = fork("first")  # the zygote builds the task first
        second = fork("second")
        ready(fresh_addr)
        out["ready_s"] = [first[2], second[2]]
        ref = episodes(fresh_addr, SEEDS)
        out["distinct"] = len(set(ref.values()))
        out["first_equal"] = episodes(first[1], SEEDS) == ref
        out["second_equal"] = episodes(second[1], list(reversed(SEEDS))) == ref  # another order
        out["mem"] = {"fresh": resident(fresh.pid), "zygote": resident(zygote.pid), "first": resident(first[0]),
                      "second": resident(second[0])}
        count = lambda name: len(re.findall(r"Applying task order", open(f"{tmp}/{name}.log").read()))
        out["builds"] = {"fresh": count("fresh"), "second": count("second")}
        out["adopted"] = "forked from the LIBERO zygote" in open(f"{tmp}/second.log").read()
        out["cmdline"] = open(f"/proc/{second[0]}/cmdline").read().replace("\\0", " ")
        for pid in (first[0], second[0]):
            os.killpg(pid, 15)
    finally:
        fresh.terminate()
        zygote.terminate()

    # in-process: a state-only env without its build memory and render context, whose render() opens one that draws
    # what an eager one draws (in its own process: robosuite renders on the current GL context, the last one made);
    # the describe-only spaces equal a built env's
    from evaluations.prebuilt.libero import Libero
    from evaluations.prebuilt.libero.describe import LiberoSpaces
    from evaluations.prebuilt.libero.episodes import CAMERAS

    FRAMES = (
        "import hashlib, json, numpy as np\\n"
        "from evaluations.prebuilt.libero import Libero\\n"
        "e = Libero().make(suite='libero_spatial', task_index=4, cameras='none')\\n"
        "e.reset(seed=10)\\n"
        "h = [hashlib.sha256(e.render().tobytes()).hexdigest()]\\n"
        "for _ in range(5):\\n"
        "    e.step(np.zeros(7, np.float32)); h.append(hashlib.sha256(e.render().tobytes()).hexdigest())\\n"
        "print(json.dumps({'frames': h, 'context': e._env.sim._render_context_offscreen is not None}))\\n")
    eager = subprocess.run([sys.executable, "-c", FRAMES], env={**env, "RLMESH_LIBERO_LEAN": "0"},
                           capture_output=True, text=True, check=True)
    eager = json.loads(eager.stdout.strip().splitlines()[-1])
    before = resident()["rss"]
    lean = Libero().make(suite="libero_spatial", task_index=4, cameras="none")
    out["lean_added"] = resident()["rss"] - before
    out["lean_context_before_render"] = lean._env.sim._render_context_offscreen is not None
    lean.reset(seed=10)
    frames = [hashlib.sha256(lean.render().tobytes()).hexdigest()]
    for _ in range(5):
        lean.step(np.zeros(7, np.float32))
        frames.append(hashlib.sha256(lean.render().tobytes()).hexdigest())
    out["frames_equal"] = frames == eager["frames"]
    out["eager_context"] = eager["context"]
    out["spaces_equal"] = LiberoSpaces(CAMERAS["none"]).observation_space == lean.observation_space
    print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def measured() -> dict:
    if not LIBERO_PYTHON.exists():
        pytest.skip(f"{LIBERO_PYTHON} does not exist: run `bash scripts/setup-libero.sh`")
    out = run_json_in_libero(_SCRIPT, timeout=1200)
    print(json.dumps(out))
    return out


@pytest.mark.slow
def test_a_forked_server_runs_the_episodes_a_fresh_server_runs(measured):
    assert measured["distinct"] == 3
    assert measured["first_equal"] is True and measured["second_equal"] is True
    assert measured["adopted"] is True  # it served the zygote's env, not one it built
    # ps shows the server it is, as for a forkserver's child, not the zygote it was forked from
    assert "-m rlmesh.serve --env evaluations.prebuilt.libero:Libero" in measured["cmdline"], measured["cmdline"]
    assert "zygote" not in measured["cmdline"]


@pytest.mark.slow
def test_a_forked_server_is_ready_in_under_2_s_and_adds_little_memory(measured):
    assert measured["ready_s"][1] < 2.0, measured["ready_s"]
    mem = measured["mem"]
    gib = 2**30
    assert mem["fresh"]["rss"] > 1.5 * gib  # today's start: the build memory kept
    assert mem["zygote"]["rss"] < 1.0 * gib
    for name in ("first", "second"):  # after three episodes: only the pages it wrote are its own
        assert mem[name]["uss"] < 0.2 * gib, mem
        assert mem[name]["pss"] < 0.6 * gib, mem


@pytest.mark.slow
def test_a_lean_server_builds_no_env_to_describe_itself(measured):
    # rlmesh's describe builds an env per other cameras branch (2) on the old path; the forked server (the lean
    # path) answers them with LiberoSpaces and adopts its env: no build at all
    assert measured["builds"] == {"fresh": 3, "second": 0}


@pytest.mark.slow
def test_a_state_only_env_holds_under_1_gb_and_renders_what_an_eager_one_renders(measured):
    assert measured["lean_added"] < 0.9 * 2**30
    assert measured["lean_context_before_render"] is False
    assert measured["frames_equal"] is True
    assert measured["eager_context"] is True  # RLMESH_LIBERO_LEAN=0: opened at construction, as before
    assert measured["spaces_equal"] is True


# ------------------------------------------------------------------ the worker's side (test doubles)
def _spec(**kwargs):
    from evaluations.runtime.base import ServerSpec

    return ServerSpec("env", "python+libero://evaluations.prebuilt.libero:Libero", kwargs)


@pytest.mark.parametrize(("kwargs", "forked"), [
    ({"suite": "libero_object", "task_index": 0, "cameras": "none"}, True),
    ({"suite": "libero_object", "task_index": 0, "cameras": "none", "privileged": True}, True),
    ({"suite": "libero_object", "task_index": 0, "cameras": "both"}, False),
    ({"suite": "libero_object", "task_index": 0}, False),  # cameras default to both
    ({"suite": "libero_object", "task_index": 0, "cameras": "none", "hard_reset": True}, False),
])
def test_only_state_only_soft_reset_libero_envs_are_forked(settings, kwargs, forked):
    from evaluations.runtime import zygote

    python = settings.RLMESH_PYTHON_ENVS["libero"]
    assert zygote.serves(_spec(**kwargs), python, "evaluations.prebuilt.libero:Libero") is forked
    settings.RLMESH_LIBERO_FORKSERVER = False
    assert zygote.serves(_spec(**kwargs), python, "evaluations.prebuilt.libero:Libero") is False


def test_the_old_memory_path_is_not_forked(monkeypatch):
    from evaluations.prebuilt.libero.adopt import forkable

    kwargs = {"suite": "libero_object", "task_index": 0, "cameras": "none"}
    assert forkable(kwargs)
    monkeypatch.setenv("RLMESH_LIBERO_LEAN", "0")
    assert not forkable(kwargs)
    monkeypatch.delenv("RLMESH_LIBERO_LEAN")
    monkeypatch.setenv("RLMESH_LIBERO_HARD_RESET", "1")
    assert not forkable(kwargs)


def test_a_forked_server_adopts_its_template_once_and_only_for_its_task(monkeypatch):
    from evaluations.prebuilt.libero import adopt as libero_adopt

    kwargs = {"suite": "libero_object", "task_index": 3, "cameras": "none"}
    template = object()
    monkeypatch.setattr(libero_adopt, "ADOPTABLE", (libero_adopt.template_key(kwargs), template))
    assert libero_adopt.adopt({**kwargs, "task_index": 4}) is None
    assert libero_adopt.adopt(kwargs) is template
    assert libero_adopt.adopt(kwargs) is None  # a second make builds


def test_a_zygote_that_cannot_fork_falls_back_to_a_fresh_server(settings, tmp_path, monkeypatch):
    from evaluations.runtime import local, zygote

    settings.RLMESH_RUN_DIR = str(tmp_path)
    python = tmp_path / "python"
    python.write_text("")
    settings.RLMESH_PYTHON_ENVS = {**settings.RLMESH_PYTHON_ENVS, "libero": str(python)}
    calls = []

    def broken(*args, **kwargs):
        calls.append("zygote")
        raise OSError("the LIBERO zygote did not start")

    class Started(Exception):
        pass

    def popen(cmd, **kwargs):
        calls.append(Path(cmd[0]).name)
        raise Started

    monkeypatch.setattr(zygote, "start", broken)
    monkeypatch.setattr(local.subprocess, "Popen", popen)
    with pytest.raises(Started):
        local.LocalRuntime().start(_spec(suite="libero_object", task_index=0, cameras="none"), name="t")
    assert calls == ["zygote", "python"]


def test_the_zygote_socket_names_the_code_it_runs(settings, tmp_path):
    from evaluations.runtime import zygote

    zygote.socket_path.cache_clear()
    path = zygote.socket_path("/x/python")
    assert path.name.startswith("rlmesh-libero-zygote-") and len(str(path)) < 100
    assert zygote.socket_path("/y/python") != path  # another interpreter, another zygote
    assert json.dumps(str(path))  # a plain path: the worker and the zygote agree on it


def test_the_zygote_socket_changes_with_code_in_the_libero_subpackages(settings, tmp_path, monkeypatch):
    """The expert lives in ``libero/expert/``: a change there (or a module moved) gets a new zygote, never a host
    forking stale code (the digest once read ``libero/*.py`` only)."""
    import shutil

    from evaluations.runtime import zygote

    tree = tmp_path / "libero"
    shutil.copytree(zygote._MODULES, tree, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(zygote, "_MODULES", tree)
    names = []
    for change in (lambda: None, lambda: (tree / "expert" / "place.py").write_text("# changed\n"),
                   lambda: (tree / "expert" / "place.py").rename(tree / "expert" / "moved.py")):
        change()
        zygote.socket_path.cache_clear()
        names.append(zygote.socket_path("/x/python").name)
    zygote.socket_path.cache_clear()
    assert len(set(names)) == 3, names


def test_the_worker_sends_its_request_only_to_a_zygote_of_its_own_user(tmp_path, monkeypatch):
    """The request carries the server's environment (the worker's settings and secrets): a socket at the zygote's
    path that another user listens on is refused."""
    import socket

    from evaluations.runtime import zygote

    path = tmp_path / "z.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)
    zygote._connect(path, 5).close()  # this user's: accepted
    real = zygote.os.getuid()
    monkeypatch.setattr(zygote.os, "getuid", lambda: real + 1)  # as if another user listened there
    with pytest.raises(OSError, match="served by uid"):
        zygote._connect(path, 5)
    listener.close()


@pytest.mark.parametrize("as_text", [False, True])
def test_a_forked_server_lives_while_its_worker_does_whatever_form_its_start_time_came_in(as_text):
    """Field case: a request whose worker start time came as text (the zygote protocol before runtime/forkchild.py)
    was compared with the number /proc gives, never matched, and the server killed itself at once; the BEFORE/AFTER
    bench's servers were never ready."""
    import subprocess
    import sys

    from evaluations.runtime.processes import start_time

    me = os.getpid()
    start = str(start_time(me)) if as_text else start_time(me)
    code = (f"import time; from evaluations.prebuilt.libero.zygote import _watch; _watch({me}, {start!r}); "
            "time.sleep(2.5); print('alive', flush=True)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         start_new_session=True, cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "alive", (out.returncode, out.stderr)
