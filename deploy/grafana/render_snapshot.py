#!/usr/bin/env python3
"""Draws deploy/grafana/ringside.json's panels, in the dashboard's own grid, from the range
results a real Prometheus returned for each panel query (no Grafana server is involved: Grafana is
not packaged for Debian). The dashboard picture in docs/deploy.md is made this way:

  RINGSIDE_BIN_DIR=$PWD/build/bin RINGSIDE_SOURCE_DIR=$PWD RINGSIDE_DASHBOARD_SNAPSHOT=/tmp/snap \\
    build/tests/deploy_prometheus_test --gtest_also_run_disabled_tests \\
    --gtest_filter='*Snapshot*'                 # writes /tmp/snap/snapshot.json
  deploy/grafana/render_snapshot.py deploy/grafana/ringside.json /tmp/snap/snapshot.json \\
    docs/images/dashboard.png

Needs Debian's python3-matplotlib. Time series are lines, stat panels the last value of each
series, bar gauges horizontal bars of the last values, with the panels' units and legends.
"""
import json
import math
import re
import sys
from datetime import datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter  # noqa: E402

BACKGROUND, PANEL, TEXT, GRID = "#111217", "#181b1f", "#ccccdc", "#2c3235"
COLOURS = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9",
           "#fade2a", "#37872d", "#c4162a", "#1f60c4", "#8f3bb8"]


def scaled(value, unit):
    """A value in the panel's unit as Grafana would print it."""
    if value is None or math.isnan(value):
        return "NaN"
    if unit == "percentunit":
        return f"{value * 100:.1f}%"
    if unit == "s":
        for factor, suffix in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if abs(value) >= factor or factor == 1e-6:
                return f"{value / factor:.3g} {suffix}"
    if unit in ("Bps", "decbytes", "bytes"):
        suffix = "/s" if unit == "Bps" else ""
        for factor, prefix in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")):
            if abs(value) >= factor or factor == 1:
                return f"{value / factor:.3g} {prefix}{suffix}"
    return f"{value:.4g}"


def legend(fmt, metric):
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt) or str(metric)


def series_of(panel, queries):
    """(label, [times], [values]) for every series of every query of the panel."""
    out = []
    for target, query in zip(panel["targets"], queries):
        for series in query["result"]:
            times = [float(t) for t, _ in series["values"]]
            values = [float(v) for _, v in series["values"]]
            out.append((legend(target.get("legendFormat", ""), series["metric"]), times, values))
    return out


def draw_timeseries(ax, panel, series, unit):
    for i, (label, times, values) in enumerate(sorted(series, key=lambda s: s[0])):
        start = min(t for _, ts, _ in series for t in ts)
        ax.plot([t - start for t in times], values, color=COLOURS[i % len(COLOURS)],
                linewidth=1.4, label=f"{label}  {scaled(values[-1], unit)}")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: scaled(v, unit)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}s"))
    ax.grid(color=GRID, linewidth=0.6)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=6.5, frameon=False,
              labelcolor=TEXT, ncol=1 if len(series) <= 12 else 2)


def draw_stat(ax, panel, series, unit):
    ax.axis("off")
    text_mode = panel.get("options", {}).get("textMode", "value_and_name")
    decimals = panel.get("fieldConfig", {}).get("defaults", {}).get("decimals")
    items = sorted(series, key=lambda s: s[0])
    for i, (label, _, values) in enumerate(items):
        x = (i + 0.5) / len(items)
        value = values[-1]
        shown = (f"{value:.{decimals}f}" if decimals is not None and unit in (None, "none")
                 else scaled(value, unit))
        if text_mode == "name":
            ax.text(x, 0.45, label, ha="center", va="center", fontsize=20, color="#73bf69",
                    weight="bold", transform=ax.transAxes)
        else:
            ax.text(x, 0.55, shown, ha="center", va="center", fontsize=18, color="#73bf69",
                    weight="bold", transform=ax.transAxes)
            ax.text(x, 0.15, label, ha="center", va="center", fontsize=8, color=TEXT,
                    transform=ax.transAxes)


