"""``leaderboard.html``: the leaderboard as one self-contained web page.

Everything is inline (styles, script, data as JSON), so the file opens from
disk or a mail attachment with no network. The table sorts by any column
and filters by task level and encoding family, shows the columns a verdict
reads (ticking more in its "columns" box); each task's accuracy-vs-length
chart (mean over seeds, seed range shaded; SVG drawn by the page) opens from
the task's cell. Colours are the PNG plots' (``method_colors``).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.files import write_text
from lengthbench.leaderboard.aggregate import method_order
from lengthbench.leaderboard.plots import method_colors
from lengthbench.leaderboard.ranking import board_ranking
from lengthbench.leaderboard.tables import FIT_RULE, bands
from lengthbench.models.encodings import encoding_kind
from lengthbench.tasks.base import LEVEL_TITLES

# (column, header, kind): "pct" cells show mean ± std from <column> and its _std twin; "share" a bare percentage.
COLUMNS = [
    ("task", "task", "text"), ("level", "level", "text"), ("method", "method", "text"),
    ("family", "encoding family", "text"), ("status", "status", "text"),
    ("ood_exact_match_mean", "OOD exact match %", "pct"), ("ood_token_accuracy_mean", "OOD token acc. %", "pct"),
    ("chance_exact_match", "chance: exact match %", "share"),
    ("chance_token_accuracy", "chance: token acc. %", "share"),
    ("id_exact_match_mean", "ID exact match %", "pct"), ("val_exact_match_mean", "validation exact match %", "pct"),
    ("fit_status", "fit", "text"), ("n_fit", "seeds that fit", "num"), ("steps_mean", "mean steps", "num"),
    ("n_parameters", "parameters", "num"),
    ("generalization_length_exact_match", "generalizes to length", "num"),
    ("rank", "rank in task", "num"), ("n_seeds", "seeds", "num"), ("n_failed", "failed seeds (count as 0)", "num"),
    ("n_errors", "errors (not counted)", "num"),
]
# Shown until the reader ticks another in the page's "columns" box: the ones a verdict reads, so that the
# table fits a 1366-pixel screen without scrolling sideways (all 20 did not).
SHOWN_COLUMNS = ("task", "level", "method", "status", "ood_exact_match_mean", "ood_token_accuracy_mean",
                 "chance_exact_match", "id_exact_match_mean", "fit_status", "n_fit",
                 "generalization_length_exact_match", "rank")


def method_family(method: str, encoding: str) -> str:
    """The encoding family of a transformer method, or the model family
    (``lstm``, ...) of a method without an encoding."""
    return encoding_kind(encoding) if isinstance(encoding, str) and encoding else f"{method} (recurrent)"


def _clean(value):
    """JSON-safe: NaN/inf and pandas' NA become null, numpy scalars plain numbers."""
    if value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def page_data(board: pd.DataFrame, per_length: pd.DataFrame, title: str, submitted=()) -> dict:
    methods = method_order(board["method"].unique())
    from matplotlib.colors import to_hex

    colors = {m: to_hex(c) for m, c in method_colors(methods).items()}
    rows = []
    for _, r in board.iterrows():
        na = r.status == "not_applicable"  # no number of such a cell means anything: shown as n/a
        row = {key: None if na and kind != "text" else _clean(r[key]) for key, _, kind in COLUMNS
               if key in board.columns}
        row["family"] = method_family(r.method, r.encoding)
        for key, _, kind in COLUMNS:
            if kind == "pct":
                row[key.replace("_mean", "_std")] = None if na else _clean(r.get(key.replace("_mean", "_std")))
        rows.append(row)
    curves = {}
    if not per_length.empty:
        stats = per_length.groupby(["task", "method", "length"])[["exact_match", "token_accuracy"]].agg(
            ["mean", "min", "max"])
        for (task, method), part in stats.groupby(level=[0, 1]):
            of_task = per_length[per_length.task == task]
            validation = of_task[of_task.split == "val"].length
            curves.setdefault(task, {"train_length": int(of_task.train_length.iloc[0]),
                                     "validation_length": int(validation.max()) if len(validation) else None,
                                     "methods": {}})
            curves[task]["methods"][method] = {
                "length": [int(x) for x in part.index.get_level_values("length")],
                **{f"{metric}_{agg}": [round(float(v), 6) for v in part[(metric, agg)]]
                   for metric in ("exact_match", "token_accuracy") for agg in ("mean", "min", "max")}}
    levels = set(board.level) if "level" in board else set()
    return {"title": title, "submitted": list(submitted),  # the titles of the board's own levels only: a level
            "level_titles": {k: v for k, v in LEVEL_TITLES.items() if k in levels},  # added later changes no page
            "columns": [{"key": k, "label": lab, "kind": kind, "shown": k in SHOWN_COLUMNS}
                        for k, lab, kind in COLUMNS],
            "rows": rows, "curves": curves, "colors": colors, "method_order": methods,
            "ranking": _ranking_data(board), "protocol": _protocol(board)}


