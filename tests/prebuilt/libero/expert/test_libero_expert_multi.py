"""Fast unit tests of ``prebuilt/libero-expert`` on goals of several objects in a row (libero_10): synthetic
privileged observations, no simulator."""

from __future__ import annotations

import numpy as np

from evaluations.prebuilt.libero.expert import destinations
from evaluations.prebuilt.libero.expert import goals
from evaluations.prebuilt.libero.expert import grasp as grasping
from evaluations.prebuilt.libero.expert import model as expert
from evaluations.prebuilt.libero.expert import place

REGION = "basket_1_contain_region"
CHEESE, BUTTER = "cream_cheese_1", "butter_1"
DOWN = [1.0, 0.0, 0.0, 0.0]
UPRIGHT = [0.0, 0.0, 0.0, 1.0]


def _box(centre, half) -> np.ndarray:
    centre, half = np.asarray(centre, dtype=np.float64), np.asarray(half, dtype=np.float64)
    return np.concatenate([centre - half, centre + half])


def _two_boxes(eef, cheese=(0.0, 0.25, 0.463), butter=(0.03, 0.06, 0.445), gap=0.079) -> dict:
    """libero_10 task 1: the cheese box and the butter for the basket (its top at 0.578 m, at +y)."""
    scene = {
        "eef_pos": np.asarray(eef, dtype=np.float64), "eef_quat": np.array(DOWN), "eef_vel": np.zeros(3),
        "gripper_qpos": np.array([gap / 2, -gap / 2]), "gripper_qvel": np.zeros(2),
        "basket_1_pos": np.array([0.0, 0.265, 0.432]), "basket_1_quat": np.array(UPRIGHT),
        "basket_1_aabb": np.array([-0.072, 0.181, 0.437, 0.086, 0.351, 0.578]),
        f"{REGION}_pos": np.array([0.0, 0.265, 0.45]), f"{REGION}_quat": np.array(UPRIGHT),
        "goal": f"in {CHEESE} {REGION}; in {BUTTER} {REGION}",
    }
    for name, pos, half in ((CHEESE, cheese, (0.041, 0.022, 0.009)), (BUTTER, butter, (0.038, 0.02, 0.0085))):
        scene.update({f"{name}_pos": np.asarray(pos, dtype=np.float64), f"{name}_quat": np.array(UPRIGHT),
                      f"{name}_aabb": _box(pos, half)})
    return scene


def test_after_a_release_into_the_basket_the_hand_rises_over_its_rim_before_it_leaves():
    """Leaving the basket low toward the butter, the trailing finger hooked the rim and lifted the basket and
    the cheese in it off the table (libero_10 task 1, init states 1-3)."""
    scene = _two_boxes(eef=(0.0, 0.246, 0.59))  # 1.2 cm over the rim
    assert place.current_goal(scene) == ("in", BUTTER, REGION)
    action = expert.plan(scene)
    assert action[2] > 0.2 and abs(action[0]) < 0.05 and abs(action[1]) < 0.05  # straight up
    assert action[6] == -1.0
    high = expert.plan(_two_boxes(eef=(0.0, 0.246, 0.619)))  # where it let go: on toward the butter, level
    assert high[1] < -0.5 and high[2] > -0.05  # not down
    past = expert.plan(_two_boxes(eef=(0.0, 0.1, 0.625)))  # clear of the basket: down toward the butter
    assert past[2] < -0.5


def test_rising_over_the_basket_does_not_apply_away_from_it_or_to_a_grasp_inside_it():
    assert destinations.leave_height(_two_boxes(eef=(0.03, 0.06, 0.5)), np.array([0.03, 0.06, 0.5]),
                           np.array([0.03, 0.06, 0.445])) is None  # beside the butter, away from the basket
    scene = _two_boxes(eef=(0.0, 0.246, 0.6))
    assert destinations.leave_height(scene, scene["eef_pos"], np.array([0.0, 0.25, 0.46])) is None  # regrasp in the basket


MILK = "milk_1"


