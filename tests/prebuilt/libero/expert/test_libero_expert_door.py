"""``prebuilt/libero-expert``'s microwave: a mug put in through the door's opening and the door pushed shut round its
hinge (:mod:`evaluations.prebuilt.libero.expert.door`), on hand-made privileged observations shaped like libero_10
task 9's (init state 0: the door open at −1.58 rad, the mug 37 cm in front of the opening)."""

from __future__ import annotations

import numpy as np

from evaluations.prebuilt.libero.expert import door
from evaluations.prebuilt.libero.expert import fixtures as fx
from evaluations.prebuilt.libero.expert import goals

DOWN = np.array([1.0, 0.0, 0.0, 0.0])
REGION = "microwave_1_heating_region"
MUG = "white_yellow_mug_1"
ANCHOR = np.array([-0.181, 0.252, 1.016])
GOAL = f"in {MUG} {REGION}; close microwave_1"
#: The mug turned −90° about z: its handle (body +x) points along world −y, out of the opening.
MUG_QUAT = np.array([0.0, 0.0, 0.7071, -0.7071])


def _scene(eef=(-0.21, -0.005, 1.166), qpos=-1.58, mug=(-0.02, -0.019, 0.9), gap=0.079, gap_speed=0.0,
           vel=(0.0, 0.0, 0.0)) -> dict:
    mug = np.asarray(mug, dtype=np.float64)
    c, s = np.cos(qpos), np.sin(qpos)
    handle = ANCHOR + np.array([0.2375 * c + 0.054 * s, 0.2375 * s - 0.054 * c, 0.0])
    return {
        "eef_pos": np.asarray(eef, dtype=np.float64), "eef_quat": DOWN, "eef_vel": np.asarray(vel, dtype=np.float64),
        "gripper_qpos": np.array([gap / 2, -gap / 2]), "gripper_qvel": np.array([gap_speed / 2, -gap_speed / 2]),
        "microwave_1_pos": np.array([-0.008, 0.34, 0.92]), "microwave_1_quat": np.array([0, 0, 0, 1.0]),
        "microwave_1_qpos": np.array([qpos]), "microwave_1_anchor": ANCHOR.copy(),
        "microwave_1_axis": np.array([0, 0, 1.0]), "microwave_1_handle": handle, "microwave_1_open": np.array([-1.0]),
        f"{REGION}_pos": np.array([-0.008, 0.35, 1.016]), f"{REGION}_quat": np.array([0, 0, 0, 1.0]),
        f"{REGION}_size": np.array([0.12, 0.0835, 0.08]),
        f"{MUG}_pos": mug, f"{MUG}_quat": MUG_QUAT,
        f"{MUG}_aabb": np.concatenate([mug + [-0.053, -0.0685, 0.0], mug + [0.053, 0.0713, 0.103]]),
        "goal": GOAL, "obj_of_interest": f"{MUG} microwave_1",
    }


def test_a_vertical_hinge_with_a_far_handle_is_a_door_but_a_knob_or_a_slide_is_not():
    assert fx.door_joint(_scene(), "microwave_1")
    knob = {"k_anchor": np.array([0, 0, 0.9]), "k_axis": np.array([0, 0, 1.0]), "k_handle": np.array([0.05, 0, 0.9])}
    slide = {"d_anchor": np.zeros(3), "d_axis": np.array([0, -1.0, 0]), "d_handle": np.array([0, -0.3, 0])}
    assert not fx.door_joint(knob, "k") and not fx.door_joint(slide, "d")
    assert door.door_of(_scene(), REGION) == "microwave_1"


def test_the_door_counts_as_closed_from_libero_s_minus_0_005_rad():
    """The hinge stops at 0: a slide's "pushed just past 0" would never hold, and the expert pushed on forever."""
    assert fx.unary_met(_scene(qpos=-0.003), "close", "microwave_1") is True
    assert fx.unary_met(_scene(qpos=-0.02), "close", "microwave_1") is False


