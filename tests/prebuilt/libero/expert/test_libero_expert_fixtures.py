"""``prebuilt/libero-expert``'s articulation, push and goal-order logic on hand-made privileged observations (main
venv), and one real LIBERO episode per new primitive in ``.venv-libero`` (``slow``; skipped where it is missing)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluations.prebuilt.libero.expert import cabinet_top as top
from evaluations.prebuilt.libero.expert import destinations
from evaluations.prebuilt.libero.expert import fixtures as fx
from evaluations.prebuilt.libero.expert import goals
from evaluations.prebuilt.libero.expert import grasp as grasping
from evaluations.prebuilt.libero.expert import model as expert
from evaluations.prebuilt.libero.expert import place
from evaluations.prebuilt.libero.expert import push as pushing
from evaluations.prebuilt.libero.expert import rotation
from evaluations.prebuilt.libero.expert.grasp import clear_fingers
from evaluations.prebuilt.libero.privileged import open_sign
from evaluations.prebuilt.libero.expert.rotation import rotation_error

from tests.support.libero import needs_libero_venv, run_in_libero

DOWN = np.array([1.0, 0.0, 0.0, 0.0])
REGION = "wooden_cabinet_1_middle_region"
HANDLE = np.array([0.04, -0.13, 1.015])


def _cabinet(eef, qpos=0.0, gap=0.079, gap_speed=0.0, quat=DOWN, goal=f"open {REGION}") -> dict:
    """libero_goal's wooden cabinet: three drawers sliding along world −y, opening toward +y (qpos < 0)."""
    handles = np.concatenate([HANDLE + [0, 0, 0.074], HANDLE + [0, qpos * -1.0, 0.0], HANDLE - [0, 0, 0.07]])
    return {
        "eef_pos": np.asarray(eef, dtype=np.float64), "eef_quat": np.asarray(quat, dtype=np.float64),
        "eef_vel": np.zeros(3), "gripper_qpos": np.array([gap / 2, -gap / 2]),
        "gripper_qvel": np.array([gap_speed / 2, -gap_speed / 2]),
        "wooden_cabinet_1_pos": np.array([0.04, -0.234, 0.905]), "wooden_cabinet_1_quat": np.array([0, 0, 1.0, 0]),
        "wooden_cabinet_1_qpos": np.array([0.0, qpos, 0.0]),
        "wooden_cabinet_1_anchor": np.tile([0.04, -0.234, 0.905], 3), "wooden_cabinet_1_axis": np.tile([0, -1.0, 0], 3),
        "wooden_cabinet_1_handle": handles, "wooden_cabinet_1_open": -np.ones(3),
        f"{REGION}_pos": np.array([0.036, -0.245 - qpos * -1.0, 1.022]), f"{REGION}_quat": np.array([0, 0, 0, 1.0]),
        f"{REGION}_qpos": np.array([qpos]), f"{REGION}_joint": np.array([1.0]), f"{REGION}_size": np.array([0.03, 0.076, 0.1]),
        "goal": goal, "obj_of_interest": REGION,
    }


def _stove(eef, qpos=0.0, quat=None) -> dict:
    quat = fx.knob_orientation() if quat is None else quat
    return {
        "eef_pos": np.asarray(eef, dtype=np.float64), "eef_quat": np.asarray(quat, dtype=np.float64),
        "eef_vel": np.zeros(3), "gripper_qpos": np.array([0.0005, -0.0005]), "gripper_qvel": np.zeros(2),
        "flat_stove_1_pos": np.array([-0.4, 0.2, 0.905]), "flat_stove_1_quat": np.array([0, 0, 0, 1.0]),
        "flat_stove_1_qpos": np.array([qpos]), "flat_stove_1_anchor": np.array([-0.4, 0.2, 0.905]),
        "flat_stove_1_axis": np.array([0, 0, 1.0]), "flat_stove_1_handle": np.array([-0.45, 0.2, 0.912]),
        "flat_stove_1_open": np.array([1.0]), "goal": "turnon flat_stove_1", "obj_of_interest": "flat_stove_1",
    }


# --- goals ----------------------------------------------------------------------------------------------------


