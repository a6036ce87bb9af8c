"""The prebuilt LIBERO env: its 130-scenario catalog, episodes as LeRobot runs them (run for real in
``.venv-libero``, ``scripts/setup-libero.sh``), and what the planner asks of it (cameras, privileged state,
perturbations, memory cap)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.libero import needs_libero_venv, run_json_in_libero

ROOT = Path(__file__).resolve().parents[3]
LEROBOT_LIBERO = ROOT / ".venv-lerobot" / "lib" / "python3.11" / "site-packages" / "lerobot" / "envs" / "libero.py"


def test_catalog_constants_import_without_libero():
    code = """
        import sys
        import evaluations.prebuilt.libero as lb
        heavy = sorted(m for m in ("libero", "robosuite", "mujoco", "gymnasium", "django") if m in sys.modules)
        assert not heavy, heavy
        print({s: len(t) for s, t in lb.SUITES.items()}, len(lb.VARIANTS))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("{'libero_spatial': 10, 'libero_object': 10, 'libero_goal': 10, 'libero_10': 10, "
                                   "'libero_90': 90} 130")


def test_the_catalog_has_130_scenarios_with_instructions_and_lerobots_step_caps():
    from evaluations.prebuilt.catalog import PREBUILT

    (env,) = [p for p in PREBUILT if p.name == "libero"]
    ids = [s["id"] for s in env.scenarios]
    assert len(ids) == len(set(ids)) == 130 and ids[0] == "libero_spatial/0" and ids[-1] == "libero_90/89"
    by_id = {s["id"]: s for s in env.scenarios}
    goal0 = by_id["libero_goal/0"]
    assert goal0["params"] == {"suite": "libero_goal", "task_index": 0}
    assert goal0["instruction"] == "open the middle drawer of the cabinet" and goal0["maxSteps"] == 300
    assert goal0["success"]["kind"] == "env_flag"
    assert {s["id"].split("/")[0]: s["maxSteps"] for s in env.scenarios} == {
        "libero_spatial": 280, "libero_object": 280, "libero_goal": 300, "libero_10": 520, "libero_90": 400}
    assert all(s["instruction"] for s in env.scenarios)
    assert "swap" in by_id["libero_object/0"]["perturbations"] and "position_x:0.1" in by_id["libero_object/0"]["perturbations"]
    assert by_id["libero_90/0"]["perturbations"] == []


@pytest.mark.skipif(not LEROBOT_LIBERO.exists(), reason="the LeRobot venv is not installed")
def test_step_caps_and_settle_steps_are_lerobots():
    from evaluations.prebuilt.libero import DUMMY_ACTION, MAX_STEPS, SETTLE_STEPS

    tree = ast.parse(LEROBOT_LIBERO.read_text())
    caps = next(ast.literal_eval(n.value) for n in ast.walk(tree) if isinstance(n, ast.AnnAssign)
                and getattr(n.target, "id", "") == "TASK_SUITE_MAX_STEPS")
    assert caps == MAX_STEPS
    init = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    defaults = dict(zip([a.arg for a in init.args.args][-len(init.args.defaults):], init.args.defaults))
    assert ast.literal_eval(defaults["num_steps_wait"]) == SETTLE_STEPS
    dummy = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_libero_dummy_action")
    assert tuple(ast.literal_eval(dummy.body[-1].value)) == DUMMY_ACTION


def test_init_state_is_the_seed_mod_50():
    from evaluations.prebuilt.libero import init_state_index

    # the platform's seeds are task seed + episode index: episode i of a task with seed s starts from (s + i) mod 50
    assert [init_state_index(s + i) for s in (0, 48) for i in range(3)] == [0, 1, 2, 48, 49, 0]
    assert init_state_index(50) == init_state_index(100) == 0


@needs_libero_venv
def test_constants_match_the_installed_libero():
    checks = run_json_in_libero("""
        import json
        from evaluations.prebuilt.libero import SUITES, private_config_dir, NUM_INIT_STATES
        private_config_dir()
        from libero.libero import benchmark
        d = benchmark.get_benchmark_dict()
        out = {}
        for suite, instructions in SUITES.items():
            b = d[suite]()
            out[suite] = ([b.get_task(i).language for i in range(b.n_tasks)] == list(instructions)
                          and all(len(b.get_task_init_states(i)) == NUM_INIT_STATES for i in range(b.n_tasks)))
        print(json.dumps(out))
    """)
    assert checks == dict.fromkeys(checks, True) and len(checks) == 5


