#!/usr/bin/env bash
# The compose file's certificates, which it mounts as secrets: a CA and one certificate per
# service in deploy/compose/tls/ (git-ignored), each naming its service (the host the others
# dial), plus `operator` for a `ringside ctl` run from the host. Run once before
# `docker-compose up`; running it again re-issues the certificates under the same CA.
#
#   deploy/compose/make-certs.sh
#
# The containers run as user 10001 and read their keys (0600) from a bind mount: run as root,
# the script hands the keys to that user; otherwise it says how.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
services=(controller ps-0 ps-1 worker-0 worker-1 worker-2 worker-3)
specs=()
for service in "${services[@]}"; do specs+=("$service=$service"); done
"$here/../tls/make-certs.sh" "$here/tls" "${specs[@]}" operator
if [ "$(id -u)" = 0 ]; then
  for service in "${services[@]}"; do chown 10001:10001 "$here/tls/$service.key"; done
else
  echo "make-certs.sh: the containers' user (10001) must read the keys: run" \
    "sudo chown 10001:10001 $here/tls/{$(IFS=,; echo "${services[*]}")}.key" >&2
fi
echo "certificates in $here/tls (operator.crt and operator.key: for ringside ctl from the host)"