def test_open_and_turnon_come_first_and_close_last_whatever_the_bddl_order():
    priv = {"goal": "close white_cabinet_1_bottom_region; in akita_black_bowl_1 white_cabinet_1_bottom_region; "
                    "turnon flat_stove_1"}
    assert [p[0] for p in goals.goals(priv)] == ["turnon", "in", "close"]


def test_an_in_goal_into_a_shut_drawer_opens_the_drawer_first():
    priv = _cabinet((0, 0, 1.2), goal=f"in akita_black_bowl_1 {REGION}")
    assert goals.next_goal(priv) == ("unary", "open", "wooden_cabinet_1", 1)


def test_an_in_goal_needs_the_drawer_out_only_far_enough_for_the_bowl():
    goal = f"in akita_black_bowl_1 {REGION}"

    def opens(priv: dict) -> bool:
        nxt = goals.next_goal(priv)
        return nxt is not None and nxt[:2] == ("unary", "open")

    pulling = rotation.horizontal_grip(np.array([0, 1.0, 0]))
    # pulled out past SLIDE_IN: the pull stops short of SLIDE_OPEN (a full pull hung the drawer over the bowl)
    assert not opens(_cabinet((0, 0, 1.2), qpos=-0.105, quat=pulling, goal=goal))
    # out 8.5 cm: far enough (pulled out to 0.10 m, the top drawer of libero_goal 3 hung over the bowl's rim, the
    # hand reaching for the bowl bumped it back to 0.063 m, and the bowl came to rest on the cabinet's top)
    assert not opens(_cabinet((0, 0, 1.2), qpos=-0.085, quat=pulling, goal=goal))
    # still held, not out that far: pull on
    assert opens(_cabinet((0, 0, 1.2), qpos=-0.07, quat=pulling, goal=goal))
    # let go and bumped back a little by the hand reaching for the bowl: no reopening
    assert not opens(_cabinet((0, 0, 1.2), qpos=-0.08, goal=goal))
    assert opens(_cabinet((0, 0, 1.2), qpos=-0.04, goal=goal))
    # an ``open`` goal still needs LIBERO's full 0.14 m
    assert opens(_cabinet((0, 0, 1.2), qpos=-0.105))


def test_a_load_goes_into_the_drawers_part_out_of_the_cabinet_and_is_let_go_there_not_above():

    priv = _cabinet((0, 0, 1.2), qpos=-0.08, goal=f"in akita_black_bowl_1 {REGION}")
    handle = fx.part(priv, "wooden_cabinet_1", 1, "handle")
    priv[f"{REGION}_pos"] = np.array([0.036, handle[1] - 0.12, 1.022])  # centre under the cabinet's top
    dest = destinations.destination(priv, "akita_black_bowl_1", REGION)
    assert np.allclose(dest, [0.036, handle[1] - destinations.DRAWER_INSET, 1.022])
    priv[f"{REGION}_pos"] = np.array([0.036, handle[1] - 0.03, 1.022])  # already out in front: kept
    assert np.allclose(destinations.destination(priv, "akita_black_bowl_1", REGION), priv[f"{REGION}_pos"])
    # held 10 cm over the drawer: not placed yet (the carry lets go at its release height)
    priv.update({"akita_black_bowl_1_pos": priv[f"{REGION}_pos"] + [0, 0, 0.10],
                 "akita_black_bowl_1_quat": np.array([0, 0, 0, 1.0]), "gripper_qpos": np.array([0.003, -0.003])})
    priv["eef_pos"] = priv["akita_black_bowl_1_pos"] + [0, grasping.BOWL_RIM, grasping.BOWL_GRASP_DZ]
    assert place.held(priv, "akita_black_bowl_1")
    assert not place.placed(priv, "in", "akita_black_bowl_1", REGION)


def test_a_drawer_goal_is_met_by_the_joints_signed_position():
    assert fx.unary_met(_cabinet((0, 0, 1.2), qpos=-0.1), "open", REGION) is False
    assert fx.unary_met(_cabinet((0, 0, 1.2), qpos=-0.15), "open", REGION) is True
    assert fx.unary_met(_cabinet((0, 0, 1.2), qpos=0.002), "close", REGION) is True
    assert fx.unary_met(_stove((0, 0, 1.2), qpos=0.6), "turnon", "flat_stove_1") is True
    assert fx.unary_met(_stove((0, 0, 1.2), qpos=0.3), "turnon", "flat_stove_1") is False