@needs_libero_venv
def test_episodes_start_from_the_seeds_init_state_settled_and_observed_as_lerobot_does():
    out = run_json_in_libero("""
        import json, numpy as np
        from evaluations.prebuilt.libero import Libero
        env = Libero().make(suite="libero_object", task_index=1, cameras="both")
        a, info_a = env.reset(seed=3)
        b, info_b = env.reset(seed=53)
        c, info_c = env.reset(seed=4)
        state_c = env._env.get_sim_state().copy()
        raw = env._raw
        # Without the settle steps the state would be the init state itself; after them the robot moved (gripper opened).
        init = env.init_states[4]
        obs, r, term, trunc, info = env.step(np.zeros(7))
        img = obs["pixels"]["image"]
        none = Libero().make(suite="libero_object", task_index=1, cameras="none")
        n, _ = none.reset(seed=3)
        print(json.dumps({
            "init": [info_a["init_state"], info_b["init_state"], info_c["init_state"]],
            "same": bool(np.allclose(a["agent_pos"], b["agent_pos"])), "differs": not np.allclose(a["agent_pos"], c["agent_pos"]),
            "settled": not np.allclose(state_c[:len(init)], init), "settle_steps": info_c["settle_steps"],
            "keys": sorted(obs), "pixels": sorted(obs["pixels"]), "shape": list(img.shape), "dtype": str(img.dtype),
            "rotated": bool(np.array_equal(img, raw["agentview_image"][::-1, ::-1])) is False,
            "agent_pos": [len(obs["agent_pos"]), str(obs["agent_pos"].dtype)],
            "instruction": obs["instruction"], "info": sorted(info), "success": info["success"],
            "none_keys": sorted(n), "none_space": sorted(none.observation_space.spaces),
            "same_state_across_cameras": bool(np.allclose(n["agent_pos"], a["agent_pos"])),
            "render": list(none.render().shape), "max_steps": env.max_steps, "term": term, "trunc": trunc,
        }))
    """)
    assert out["init"] == [3, 3, 4] and out["same"] and out["differs"] and out["settled"] and out["settle_steps"] == 10
    assert out["keys"] == ["agent_pos", "instruction", "pixels"] and out["pixels"] == ["image", "image2"]
    assert out["shape"] == [256, 256, 3] and out["dtype"] == "uint8" and out["agent_pos"] == [8, "float32"]
    assert out["instruction"] == "pick up the cream cheese and place it in the basket"
    assert out["info"] == ["init_state", "success"] and out["success"] == 0.0 and not out["term"] and not out["trunc"]
    # a camera not rendered has no key (not zeros), and the state is the same whatever is rendered
    assert out["none_keys"] == out["none_space"] == ["agent_pos", "instruction"] and out["same_state_across_cameras"]
    assert out["render"] == [256, 256, 3] and out["max_steps"] == 280


@needs_libero_venv
def test_episodes_are_truncated_at_the_suites_cap_and_perturbed_sets_load():
    out = run_json_in_libero("""
        import json, numpy as np
        from evaluations.prebuilt.libero import Libero
        env = Libero().make(suite="libero_spatial", task_index=0, cameras="none", perturbation="language")
        env.max_steps = 3  # the cap logic, cheaply (the real cap is MAX_STEPS[suite])
        env.reset(seed=0)
        ends = [env.step(np.zeros(7))[3] for _ in range(3)]
        task = Libero().make(suite="libero_object", task_index=0, cameras="none", perturbation="task")
        shifted = Libero().make(suite="libero_object", task_index=0, cameras="none", perturbation="position_x:0.2")
        shifted.reset(seed=0)
        try:
            Libero().make(suite="libero_90", task_index=0, perturbation="swap")
            refused = ""
        except ValueError as exc:
            refused = str(exc)
        print(json.dumps({"ends": ends, "language": env.instruction, "task": task.instruction, "refused": refused}))
    """)
    assert out["ends"] == [False, False, True]
    assert out["language"] != "pick up the black bowl between the plate and the ramekin and place it on the plate"
    assert out["task"] != "pick up the alphabet soup and place it in the basket"
    assert "libero_spatial, libero_object, libero_goal, libero_10 only" in out["refused"]


# -- what the planner asks of the env ---------------------------------------------------------------------------------

def _model(labels=None, describe=None):
    return SimpleNamespace(version=SimpleNamespace(labels=labels or {}, describe=describe or {}))


@pytest.mark.parametrize(("labels", "describe", "params", "expected"), [
    ({"dev.rlmesh.platform.observes": "state"}, None, {}, {"cameras": "none"}),
    ({"dev.rlmesh.platform.observes": "state,privileged"}, None, {}, {"cameras": "none", "privileged": True}),
    ({"dev.rlmesh.platform.observes": "state,images"}, None, {}, {"cameras": "both"}),
    (None, None, {}, {"cameras": "both"}),  # spec-less: it may read anything
    (None, {"model_spec": {"input": {"img": {"type": "image", "role": "image/primary"}}}}, {}, {"cameras": "both"}),
    (None, {"model_spec": {"input": {"t": {"type": "text", "role": "text/instruction"}}}}, {}, {"cameras": "none"}),
    (None, None, {"cameras": "agentview"}, {}),  # the task's own params win
])
def test_cameras_follow_what_the_model_reads(labels, describe, params, expected):
    from evaluations.planning.rendering import observation_kwargs

    assert observation_kwargs(_model(labels, describe), {"cameras", "privileged"}, params) == expected
    assert observation_kwargs(_model(labels, describe), set(), params) == {}  # an env without the parameters


def test_perturbations_parse_as_libero_pro_ships_them():
    from evaluations.domain.perturbations import PerturbationError, parse

    assert parse("swap").label == "swap" and parse("position_x:0.2").label == "position_x:0.2"
    for bad, message in (("swap:1", "takes no strength"), ("position_y:0.15", "0.1, 0.2, 0.3, 0.4, 0.5 only")):
        with pytest.raises(PerturbationError, match=message):
            parse(bad)


def test_the_libero_env_server_may_take_longer_to_become_ready(settings):
    from evaluations.prebuilt.catalog import PREBUILT, ready_timeout
    from evaluations.runtime.base import ServerSpec

    settings.RLMESH_SERVER_READY_TIMEOUT = 60
    (env,) = [p for p in PREBUILT if p.name == "libero"]
    limit = ready_timeout(SimpleNamespace(labels=env.labels))
    assert limit == 300
    assert ServerSpec("env", env.source, ready_timeout=limit).ready_limit == 300
    assert ServerSpec("env", env.source).ready_limit == 60  # every other image: the setting
