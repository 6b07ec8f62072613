#!/usr/bin/env bash
# The Secrets of components/tls (overlays/tls) without cert-manager: a CA and one certificate per
# component made with openssl (deploy/tls/make-certs.sh), printed as Kubernetes Secrets of type
# kubernetes.io/tls with ca.crt, tls.crt and tls.key, as cert-manager writes them:
#
#   deploy/k8s/make-certs.sh [OUT_DIR] | kubectl apply -f -
#   kubectl apply -k deploy/k8s/overlays/tls
#
# OUT_DIR (default deploy/k8s/certs, git-ignored) keeps the files: ca.key (keep it out of the
# cluster; running the script again re-issues the certificates under the same CA) and
# operator.crt/operator.key, for `ringside ctl` through `kubectl port-forward` (the controller's
# certificate names 127.0.0.1). Each certificate names the hosts its pods are dialled by: the
# controller's Service, and every shard's and worker's pod name (ringside-ps-0.ringside-ps, ...)
# for the replicas in base/job.env (RINGSIDE_PS_SHARDS, RINGSIDE_WORKERS; set them in the
# environment to override). Give the namespace with kubectl apply -n, as for the rest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/certs}
job_value() { sed -n "s/^$1=//p" "$here/base/job.env"; }
workers=${RINGSIDE_WORKERS:-$(job_value RINGSIDE_WORKERS)}
shards=${RINGSIDE_PS_SHARDS:-$(job_value RINGSIDE_PS_SHARDS)}

pods() {  # pods NAME COUNT: the StatefulSet's pod names, comma-separated
  local names=()
  for ((i = 0; i < $2; i++)); do names+=("$1-$i.$1"); done
  (IFS=,; echo "${names[*]}")
}
"$here/../tls/make-certs.sh" "$out" controller=ringside-controller \
  "ps=$(pods ringside-ps "$shards")" "worker=$(pods ringside-worker "$workers")" operator >&2

b64() { base64 -w0 <"$1"; }
first=true
for component in controller ps worker; do
  $first || echo "---"
  first=false
  cat <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: ringside-tls-$component
  labels:
    app.kubernetes.io/part-of: ringside
type: kubernetes.io/tls
data:
  ca.crt: $(b64 "$out/ca.crt")
  tls.crt: $(b64 "$out/$component.crt")
  tls.key: $(b64 "$out/$component.key")
YAML
done
