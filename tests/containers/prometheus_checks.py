#!/usr/bin/python3
"""What the container tests ask a real Prometheus through its HTTP API, each check waiting for
the state it names until a deadline and then failing with what was not reached:

  prometheus_checks.py URL targets COUNT SECONDS        COUNT active targets, every one up
  prometheus_checks.py URL value EXPR                    the sum of EXPR's samples (0 if none)
  prometheus_checks.py URL above EXPR VALUE SECONDS WHAT EXPR's sum exceeds VALUE
  prometheus_checks.py URL each-above EXPR JSON SECONDS  every series of EXPR exceeds its value
                                                         in JSON ({label-set: value}, from `series`)
  prometheus_checks.py URL count EXPR COUNT SECONDS      EXPR has COUNT series
  prometheus_checks.py URL series EXPR                   {label-set: value} of EXPR, as JSON
  prometheus_checks.py URL rules SECONDS                 every recording rule returns data
  prometheus_checks.py URL dashboard FILE SECONDS        every dashboard query returns data
"""
import json
import math
import sys
import time
import urllib.parse
import urllib.request


def fail(message):
    sys.exit(f"prometheus_checks: FAIL: {message}")


def api(url, path):
    with urllib.request.urlopen(f"{url}/api/v1/{path}", timeout=10) as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise RuntimeError(f"{path}: {body}")
    return body["data"]


def query(url, expr):
    data = api(url, "query?query=" + urllib.parse.quote(expr))
    if data["resultType"] == "scalar":
        return [{"metric": {}, "value": data["result"]}]
    return data["result"]


def finite(samples):
    return [s for s in samples if math.isfinite(float(s["value"][1]))]


def key(metric):
    return ",".join(f"{k}={v}" for k, v in sorted(metric.items()) if k != "__name__")


def until(seconds, what, probe):
    """probe() returns (done, detail); retried until done or the deadline."""
    deadline = time.monotonic() + seconds
    detail = "no answer yet"
    while True:
        try:
            done, detail = probe()
            if done:
                return detail
        except Exception as error:  # Prometheus still starting, a scrape not yet in
            detail = f"{type(error).__name__}: {error}"
        if time.monotonic() >= deadline:
            fail(f"not reached within {seconds} s: {what} (last seen: {detail})")
        time.sleep(2)  # paces the polling; the deadline is what is waited on


def targets(url, count, seconds):
    def probe():
        active = api(url, "targets?state=active")["activeTargets"]
        down = [f"{t['labels'].get('instance')}: {t['health']} {t.get('lastError', '')}"
                for t in active if t["health"] != "up"]
        return len(active) == count and not down, f"{len(active)} targets, not up: {down}"
    print(until(seconds, f"{count} Prometheus targets, every one up", probe))


def total(url, expr):
    return sum(float(s["value"][1]) for s in finite(query(url, expr)))


def above(url, expr, value, seconds, what):
    def probe():
        now = total(url, expr)
        return now > value, f"{expr} = {now}"
    print(until(seconds, f"{what} ({expr} > {value})", probe))


def each_above(url, expr, before, seconds):
    def probe():
        now = {key(s["metric"]): float(s["value"][1]) for s in finite(query(url, expr))}
        behind = {k: now.get(k) for k, v in before.items() if not now.get(k, -math.inf) > v}
        return not behind, f"not past {before}: {behind}"
    print(until(seconds, f"every series of {expr} grows", probe))


def rules(url, seconds):
    groups = api(url, "rules?type=record")["groups"]
    names = sorted({r["name"] for g in groups for r in g["rules"]})
    if len(names) < 10:
        fail(f"only {len(names)} recording rules loaded from deploy/prometheus/rules: {names}")
    for name in names:
        until(seconds, f"recording rule {name} returns data",
              lambda: (bool(finite(query(url, name))), "no finite sample"))
    print(f"{len(names)} recording rules return data")


def dashboard(url, path, seconds):
    with open(path) as f:
        panels = json.load(f).get("panels", [])
    # Grafana's own variables, as deploy_prometheus expands them.
    variables = {"${__rate_interval}": "1m", "$__rate_interval": "1m", "${__interval}": "5s",
                 "$__interval": "5s", "$__range": "5m"}
    count = 0
    for panel in panels:
        for target in panel.get("targets", []):
            expr = target.get("expr", "")
            for name, value in variables.items():
                expr = expr.replace(name, value)
            if "$" in expr:
                fail(f"panel {panel.get('title')}: a variable this check does not expand: {expr}")
            until(seconds, f"dashboard panel '{panel.get('title')}' returns data for {expr}",
                  lambda: (bool(finite(query(url, expr))), "no finite sample"))
            count += 1
    if count == 0:
        fail(f"no queries in {path}")
    print(f"{count} dashboard queries return data")


def main(argv):
    if len(argv) < 3:
        fail(__doc__)
    url, command, args = argv[1], argv[2], argv[3:]
    if command == "targets":
        targets(url, int(args[0]), float(args[1]))
    elif command == "value":
        print(total(url, args[0]))
    elif command == "count":
        want = int(args[1])
        print(until(float(args[2]), f"{want} series of {args[0]}",
                    lambda: (len(finite(query(url, args[0]))) == want,
                             f"{len(finite(query(url, args[0])))} series")))
    elif command == "series":
        print(json.dumps({key(s["metric"]): float(s["value"][1])
                          for s in finite(query(url, args[0]))}))
    elif command == "above":
        above(url, args[0], float(args[1]), float(args[2]), args[3])
    elif command == "each-above":
        each_above(url, args[0], json.loads(args[1]), float(args[2]))
    elif command == "rules":
        rules(url, float(args[0]))
    elif command == "dashboard":
        dashboard(url, args[0], float(args[1]))
    else:
        fail(f"unknown command {command}\n{__doc__}")


if __name__ == "__main__":
    main(sys.argv)
