#!/usr/bin/python3
"""Consistency of the compose file as docker-compose resolved it (`docker-compose config` output
on stdin) with deploy/prometheus/compose.yml: the services docs/deploy.md lists, a gRPC health check
through `ringside health` on each daemon's own --listen port, the join token as a secret, the
controller's --checkpoint_dir on a named volume, mutual TLS on every daemon (the CA and the
service's own certificate and key as secrets, the same flags in its health check), a stop grace
on every daemon that covers a leave (30 s, as the Kubernetes manifests), every daemon scraped by
Prometheus, Grafana provisioned. Prints one line per problem; exit 1 if any."""
import re
import sys

import yaml

DAEMONS = ["controller", "ps-0", "ps-1", "worker-0", "worker-1", "worker-2", "worker-3"]
MIN_STOP_GRACE_SECONDS = 30  # the manifests' terminationGracePeriodSeconds, for the same reason
TLS_FLAGS = ["--tls_ca=/run/secrets/tls_ca", "--tls_cert=/run/secrets/tls_cert",
             "--tls_key=/run/secrets/tls_key"]


def tls_problems(name, service, top_secrets):
    """The daemon's TLS: its flags, the secrets behind them (its own certificate and key), and
    the same flags in its health check."""
    problems = []
    command = service.get("command") or []
    test = (service.get("healthcheck") or {}).get("test") or []
    for f in TLS_FLAGS:
        if f not in command:
            problems.append(f"{name}: {f} missing (every link is mutual TLS)")
        if f not in test:
            problems.append(f"{name}: healthcheck lacks {f} (a TLS server answers no plaintext check)")
    if "--insecure" in command:
        problems.append(f"{name}: --insecure")
    mounted = {}
    for secret in service.get("secrets", []):
        if isinstance(secret, dict):
            mounted[secret.get("target", secret["source"])] = secret["source"]
        else:
            mounted[secret] = secret
    for target, source in [("tls_ca", "tls_ca"), ("tls_cert", f"{name}_cert"),
                           ("tls_key", f"{name}_key")]:
        if mounted.get(target) != source:
            problems.append(f"{name}: secret {target} is {mounted.get(target)}, want {source}")
        if source not in top_secrets:
            problems.append(f"top-level secret {source} missing")
    return problems


def seconds(duration):
    """A compose duration ("30s", "1m30s", "1.5m") in seconds; None if it is not one."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us)", str(duration))
    if not parts or "".join(n + u for n, u in parts) != str(duration):
        return None
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    return sum(float(n) * scale[u] for n, u in parts)


def flag(command, name):
    for arg in command:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


def main(prometheus_config_path):
    compose = yaml.safe_load(sys.stdin)
    problems = []
    services = compose.get("services", {})
    for name in DAEMONS + ["prometheus", "grafana"]:
        if name not in services:
            problems.append(f"service {name} missing")
    for name in DAEMONS:
        service = services.get(name, {})
        command = service.get("command") or []
        listen = flag(command, "listen") or ""
        port = listen.rsplit(":", 1)[-1]
        test = (service.get("healthcheck") or {}).get("test") or []
        if test[:3] != ["CMD", "ringside", "health"] or f"--address=127.0.0.1:{port}" not in test:
            problems.append(f"{name}: healthcheck {test} does not ask the gRPC health service on "
                            f"its --listen port {port}")
        if flag(command, "metrics_listen") != "0.0.0.0:9100":
            problems.append(f"{name}: --metrics_listen is not 0.0.0.0:9100")
        if flag(command, "join_token_file") != "/run/secrets/join_token" or not any(
                (s if isinstance(s, str) else s.get("source")) == "join_token"
                for s in service.get("secrets", [])):
            problems.append(f"{name}: join token not read from the join_token secret")
        problems += tls_problems(name, service, compose.get("secrets") or {})
        grace = service.get("stop_grace_period")
        if grace is None or (seconds(grace) or 0) < MIN_STOP_GRACE_SECONDS:
            problems.append(f"{name}: stop_grace_period {grace}, want at least "
                            f"{MIN_STOP_GRACE_SECONDS}s (a step plus the leave's rpc timeout; "
                            "Docker's default 10s can kill a daemon mid-leave)")
        if name != "controller":
            advertise = flag(command, "advertise")
            if advertise != f"{name}:{port}":
                problems.append(f"{name}: --advertise={advertise}, want {name}:{port}")
            if flag(command, "controller") != "controller:7000":
                problems.append(f"{name}: --controller is not controller:7000")
    # The controller's durable state must outlive its container: on a declared named volume.
    controller = services.get("controller", {})
    checkpoint_dir = flag(controller.get("command") or [], "checkpoint_dir")
    named = {}
    for volume in controller.get("volumes", []):
        if isinstance(volume, dict) and volume.get("type") == "volume":
            named[volume["target"]] = volume["source"]
        elif isinstance(volume, str) and not volume.startswith((".", "/")):
            source, target = volume.split(":")[:2]
            named[target] = source
    on = [source for target, source in named.items()
          if checkpoint_dir and (checkpoint_dir == target or checkpoint_dir.startswith(target + "/"))]
    if not checkpoint_dir:
        problems.append("controller: no --checkpoint_dir (its durable state)")
    elif not on:
        problems.append(f"controller: --checkpoint_dir={checkpoint_dir} is not on a named volume")
    elif on[0] not in (compose.get("volumes") or {}):
        problems.append(f"top-level volume {on[0]} (the controller's state) missing")
    if "join_token" not in (compose.get("secrets") or {}):
        problems.append("top-level secret join_token missing")
    with open(prometheus_config_path, encoding="utf-8") as f:
        prometheus = yaml.safe_load(f)
    scraped = {t for job in prometheus["scrape_configs"] for group in job.get("static_configs", [])
               for t in group["targets"]}
    for name in DAEMONS:
        if f"{name}:9100" not in scraped:
            problems.append(f"{prometheus_config_path}: {name}:9100 is not scraped")
    grafana_mounts = " ".join(str(v) for v in services.get("grafana", {}).get("volumes", []))
    for needed in ("provisioning", "ringside.json"):
        if not re.search(needed, grafana_mounts):
            problems.append(f"grafana: {needed} not mounted")
    for p in problems:
        print(f"docker-compose.yml: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