def _milk_across_the_cheese(eef=(0.12, -0.18, 0.58), gap=0.079) -> dict:
    """libero_10 task 1, init state 0 after the settle steps: the milk carton lies across the cheese box's +y half."""
    scene = _two_boxes(eef=eef, cheese=(0.099, -0.181, 0.446), butter=(0.049, 0.058, 0.445), gap=gap)
    scene.update({
        f"{MILK}_pos": np.array([0.111, -0.139, 0.513]), f"{MILK}_quat": np.array([0.5, 0.5, 0.5, 0.5]),
        f"{MILK}_aabb": np.array([0.048, -0.185, 0.437, 0.156, -0.084, 0.572]),
    })
    return scene


def test_a_carton_lying_across_the_box_is_pushed_off_it_first_above_the_box():
    """The finger landed on the carton lying across the cheese box until the step cap (task 1, init states 0, 4)."""
    scene = _milk_across_the_cheese()
    kind, name, point, floor = goals.next_goal(scene)
    assert (kind, name) == ("uncover", MILK)
    assert point[1] > -0.1  # away from the box, along +y
    assert floor > scene[f"{CHEESE}_aabb"][5]  # the hand stays over the box's top
    action = expert.plan(scene)
    assert action[6] == 1.0  # fingers closed: a push
    # behind the carton (over the box), at the floor height: the push moves it away from the box
    low = _milk_across_the_cheese(eef=(0.108, -0.205, floor), gap=0.0)  # closed fingers, near the box's grasp
    push = expert.plan(low)
    assert push[1] > 0.2 and push[6] == 1.0


def test_once_the_carton_is_off_the_box_it_is_picked_again():
    scene = _milk_across_the_cheese()
    scene[f"{MILK}_aabb"] = scene[f"{MILK}_aabb"] + np.array([0.0, 0.07, 0.0, 0.0, 0.07, 0.0])
    scene[f"{MILK}_pos"] = scene[f"{MILK}_pos"] + np.array([0.0, 0.07, 0.0])
    assert goals.next_goal(scene)[:3] == ("place", "in", CHEESE)


def _milk_beside_the_cheese(eef=(0.12, -0.18, 0.58), gap=0.079, milk_dy=0.0) -> dict:
    """libero_10 task 1, init state 23 after the settle steps: the milk carton lies on its side along the cheese
    box's +y side, 3.5 mm from it, over the box's whole length (its bounding box does not overlap the box's)."""
    scene = _two_boxes(eef=eef, cheese=(0.1145, -0.1865, 0.446), butter=(0.041, 0.068, 0.445), gap=gap)
    scene.update({
        f"{MILK}_pos": np.array([0.1, -0.105 + milk_dy, 0.463]), f"{MILK}_quat": np.array([0.64, 0.31, 0.64, -0.31]),
        f"{MILK}_aabb": np.array([0.04, -0.161 + milk_dy, 0.437, 0.161, -0.051 + milk_dy, 0.49]),
    })
    return scene


def test_a_carton_lying_beside_the_box_under_a_finger_is_pushed_out_of_the_fingers_reach():
    """The finger came down on the carton lying 0-2 cm beside the cheese box and the hand hovered 5 cm over the
    grasp point until the step cap (task 1, init states 13, 23, 41, 42)."""
    scene = _milk_beside_the_cheese()
    grasp, _ = grasping.grasp_pose(scene, CHEESE)
    assert abs(grasp[0] - scene[f"{CHEESE}_pos"][0]) < 1e-9  # no clear spot along the box: the centre stays
    kind, name, point, floor = goals.next_goal(scene)
    assert (kind, name) == ("uncover", MILK)
    near_side = point[1] - 0.5 * (scene[f"{MILK}_aabb"][4] - scene[f"{MILK}_aabb"][1])
    assert near_side - grasp[1] > grasping.PAD_OUT + grasping.CLEARANCE  # past the finger's outer edge
    assert floor > scene[f"{CHEESE}_aabb"][5]
    assert expert.plan(scene)[6] == 1.0  # fingers closed: a push


def test_a_carton_pushed_past_the_fingers_reach_is_left_and_the_box_picked():
    """Pushed only 3 cm past the box (the overlapping carton's old target), it still lay under the finger (init
    states 34, 46); once past the finger's reach it no longer counts."""
    near = _milk_beside_the_cheese(milk_dy=0.03)
    assert goals.next_goal(near)[:2] == ("uncover", MILK)
    far = _milk_beside_the_cheese(milk_dy=0.075)
    assert goals.next_goal(far)[:3] == ("place", "in", CHEESE)