def test_the_open_sign_comes_from_the_fixtures_open_ranges():
    class Cabinet:
        object_properties = {"articulation": {"default_open_ranges": [-0.16, -0.14]}}

    class Stove:
        object_properties = {"articulation": {"default_open_ranges": [], "default_turnon_ranges": [0.5, 2.1]}}

    assert open_sign(Cabinet()) == -1.0 and open_sign(Stove()) == 1.0


# --- drawer ---------------------------------------------------------------------------------------------------


def test_the_horizontal_grip_points_against_the_opening_direction_with_the_fingers_vertical():
    quat = rotation.horizontal_grip(np.array([0.0, 1.0, 0.0]))
    assert np.allclose(rotation.pointing(quat), [0, -1, 0], atol=1e-9)
    assert np.isclose(rotation.tilt(rotation.untilted(quat)), 0.0, atol=1e-9)
    assert np.isclose(np.linalg.norm(rotation_error(quat, rotation.untilted(quat))), np.pi / 2)  # one 90° turn back


def test_opening_a_drawer_goes_in_front_of_the_handle_turns_horizontal_comes_in_closes_and_pulls():
    far = goals.plan(_cabinet((-0.2, 0.0, 1.17)))
    assert far[6] == -1.0 and far[0] > 0.5  # toward the pre-grasp point, open
    level = rotation.horizontal_grip(np.array([0.0, 1.0, 0.0]))
    front = goals.plan(_cabinet(HANDLE + [0, 0.08, 0], quat=level))
    assert front[6] == -1.0 and front[1] < -0.5 and abs(front[0]) < 0.1  # comes in along −y
    at = goals.plan(_cabinet(HANDLE + [0, 0.003, 0], quat=level))
    assert at[6] == 1.0
    pull = goals.plan(_cabinet(HANDLE, gap=0.016, quat=level))
    assert pull[6] == 1.0 and pull[1] > 0.5  # out along +y


def test_after_opening_the_tilted_hand_backs_away_then_rises_then_turns_down():
    level = rotation.horizontal_grip(np.array([0.0, 1.0, 0.0]))
    goal = "in akita_black_bowl_1 wooden_cabinet_1_middle_region"
    near = _cabinet(HANDLE + [0, 0.15, 0], qpos=-0.15, quat=level, goal=goal)
    back = fx.untilt(near)
    assert back is not None and back[1] > 0.5 and back[6] == -1.0 and np.allclose(back[3:6], 0)
    low = fx.untilt(_cabinet(HANDLE + [0, 0.25, 0], qpos=-0.15, quat=level, goal=goal))
    assert low[2] > 0.5 and np.allclose(low[3:6], 0)  # rise before turning
    high = fx.untilt(_cabinet(HANDLE + [0, 0.25, 0.12], qpos=-0.15, quat=level, goal=goal))
    assert np.linalg.norm(high[3:6]) > 0.5
    assert fx.untilt(_cabinet(HANDLE + [0, 0.25, 0.12], qpos=-0.15, goal=goal)) is None  # pointing down: nothing


def test_closing_a_drawer_pushes_its_handle_back_in():
    priv = _cabinet(HANDLE + [0, 0.02 + 0.15, fx.CLOSE_DZ], qpos=-0.15, goal=f"close {REGION}")
    action = fx.close_drawer(priv, "wooden_cabinet_1", 1)
    assert action[1] < -0.5 and action[6] == 1.0


def test_an_open_drawers_handle_counts_as_a_neighbour_of_a_bowl():
    assert len(fx.open_handles(_cabinet((0, 0, 1.2), qpos=-0.15))) == 1
    assert fx.open_handles(_cabinet((0, 0, 1.2), qpos=0.0)) == []


# --- knob -----------------------------------------------------------------------------------------------------