def _protocol(board: pd.DataFrame) -> str:
    """The page's statement of its length bands and of the fit rule."""
    by_bands: dict[str, list[str]] = {}
    for _, row in board.drop_duplicates("task").iterrows():
        by_bands.setdefault(bands(row), []).append(row.task)
    text = "Length bands (train / validation / test): " + "; ".join(
        f"{b}" + ("" if len(by_bands) == 1 else f" ({', '.join(tasks)})") for b, tasks in by_bands.items()) + "."
    threshold = board.fit_threshold.dropna()
    if len(threshold):
        text += f" {FIT_RULE} Threshold: {100 * threshold.iloc[0]:.0f}% in-distribution exact match."
    return text


def _ranking_data(board: pd.DataFrame) -> dict | None:
    """The critical-difference diagram's data (``ranking.board_ranking``), or None."""
    ranking = board_ranking(board)
    if ranking is None:
        return None
    f = ranking.f_statistic  # infinite when every task ranks the methods alike: JSON has no infinity
    return {"n_tasks": ranking.n_tasks, "f": round(f, 4) if math.isfinite(f) else None,
            "p": float(f"{ranking.p_value:.4g}"), "chi2": round(ranking.chi2, 4),
            "chi2_p": float(f"{ranking.chi2_p_value:.4g}"), "separated": ranking.separated_pairs(),
            "cd": round(ranking.critical_difference, 4), "left_out": list(ranking.left_out),
            "unfit_tasks": list(ranking.unfit_tasks),
            "few_ran_tasks": list(ranking.few_ran_tasks),
            "ranks": [[m, round(float(r), 4)] for m, r in ranking.average_ranks.items()],
            "groups": [list(g) for g in ranking.groups()]}


