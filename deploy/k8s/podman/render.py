#!/usr/bin/env python3
"""Renders the Kubernetes base (deploy/k8s/base) into what Debian 12's `podman kube play`
(Podman 4.3) can run, one play file per workload, for the container test
(tests/containers/kube_test.sh) and for anyone trying the base without a cluster.

  render.py BASE_DIR OUT_DIR --suffix=ID [--image=NAME=REF ...]

BASE_DIR is a kustomization like deploy/k8s/base, with its join-token and operator-token files
beside it. No `kubectl` is needed: the kustomization's own fields (resources, labels,
configMapGenerator, secretGenerator, images) are applied here, and any other field is refused
with an error, so a base that grows a patch fails loudly instead of rendering something else.

What Podman 4.3 cannot run, and what stands in for it (each also in docs/deploy.md, Kubernetes):
  - StatefulSet: not a kind kube play knows. Each replica becomes a Pod of its own, with the
    name Kubernetes gives it (ringside-ps-0, ...) in the downward API's metadata.name.
  - Service: no such object. Its name, and a StatefulSet pod's DNS name (ringside-ps-0.ringside-ps
    under its headless Service), become network aliases of the pods the Service selects, given
    with `podman kube play --network NET:alias=NAME` (hence one play per workload). An alias
    cannot map ports: a Service whose port differs from its target is refused.
  - Secret volumes: kube play mounts only hostPath, emptyDir and persistentVolumeClaim. Each
    secretGenerator Secret is written out as files, as the kubelet mounts them (defaultMode,
    group fsGroup), and mounted as a hostPath directory.
  - $(VAR) in command and args: Podman 4.3 passes them through unexpanded; they are expanded
    here as the kubelet does (env, envFrom ConfigMaps, downward API metadata.name).
  - emptyDir: Podman 4.3 makes it a named volume called after the pod's volume, shared by every
    pod that has one of that name; each is renamed after its pod.
  - containerPort: Podman 4.3 publishes every one on the host's port of the same number (pods
    would collide, and with the host's own services); ports are dropped, pods are reached on
    their network.
  - gRPC probes: Podman 4.3 ignores them; they are dropped here and listed in pods.tsv, and the
    test runs the readiness probe's check (`ringside health` on its port) itself.
  - PodDisruptionBudget: nothing evicts under kube play; the budgets are left out.
Names that outlive a play in Podman's store carry the suffix: pods, Deployments, claims.

OUT_DIR gets NN-NAME.yaml per workload (its ConfigMaps and claims first), secrets/ and pods.tsv,
one line per container, tab-separated: play file, aliases (comma-separated), Podman's pod name,
component label, container, Podman's container name, readiness port, metrics port.
"""
import argparse
import copy
import os
import re
import sys

import yaml

KNOWN_FIELDS = {"apiVersion", "kind", "resources", "labels", "configMapGenerator",
                "secretGenerator", "images"}
COMPONENT = "app.kubernetes.io/component"


def fail(message):
    sys.exit(f"render.py: {message}")


