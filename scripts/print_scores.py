"""Print an evaluation's per-task scores with the official rlmesh.platform.Client (used by `make demo`)."""

import sys

from rlmesh.platform import Client


def main(evaluation_id: str) -> None:
    scores = Client().scores(evaluation_id)
    print(f"{'model':40} {'task':24} {'n':>4} {'success':>8}  {'95% CI':>16}  {'mean return':>11}")
    for g in scores["groups"]:
        rate, ci = g["successRate"], g["successRateCi"]
        rate_s = "—" if rate is None else f"{rate:.0%}"
        ci_s = "" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"
        mean = "—" if g["meanReward"] is None else f"{g['meanReward']:.1f}"
        print(f"{g['key']['model']:40} {g['key']['taskId']:24} {g['episodes']:>4} {rate_s:>8}  {ci_s:>16}  {mean:>11}")


if __name__ == "__main__":
    main(sys.argv[1])
