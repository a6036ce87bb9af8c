#!/usr/bin/env bash
# The network untrusted containers run on: a dedicated bridge whose containers can answer on their published
# serving port but cannot open connections anywhere (internet, host services, other containers), per
# spec/CONTAINERS.md §2 "nothing but the serving port". Idempotent; run as root. Rules are not persistent across
# reboots: run this again (setup-host.sh does).
set -euo pipefail
NET=${RLMESH_CONTAINER_NETWORK:-rlsandbox}
SUBNET=${RLMESH_SANDBOX_SUBNET:-10.89.50.0/24}
podman network exists "$NET" || podman network create --disable-dns --subnet "$SUBNET" "$NET" >/dev/null
rule() {  # chain, comment: drop new connections from the sandbox subnet
  iptables -C "$1" -s "$SUBNET" -m conntrack --ctstate NEW -m comment --comment "$2" -j DROP 2>/dev/null ||
    iptables -I "$1" 1 -s "$SUBNET" -m conntrack --ctstate NEW -m comment --comment "$2" -j DROP
}
rule FORWARD "$NET-no-egress"
rule INPUT "$NET-no-host"
echo "network $NET ($SUBNET): published ports only; egress, host and peer connections dropped"
