"""A bowl into a cabinet drawer and the drawer closed on it (libero_10 task 3; synthetic privileged dicts, no
simulator): the rim side whose hand clears the wine rack, the load clear of the drawer's front wall, letting go
before the close, no reopening of the drawer being closed on the bowl, and the close's push."""

from __future__ import annotations

import numpy as np

from evaluations.prebuilt.libero.expert import destinations
from evaluations.prebuilt.libero.expert import fixtures as fx
from evaluations.prebuilt.libero.expert import goals
from evaluations.prebuilt.libero.expert import grasp as grasping
from evaluations.prebuilt.libero.expert import rotation

BOWL, REGION = "akita_black_bowl_1", "white_cabinet_1_bottom_region"


def _scene(qpos: float = -0.146, **over) -> dict:
    """libero_10 task 3, init state 0 (values read from the privileged observation after the reset): the bottom
    drawer open (slides along world y, opening toward −y), the bowl in front of it, the wine rack behind the bowl."""
    out = -qpos
    priv = {
        "akita_black_bowl_1_aabb": np.array([-0.007, -0.114, 0.9, 0.1, -0.006, 0.951]),
        "akita_black_bowl_1_pos": np.array([0.047, -0.06, 0.898]),
        "akita_black_bowl_1_quat": np.array([0.0, 0.0, 0.707, 0.707]),
        "eef_pos": np.array([-0.217, -0.015, 1.17]), "eef_quat": np.array([1.0, 0.0, 0.0, 0.0]),
        "eef_vel": np.zeros(3), "gripper_qpos": np.array([0.039, -0.039]), "gripper_qvel": np.zeros(2),
        "goal": f"close {REGION}; in {BOWL} {REGION}", "obj_of_interest": f"{BOWL} white_cabinet_1",
        "white_cabinet_1_anchor": np.tile([-0.008, 0.29, 0.905], 3), "white_cabinet_1_axis": np.tile([0.0, 1.0, 0.0], 3),
        "white_cabinet_1_handle": np.array([-0.011, 0.189, 1.089, -0.011, 0.189, 1.015, -0.011, 0.189 - out, 0.946]),
        "white_cabinet_1_open": -np.ones(3), "white_cabinet_1_pos": np.array([-0.008, 0.29, 0.905]),
        "white_cabinet_1_qpos": np.array([0.0, 0.0, qpos]), "white_cabinet_1_quat": np.array([0.0, 0.0, 0.0, 1.0]),
        "wine_bottle_1_aabb": np.array([-0.173, 0.037, 0.9, -0.13, 0.082, 1.057]),
        "wine_bottle_1_pos": np.array([-0.151, 0.06, 0.899]), "wine_bottle_1_quat": np.array([0.0, 0.0, 1.0, 0.0]),
        "wine_rack_1_pos": np.array([-0.094, -0.293, 0.92]), "wine_rack_1_quat": np.array([0.0, 0.0, 1.0, 0.0]),
    }
    for index, name in enumerate(("top", "middle", "bottom")):
        q = qpos if name == "bottom" else 0.0
        z = {"top": 1.091, "middle": 1.022, "bottom": 0.952}[name]
        priv.update({f"white_cabinet_1_{name}_region_joint": np.array([float(index)]),
                     f"white_cabinet_1_{name}_region_pos": np.array([-0.005, 0.302 + q, z]),
                     f"white_cabinet_1_{name}_region_qpos": np.array([q]),
                     f"white_cabinet_1_{name}_region_quat": np.array([0.0, 0.707, 0.0, 0.707]),
                     f"white_cabinet_1_{name}_region_size": np.array([0.03, 0.076, 0.102])})
    priv.update(over)
    return priv


def test_a_bowl_for_a_drawer_is_gripped_where_the_hands_body_clears_the_rack_and_the_cabinet():
    priv = _scene()
    grasp, yaw = grasping.grasp_pose(priv, BOWL, REGION)
    bowl = priv[f"{BOWL}_pos"]
    # the rim facing the robot (θ = 180°), fingers along x: on the −y rim the hand's end sat on the wine rack,
    # on the +y rim its body met the cabinet's front over the drawer
    assert grasp[0] < bowl[0] - 0.04 and abs(grasp[1] - bowl[1]) < 1e-6
    assert abs(abs(yaw) - np.pi / 2) < 1e-6


def test_a_bowl_goes_far_enough_behind_the_handle_to_clear_the_drawers_front_wall():
    priv = _scene()
    handle = fx.part(priv, "white_cabinet_1", 2, "handle")
    dest = destinations.destination(priv, BOWL, REGION)
    half = 0.5 * (-0.006 + 0.114)  # the bowl's half width along the slide
    assert np.isclose(dest[1] - handle[1], half + destinations.FRONT_WALL)  # DRAWER_INSET alone: on the wall


