#!/usr/bin/env bash
# Offline checks of deploy/, one per ctest test:
#   check_deploy.sh CHECK SOURCE_DIR
# CHECK is one of: yamllint compose compose-run prometheus-config prometheus-rules kustomize
# k8s-run grafana dockerfile. Every tool comes from scripts/setup-debian.sh (Debian packages, and `npm ci` in
# tests/deploy for the Node checks); a missing one fails the test with a message saying so, never
# skips it. Nothing here needs a network, a Docker engine or a Kubernetes cluster.
set -euo pipefail

check=${1:?usage: check_deploy.sh CHECK SOURCE_DIR}
src=$(cd "${2:?usage: check_deploy.sh CHECK SOURCE_DIR}" && pwd)
deploy=$src/deploy
tests=$src/tests/deploy

die() { echo "check_deploy $check: $*" >&2; exit 1; }
need() {
  command -v "$1" >/dev/null ||
    die "$1 not found: run scripts/setup-debian.sh (as root), which installs ${2:-it}"
}
need_npm() {
  need node "Debian's nodejs when no node is on PATH"
  [ -d "$tests/node_modules/kubernetes-models" ] ||
    die "npm packages missing in tests/deploy/node_modules: run scripts/setup-debian.sh (npm ci)"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case $check in
yamllint)
  need yamllint
  yamllint --strict -c "$deploy/.yamllint.yml" "$deploy" "$tests"
  echo "yamllint: ok"
  ;;

compose)
  need docker-compose
  # No engine needed: `config` parses, validates against the Compose schema and interpolates.
  # The join token is the user's own file; a placeholder stands in for it. The certificates come
  # from the script docs/deploy.md names, as a user makes them.
  need openssl
  cp -r "$deploy" "$tmp/deploy"
  echo placeholder >"$tmp/deploy/compose/join_token"
  echo placeholder >"$tmp/deploy/compose/operator_token"
  "$tmp/deploy/compose/make-certs.sh" >/dev/null 2>&1 || die "deploy/compose/make-certs.sh failed"
  (cd "$tmp/deploy/compose" && env -u RINGSIDE_MODE docker-compose -f docker-compose.yml config) \
    >"$tmp/resolved.yml"
  /usr/bin/python3 "$tests/check_compose.py" "$deploy/prometheus/compose.yml" <"$tmp/resolved.yml"
  echo "compose: ok ($(grep -c '^  [a-z]' "$tmp/resolved.yml" || true) top-level entries resolved)"
  ;;

prometheus-config)
  need promtool "the prometheus package"
  promtool check config "$deploy/prometheus/local.yml" "$deploy/prometheus/compose.yml"
  # Debian's Prometheus is built without Kubernetes service discovery, so kubernetes.yml cannot
  # be parsed as it is. Closest honest check: the same file with its kubernetes_sd_configs
  # swapped for a static target, so everything else (relabelling regexes, rules) is checked.
  mkdir -p "$tmp/k8s"
  ln -s "$deploy/prometheus/rules" "$tmp/k8s/rules"
  grep -q '^      - role: pod$' "$deploy/prometheus/kubernetes.yml" ||
    die "kubernetes.yml: no 'kubernetes_sd_configs: - role: pod' block to stand in for"
  sed -e 's/^    kubernetes_sd_configs:$/    static_configs:/' \
      -e 's/^      - role: pod$/      - targets: ["127.0.0.1:9100"]/' \
      "$deploy/prometheus/kubernetes.yml" >"$tmp/k8s/kubernetes.yml"
  promtool check config "$tmp/k8s/kubernetes.yml"
  ;;