def test_turning_a_knob_comes_down_behind_the_bars_end_and_pushes_it_round():
    start, _, _ = fx.knob_contact(_stove((0, 0, 1.2)), "flat_stove_1")
    assert start[0] > -0.4 and start[1] < 0.2  # the bar's +x end, on its −y side (the turn is counter-clockwise)
    above = goals.plan(_stove(start + [0, 0, 0.1]))
    assert above[2] < -0.5 and above[6] == 1.0  # straight down, fingers closed
    push = goals.plan(_stove(start))
    assert push[1] > 0.5  # round the axis: +y at the +x end
    turned, _, pushing = fx.knob_contact(_stove(start, qpos=np.pi / 2), "flat_stove_1")
    assert not pushing and turned[0] > -0.4 and turned[1] > 0.2  # bar along +y: its end moves −x, pushed from +x


def test_the_knob_is_pushed_with_the_full_step_whatever_the_distance_to_the_chased_point():
    """At 0.75 of the step the hand stalled against the bar of a knob 1.5 cm nearer the robot and the knob stopped
    near 0.2 rad until the step cap (libero_10 task 2, init states 1, 3, 5-8)."""
    start, _, _ = fx.knob_contact(_stove((0, 0, 1.2)), "flat_stove_1")
    _, _, pushing = fx.knob_contact(_stove(start + [-0.005, 0.035, 0.0]), "flat_stove_1")
    assert pushing
    push = goals.plan(_stove(start + [-0.005, 0.035, 0.0]))
    assert float(np.abs(push[:3]).max()) == pytest.approx(1.0) and push[1] > 0.5


def test_the_knob_push_keeps_its_tilt_instead_of_being_untilted():
    start, _, _ = fx.knob_contact(_stove((0, 0, 1.2)), "flat_stove_1")
    action = goals.plan(_stove(start))
    assert np.linalg.norm(action[3:6]) < 0.1 and action[6] == 1.0 and action[1] > 0.5  # pushing, fingers closed


# --- push -----------------------------------------------------------------------------------------------------


def _plate(eef) -> dict:
    plate = np.array([0.05, -0.03, 0.903])
    return {
        "eef_pos": np.asarray(eef, dtype=np.float64), "eef_quat": DOWN, "eef_vel": np.zeros(3),
        "gripper_qpos": np.array([0.0005, -0.0005]), "gripper_qvel": np.zeros(2),
        "plate_1_pos": plate, "plate_1_quat": np.array([0, 0, 0, 1.0]),
        "plate_1_aabb": np.array([-0.019, -0.099, 0.9, 0.119, 0.039, 0.919]),
        "main_table_stove_front_region_pos": np.array([0.05, 0.21, 0.895]),
        "main_table_stove_front_region_quat": np.array([0, 0, 0, 1.0]),
        "main_table_stove_front_region_size": np.array([0.04, 0.04, 0.007]),
        "goal": "on plate_1 main_table_stove_front_region", "obj_of_interest": "plate_1",
    }


def test_a_plate_to_a_table_region_is_pushed_not_gripped():
    assert goals.next_goal(_plate((0, 0, 1.2))) == ("push", "plate_1", "main_table_stove_front_region")
    above = goals.plan(_plate((0.05, -0.03 - 0.039, 1.1)))
    assert above[2] < -0.5 and above[6] == 1.0  # down inside the far rim, fingers closed
    push = goals.plan(_plate((0.05, -0.03 - 0.039, 0.905)))
    assert push[1] > 0.5 and abs(push[0]) < 0.1  # toward the region (+y)
    done = dict(_plate((0, 0, 1.2)), plate_1_pos=np.array([0.05, 0.205, 0.903]))
    assert goals.next_goal(done) is None