def test_the_opening_faces_the_hinge_side_of_the_region():
    n, plane = door.front(_scene(), REGION, "microwave_1")
    np.testing.assert_allclose(n, [0.0, -1.0], atol=1e-9)
    assert plane == -ANCHOR[1]


def test_the_mug_is_gripped_by_its_handle_with_the_fingers_across_it():
    grasp, yaw, h = door.handle_grasp(_scene(), MUG)
    np.testing.assert_allclose(h, [0.0, -1.0], atol=1e-3)
    np.testing.assert_allclose(grasp, [-0.02, -0.019 - 0.0685 + door.HANDLE_INSET, 0.9 + 0.103 - door.HANDLE_DEPTH],
                               atol=1e-3)
    assert abs(abs(yaw) - np.pi / 2) < 1e-3  # fingers open along x, across the handle along y


def test_the_mug_goal_comes_before_the_door_and_is_met_once_its_origin_is_inside_the_region():
    assert goals.next_goal(_scene())[:2] == ("door_in", MUG)
    assert goals.next_goal(_scene(mug=(-0.01, 0.258, 0.945)))[:2] == ("door_in", MUG)  # 0.9 cm short of the box
    assert goals.next_goal(_scene(mug=(-0.01, 0.29, 0.945))) == ("unary", "close", "microwave_1", 0)


def test_the_held_mug_is_brought_in_front_of_the_opening_then_slid_in_and_let_go_outside_the_door_plane():
    held = dict(gap=0.018)
    # held over the table, far from the opening: toward the point in front of it, still closed
    eef = np.array([-0.02, -0.06, 1.0])
    grasp = door.handle_grasp(_scene(eef=eef, mug=(-0.02, -0.019 + 0.0, 0.93), **held), MUG)[0]
    priv = _scene(eef=grasp, mug=(-0.02, -0.019, 0.93), **held)
    action = goals.plan(priv)
    assert action[6] == 1.0 and action[1] > 0.5
    # lined up in front at the release height: slides in (+y), still closed
    mug = np.array([-0.008, 0.16, 0.964])
    eef = door.handle_grasp(_scene(mug=mug), MUG)[0]
    action = goals.plan(_scene(eef=eef, mug=mug, **held))
    assert action[6] == 1.0 and action[1] > 0.2 and abs(action[2]) < 0.3
    # at the release point, the hand HAND_CLEAR outside the door's plane: opens
    mug = mug + [0.0, (ANCHOR[1] - door.HAND_CLEAR) - eef[1], 0.0]
    eef = door.handle_grasp(_scene(mug=mug), MUG)[0]
    assert abs(eef[1] - (ANCHOR[1] - door.HAND_CLEAR)) < 1e-9
    assert goals.plan(_scene(eef=eef, mug=mug, **held))[6] == -1.0


def test_a_mug_let_go_short_of_the_region_is_pushed_in_by_its_handle_with_the_fingers_closed():
    mug = np.array([-0.01, 0.258, 0.945])
    end = mug[1] - 0.0685
    action = goals.plan(_scene(eef=(-0.01, end - door.PUSH_BEHIND, 0.945 + door.PUSH_DZ), mug=mug, gap=0.001))
    assert action[6] == 1.0 and action[1] > 0.2 and abs(action[0]) < 0.1  # in along +y
    # never past the door's plane less HAND_CLEAR: there the push stops
    limit = ANCHOR[1] - door.HAND_CLEAR
    action = goals.plan(_scene(eef=(-0.01, limit - 0.002, 0.945 + door.PUSH_DZ), mug=(-0.01, 0.27, 0.945), gap=0.001))
    assert action[6] == 1.0 and abs(action[1]) < 0.05