def _let_go(gap: float, gap_speed: float = 0.0) -> dict:
    """The bowl just set down in the drawer, the hand still on its rim."""
    bowl = np.array([-0.01, 0.133, 0.928])
    return _scene(**{f"{BOWL}_pos": bowl, f"{BOWL}_aabb": np.concatenate([bowl - [0.054, 0.054, -0.002], bowl + [0.054, 0.054, 0.053]]),
                     "eef_pos": bowl + [-grasping.BOWL_RIM, 0.0, grasping.BOWL_GRASP_DZ],
                     "gripper_qpos": np.array([gap / 2, -gap / 2]), "gripper_qvel": np.array([gap_speed / 2, -gap_speed / 2])})


def test_before_closing_the_hand_lets_go_of_the_bowl_and_rises_once_open():
    priv = _let_go(0.005, gap_speed=0.02)  # opening, fingers still on the rim: the bowl counts as in
    assert goals.next_goal(priv) == ("unary", "close", "white_cabinet_1", 2)
    action = goals.plan(priv)
    assert action[6] == -1.0 and abs(action[2]) < 1e-6  # open first, in place (the close would grip it again)
    action = goals.plan(_let_go(0.05, gap_speed=0.02))
    assert action[6] == -1.0 and action[2] > 0.1


def test_a_closed_hand_pushing_the_drawer_beside_the_bowl_is_not_letting_go():
    assert goals.let_go(_let_go(0.001)) is None


def test_a_drawer_being_closed_on_the_bowl_is_not_reopened():
    priv = _let_go(0.079)
    for key in ("white_cabinet_1_qpos", "white_cabinet_1_bottom_region_qpos"):
        priv[key] = priv[key] * 0 + np.array([0.0, 0.0, -0.03])[-len(priv[key]):]
    priv["white_cabinet_1_handle"][-3:] = [-0.011, 0.159, 0.946]
    priv[f"{BOWL}_pos"] = destinations.destination(priv, BOWL, REGION)
    priv["eef_pos"] = priv["white_cabinet_1_handle"][-3:] + [0.0, 0.0, 0.12]
    assert fx.room_for(priv, REGION) is False  # a shut drawer for a bowl not yet in it would be opened
    assert goals.next_goal(priv) == ("unary", "close", "white_cabinet_1", 2)


def test_the_close_pushes_above_the_handle_tilted_and_on_past_it():
    priv = _scene(qpos=-0.07, gripper_qpos=np.array([0.0005, -0.0005]))
    handle = fx.part(priv, "white_cabinet_1", 2, "handle")
    tilted = fx.close_orientation(fx.open_direction(priv, "white_cabinet_1", 2))
    assert np.isclose(rotation.tilt(tilted), fx.CLOSE_TILT) and rotation.pointing(tilted)[1] > 0.5  # into the cabinet (+y)
    priv.update(eef_pos=handle + [0.0, 0.03, fx.CLOSE_DZ], eef_quat=tilted)  # 3 cm past the bar, over it
    action = fx.close_drawer(priv, "white_cabinet_1", 2)
    assert action[1] > 0.2 and abs(action[2]) < 0.1 and action[6] == 1.0  # pushing on, not rising
    assert np.allclose(action[3:6], 0.0, atol=0.02)  # already at the close's tilt


def test_the_close_keeps_its_tilt_instead_of_being_untilted():
    priv = _scene(qpos=-0.07, gripper_qpos=np.array([0.0005, -0.0005]), goal=f"close {REGION}")
    handle = fx.part(priv, "white_cabinet_1", 2, "handle")
    priv.update(eef_pos=handle + [0.0, -0.03, fx.CLOSE_DZ],
                eef_quat=fx.close_orientation(fx.open_direction(priv, "white_cabinet_1", 2)))
    action = goals.plan(priv)
    assert action[6] == 1.0 and action[1] > 0.2  # pushing with closed fingers, not opening and backing away


def test_only_a_drawers_slide_gets_the_close_tilt_and_the_let_go():
    priv = _scene()
    assert fx.slide_joint(priv, "white_cabinet_1", 2)
    priv["white_cabinet_1_axis"] = np.tile([0.0, 0.0, 1.0], 3)  # a hinge (a door): the door's own primitive
    assert not fx.slide_joint(priv, "white_cabinet_1", 2)


def test_a_drawer_the_goal_closes_takes_the_whole_bowl_however_far_out():
    priv = _scene(qpos=-0.128)  # pushed part way shut on the bowl: still the whole-drawer inset and grasp
    handle = fx.part(priv, "white_cabinet_1", 2, "handle")
    dest = destinations.destination(priv, BOWL, REGION)
    assert np.isclose(dest[1] - handle[1], 0.5 * (-0.006 + 0.114) + destinations.FRONT_WALL)
    priv["goal"] = f"in {BOWL} {REGION}"  # left open, out part way (libero_goal 3): the 6 cm inset
    assert np.isclose(destinations.destination(priv, BOWL, REGION)[1] - handle[1], destinations.DRAWER_INSET)