def test_a_box_standing_at_the_plates_destination_is_pushed_on_past_it_first():
    """libero_goal 5 (init 6): the plate's rim shoved the cream cheese sideways into the stove's front, where it
    jammed the plate 6 cm short until the step cap. The cheese is pushed on past the destination first."""
    cheese = np.array([0.05, 0.15, 0.909])
    scene = dict(_plate((0, 0, 1.2)), cream_cheese_1_pos=cheese, cream_cheese_1_quat=np.array([0, 0, 0, 1.0]),
                 cream_cheese_1_aabb=np.concatenate([cheese - [0.04, 0.02, 0.009], cheese + [0.04, 0.02, 0.009]]))
    kind, name, point = goals.next_goal(scene)
    assert (kind, name) == ("clear", "cream_cheese_1") and point[1] > 0.21 + 0.069 + pushing.CLEAR_MARGIN
    behind = cheese[:2] - [0.0, 0.02 + pushing.PUSH_GAP]  # outside the box, on the far side from where it goes
    above = goals.plan(dict(scene, eef_pos=np.array([*behind, 1.0])))
    assert above[2] < -0.5 and above[6] == 1.0
    push = goals.plan(dict(scene, eef_pos=np.array([*behind, 0.913])))
    assert push[1] > 0.5 and abs(push[0]) < 0.1  # on along +y
    off = cheese + [0.0, 0.069 + pushing.CLEAR_MARGIN + 0.01 + 0.06, 0.0]
    moved = dict(scene, cream_cheese_1_pos=off, cream_cheese_1_aabb=np.concatenate([off - 0.01, off + 0.01]))
    assert goals.next_goal(moved)[0] == "push"  # far enough: the plate goes
    bowl = np.array([0.05 - 0.09, 0.08, 0.898])  # beside the plate's way (+y), where its rim would shove it
    beside = dict(moved, akita_black_bowl_1_pos=bowl, akita_black_bowl_1_quat=np.array([0, 0, 0, 1.0]),
                  akita_black_bowl_1_aabb=np.concatenate([bowl - [0.053, 0.053, 0.0], bowl + [0.053, 0.053, 0.05]]))
    kind, name, point = goals.next_goal(beside)
    assert (kind, name) == ("clear", "akita_black_bowl_1") and point[0] < bowl[0] - 0.04 and point[1] == bowl[1]


# --- box grasp clearance --------------------------------------------------------------------------------------


def test_a_box_grasp_slides_along_its_long_side_away_from_a_neighbour_under_a_finger():
    cheese = np.array([0.059, -0.203, 0.437, 0.14, -0.16, 0.455])
    grasp = np.array([0.0995, -0.1815, 0.44])
    milk = {"cream_cheese_1_aabb": cheese, "milk_1_aabb": np.array([0.04, -0.131, 0.437, 0.093, -0.078, 0.57])}
    moved = clear_fingers(milk, "cream_cheese_1", grasp, 0.0)
    assert moved[0] > 0.093 + 0.013 and moved[1] == grasp[1]  # the finger's edge clears the carton
    far = dict(milk, milk_1_aabb=np.array([0.3, 0.3, 0.437, 0.4, 0.4, 0.57]))
    assert np.array_equal(clear_fingers(far, "cream_cheese_1", grasp, 0.0), grasp)
    across = dict(milk, milk_1_aabb=np.array([0.046, -0.186, 0.437, 0.152, -0.084, 0.574]))  # lying over it all
    assert np.array_equal(clear_fingers(across, "cream_cheese_1", grasp, 0.0), grasp)
    priv = dict(milk, cream_cheese_1_pos=grasp, eef_pos=np.zeros(3))
    assert grasping.grasp_pose(priv, "cream_cheese_1")[0][0] > 0.106


# --- real LIBERO, in .venv-libero ----------------------------------------------------------------------------


@needs_libero_venv
@pytest.mark.slow
@pytest.mark.parametrize("suite,task,cap", [
    ("libero_goal", 0, 150),   # open the middle drawer (drawer primitive)
    ("libero_goal", 7, 150),   # turn on the stove (knob primitive)
    ("libero_goal", 5, 250),   # push the plate to the front of the stove (push primitive)
    ("libero_10", 2, 400),     # turn on the stove and put the moka pot on it (two goals in sequence)
    ("libero_10", 9, 260),     # the mug into the microwave, its door shut (door primitive)
    ("libero_10", 3, 250),     # the bowl into the open bottom drawer, then close it (close primitive)
])
def test_the_expert_solves_a_real_episode_of_each_new_primitive(suite, task, cap):
    """Seed 0 (init state 0) through the platform's env class, as bench/bench_libero_expert.py runs it."""
    out = run_in_libero(f"""
        import sys
        sys.path.insert(0, "bench")
        import bench_libero_expert as b
        from evaluations.prebuilt.libero.expert.model import LiberoExpert
        env = b.make_env("{suite}", {task})
        row = b.run_episode(env, 0, LiberoExpert().predict)
        print("RESULT", row["success"], row["steps"])
    """)
    result = [line for line in out.splitlines() if line.startswith("RESULT")][-1].split()
    assert result[1] == "True" and int(result[2]) < cap, out[-2000:]