def test_an_open_hand_over_the_open_door_rises_above_it_before_heading_down_to_the_mug():
    """Coming down diagonally over it, the hand knocked a door open at −1.43 rad to −1.14 (init state 3)."""
    action = goals.plan(_scene(eef=(-0.19, 0.0, 1.12), qpos=-1.43))
    assert action[2] > 0.2 and action[6] == -1.0
    action = goals.plan(_scene(eef=(-0.02, -0.06, 1.12)))  # clear of the door: comes down to the handle
    assert action[2] < -0.2


def test_the_door_is_pushed_shut_round_its_hinge_from_the_side_it_turns_away_from():
    """Closing a hinge is not the drawer's straight push: the hand goes to the door's outer side (−x at −1.58 rad)
    and pushes along the arc (+x there, turning toward +y as it shuts)."""
    placed = dict(mug=(-0.01, 0.30, 0.945), gap=0.001)
    a = goals.plan(_scene(eef=(-0.0, 0.2, 1.0), **placed))  # after the mug push: up and over to the door's outside
    assert a[2] > 0.5 and a[0] < -0.5
    phi = np.arctan2(*(_scene()["microwave_1_handle"] - ANCHOR)[1::-1])
    start = ANCHOR + door.DOOR_RADIUS * np.array([np.cos(phi - door.DOOR_START), np.sin(phi - door.DOOR_START), 0])
    a = goals.plan(_scene(eef=start, **placed))  # low behind the door: push round the hinge (counter-clockwise)
    assert a[0] > 0.5 and a[6] == 1.0
    nearly = _scene(eef=ANCHOR + [0.18 * np.cos(-0.5), 0.18 * np.sin(-0.5), 0], qpos=-0.25, **placed)
    a = goals.plan(nearly)
    assert a[1] > 0.5  # nearly shut: pushing +y into the microwave's front


def test_the_held_mug_keeps_the_hand_s_yaw_whatever_way_the_mug_has_turned_in_the_fingers():
    """Turning the hand after the mug's yaw (its handle's direction) turned the mug on in the fingers: the hand
    spun the mug round and it tipped over the floor's edge (init state 20)."""
    turn = 0.4
    quat = np.array([0.0, 0.0, np.sin((-np.pi / 2 + turn) / 2), np.cos((-np.pi / 2 + turn) / 2)])
    mug = np.array([-0.02, 0.05, 0.93])
    priv = _scene(mug=mug, gap=0.018)
    priv[f"{MUG}_quat"] = quat
    priv["eef_pos"] = door.handle_grasp(priv, MUG)[0]
    priv["eef_quat"] = _down_yaw(-np.pi / 2 + 0.05)
    assert abs(goals.plan(priv)[5]) < 0.02


def _down_yaw(yaw: float) -> np.ndarray:
    from evaluations.prebuilt.libero.expert.rotation import down_with_yaw

    return down_with_yaw(yaw)


def test_the_mug_counts_as_in_by_the_region_s_own_frame_when_the_microwave_is_turned():
    """A microwave turned 90° about z: its region's 8.35 cm half-depth lies along world x, not its 12 cm half-width."""
    priv = _scene()
    turn = np.array([[0.0, -1.0], [1.0, 0.0]])  # region frame → world
    centre = priv[f"{REGION}_pos"]
    priv[f"{REGION}_quat"] = np.array([0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    priv["microwave_1_anchor"] = centre + [*(turn @ [-0.1725, -0.098]), 0.0]
    priv["microwave_1_handle"] = priv["microwave_1_anchor"] + [0.0, -0.24, 0.0]

    def at(x: float, y: float) -> dict:
        placed = dict(priv)
        placed[f"{MUG}_pos"] = centre + [*(turn @ [x, y]), -0.07]
        return placed

    assert door.inside(at(0.0, -0.0835 + 0.02), MUG, REGION)
    assert not door.inside(at(0.0, -0.0835 + 0.005), MUG, REGION)  # 0.5 cm inside the front face: not yet
    assert door.inside(at(0.11, -0.03), MUG, REGION)  # near a side wall, within the 12 cm half-width
    assert not door.inside(at(0.13, -0.03), MUG, REGION)