def test_a_carton_standing_beside_the_box_is_not_pushed():
    """Pushed at its foot, the carton standing 2.5 cm beside the cheese box toppled onto the butter, whose
    descent then stopped on it until the step cap (task 1, init state 33); only a lying one is pushed."""
    scene = _two_boxes(eef=(0.08, -0.17, 0.58), cheese=(0.076, -0.176, 0.446), butter=(0.033, 0.057, 0.445))
    scene.update({f"{MILK}_pos": np.array([0.076, -0.1, 0.505]), f"{MILK}_quat": np.array([0.53, 0.5, 0.5, 0.47]),
                  f"{MILK}_aabb": np.array([0.046, -0.13, 0.437, 0.106, -0.07, 0.572])})  # 6 x 6 cm, 13.5 cm tall
    assert grasping.finger_shift(grasping.grasp_pose(scene, CHEESE)[0][:2], scene[f"{MILK}_aabb"], np.array([0.0, 1.0]),
                           np.array([1.0, 0.0]), 0.0) != 0.0  # under the finger's band all the same
    assert goals.next_goal(scene)[:3] == ("place", "in", CHEESE)


def test_no_push_toward_the_next_object_while_the_hand_lets_a_load_go_over_the_basket():
    """With the cheese held in the basket's window and a carton beside the butter, the push started there kept
    the fingers closed on the cheese and carried it away from the basket (task 1, init states 34, 46)."""
    scene = _two_boxes(eef=(0.0, 0.25, 0.56), cheese=(0.0, 0.25, 0.56), butter=(0.03, 0.06, 0.445), gap=0.043)
    scene.update({
        f"{MILK}_pos": np.array([0.05, -0.05, 0.463]), f"{MILK}_quat": np.array([0.64, 0.31, 0.64, -0.31]),
        f"{MILK}_aabb": np.array([-0.01, -0.11, 0.437, 0.11, 0.004, 0.49]),
    })
    assert place.current_goal(scene) == ("in", BUTTER, REGION)  # the cheese counts as placed
    assert goals.next_goal(scene)[:3] == ("place", "in", BUTTER)
    assert expert.plan(scene)[6] == -1.0  # let the cheese go
    away = dict(scene, eef_pos=np.array([0.03, 0.06, 0.6]), gripper_qpos=np.array([0.04, -0.04]))
    assert goals.next_goal(away)[:2] == ("uncover", MILK)  # past the basket, the carton beside the butter is pushed


def test_fingers_closing_at_the_box_grasp_point_keep_closing_whatever_its_bounding_box_neighbours():
    grasp, _ = grasping.grasp_pose(_milk_across_the_cheese(), CHEESE)
    scene = _milk_across_the_cheese(eef=grasp, gap=0.06)
    scene["gripper_qvel"] = np.array([-0.1, 0.1])
    assert goals.next_goal(scene)[:3] == ("place", "in", CHEESE)
    assert expert.plan(scene)[6] == 1.0


STOVE = "flat_stove_1_cook_region"
POT1, POT2 = "moka_pot_1", "moka_pot_2"


def _two_pots(eef=(0.0, 0.0, 1.2), pot1=(-0.054, 0.258, 0.966), pot2=(0.041, 0.043, 0.966), gap=0.079) -> dict:
    """libero_10 task 8: two moka pots (8 cm across, 15 cm along y with the handle) for the stove's 15 cm cook
    region."""
    scene = {
        "eef_pos": np.asarray(eef, dtype=np.float64), "eef_quat": np.array(DOWN), "eef_vel": np.zeros(3),
        "gripper_qpos": np.array([gap / 2, -gap / 2]), "gripper_qvel": np.zeros(2),
        f"{STOVE}_pos": np.array([-0.052, -0.194, 0.905]), f"{STOVE}_quat": np.array(UPRIGHT),
        f"{STOVE}_size": np.array([0.075, 0.075, 0.002]),
        "flat_stove_1_pos": np.array([-0.202, -0.194, 0.905]), "flat_stove_1_quat": np.array(UPRIGHT),
        "flat_stove_1_qpos": np.array([1.4]),
        "goal": f"on {POT1} {STOVE}; on {POT2} {STOVE}",
    }
    for name, pos in ((POT1, pot1), (POT2, pot2)):
        pos = np.asarray(pos, dtype=np.float64)
        scene.update({f"{name}_pos": pos, f"{name}_quat": np.array(UPRIGHT),
                      f"{name}_aabb": np.concatenate([pos + [-0.041, -0.09, -0.066], pos + [0.04, 0.056, 0.086]])})
    return scene


