#!/usr/bin/env python3
"""Turns the ready file of `ringside up --ready_file=FILE` into Prometheus file-based service
discovery targets (deploy/prometheus/local.yml reads targets/*.json).

  deploy/prometheus/ready-to-targets.py FILE > deploy/prometheus/targets/ringside.json

Every process becomes one target labelled process="worker-0" (its name) and role="worker"
(controller, ps or worker).
"""
import json
import sys
from urllib.parse import urlsplit


def targets(ready):
    groups = []
    for process in ready["processes"]:
        url = urlsplit(process["metrics_url"])
        if url.path not in ("", "/metrics"):
            raise ValueError(f"{process['name']}: metrics path {url.path} is not /metrics")
        name = process["name"]
        groups.append({
            "targets": [url.netloc],
            "labels": {"process": name, "role": name.split("-")[0]},
        })
    return groups


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: ready-to-targets.py READY_FILE\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        json.dump(targets(json.load(f)), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
