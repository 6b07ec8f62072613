#!/usr/bin/python3
"""Runs the daemons of a deploy file as local processes, exactly with the command lines the file
gives them, and checks that they form a training cluster. No Docker engine or Kubernetes
cluster exists here, so this is the closest real run of those files: every flag they pass must
be one the binaries accept, the addresses they advertise must reach each other, and the job must
train.

  run_deploy_locally.py compose RESOLVED.yml BIN_DIR   (`docker-compose config` output)
  run_deploy_locally.py k8s RENDERED.yaml BIN_DIR [SECRETS.yaml]
                                     (`kubectl kustomize deploy/k8s/base` or an overlay; SECRETS:
                                     Secrets the overlay's pods mount, e.g. make-certs.sh's)

Host names become 127.0.0.1 and every (host, port) a free loopback port: compose service names
(controller, ps-0, ...) and Kubernetes names (Service ringside-controller, pod DNS names such as
ringside-ps-0.ringside-ps). The join token becomes a temporary token file; other secrets (the
TLS certificates and keys) their files: compose file secrets where the compose file has them,
Kubernetes Secrets written out from SECRETS.yaml; and durable volumes (compose
named volumes, Kubernetes PersistentVolumeClaims) a temporary directory each, wherever a flag
names a path on them (the controller's --checkpoint_dir). Kubernetes arguments are
expanded as the kubelet does ($(VAR) from env, envFrom ConfigMaps and the downward API's
metadata.name). Then: every daemon's health check (compose healthcheck / Kubernetes readiness
probe, through `ringside health`: a native gRPC probe speaks plaintext, an exec probe runs its
own command with its TLS flags) passes, and every worker's ringside_steps_total
grows. Processes are stopped by PID; the temporary folder is removed.
"""
import base64
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

READY_TIMEOUT_S = 90


class Daemon:
    def __init__(self, name, argv, env=None):
        self.name, self.argv, self.env = name, list(argv), dict(env or {})
        self.health_port = None  # container port the health check asks
        self.health_flags = []  # the health check's other flags (security), as in the file
        self.files = {}  # path in the container -> local path (secrets)
        self.volumes = {}  # durable volumes: mount path in the container -> volume name
        self.process = None


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def flag(argv, name):
    for arg in argv:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


# ---- compose --------------------------------------------------------------------------------
def compose_daemons(path, token):
    compose = yaml.safe_load(open(path, encoding="utf-8"))
    daemons = []
    for name, service in compose["services"].items():
        command = service.get("command")
        if not command or not str(command[0]).startswith("ringside"):
            continue  # prometheus, grafana: images of their own
        daemon = Daemon(name, command)
        test = (service.get("healthcheck") or {}).get("test") or []
        address = flag(test, "address")
        if test[:3] != ["CMD", "ringside", "health"] or not address:
            sys.exit(f"{name}: health check is not `ringside health --address=...`: {test}")
        daemon.health_port = int(address.rsplit(":", 1)[1])
        daemon.health_flags = [a for a in test[3:] if not a.startswith(("--address=", "--timeout="))]
        # File secrets are mounted at /run/secrets/<target>; `config` resolved their files.
        for secret in service.get("secrets", []):
            source = secret if isinstance(secret, str) else secret["source"]
            target = source if isinstance(secret, str) else secret.get("target", source)
            daemon.files[f"/run/secrets/{target}"] = compose["secrets"][source]["file"]
        daemon.files["/run/secrets/join_token"] = token
        daemon.files["/run/secrets/operator_token"] = token  # any token file will do here
        for volume in service.get("volumes", []):
            if isinstance(volume, dict):  # long syntax
                if volume.get("type") == "volume":
                    daemon.volumes[volume["target"]] = volume["source"]
            elif not volume.startswith((".", "/")):  # short syntax; a named volume, not a bind
                source, target = volume.split(":")[:2]
                daemon.volumes[target] = source
        daemons.append(daemon)
    # A service is reached by its own name inside the compose network.
    return daemons, {d.name: d for d in daemons}


# ---- Kubernetes -----------------------------------------------------------------------------
def expand(text, env):
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)),
                  text)


def write_secrets(path, workdir):
    """Writes every Secret of SECRETS.yaml as files, as the kubelet mounts them: name -> dir."""
    if not path:
        return {}
    dirs = {}
    for secret in yaml.safe_load_all(open(path, encoding="utf-8")):
        if not secret or secret.get("kind") != "Secret":
            continue
        local = os.path.join(workdir, "secret-" + secret["metadata"]["name"])
        os.makedirs(local, exist_ok=True)
        for key, value in (secret.get("data") or {}).items():
            with open(os.path.join(local, key), "wb") as f:
                f.write(base64.b64decode(value))
        dirs[secret["metadata"]["name"]] = local
    return dirs