def load_yaml_documents(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [d for d in yaml.safe_load_all(f) if d]
    except (OSError, yaml.YAMLError) as error:
        fail(f"cannot read {path}: {error}")


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as error:
        fail(f"cannot read {path}: {error}")


# ---- the kustomization ----------------------------------------------------------------------
def env_file(path):
    """A kustomize `envs` file: KEY=VALUE lines; blank lines and # comments skipped."""
    data = {}
    for line in read_file(path).decode("utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            if not sep:
                fail(f"{path}: '{line[:80]}' is not KEY=VALUE")
            data[key] = value
    return data


def config_maps(base, kustomization):
    maps = {}
    for generator in kustomization.get("configMapGenerator", []):
        unknown = set(generator) - {"name", "envs", "literals"}
        if unknown:
            fail(f"configMapGenerator {generator.get('name')}: unsupported {sorted(unknown)}")
        data = {}
        for path in generator.get("envs", []):
            data.update(env_file(os.path.join(base, path)))
        for literal in generator.get("literals", []):
            key, _, value = literal.partition("=")
            data[key] = value
        maps[generator["name"]] = data
    return maps


def secrets(base, kustomization):
    """secretGenerator with `files` (KEY=PATH or PATH): Secret name -> {key: bytes}."""
    result = {}
    for generator in kustomization.get("secretGenerator", []):
        unknown = set(generator) - {"name", "files"}
        if unknown:
            fail(f"secretGenerator {generator.get('name')}: unsupported {sorted(unknown)}")
        data = {}
        for entry in generator.get("files", []):
            key, sep, path = entry.partition("=")
            if not sep:
                key, path = os.path.basename(entry), entry
            data[key] = read_file(os.path.join(base, path))
        result[generator["name"]] = data
    return result


def add_labels(objects, kustomization):
    for entry in kustomization.get("labels", []):
        if entry.get("includeSelectors"):
            fail("labels with includeSelectors: not applied by this rendering")
        pairs = entry.get("pairs", {})
        for obj in objects:
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(pairs)
            template = obj.get("spec", {}).get("template")
            if template and entry.get("includeTemplates"):
                template.setdefault("metadata", {}).setdefault("labels", {}).update(pairs)


def image_map(kustomization, overrides):
    images = {}
    for entry in kustomization.get("images", []):
        ref = entry.get("newName", entry["name"])
        if "digest" in entry:
            ref += "@" + entry["digest"]
        elif "newTag" in entry:
            ref += ":" + str(entry["newTag"])
        images[entry["name"]] = ref
    for override in overrides:
        name, sep, ref = override.partition("=")
        if not sep:
            fail(f"--image {override}: expected NAME=REF")
        images[name] = ref
    return images


def load_base(base, image_overrides):
    kustomization = load_yaml_documents(os.path.join(base, "kustomization.yaml"))[0]
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        fail(f"{base}/kustomization.yaml: fields this rendering does not apply: {sorted(unknown)}")
    objects = []
    for resource in kustomization.get("resources", []):
        path = os.path.join(base, resource)
        if os.path.isdir(path):
            fail(f"resource {resource}: a directory (another kustomization) is not supported")
        objects.extend(load_yaml_documents(path))
    add_labels(objects, kustomization)
    images = image_map(kustomization, image_overrides)
    for obj in objects:
        for container in pod_spec(obj).get("containers", []) if pod_spec(obj) else []:
            name = re.split(r"[:@]", container["image"])[0]
            container["image"] = images.get(name, container["image"])
    return objects, config_maps(base, kustomization), secrets(base, kustomization)


def pod_spec(obj):
    return obj.get("spec", {}).get("template", {}).get("spec")


# ---- Services as aliases --------------------------------------------------------------------
def selects(service, workload):
    selector = service["spec"].get("selector") or {}
    labels = workload["spec"]["template"]["metadata"].get("labels", {})
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def container_port(workload, port):
    """A port given by name or number, as the workload's containers declare it."""
    if isinstance(port, int):
        return port
    for container in pod_spec(workload)["containers"]:
        for declared in container.get("ports", []):
            if declared.get("name") == port:
                return declared["containerPort"]
    fail(f"{workload['metadata']['name']}: no container port named {port}")


def check_ports(service, workload):
    for port in service["spec"].get("ports", []):
        target = container_port(workload, port.get("targetPort", port["port"]))
        if target != port["port"]:
            fail(f"Service {service['metadata']['name']}: port {port['port']} -> {target}; a "
                 "Podman alias cannot map ports")


def aliases(workload, services, kube_pod):
    """The names a pod of WORKLOAD answers to: every Service that selects it, and under a
    StatefulSet's headless Service its own pod DNS name."""
    names = []
    for service in services:
        if selects(service, workload):
            check_ports(service, workload)
            names.append(service["metadata"]["name"])
    governing = workload["spec"].get("serviceName")
    if governing:
        if governing not in names:
            fail(f"StatefulSet {workload['metadata']['name']}: its serviceName {governing} is no "
                 "Service that selects it")
        names.append(f"{kube_pod}.{governing}")
    return names


# ---- one pod spec, made playable ------------------------------------------------------------
def expand(text, env):
    """The kubelet's $(VAR) expansion: defined names are replaced, $$ is a literal $."""
    def one(match):
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", one, text)


def resolve_env(container, maps, kube_pod):
    """The container's environment as the kubelet builds it; downward API fields become values
    (Podman would give its own pod name)."""
    env = {}
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef", {}).get("name")
        if ref not in maps:
            fail(f"container {container['name']}: envFrom {source} is no generated ConfigMap")
        env.update(maps[ref])
    for variable in container.get("env", []):
        field = (variable.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
        if "valueFrom" in variable:
            if field not in ("metadata.name", "metadata.namespace"):
                fail(f"container {container['name']}: env {variable['name']}: unsupported "
                     f"valueFrom {variable['valueFrom']}")
            variable.pop("valueFrom")
            variable["value"] = kube_pod if field == "metadata.name" else "default"
        variable["value"] = expand(str(variable.get("value", "")), env)
        env[variable["name"]] = variable["value"]
    return env


def probe_port(container, workload):
    probe = container.pop("readinessProbe", None)
    container.pop("livenessProbe", None)
    if not probe or "grpc" not in probe:
        fail(f"container {container['name']}: this rendering knows only gRPC readiness probes")
    return container_port(workload, probe["grpc"]["port"])


def write_secret(out, kube_pod, volume, data, fs_group):
    source = volume.pop("secret")
    if source["secretName"] not in data:
        fail(f"volume {volume['name']}: Secret {source['secretName']} is not generated here")
    directory = os.path.join(out, "secrets", kube_pod, volume["name"])
    os.makedirs(directory, mode=0o755)
    mode = source.get("defaultMode", 0o644)
    for key, content in data[source["secretName"]].items():
        path = os.path.join(directory, key)
        with open(path, "wb") as f:
            f.write(content)
        # As the kubelet: the volume's group is fsGroup, so a mode like 0440 still lets the
        # pod's non-root user read it. Only root can give a file away.
        if fs_group is not None and os.geteuid() == 0:
            os.chown(path, 0, fs_group)
        os.chmod(path, mode)
    volume["hostPath"] = {"path": directory, "type": "Directory"}


def playable_volumes(spec, out, kube_pod, podman_pod, data, suffix):
    """Secret volumes to hostPath files; emptyDir and claim names made this pod's and run's."""
    renamed, claims = {}, []
    fs_group = spec.get("securityContext", {}).get("fsGroup")
    for volume in spec.get("volumes", []):
        if "secret" in volume:
            write_secret(out, kube_pod, volume, data, fs_group)
        elif "emptyDir" in volume:
            renamed[volume["name"]] = f"{podman_pod}-{volume['name']}"
            volume["name"] = renamed[volume["name"]]
        elif "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]
            claims.append(claim["claimName"])
            claim["claimName"] = f"{claim['claimName']}-{suffix}"
        elif "hostPath" not in volume:
            fail(f"volume {volume['name']}: a kind kube play cannot mount")
    for container in spec["containers"]:
        for mount in container.get("volumeMounts", []):
            mount["name"] = renamed.get(mount["name"], mount["name"])
    return claims


def playable_spec(workload, template, kube_pod, podman_pod, context):
    """The pod template as Podman 4.3 runs it; returns (template, claims, per-container rows)."""
    template = copy.deepcopy(template)
    spec = template["spec"]
    claims = playable_volumes(spec, context["out"], kube_pod, podman_pod, context["secrets"],
                              context["suffix"])
    rows = []
    for container in spec["containers"]:
        env = resolve_env(container, context["maps"], kube_pod)
        for key in ("command", "args"):
            if key in container:
                container[key] = [expand(str(arg), env) for arg in container[key]]
        ready = probe_port(container, workload)
        container.pop("ports", None)
        metrics = template["metadata"].get("annotations", {}).get("prometheus.io/port", "-")
        rows.append((container["name"], ready, metrics))
    return template, claims, rows


# ---- workloads to play files ----------------------------------------------------------------
def statefulset_pods(workload, context):
    """(document, claims, kube pod, Podman pod, rows) per replica: a Pod each."""
    name = workload["metadata"]["name"]
    for ordinal in range(workload["spec"].get("replicas", 1)):
        kube_pod = f"{name}-{ordinal}"
        podman_pod = f"{kube_pod}-{context['suffix']}"
        template, claims, rows = playable_spec(workload, workload["spec"]["template"], kube_pod,
                                               podman_pod, context)
        metadata = {"name": podman_pod, **template.get("metadata", {})}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}
        yield pod, claims, [(kube_pod, podman_pod, rows)]


def deployment_pods(workload, context):
    """The Deployment itself, renamed for the run; Podman names its pod NAME-pod-0, which is
    also the pod's metadata.name (Kubernetes would make one up)."""
    if workload["spec"].get("replicas", 1) != 1:
        fail(f"Deployment {workload['metadata']['name']}: one replica only here (Podman would "
             "give every replica the same emptyDir volumes)")
    deployment = copy.deepcopy(workload)
    name = f"{workload['metadata']['name']}-{context['suffix']}"
    deployment["metadata"]["name"] = name
    podman_pod = f"{name}-pod-0"
    template, claims, rows = playable_spec(workload, workload["spec"]["template"], podman_pod,
                                           podman_pod, context)
    deployment["spec"]["template"] = template
    yield deployment, claims, [(podman_pod, podman_pod, rows)]


def play_file(number, document, claims, objects, context):
    """NN-NAME.yaml: the claims the pods use, the ConfigMaps they read, then the workload."""
    name = document["metadata"]["name"]
    by_claim = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolumeClaim"}
    documents = []
    for claim in claims:
        if claim not in by_claim:
            fail(f"{name}: claim {claim} is not in the base")
        pvc = copy.deepcopy(by_claim[claim])
        pvc["metadata"]["name"] = f"{claim}-{context['suffix']}"
        documents.append(pvc)
    spec = document["spec"] if document["kind"] == "Pod" else pod_spec(document)
    used = {s["configMapRef"]["name"] for c in spec["containers"]
            for s in c.get("envFrom", []) if "configMapRef" in s}
    for map_name in sorted(used):
        documents.append({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": map_name}, "data": context["maps"][map_name]})
    documents.append(document)
    return f"{number:02d}-{name}.yaml", documents


def render(base, out, suffix, image_overrides):
    objects, maps, data = load_base(base, image_overrides)
    services = [o for o in objects if o["kind"] == "Service"]
    context = {"out": out, "suffix": suffix, "maps": maps, "secrets": data}
    played = {"Service", "PersistentVolumeClaim"}  # as aliases, and with the pods that claim them
    lines, number = [], 0
    for workload in objects:
        kind = workload["kind"]
        if kind in played:
            continue
        if kind == "PodDisruptionBudget":  # no evictions under kube play: nothing to budget
            continue
        if kind not in ("StatefulSet", "Deployment"):
            fail(f"{kind} {workload['metadata']['name']}: not rendered for Podman")
        pods = statefulset_pods if kind == "StatefulSet" else deployment_pods
        component = workload["spec"]["template"]["metadata"].get("labels", {}).get(COMPONENT, "-")
        for document, claims, members in pods(workload, context):
            number += 1
            name, documents = play_file(number, document, claims, objects, context)
            with open(os.path.join(out, name), "w", encoding="utf-8") as f:
                yaml.safe_dump_all(documents, f, sort_keys=False)
            for kube_pod, podman_pod, rows in members:
                names = ",".join(aliases(workload, services, kube_pod))
                for container, ready, metrics in rows:
                    lines.append("\t".join(map(str, (name, names, podman_pod, component, container,
                                                     f"{podman_pod}-{container}", ready, metrics))))
    with open(os.path.join(out, "pods.tsv"), "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("out")
    parser.add_argument("--suffix", required=True,
                        help="appended to every name Podman keeps (pods, claims)")
    parser.add_argument("--image", action="append", default=[],
                        help="NAME=REF: the image for NAME, as `kustomize edit set image`")
    args = parser.parse_args()
    if not re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", args.suffix):
        fail(f"--suffix {args.suffix!r}: lower-case letters, digits and dashes")
    os.makedirs(args.out, exist_ok=True)
    if os.listdir(args.out):
        fail(f"{args.out} is not empty")
    render(args.base, os.path.abspath(args.out), args.suffix, args.image)


if __name__ == "__main__":
    main()