def render_html(board: pd.DataFrame, per_length: pd.DataFrame, title: str, submitted=()) -> str:
    """The page; ``submitted``: methods whose rows are marked (a submission's page)."""
    data = json.dumps(page_data(board, per_length, title, submitted), separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c")  # inline in <script>: no "</script", "<!--" or "<script" can end it
    return TEMPLATE.replace("__TITLE__", html.escape(title)).replace("__DATA__", data)


def write_html(board: pd.DataFrame, per_length: pd.DataFrame, path: Path, title: str, submitted=()) -> Path:
    return write_text(Path(path), render_html(board, per_length, title, submitted))


TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
.note { color: #555; margin: .2em 0 1em; }
#filters { display: flex; flex-wrap: wrap; gap: 1.5em; margin-bottom: 1em; }
#filters fieldset { border: 1px solid #ccc; border-radius: 4px; padding: .3em .8em; }
#filters label { margin-right: .8em; white-space: nowrap; }
table { border-collapse: collapse; }
th, td { padding: .25em .6em; border-bottom: 1px solid #e4e4e4; text-align: left; }
th { cursor: pointer; user-select: none; background: #f4f4f4; position: sticky; top: 0; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td .std { color: #777; font-size: .9em; }
button.task { border: 0; background: none; color: #0645ad; cursor: pointer; padding: 0; font: inherit;
              text-decoration: underline; }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin-right: .4em; }
dialog { border: 1px solid #aaa; border-radius: 6px; max-width: 95vw; }
#legend { columns: 2; font-size: .9em; margin-top: .5em; }
#legend div.highlight { font-weight: bold; }
tr.submitted td { background: #fff3c4; font-weight: 600; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
#cd { overflow-x: auto; }
/* a wide board scrolls in its own box (its header stays on top), never the page sideways */
#board-wrap { overflow: auto; max-width: 100%; max-height: 85vh; }
</style>
</head>
<body>
<h1>__TITLE__</h1>
<p class="note">One row per task &times; method: mean &plusmn; std over seeds (%). OOD: the test band.
Click a column to sort, a task to see its accuracy-vs-length chart.</p>
<p class="note" id="protocol"></p>
<div id="filters">
  <fieldset id="filter-level"><legend>task level</legend></fieldset>
  <fieldset id="filter-family"><legend>encoding family</legend></fieldset>
  <fieldset id="columns"><legend>columns</legend></fieldset>
  <p id="shown"></p>
</div>
<div id="board-wrap"><table id="board"><thead><tr></tr></thead><tbody></tbody></table></div>
<section id="ranking" hidden>
  <h2>Ranking over tasks</h2>
  <p class="note" id="ranking-note"></p>
  <div id="cd"></div>
</section>
<dialog id="chart-dialog">
  <h2 id="chart-title"></h2>
  <label>metric <select id="chart-metric"><option value="exact_match">exact match</option>
    <option value="token_accuracy">token accuracy</option></select></label>
  <div id="chart"></div>
  <div id="legend"></div>
  <p class="note">Line: mean over seeds; shaded: seed range (min to max); dashed: training length.</p>
  <button id="chart-close">close</button>
</dialog>
<script type="application/json" id="leaderboard-data">__DATA__</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("leaderboard-data").textContent);
const SVG = "http://www.w3.org/2000/svg";
const state = { key: null, dir: 1, task: null, method: null };  // key null: the CSV's row order

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}
function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}
function pct(x) {  // as Python's "%.1f" writes the tables: an exact tie rounds to even (6.25 -> 6.2)
  if (x === null || x === undefined) return "";
  const v = 100 * x, [whole, frac] = Math.abs(v).toFixed(40).split(".");
  if (!/^\\d50*$/.test(frac)) return v.toFixed(1);
  const tenths = Number(whole) * 10 + Number(frac[0]);
  return (v < 0 ? "-" : "") + ((tenths % 2 === 0 ? tenths : tenths + 1) / 10).toFixed(1);
}

function buildFilters() {
  for (const [id, key] of [["filter-level", "level"], ["filter-family", "family"]]) {
    const values = [...new Set(DATA.rows.map(r => r[key]))];
    for (const v of values) {
      const box = el("input", { type: "checkbox", "data-filter": key, value: v });
      box.checked = true;
      box.addEventListener("change", render);
      const label = el("label");
      const title = key === "level" ? DATA.level_titles[v] : undefined;
      label.append(box, " " + v + (title && title !== v ? " (" + title + ")" : ""));
      document.getElementById(id).append(label);
    }
  }
}
function visibleColumns() {
  return DATA.columns.filter(c => document.querySelector('#columns input[value="' + c.key + '"]').checked);
}
function buildColumnChoice() {
  for (const col of DATA.columns) {
    const box = el("input", { type: "checkbox", value: col.key });
    box.checked = col.shown;
    box.addEventListener("change", () => { buildHeader(); render(); });
    const label = el("label");
    label.append(box, " " + col.label);
    document.getElementById("columns").append(label);
  }
}
function buildHeader() {
  const tr = document.querySelector("#board thead tr");
  tr.replaceChildren();
  for (const col of visibleColumns()) {
    const th = el("th", { "data-key": col.key, scope: "col" }, col.label);
    th.addEventListener("click", () => {
      state.dir = state.key === col.key ? -state.dir : (col.kind === "text" || col.key === "rank" ? 1 : -1);
      state.key = col.key;
      render();
    });
    tr.append(th);
  }
}
function compare(a, b) {
  const x = a[state.key], y = b[state.key];
  if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;
  if (y === null || y === undefined) return -1;
  return (typeof x === "number" ? x - y : String(x).localeCompare(String(y))) * state.dir;
}
function render() {
  const allowed = {};
  for (const box of document.querySelectorAll("input[data-filter]")) {
    (allowed[box.dataset.filter] ||= new Set());
    if (box.checked) allowed[box.dataset.filter].add(box.value);
  }
  const rows = DATA.rows.filter(r => allowed.level.has(r.level) && allowed.family.has(r.family));
  if (state.key) rows.sort(compare);
  const body = document.querySelector("#board tbody"), columns = visibleColumns();
  body.replaceChildren();
  for (const r of rows) {
    const tr = el("tr", { "data-task": r.task, "data-method": r.method,
                          class: DATA.submitted.includes(r.method) ? "submitted" : "" });
    for (const col of columns) {
      const td = el("td", { "data-key": col.key });
      const v = r[col.key];
      if (col.key === "task") {
        const b = el("button", { class: "task", title: "accuracy vs length" }, v);
        b.addEventListener("click", () => openChart(r.task, r.method));
        td.append(b);
      } else if (col.key === "method") {
        td.append(el("span", { class: "swatch", style: "background:" + DATA.colors[v] }), v);
      } else if (r.status === "not_applicable" && col.kind !== "text") {
        td.className = "num";
        td.textContent = "n/a";
      } else if (col.kind === "pct" || col.kind === "share") {
        td.className = "num";
        const std = col.kind === "pct" ? r[col.key.replace("_mean", "_std")] : null;
        td.append(pct(v));
        if (std !== null && std !== undefined) td.append(" ", el("span", { class: "std" }, "\\u00b1 " + pct(std)));
      } else {
        if (col.kind === "num") td.className = "num";
        td.textContent = v === null || v === undefined ? "" : (typeof v === "number" && !Number.isInteger(v)
                                                               ? String(+v.toFixed(1)) : v);  // 583.3, not 583.3333333333334
      }
      tr.append(td);
    }
    body.append(tr);
  }
  for (const th of document.querySelectorAll("#board th")) {
    if (th.dataset.key === state.key) th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
  document.getElementById("shown").textContent = rows.length + " of " + DATA.rows.length + " rows shown";
}

function drawChart() {
  const box = document.getElementById("chart");
  box.replaceChildren();
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  const curves = DATA.curves[state.task];
  if (!curves) { box.textContent = "No finished run of this task has per-length results."; return; }
  const metric = document.getElementById("chart-metric").value;
  const W = 640, H = 340, L = 48, R = 12, T = 12, B = 40;
  const methods = DATA.method_order.filter(m => curves.methods[m]);
  const lengths = methods.flatMap(m => curves.methods[m].length);
  const x0 = Math.min(...lengths), x1 = Math.max(...lengths);
  const sx = x => L + (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0)) * (W - L - R);
  const sy = y => T + (1 - y) * (H - T - B);
  const svg = svgEl("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
                             "aria-label": `${metric} vs length for ${state.task}` });
  for (const y of [0, 0.25, 0.5, 0.75, 1]) {
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: sy(y), y2: sy(y), stroke: "#e4e4e4" }));
    const t = svgEl("text", { x: L - 6, y: sy(y) + 4, "text-anchor": "end" });
    t.textContent = 100 * y + "%";
    svg.append(t);
  }
  const step = Math.max(1, Math.ceil((x1 - x0) / 10));
  for (let x = x0; x <= x1; x += step) {
    const t = svgEl("text", { x: sx(x), y: H - B + 16, "text-anchor": "middle" });
    t.textContent = x;
    svg.append(t);
  }
  const label = svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" });
  label.textContent = "task length";
  svg.append(label);
  const train = curves.train_length, val = curves.validation_length;
  if (val !== null && val > train) {  // the validation band, where settings are chosen; the test band after it
    svg.append(svgEl("rect", { x: sx(train), y: T, width: sx(val) - sx(train), height: H - T - B, fill: "#000",
                               "fill-opacity": 0.06, class: "validation-band" }));
  }
  svg.append(svgEl("line", { x1: sx(train), x2: sx(train), y1: T, y2: H - B, stroke: "#555",
                             "stroke-dasharray": "4 3", class: "train-length" }));
  const bands = [["train", x0, train], ["validation", train, val], ["test", val !== null && val > train ? val : train, x1]];
  for (const [name, from, to] of bands) {
    if (to === null || to <= from) continue;
    const t = svgEl("text", { x: (sx(from) + sx(to)) / 2, y: T + 12, "text-anchor": "middle", class: "band-label" });
    t.textContent = name;
    svg.append(t);
  }
  for (const m of methods) {
    const c = curves.methods[m], color = DATA.colors[m];
    const lo = c[metric + "_min"], hi = c[metric + "_max"], mean = c[metric + "_mean"];
    const band = c.length.map((x, i) => `${sx(x)},${sy(hi[i])}`)
      .concat(c.length.map((x, i) => `${sx(x)},${sy(lo[i])}`).reverse()).join(" ");
    svg.append(svgEl("polygon", { points: band, fill: color, "fill-opacity": 0.15, stroke: "none",
                                  class: "seed-range", "data-method": m }));
    const width = m === state.method ? 3 : 1.6;
    svg.append(svgEl("polyline", { points: c.length.map((x, i) => `${sx(x)},${sy(mean[i])}`).join(" "),
                                   fill: "none", stroke: color, "stroke-width": width, class: "mean-line",
                                   "data-method": m }));
    const item = el("div", { class: m === state.method ? "highlight" : "" });
    item.append(el("span", { class: "swatch", style: "background:" + color }), m);
    legend.append(item);
  }
  box.append(svg);
}
function openChart(task, method) {
  state.task = task;
  state.method = method;
  document.getElementById("chart-title").textContent = task;
  drawChart();
  document.getElementById("chart-dialog").showModal();
}
document.getElementById("chart-metric").addEventListener("change", drawChart);
document.getElementById("chart-close").addEventListener("click", () => document.getElementById("chart-dialog").close());
function drawRanking() {
  // Demšar's critical-difference diagram: average ranks on an axis (1 = best, at the left),
  // a bar as long as the Nemenyi critical difference, a thick line joining each group not told apart.
  const r = DATA.ranking;
  if (!r) return;
  document.getElementById("ranking").hidden = false;
  document.getElementById("ranking-note").textContent =
    `Average rank per method over the ${r.n_tasks} tasks every method below ran (ties share the average rank); ` +
    `Friedman's chi-square ${r.chi2.toFixed(2)}, p = ${r.chi2_p.toPrecision(2)}; its Iman-Davenport F = ` +
    `${r.f === null ? "\u221e" : r.f.toFixed(2)}, p = ${r.p.toPrecision(2)}; methods joined by a thick line are not told ` +
    `apart by the Nemenyi test (critical difference ${r.cd.toFixed(2)}).` +
    (r.separated ? "" : " It separates no pair: the order is descriptive, not a finding.") + (r.left_out.length ? ` Left out (no score on every task of the block): ${r.left_out.join(", ")}.` : "") +
    (r.few_ran_tasks.length ? ` Tasks left out (fewer methods ran them): ${r.few_ran_tasks.join(", ")}.` : "") +
    (r.unfit_tasks.length ? ` Tasks left out (some method did not fit there): ${r.unfit_tasks.join(", ")}.` : "");
  // The margins fit the longest method label on each side and the axis gives every rank
  // 26 px, so no label is cut at the edge and no two tick labels touch, however many methods.
  const k = r.ranks.length, half = Math.ceil(k / 2);
  const svg = svgEl("svg", {});
  document.getElementById("cd").append(svg);
  const labels = r.ranks.map(([method, rank]) => `${method} (${rank.toFixed(2)})`);
  const width = (text) => {
    const probe = svgEl("text", {});
    probe.textContent = text;
    svg.append(probe);
    const w = probe.getComputedTextLength();
    probe.remove();
    return w;
  };
  const left = 24 + Math.max(0, ...labels.slice(0, half).map(width));
  const right = left + Math.max(300, 26 * (k - 1)), W = right + 24 + Math.max(0, ...labels.slice(half).map(width));
  const H = 70 + 22 * half + 12 * r.groups.length;
  const sx = (rank) => left + (rank - 1) / Math.max(1, k - 1) * (right - left);
  for (const [name, value] of Object.entries({ width: W, height: H, viewBox: `0 0 ${W} ${H}` })) {
    svg.setAttribute(name, value);
  }
  svg.append(svgEl("line", { x1: sx(1), x2: sx(k), y1: 40, y2: 40, stroke: "#222" }));
  for (let t = 1; t <= k; t++) {
    svg.append(svgEl("line", { x1: sx(t), x2: sx(t), y1: 36, y2: 40, stroke: "#222" }));
    const label = svgEl("text", { x: sx(t), y: 32, "text-anchor": "middle", class: "cd-tick" });
    label.textContent = String(t);
    svg.append(label);
  }
  svg.append(svgEl("line", { x1: sx(1), x2: sx(1 + r.cd), y1: 18, y2: 18, stroke: "#222", "stroke-width": 2 }));
  const cd = svgEl("text", { x: sx(1), y: 12 });
  cd.textContent = `CD = ${r.cd.toFixed(2)}`;
  svg.append(cd);
  r.ranks.forEach(([method, rank], i) => {
    const onLeft = i < half, row = 70 + 22 * (onLeft ? i : k - 1 - i) + 12 * r.groups.length;
    const end = onLeft ? left - 10 : right + 10;
    svg.append(svgEl("polyline", { points: `${sx(rank)},40 ${sx(rank)},${row} ${end},${row}`, fill: "none",
                                   stroke: DATA.colors[method] || "#555", class: "cd-method", "data-method": method }));
    const label = svgEl("text", { x: onLeft ? end - 4 : end + 4, y: row + 4, "text-anchor": onLeft ? "end" : "start",
                                  class: "cd-label" });
    label.textContent = labels[i];
    svg.append(label);
  });
  const rankOf = Object.fromEntries(r.ranks);
  r.groups.forEach((group, depth) => {
    const xs = group.map((m) => sx(rankOf[m]));
    svg.append(svgEl("line", { x1: Math.min(...xs) - 3, x2: Math.max(...xs) + 3, y1: 50 + 12 * depth,
                               y2: 50 + 12 * depth, stroke: "#222", "stroke-width": 4, class: "cd-group" }));
  });
}
buildFilters();
buildColumnChoice();
buildHeader();
render();
document.getElementById("protocol").textContent = DATA.protocol;
drawRanking();
</script>
</body>
</html>
"""