def draw_bargauge(ax, panel, series, unit):
    items = sorted(series, key=lambda s: s[2][-1])
    labels = [s[0] for s in items]
    values = [s[2][-1] for s in items]
    ax.barh(range(len(items)), values, color=[COLOURS[i % len(COLOURS)] for i in range(len(items))])
    ax.set_yticks(range(len(items)), labels, fontsize=6.5)
    for i, v in enumerate(values):
        ax.text(v, i, " " + scaled(v, unit), va="center", fontsize=6.5, color=TEXT)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: scaled(v, unit)))
    ax.grid(color=GRID, linewidth=0.6, axis="x")
    ax.set_xlim(0, max(values) * 1.25 if values else 1)


def main(dashboard_path, snapshot_path, out_path):
    with open(dashboard_path, encoding="utf-8") as f:
        dashboard = json.load(f)
    with open(snapshot_path, encoding="utf-8") as f:
        snapshot = json.load(f)
    queries = iter(snapshot["queries"])
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dashboard["panels"])
    cell_w, cell_h = 0.9, 0.36  # inches per grid column and row
    fig = plt.figure(figsize=(24 * cell_w, rows * cell_h + 0.8), facecolor=BACKGROUND)
    plt.rcParams.update({"text.color": TEXT, "axes.labelcolor": TEXT, "xtick.color": TEXT,
                         "ytick.color": TEXT, "font.size": 7})
    total_h = rows * cell_h + 0.8
    started = datetime.fromtimestamp(snapshot["start"]).strftime("%Y-%m-%d %H:%M")
    fig.text(0.01, 1 - 0.3 / total_h, f"{dashboard['title']}  ·  rendered from Prometheus query "
             f"results of a real run ({started}, {snapshot['end'] - snapshot['start']} s)",
             fontsize=11, color=TEXT, va="center")
    for panel in dashboard["panels"]:
        panel_queries = [next(queries) for _ in panel["targets"]]
        for q, target in zip(panel_queries, panel["targets"]):
            assert q["expr"] == target["expr"], "snapshot and dashboard differ: re-take it"
        g = panel["gridPos"]
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
        # The panel frame in figure coordinates, then an inner area for the plot.
        left, width = g["x"] / 24, g["w"] / 24
        top = 1 - (0.6 + g["y"] * cell_h) / total_h
        height = g["h"] * cell_h / total_h
        frame = fig.add_axes([left + 0.002, top - height + 0.003, width - 0.004, height - 0.006])
        frame.set_facecolor(PANEL)
        frame.set_xticks([])
        frame.set_yticks([])
        for spine in frame.spines.values():
            spine.set_color(GRID)
        frame.text(0.01, 0.97, panel["title"], transform=frame.transAxes, fontsize=8.5,
                   color=TEXT, va="top", weight="bold")
        series = series_of(panel, panel_queries)
        if panel["type"] == "timeseries":
            legend_w = 0.38 * width
            ax = fig.add_axes([left + 0.03, top - height + 0.03, width - legend_w - 0.035,
                               height - 0.06])
        elif panel["type"] == "bargauge":
            ax = fig.add_axes([left + 0.06, top - height + 0.025, width - 0.09, height - 0.055])
        else:
            ax = fig.add_axes([left + 0.005, top - height + 0.01, width - 0.01, height - 0.04])
        ax.set_facecolor(PANEL)
        for spine in ax.spines.values():
            spine.set_color(GRID)
        if not series:
            ax.axis("off")
            ax.text(0.5, 0.5, "No data", ha="center", va="center", color=TEXT,
                    transform=ax.transAxes)
        elif panel["type"] == "timeseries":
            draw_timeseries(ax, panel, series, unit)
        elif panel["type"] == "stat":
            draw_stat(ax, panel, series, unit)
        elif panel["type"] == "bargauge":
            draw_bargauge(ax, panel, series, unit)
    fig.savefig(out_path, dpi=110, facecolor=BACKGROUND)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.stderr.write("usage: render_snapshot.py DASHBOARD.json SNAPSHOT.json OUT.png\n")
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