def _bowl_on_the_cabinet(bowl_z: float = 1.126, eef=(-0.2, 0.0, 1.18)) -> dict:
    """libero_spatial/9: the bowl on the wooden cabinet's top (its origin 1 mm under the top panel's site), far out
    at the table's side; the plate across the table."""
    scene = _cabinet(eef, goal="on akita_black_bowl_1 plate_1")
    scene.update({
        "wooden_cabinet_1_top_side_pos": np.array([0.03, -0.246, 1.127]),
        "wooden_cabinet_1_top_side_quat": np.array([0, 0, 0, 1.0]), "wooden_cabinet_1_top_side_size": np.array([0.125, 0.094, 0.001]),
        "akita_black_bowl_1_pos": np.array([0.05, -0.24, bowl_z]), "akita_black_bowl_1_quat": np.array([0, 0, 0, 1.0]),
        "plate_1_pos": np.array([0.05, 0.2, 0.903]), "plate_1_quat": np.array([0, 0, 0, 1.0]),
    })
    return scene


def test_a_bowl_on_a_cabinets_top_is_gripped_on_the_rim_facing_the_robot():
    """Taken for a bowl in a drawer, it was gripped across a "slide" from the cabinet's origin (any direction), and
    on the far rim the arm, reaching out and up, stretched straight and stalled over the plate (init 1, 8, 18, 19).
    The cabinet under it is no neighbour (as a 15 cm disc it left no side any room)."""
    scene = _bowl_on_the_cabinet()
    bowl = scene["akita_black_bowl_1_pos"]
    assert top.on_top(scene, "akita_black_bowl_1") == "wooden_cabinet_1"
    point, yaw = grasping.grasp_pose(scene, "akita_black_bowl_1", "plate_1")
    assert point == pytest.approx(bowl + [-grasping.BOWL_RIM, 0.0, grasping.BOWL_GRASP_DZ])
    assert abs(yaw) == pytest.approx(np.pi / 2)  # fingers open along x, radially
    drawer = _bowl_on_the_cabinet(bowl_z=1.063)  # in the top drawer (6 cm under the top): across the slide still
    assert top.on_top(drawer, "akita_black_bowl_1") is None
    point, _ = grasping.grasp_pose(drawer, "akita_black_bowl_1", "plate_1")
    slide = grasping.inside_fixture(drawer, "akita_black_bowl_1")
    assert slide is not None and abs(float((point[:2] - bowl[:2]) @ slide)) < 1e-9  # the rim point across the slide
    lifted = _bowl_on_the_cabinet()  # as high as the top, but over the open drawer (lifted out of it, slipping)
    lifted["akita_black_bowl_1_pos"] = np.array([0.05, -0.12, 1.126])
    assert top.on_top(lifted, "akita_black_bowl_1") is None  # off the top panel's footprint: still the drawer's
    assert grasping.inside_fixture(lifted, "akita_black_bowl_1") is not None


def test_a_bowl_on_a_cabinets_top_is_approached_from_a_lower_hover():
    """10 cm over the cabinet's top the arm was stretched out and up and stalled 2 cm short of the point above the
    rim (init 29); the hand travels at HOVER_ON_TOP over the grasp point instead of rising to HOVER first."""
    scene = _bowl_on_the_cabinet(eef=(-0.2, 0.0, 1.18))  # 2.7 cm over the grasp height, 7 cm under the old hover
    action = expert.plan(scene)
    assert action[0] > 0.5 and action[2] < 0.5 and action[6] == -1.0  # on its way over, not straight up


def _bowl_held_in_the_drawer(y: float) -> dict:
    """The bowl in the open top drawer (slide along world y, opening toward +y), its far rim near the edge of the
    cabinet's top panel (the panel reaches to y = −0.152), held on its rim."""
    scene = _bowl_on_the_cabinet(bowl_z=1.063)
    bowl = np.array([0.05, y, 1.063])
    scene.update({"akita_black_bowl_1_pos": bowl,
                  "akita_black_bowl_1_aabb": np.array([0.05 - 0.053, y - 0.053, 1.064, 0.05 + 0.053, y + 0.053, 1.115]),
                  "eef_pos": bowl + np.array([grasping.BOWL_RIM, 0.0, grasping.BOWL_GRASP_DZ]), "gripper_qpos": np.array([0.0045, -0.0045])})
    return scene