def test_two_objects_for_one_fixture_region_get_a_slot_each_along_the_region():
    """Both pots set at the region's centre: the second landed on the first and tipped over (task 8)."""
    scene = _two_pots()
    first, second = destinations.destination(scene, POT1, STOVE), destinations.destination(scene, POT2, STOVE)
    assert abs(second[0] - first[0]) > 0.08 and abs(second[1] - first[1]) < 1e-9  # side by side along x
    for slot in (first, second):
        assert abs(slot[0] - scene[f"{STOVE}_pos"][0]) < 0.075  # LIBERO's On: the origin within the half-extent
    # the first pot, standing on the centre, is not yet in its slot
    centred = _two_pots(pot1=(-0.052, -0.194, 0.997))
    assert place.current_goal(centred) == ("on", POT1, STOVE)
    in_slot = _two_pots(pot1=(first[0], first[1], 0.997))
    assert place.current_goal(in_slot) == ("on", POT2, STOVE)
    turned = _two_pots(pot1=(first[0], first[1], 0.997))  # the first pot turned in the fingers: the same slot
    centre = turned[f"{POT1}_pos"]  # turned and tilted: 16 cm along x
    turned[f"{POT1}_aabb"] = np.concatenate([centre - [0.09, 0.04, 0.066], centre + [0.07, 0.041, 0.086]])
    assert np.allclose(destinations.destination(turned, POT1, STOVE), first)


def test_a_single_object_or_a_basket_keeps_the_centre():
    scene = _two_pots()
    scene["goal"] = f"on {POT1} {STOVE}"
    assert np.allclose(destinations.destination(scene, POT1, STOVE), scene[f"{STOVE}_pos"])
    basket = _two_boxes(eef=(0.0, 0.0, 0.7))
    assert np.allclose(destinations.destination(basket, CHEESE, REGION), basket[f"{REGION}_pos"])


def test_a_load_standing_on_the_fixture_is_let_go_where_the_lowering_stopped():
    """The stove's surface is 2.4 cm over the region's site: the pot stood on it with the hand 5.3 cm over the
    release height, and was held until the step cap (task 8, init state 0)."""
    slot = destinations.destination(_two_pots(), POT1, STOVE)
    pot = np.array([slot[0], slot[1], 1.003])  # its bottom 3.2 cm over the site, the hand 5.3 cm over the release
    scene = _two_pots(eef=pot + [0.0, 0.0, 0.034], pot1=pot, gap=0.06)
    assert place.current_goal(scene) == ("on", POT1, STOVE)
    assert expert.plan(scene)[6] == -1.0
    scene["eef_vel"] = np.array([0.03, 0.0, 0.0])  # still correcting its xy against the pot's friction
    assert expert.plan(scene)[6] == -1.0
    high = _two_pots(eef=pot + [0.0, 0.0, 0.054], pot1=pot + [0.0, 0.0, 0.02], gap=0.06)  # 5.2 cm over the site
    assert expert.plan(high)[6] == 1.0  # still coming down: keeps holding


def test_the_next_goal_sees_the_first_object_in_its_slot_as_placed():
    """Checked one predicate at a time, the first pot was measured against the region's centre, 5 cm from its
    slot, and the expert went back for it after letting it go (task 8, init state 1)."""
    slot = destinations.destination(_two_pots(), POT1, STOVE)
    scene = _two_pots(pot1=(slot[0], slot[1], 0.997))
    assert goals.next_goal(scene)[:3] == ("place", "on", POT2)