def probe_check(container, daemon):
    """The readiness probe as `ringside health`: a gRPC probe (plaintext), or an exec probe's own
    `ringside health` command."""
    probe = container["readinessProbe"]
    if "grpc" in probe:
        daemon.health_port, daemon.health_flags = probe["grpc"]["port"], ["--insecure"]
        return
    command = (probe.get("exec") or {}).get("command") or []
    address = flag(command, "address")
    if command[:2] != ["ringside", "health"] or not address:
        sys.exit(f"{daemon.name}: readiness probe is neither gRPC nor `ringside health`: {probe}")
    daemon.health_port = int(address.rsplit(":", 1)[1])
    daemon.health_flags = [a for a in command[2:]
                           if not a.startswith(("--address=", "--timeout="))]


def k8s_daemons(path, token, secret_dirs):
    objects = [o for o in yaml.safe_load_all(open(path, encoding="utf-8")) if o]
    config_maps = {o["metadata"]["name"]: o.get("data", {}) for o in objects
                   if o["kind"] == "ConfigMap"}
    daemons, by_host = [], {}
    for workload in objects:
        if workload["kind"] not in ("Deployment", "StatefulSet"):
            continue
        spec = workload["spec"]
        base = workload["metadata"]["name"]
        for ordinal in range(spec.get("replicas", 1)):
            pod = f"{base}-{ordinal}" if workload["kind"] == "StatefulSet" else base
            for container in spec["template"]["spec"]["containers"]:
                env = {}
                for source in container.get("envFrom", []):
                    env.update(config_maps[source["configMapRef"]["name"]])
                for variable in container.get("env", []):
                    field = (variable.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
                    env[variable["name"]] = pod if field == "metadata.name" else variable.get("value", "")
                argv = [expand(a, env) for a in container.get("command", []) + container.get("args", [])]
                mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
                for secret in ("join-token", "operator-token"):  # any token file will do here
                    argv = [a.replace(mounts.get(secret, "\0") + "/token", token) for a in argv]
                daemon = Daemon(pod, argv)
                for volume in spec["template"]["spec"].get("volumes", []):
                    if "persistentVolumeClaim" in volume and volume["name"] in mounts:
                        daemon.volumes[mounts[volume["name"]]] = volume["name"]
                    secret = (volume.get("secret") or {}).get("secretName")
                    if volume["name"] in mounts and secret in secret_dirs:
                        daemon.files[mounts[volume["name"]]] = secret_dirs[secret]
                probe_check(container, daemon)
                daemons.append(daemon)
                if workload["kind"] == "StatefulSet":
                    by_host[f"{pod}.{spec['serviceName']}"] = daemon
                else:
                    by_host[base] = daemon
    # Services: a Deployment's Service has the Deployment's name here (ringside-controller).
    return daemons, by_host


# ---- common ---------------------------------------------------------------------------------
def localise(daemons, by_host):
    """Gives every (daemon, container port) a free loopback port and rewrites the addresses."""
    listen_ports = {}
    for d in daemons:
        for key in ("listen", "metrics_listen"):
            value = flag(d.argv, key)
            if value is None:
                sys.exit(f"{d.name}: no --{key}")
            listen_ports[(d.name, int(value.rsplit(":", 1)[1]))] = None
    for key, port in zip(list(listen_ports), free_ports(len(listen_ports))):
        listen_ports[key] = port

    def address(host, port, daemon):
        if host in ("0.0.0.0", "127.0.0.1", "localhost"):
            target = daemon
        elif host in by_host:
            target = by_host[host]
        else:
            sys.exit(f"{daemon.name}: address {host}:{port} names no daemon")
        if (target.name, port) not in listen_ports:
            sys.exit(f"{daemon.name}: {host}:{port}: {target.name} does not listen on {port}")
        return f"127.0.0.1:{listen_ports[(target.name, port)]}"

    for d in daemons:
        metrics_port = int(flag(d.argv, "metrics_listen").rsplit(":", 1)[1])
        rewritten = []
        for arg in d.argv:
            m = re.match(r"^(--(?:listen|metrics_listen|advertise|controller)=)([^:]+):(\d+)$", arg)
            rewritten.append(m.group(1) + address(m.group(2), int(m.group(3)), d) if m else arg)
        d.argv = rewritten
        d.health = address("127.0.0.1", d.health_port, d)
        d.metrics = f"http://{address('127.0.0.1', metrics_port, d)}/metrics"


def localise_files(daemons):
    """Points every flag naming a secret's file (or a file in a mounted Secret) at its local
    copy, in the command line and in the health check."""
    def local(arg, files):
        m = re.match(r"^(--[a-z_]+=)(/.*)$", arg)
        if not m:
            return arg
        for inside, outside in files.items():
            if m.group(2) == inside or m.group(2).startswith(inside + "/"):
                return m.group(1) + outside + m.group(2)[len(inside):]
        return arg
    for d in daemons:
        d.argv = [local(a, d.files) for a in d.argv]
        d.health_flags = [local(a, d.files) for a in d.health_flags]


def localise_volumes(daemons, workdir):
    """Points every flag naming a path on a durable volume at a fresh local directory."""
    for d in daemons:
        for mount_path, volume in d.volumes.items():
            local = os.path.join(workdir, f"{d.name}-{volume}")
            os.makedirs(local, exist_ok=True)
            d.argv = [re.sub(rf"^(--[a-z_]+=){re.escape(mount_path)}(?=/|$)",
                             lambda m, local=local: m.group(1) + local, a) for a in d.argv]


def scrape(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.read().decode()
    except OSError:
        return None


def steps(text):
    total = 0.0
    for line in (text or "").splitlines():
        if line.startswith("ringside_steps_total"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def main(kind, path, bin_dir, secrets=None):
    workdir = tempfile.mkdtemp(prefix="ringside-deploy-local-")
    daemons = []
    try:
        token = os.path.join(workdir, "join_token")
        with open(token, "w", encoding="utf-8") as f:
            f.write("local-test-token\n")
        if kind == "compose":
            daemons, by_host = compose_daemons(path, token)
        else:
            daemons, by_host = k8s_daemons(path, token, write_secrets(secrets, workdir))
        localise(daemons, by_host)
        localise_files(daemons)
        localise_volumes(daemons, workdir)
        for d in daemons:
            program = os.path.join(bin_dir, d.argv[0])
            log = open(os.path.join(workdir, d.name + ".log"), "w", encoding="utf-8")
            d.process = subprocess.Popen([program] + d.argv[1:], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env={**os.environ, **d.env})
            d.log = log.name
        health = os.path.join(bin_dir, "ringside")
        deadline = time.monotonic() + READY_TIMEOUT_S
        pending = {d.name for d in daemons}
        first_steps = {}
        while pending and time.monotonic() < deadline:
            for d in daemons:
                if d.process.poll() is not None:
                    tail = open(d.log, encoding="utf-8").read()[-1500:]
                    sys.exit(f"{d.name} exited with {d.process.returncode}: {' '.join(d.argv)}\n{tail}")
                if d.name not in pending:
                    continue
                check = subprocess.run([health, "health", f"--address={d.health}", "--timeout=2s"]
                                       + d.health_flags, capture_output=True, text=True)
                if check.returncode != 0:
                    d.last_health = (check.stdout + check.stderr).strip()
                    if re.search(r"unknown command|Unknown command line flag", d.last_health):
                        sys.exit(f"`ringside health` is not available in {bin_dir}: {d.last_health}")
                    continue
                if d.argv[0] == "ringside-worker":
                    count = steps(scrape(d.metrics))
                    first_steps.setdefault(d.name, count)
                    if count <= first_steps[d.name]:
                        continue
                pending.discard(d.name)
            time.sleep(0.5)
        if pending:
            logs = "\n".join(f"--- {d.name}: {' '.join(d.argv)}\nlast health check: "
                             f"{getattr(d, 'last_health', 'passed')}\n" +
                             open(d.log, encoding="utf-8").read()[-800:]
                             for d in daemons if d.name in pending)
            sys.exit(f"not healthy and training after {READY_TIMEOUT_S}s: {sorted(pending)}\n{logs}")
        print(f"{kind}: ok ({len(daemons)} daemons healthy, every worker's steps growing)")
        return 0
    finally:
        for d in daemons:
            if d.process and d.process.poll() is None:
                d.process.send_signal(signal.SIGTERM)
        for d in daemons:
            if d.process:
                try:
                    d.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    d.process.kill()
                    d.process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in ("compose", "k8s"):
        sys.exit("usage: run_deploy_locally.py compose|k8s FILE BIN_DIR [SECRETS.yaml]")
    sys.exit(main(*sys.argv[1:]))