def test_a_bowl_lifted_out_of_a_drawer_first_comes_out_from_under_the_cabinets_top():
    """libero_spatial/4 (init 5, 7, 18, 37): the far rim a few mm under the top panel's edge, the bowl lifted
    straight up pivoted out of the fingers. It moves out along the slide first, rising as much (over the drawer's
    front panel), until its rim is UNDER_CLEAR out from under the panel; then the carry rises as before."""
    scene = _bowl_held_in_the_drawer(-0.104)  # rim 0.5 cm under the panel
    shift = top.out_from_under(scene, "akita_black_bowl_1", "plate_1")
    assert shift == pytest.approx([0.0, 0.094 + 0.053 + top.UNDER_CLEAR - 0.142])
    action = expert.plan(scene)
    assert action[6] == 1.0 and action[1] > 0.2 and action[2] == pytest.approx(action[1]) and abs(action[0]) < 1e-6
    clear = _bowl_held_in_the_drawer(-0.08)  # already 2.4 cm clear: straight up to the carry height
    assert top.out_from_under(clear, "akita_black_bowl_1", "plate_1") is None
    action = expert.plan(clear)
    assert action[2] > 0.2 and abs(action[1]) < 1e-6
    assert top.out_from_under(scene, "akita_black_bowl_1", "wooden_cabinet_1_top_region") is None  # going in
    beside = _bowl_held_in_the_drawer(-0.104)  # as near the top's edge along the slide, but beside the cabinet
    beside["akita_black_bowl_1_pos"] = beside["akita_black_bowl_1_pos"] + [0.2, 0.0, 0.0]
    beside["akita_black_bowl_1_aabb"] = beside["akita_black_bowl_1_aabb"] + [0.2, 0.0, 0.0, 0.2, 0.0, 0.0]
    assert top.out_from_under(beside, "akita_black_bowl_1", "plate_1") is None


def test_the_hand_turns_to_the_grasp_yaw_before_coming_down_beside_a_part_open_drawer():
    from evaluations.prebuilt.libero.expert.rotation import down_with_yaw

    bowl = "akita_black_bowl_1"

    def descent(qpos: float, yaw_off: float) -> float:
        priv = _cabinet((0, 0, 1.2), qpos=qpos, goal=f"in {bowl} {REGION}")
        priv.update({f"{bowl}_pos": np.array([-0.09, 0.0, 0.898]), f"{bowl}_quat": np.array([0, 0, 0, 1.0]),
                     f"{bowl}_aabb": np.array([-0.14, -0.05, 0.898, -0.04, 0.05, 0.95])})
        grasp, yaw = grasping.grasp_pose(priv, bowl, REGION)
        priv["eef_pos"] = grasp + [0, 0, 0.25]
        priv["eef_quat"] = down_with_yaw(yaw + yaw_off)
        return float(place.place(priv, ("in", bowl, REGION))[2])

    # turning by 1 rad over a part-open drawer: holds its height (coming down while turning, the hand's ends swept
    # the top drawer of libero_goal 3 back from 0.115 m to 0.063 m)
    assert descent(-0.09, 1.0) == 0.0
    assert descent(-0.09, 0.1) < 0.0  # turned: comes down
    assert descent(-0.15, 1.0) < 0.0  # a drawer pulled all the way out: unchanged


def test_a_bowl_goes_far_enough_into_a_part_open_drawer_to_clear_its_front_wall():

    priv = _cabinet((0, 0, 1.2), qpos=-0.09, goal=f"in akita_black_bowl_1 {REGION}")
    handle = fx.part(priv, "wooden_cabinet_1", 1, "handle")
    priv[f"{REGION}_pos"] = np.array([0.036, handle[1] - 0.15, 1.022])  # centre under the cabinet's top
    dest = destinations.destination(priv, "akita_black_bowl_1", REGION)
    # 7 cm or more behind the handle (6 cm behind it, the bowl came to rest on the drawer's front wall and the
    # cabinet's edge in libero_goal 3), not past the region's centre
    assert 0.07 <= handle[1] - dest[1] < 0.15
