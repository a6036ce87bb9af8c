#!/usr/bin/env bash
# Build the prebuilt catalog as OCI images on top of localhost/rlmesh-base:0.1.0 (build it first with
# containers/base/build-base.sh). Each image gets a dev.rlmesh.describe label made by `rlmesh describe`.
# Usage: containers/build-images.sh [name ...]   (default: all); images are tagged localhost/rlmesh-<name>:latest
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(classic-control classic-control-heuristics ppo broken-crash)
for name in "${names[@]}"; do
  ctx="var/containers/ctx-$name"
  rm -rf "$ctx" && mkdir -p "$ctx/rlmesh_prebuilt/weights"
  cp evaluations/prebuilt/{__init__,envs,models,policies}.py "$ctx/rlmesh_prebuilt/"
  cp evaluations/prebuilt/weights/*.npz "$ctx/rlmesh_prebuilt/weights/"
  cp "containers/images/$name/Containerfile" "$ctx/"
  describe=""
  case "$name" in
    classic-control) describe=$(cd "$ctx" && RLMESH_WORKFLOW_EDITION=2026.06 "../../../$PY" -m rlmesh._describe --env rlmesh_prebuilt.envs:ClassicControl) ;;
    classic-control-heuristics) describe=$(cd "$ctx" && RLMESH_WORKFLOW_EDITION=2026.06 "../../../$PY" -m rlmesh._describe rlmesh_prebuilt.models:ClassicControlHeuristics) ;;
    ppo) describe=$(cd "$ctx" && RLMESH_WORKFLOW_EDITION=2026.06 "../../../$PY" -m rlmesh._describe rlmesh_prebuilt.models:NumpyMLP) ;;
  esac
  podman build -q --build-arg "DESCRIBE=$describe" -t "localhost/rlmesh-$name:latest" "$ctx" >/dev/null
  echo "built localhost/rlmesh-$name:latest"
done