prometheus-rules)
  need promtool "the prometheus package"
  promtool check rules "$deploy"/prometheus/rules/*.yml
  promtool test rules "$tests/rules_test.yml"
  ;;

kustomize)
  command -v kubectl >/dev/null ||
    die "kubectl not found. Debian 12 has no kubectl with kustomize v4+ (kubernetes-client 1.20 \
embeds kustomize v2, which cannot read these kustomizations); it comes with the machine image's \
Google Cloud CLI (kubectl 1.32). scripts/setup-debian.sh cannot install it."
  kubectl kustomize --help >/dev/null 2>&1 || die "this kubectl has no 'kustomize' subcommand"
  need_npm
  # The join token is the user's own file (git-ignored); a placeholder stands in for it.
  cp -r "$deploy/k8s" "$tmp/k8s"
  echo placeholder >"$tmp/k8s/base/join-token"
  echo placeholder >"$tmp/k8s/base/operator-token"
  rendered=()
  for dir in base overlays/gpu overlays/prometheus-operator overlays/tls overlays/cert-manager; do
    out=$tmp/$(echo "$dir" | tr / -).yaml
    kubectl kustomize "$tmp/k8s/$dir" >"$out" || die "kubectl kustomize deploy/k8s/$dir failed"
    echo "rendered deploy/k8s/$dir: $(grep -c '^kind:' "$out") objects"
    rendered+=("$out")
  done
  # The Secrets deploy/k8s/make-certs.sh prints for overlays/tls are Kubernetes objects too.
  need openssl
  "$deploy/k8s/make-certs.sh" "$tmp/certs" >"$tmp/secrets.yaml" 2>/dev/null ||
    die "deploy/k8s/make-certs.sh failed"
  node "$tests/validate.mjs" k8s "${rendered[@]}" "$tmp/secrets.yaml"
  node "$tests/validate.mjs" same-rules "$deploy/prometheus/rules/ringside.rules.yml" \
    "$deploy/k8s/overlays/prometheus-operator/prometheusrule.yaml"
  ;;

compose-run | k8s-run)
  # The closest real run of the compose file and the Kubernetes base without an engine or a
  # cluster: their daemons' exact command lines as local processes (run_deploy_locally.py).
  [ -n "${RINGSIDE_BIN_DIR:-}" ] || die "RINGSIDE_BIN_DIR (the built binaries) is not set"
  if [ "$check" = compose-run ]; then
    need docker-compose
    need openssl
    cp -r "$deploy" "$tmp/deploy"
    echo placeholder >"$tmp/deploy/compose/join_token"
    echo placeholder >"$tmp/deploy/compose/operator_token"
    "$tmp/deploy/compose/make-certs.sh" >/dev/null 2>&1 || die "deploy/compose/make-certs.sh failed"
    for mode in ring ps; do  # the default job, and the same in parameter-server mode
      (cd "$tmp/deploy/compose" && RINGSIDE_MODE=$mode docker-compose -f docker-compose.yml config) \
        >"$tmp/resolved-$mode.yml"
      echo -n "RINGSIDE_MODE=$mode: "
      /usr/bin/python3 "$tests/run_deploy_locally.py" compose "$tmp/resolved-$mode.yml" \
        "$RINGSIDE_BIN_DIR"
    done
  else
    command -v kubectl >/dev/null || die "kubectl not found (see the kustomize check)"
    need openssl
    cp -r "$deploy/k8s" "$tmp/k8s"
    echo placeholder >"$tmp/k8s/base/join-token"
    echo placeholder >"$tmp/k8s/base/operator-token"
    kubectl kustomize "$tmp/k8s/base" >"$tmp/base.yaml"
    echo -n "base (plaintext): "
    /usr/bin/python3 "$tests/run_deploy_locally.py" k8s "$tmp/base.yaml" "$RINGSIDE_BIN_DIR"
    # overlays/tls with the Secrets of make-certs.sh, as a user without cert-manager runs it.
    kubectl kustomize "$tmp/k8s/overlays/tls" >"$tmp/tls.yaml"
    "$deploy/k8s/make-certs.sh" "$tmp/certs" >"$tmp/secrets.yaml" 2>/dev/null ||
      die "deploy/k8s/make-certs.sh failed"
    echo -n "overlays/tls (mutual TLS): "
    /usr/bin/python3 "$tests/run_deploy_locally.py" k8s "$tmp/tls.yaml" "$RINGSIDE_BIN_DIR" \
      "$tmp/secrets.yaml"
  fi
  ;;

grafana)
  need_npm
  node "$tests/validate.mjs" dashboard "$deploy/grafana/ringside.json"
  ;;

dockerfile)
  need_npm
  node "$tests/validate.mjs" dockerfile "$deploy/docker/Dockerfile"
  node "$tests/node_modules/dockerfilelint/bin/dockerfilelint" -c "$tests" \
    "$deploy/docker/Dockerfile"
  # Offline (tests/containers builds and runs the image for real): its runtime stage installs
  # every shared library the binaries built here link against.
  [ -n "${RINGSIDE_BIN_DIR:-}" ] || die "RINGSIDE_BIN_DIR (the built binaries) is not set"
  /usr/bin/python3 "$tests/check_image_libraries.py" "$RINGSIDE_BIN_DIR" \
    "$deploy/docker/Dockerfile"
  ;;

*)
  die "unknown check"
  ;;
esac
