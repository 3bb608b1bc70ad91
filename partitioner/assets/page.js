// tacopt's plan page: draws the data of tacopt.partitioner.page (the layout is computed there).
// Nothing is fetched: the data is the JSON in #plan-data.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("plan-data").textContent);
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const fmt = (x) => {
    if (x === null || x === undefined) return "-";
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return x.toExponential(4);
    return x.toLocaleString("en-US", { maximumFractionDigits: a < 10 ? 4 : 1 });
  };
  const bytes = (b) => b >= 1048576 ? (b / 1048576).toFixed(2) + " MiB"
    : b >= 1024 ? (b / 1024).toFixed(1) + " KiB" : b + " B";
  const shape = (s) => "[" + s.join("\u00d7") + "]";

  const devices = D.devices;
  const devIndex = Object.fromEntries(devices.map((d, i) => [d, i]));
  const [NW, NH] = D.node;
  const svg = $("graph"), viewport = $("viewport");
  const state = { plan: 0, sel: -1, hits: [], hit: -1, k: 1, x: 0, y: 0, diff: false };

  // ---- colours: one class per device ------------------------------------------------------
  const style = document.createElement("style");
  style.textContent = devices.map((d, i) => `.dev-${i} rect { fill: ${D.colors[d]}; }`).join("\n");
  document.head.appendChild(style);

  // ---- per plan: each op's view, and how it differs from the first plan's -----------------
  // An op differs by device (it moved), by inference type on the same device (int8 instead of
  // float), or only by its view (another variant on the same device and type). The highlight
  // and the header's counts keep the kinds apart and compare one plan with the first: the plan
  // shown, or the second while the first is shown, so they agree with that plan's table row.
  const viewOf = (p, unit) => D.units[unit].views[D.plans[p].choice[unit]];
  const opView = D.plans.map((_, p) => D.ops.map((op) => viewOf(p, op.unit)));
  const opDevice = opView.map((views) => views.map((v) => v.device));
  const MOVED = 1, RETYPED = 2, REVIEWED = 3;
  const change = (p, i) => {
    const a = opView[0][i], b = opView[p][i];
    return a.device !== b.device ? MOVED : a.type !== b.type ? RETYPED : a !== b ? REVIEWED : 0;
  };
  const diffKind = new Uint8Array(D.ops.length);
  let diffOps = [], retypedOps = [], reviewedOps = [];
  const opsOf = (kind) => D.ops.map((_, i) => i).filter((i) => diffKind[i] === kind);
  function compareWith(p) {
    D.ops.forEach((_, i) => { diffKind[i] = change(p, i); });
    diffOps = opsOf(MOVED); retypedOps = opsOf(RETYPED); reviewedOps = opsOf(REVIEWED);
  }
  const anyReviewed = D.plans.some((_, p) => D.ops.some((_, i) => change(p, i) === REVIEWED));
  const DIFF_CLASS = ["", " diff", " retyped", " reviewed"];

  // ---- static drawing: units, edges, ops (one innerHTML each) ------------------------------
  function drawStatic() {
    const multi = D.units.some((u) => u.ops.length > 1);
    $("units").innerHTML = multi ? D.units.map((u, i) => {
      const [x, y, w, h] = u.box;
      return `<rect class="unit" data-u="${i}" x="${x}" y="${y}" width="${w}" height="${h}" rx="8"><title>${esc(u.name)} (${u.ops.length} ops)</title></rect>`;
    }).join("") : "";
    // no tooltip per edge (a thousand more elements): marked edges carry theirs
    // the arrowhead is two strokes of the edge's own path: an SVG marker per edge costs the
    // browser an instance each to lay out and paint (thousands on a 1,000-op model)
    const curve = (A, B, cls) => {
      const y1 = A.y + NH / 2, y2 = B.y - NH / 2, my = (y1 + y2) / 2;
      return `<path class="${cls}" d="M${A.x} ${y1}C${A.x} ${my} ${B.x} ${my} ${B.x} ${y2}` +
        `M${B.x - 3.5} ${y2 - 6}L${B.x} ${y2}L${B.x + 3.5} ${y2 - 6}"></path>`;
    };
    $("edges").innerHTML = D.edges.map(([a, b]) => curve(D.ops[a], D.ops[b], "edge")).join("");
    // the graph's inputs and outputs: a node each, joined to the ops that read or write them
    $("io-edges").innerHTML = ioEdges.map(([k, j]) => D.io[k].kind === "input"
      ? curve(D.io[k], D.ops[j], "edge io-edge") : curve(D.ops[j], D.io[k], "edge io-edge")).join("");
    $("io").innerHTML = D.io.map((n, i) => {
      const label = (n.kind === "input" ? "in: " : "out: ") + n.tensor;
      const text = label.length > 19 ? label.slice(0, 18) + "\u2026" : label;
      return `<g class="io ${n.kind}" data-io="${i}" transform="translate(${n.x - NW / 2},${n.y - NH / 2})">` +
        `<rect width="${NW}" height="${NH}" rx="${NH / 2}"></rect><text x="10" y="${NH / 2 + 4}">${esc(text)}</text>` +
        `<title>graph ${n.kind} ${esc(n.tensor)}${n.info ? " " + shape(n.info[1]) + " " + esc(n.info[2]) : ""}</title></g>`;
    }).join("");
    $("nodes").innerHTML = D.ops.map((op, i) => {
      const label = op.kind.length > 20 ? op.kind.slice(0, 19) + "\u2026" : op.kind;
      return `<g class="op" data-i="${i}" transform="translate(${op.x - NW / 2},${op.y - NH / 2})">` +
        `<rect width="${NW}" height="${NH}" rx="5"></rect>` +
        (op.pinned ? `<path class="pin" d="M${NW - 14} 0 H${NW} V14 z"></path>` : "") +
        `<text x="8" y="${NH / 2 + 4}">${esc(label)}</text></g>`;
    }).join("");
  }
  let opEls = [], edgeEls = [], ioEdgeEls = [];
  const ioEdges = D.io.flatMap((n, k) => n.ops.map((j) => [k, j]));

  // ---- one plan: colours, marked edges, counts, memory -------------------------------------
  function showPlan(p) {
    state.plan = p;
    if (D.plans.length > 1) {
      const q = p > 0 ? p : 1;
      compareWith(q);
      $("diff-vs").textContent = `${D.plans[0].picker} and ${D.plans[q].picker}`;
      $("n-diff").textContent = diffOps.length;
      $("n-retyped").textContent = retypedOps.length;
      $("n-reviewed").textContent = reviewedOps.length;
    }
    const devs = opDevice[p];
    opEls.forEach((el, i) => { el.setAttribute("class", opClass(i)); });
    const marks = [];
    D.edges.forEach(([a, b, t, nb], i) => {
      const va = viewOf(p, D.ops[a].unit), vb = viewOf(p, D.ops[b].unit);
      const xfer = va.device !== vb.device, quant = va.format !== vb.format;
      edgeEls[i].setAttribute("class", "edge" + (xfer ? " xfer" : "") + (quant ? " quant" : ""));
      if (xfer || quant) {
        const A = D.ops[a], B = D.ops[b];
        const mx = (A.x + B.x) / 2, my = (A.y + NH / 2 + B.y - NH / 2) / 2;
        const conv = quant ? (vb.format === "FLOAT" ? "DQ" : "Q") : "";
        const text = [xfer ? `${va.device}\u2192${vb.device}` : "", conv].filter(Boolean).join(" ");
        const w = 7 * text.length + 8;
        const tip = `${t}: ${bytes(nb)}` + (xfer ? `, moved ${va.device} to ${vb.device}` : "") +
          (quant ? `, ${conv === "Q" ? "quantized" : "dequantized"} ${va.format} to ${vb.format}` : "");
        marks.push(`<g class="mark${xfer ? " xfer" : ""}${quant ? " quant" : ""}" data-e="${i}" transform="translate(${mx - w / 2},${my - 8})">` +
          `<rect width="${w}" height="16" rx="3"></rect><text x="4" y="12">${esc(text)}</text><title>${esc(tip)}</title></g>`);
      }
    });
    $("marks").innerHTML = marks.join("");
    // the host holds the graph's inputs and outputs: an op elsewhere reads or writes them across
    ioEdgeEls.forEach((el, e) => {
      const far = D.boundaries && devs[ioEdges[e][1]] !== D.host;
      el.setAttribute("class", "edge io-edge" + (far ? " xfer" : ""));
    });
    document.querySelectorAll("#picker-bar button").forEach((b, i) => {
      b.classList.toggle("on", i === p);
      b.setAttribute("aria-selected", String(i === p));
    });
    document.querySelectorAll("#plans-table tbody tr:not(.failed)").forEach((tr, i) => tr.classList.toggle("current", i === p));
    const count = Object.fromEntries(devices.map((d) => [d, 0]));
    devs.forEach((d) => { count[d] += 1; });
    $("device-ops").innerHTML = devices.map((d) =>
      `<span class="legend-item" data-device="${esc(d)}"><span class="swatch" style="background:${D.colors[d]}"></span>${esc(d)} <b class="n">${count[d]}</b></span>`).join("");
    drawMemory();
    if (state.sel >= 0) showOp(state.sel);
    document.body.dataset.plan = D.plans[p].picker;
  }

  function opClass(i) {
    let c = "op dev-" + devIndex[opDevice[state.plan][i]];
    if (D.ops[i].pinned) c += " pinned";
    if (state.diff) c += DIFF_CLASS[diffKind[i]];
    if (state.hitSet && state.hitSet.has(i)) c += " hit";
    if (i === state.sel) c += " sel";
    return c;
  }
  const restyle = () => opEls.forEach((el, i) => el.setAttribute("class", opClass(i)));

  // ---- summary: title, plans table, legend -------------------------------------------------
  function drawSummary() {
    $("title").textContent = D.title;
    document.title = "tacopt plan: " + D.title;
    const caps = Object.entries(D.capacity).map(([d, c]) => `${d} ${bytes(c)}`).join(", ");
    $("meta").textContent = `devices ${devices.join(",")} \u00b7 ${D.granularity} units \u00b7 cost model ${D.cost_model} (${D.cost_unit})` + (caps ? ` \u00b7 capacity ${caps}` : "") +
      (D.pins && D.pins.length ? ` \u00b7 pins ${D.pins.join(", ")} (${D.ops.filter((o) => o.pinned).length} ops)` : "");
    $("n-ops").textContent = D.ops.length;
    $("n-units").textContent = D.units.length;
    $("picker-bar").innerHTML = D.plans.map((pl, i) =>
      `<button type="button" role="tab" data-plan="${i}" data-picker="${esc(pl.picker)}">${esc(pl.picker)}</button>`).join("");
    const ref = D.plans[0];
    const rows = D.plans.map((pl, p) => {
      const d = pl.objective - ref.objective;
      const pct = ref.objective ? (100 * d / ref.objective) : 0;
      const n = [0, 0, 0, 0];
      D.ops.forEach((_, i) => { n[change(p, i)] += 1; });
      const b = pl.breakdown;
      return `<tr data-picker="${esc(pl.picker)}"><td>${esc(pl.picker)}</td><td>${esc(pl.status)}</td>` +
        `<td class="num objective">${fmt(pl.objective)}</td>` +
        `<td class="num delta">${p === 0 ? "-" : (d >= 0 ? "+" : "") + fmt(d) + ` (${pct >= 0 ? "+" : ""}${pct.toFixed(2)}%)`}</td>` +
        `<td class="num">${fmt(b.compute)} / ${fmt(b.transfer)} / ${fmt(b.quant)}</td>` +
        `<td class="num differ">${p === 0 ? "-" : n[MOVED]}</td>` +
        `<td class="num retyped">${p === 0 ? "-" : n[RETYPED]}</td>` +
        (anyReviewed ? `<td class="num reviewed">${p === 0 ? "-" : n[REVIEWED]}</td>` : "") + `</tr>`;
    });
    const failedRows = Object.entries(D.failed || {}).map(([name, why]) =>
      `<tr class="failed" data-picker="${esc(name)}"><td>${esc(name)}</td><td>ERROR</td><td colspan="${anyReviewed ? 6 : 5}" class="why">no plan: ${esc(why)}</td></tr>`);
    $("plans-table").innerHTML = `<thead><tr><th>picker</th><th>status</th><th class="num">objective (${esc(D.cost_unit)})</th>` +
      `<th class="num">vs ${esc(ref.picker)}</th><th class="num">compute / transfer / quant</th><th class="num" title="ops on another device than in the first plan">moved device</th>` +
      `<th class="num" title="ops on the same device in another inference type (e.g. int8 instead of float)">changed type</th>` +
      (anyReviewed ? `<th class="num" title="ops on the same device and type in another view">changed view</th>` : "") + `</tr></thead><tbody>${rows.join("")}${failedRows.join("")}</tbody>`;
    $("legend").innerHTML = devices.map((d) =>
      `<span class="legend-item"><span class="swatch" style="background:${D.colors[d]}"></span>${esc(d)}</span>`).join("") +
      `<span class="legend-item"><svg width="26" height="10"><line x1="0" y1="5" x2="26" y2="5" stroke="#e8590c" stroke-width="3"></line></svg> transfer</span>` +
      `<span class="legend-item"><svg width="26" height="10"><line x1="0" y1="5" x2="26" y2="5" stroke="#7048e8" stroke-width="3" stroke-dasharray="7 4"></line></svg> quantize / dequantize</span>` +
      `<span class="legend-item"><svg width="14" height="14"><path d="M0 0 H14 V14 z" fill="#000"></path></svg> pinned</span>` +
      `<span class="legend-item"><svg width="26" height="14"><rect x="1" y="1" width="24" height="12" rx="6" class="io-swatch"></rect></svg> graph input / output</span>` +
      (D.units.some((u) => u.ops.length > 1) ? `<span class="legend-item"><svg width="22" height="12"><rect x="1" y="1" width="20" height="10" class="unit"></rect></svg> unit</span>` : "");
    if (D.plans.length > 1) {
      $("diff-label").hidden = false;
      $("reviewed-note").hidden = !anyReviewed;
    }
  }

  // ---- the op panel --------------------------------------------------------------------------
  function refusedWhy(op, d) {
    if (op.refused[d]) return op.refused[d];
    const other = D.units[op.unit].ops.map((j) => D.ops[j]).find((o) => o.refused[d]);
    if (other) return `its unit holds ${other.name} (${other.kind}): ${other.refused[d]}`;
    return "no view: the cost model cannot price it, or a lowering is missing";
  }

  function showOp(i) {
    state.sel = i;
    restyle();
    const op = D.ops[i], unit = D.units[op.unit], plan = D.plans[state.plan];
    const chosen = unit.views[plan.choice[op.unit]];
    const tensorRows = (list, what) => list.filter(Boolean).map(([n, s, dt, c]) =>
      `<tr><td>${what}</td><td class="mono">${esc(n)}</td><td>${shape(s)}</td><td>${esc(dt)}${c ? " (const)" : ""}</td></tr>`).join("");
    const devRows = [];
    const own = Object.keys(op.costs).length > 0;
    const ownCell = (d) => own ? `<td class="num own">${d in op.costs ? fmt(op.costs[d]) : "-"}</td>` : "";
    for (const d of devices) {
      const views = unit.views.filter((v) => v.device === d);
      if (!views.length) {
        devRows.push(`<tr class="refused" data-device="${esc(d)}"><td>${esc(d)}</td><td>-</td><td class="num cost">-</td>${ownCell(d)}<td class="why">refused: ${esc(refusedWhy(op, d))}</td></tr>`);
        continue;
      }
      for (const v of views) {
        const isChosen = v === chosen;
        let note = isChosen ? "chosen" : "";
        if (!isChosen && D.capacity[d] !== undefined) {
          const step = plan.op_step[i];
          const used = step >= 0 ? plan.memory[d][step] + v.memory : v.memory;
          if (used > D.capacity[d]) note = `memory: would hold ${bytes(used)} here, capacity ${bytes(D.capacity[d])}`;
        }
        if (op.refused[d]) note += (note ? "; " : "") + `the op alone: ${esc(op.refused[d])}`;
        if (v.lowerings.length) note += (note ? "; " : "") + "lowerings: " + v.lowerings.map(esc).join(", ");
        devRows.push(`<tr class="${isChosen ? "chosen" : ""}" data-device="${esc(d)}" data-type="${esc(v.type)}"><td>${esc(d)}</td><td>${esc(v.type)}</td><td class="num cost">${fmt(v.cost)}</td>${ownCell(d)}<td class="why">${note}</td></tr>`);
      }
    }
    const unitNote = unit.ops.length > 1 ? ` (costs are the unit's: ${unit.ops.length} ops)` : "";
    $("panel").innerHTML = `<h2>Op <span class="mono" id="op-name">${esc(op.name)}</span></h2>` +
      `<table class="facts"><tr><th>kind</th><td id="op-kind">${esc(op.kind)}</td></tr>` +
      `<tr><th>inference type</th><td>${esc(op.type)}</td></tr>` +
      `<tr><th>unit</th><td class="mono">${esc(unit.name)}${unitNote}</td></tr>` +
      `<tr><th>annotated</th><td>${esc(op.initial || "-")}${op.pinned ? " (pinned)" : ""}</td></tr>` +
      `<tr><th>chosen view</th><td id="op-chosen">${esc(chosen.device)}/${esc(chosen.type)}${chosen.lowerings.length ? " (lowered: " + chosen.lowerings.map(esc).join(", ") + ")" : ""} by ${esc(plan.picker)}</td></tr></table>` +
      `<h3>Devices</h3><table id="op-costs"><thead><tr><th>device</th><th>type</th><th class="num">${own ? "unit's view" : "view"} cost (${esc(D.cost_unit)})</th>${own ? `<th class="num">op alone (cheapest)</th>` : ""}<th>why</th></tr></thead><tbody>${devRows.join("")}</tbody></table>` +
      `<h3>Tensors</h3><table id="op-tensors">${tensorRows(op.inputs, "in")}${tensorRows(op.outputs, "out")}</table>` +
      (D.plans.length > 1 ? `<p id="op-plans">Device and type per plan: ${D.plans.map((pl, p) => `${esc(pl.picker)} <b>${esc(opDevice[p][i])}/${esc(opView[p][i].type)}</b>`).join(", ")}</p>` : "");
    drawMemory();
  }

  function showIO(k) {
    state.sel = -1;
    restyle();
    const n = D.io[k];
    const info = n.info;
    const ops = n.ops.map((j) => `<span class="mono">${esc(D.ops[j].name)}</span> (${esc(D.ops[j].kind)}, ${esc(opDevice[state.plan][j])})`).join(", ");
    $("panel").innerHTML = `<h2>Graph ${n.kind} <span class="mono" id="io-name">${esc(n.tensor)}</span></h2>` +
      `<table class="facts"><tr><th>shape</th><td>${info ? shape(info[1]) : "-"}</td></tr>` +
      `<tr><th>type</th><td>${info ? esc(info[2]) : "-"}</td></tr>` +
      `<tr><th>${n.kind === "input" ? "read by" : "written by"}</th><td id="io-ops">${ops || (n.kind === "output" ? "no op: passed through from the inputs" : "no op")}</td></tr></table>` +
      `<p class="hint">The host (${esc(D.host)}) holds the graph's inputs and outputs` +
      (D.boundaries ? `: an op on another device reads or writes them through a transfer.</p>` : `; reading and writing them costs nothing in this problem.</p>`);
    drawMemory();
  }

  // ---- memory timelines --------------------------------------------------------------------
  function drawMemory() {
    const plan = D.plans[state.plan];
    const W = 380, H = 70;
    const at = state.sel >= 0 ? plan.op_step[state.sel] : -1;
    $("memory-charts").innerHTML = devices.map((d) => {
      const use = plan.memory[d] || [];
      const cap = D.capacity[d];
      const top = Math.max(1, ...use, cap || 0) * 1.05;
      const n = Math.max(use.length, 1);
      const sx = (s) => (W * s / n).toFixed(1), sy = (v) => (H - H * v / top).toFixed(1);
      let pts = `0,${H} `;
      use.forEach((v, s) => { pts += `${sx(s)},${sy(v)} ${sx(s + 1)},${sy(v)} `; });
      pts += `${W},${H}`;
      const peak = Math.max(0, ...use);
      const over = cap !== undefined && peak > cap;
      return `<div class="mem-head" data-device="${esc(d)}"><span class="swatch" style="background:${D.colors[d]}"></span><b>${esc(d)}</b> peak <span class="peak${over ? " over" : ""}">${bytes(peak)}</span>` +
        (cap !== undefined ? ` of capacity ${bytes(cap)}` : " (no capacity set)") + `</div>` +
        `<svg class="mem" viewBox="0 0 ${W} ${H}" preserveAspectRatio="none"><polygon class="use" points="${pts}"></polygon>` +
        (cap !== undefined ? `<line class="cap" x1="0" x2="${W}" y1="${sy(cap)}" y2="${sy(cap)}"></line>` : "") +
        (at >= 0 ? `<line class="at" x1="${sx(at + 0.5)}" x2="${sx(at + 0.5)}" y1="0" y2="${H}"></line>` : "") + `</svg>`;
    }).join("") + `<p class="hint">Bytes held at each step of the partitioned graph (each op a step, conversions included): weights read there plus live tensors, as the plan's peak_memory counts them; the marker is the selected op.</p>`;
  }

  // ---- zoom, pan, search -------------------------------------------------------------------
  function apply() {
    viewport.setAttribute("transform", `translate(${state.x},${state.y}) scale(${state.k})`);
    svg.classList.toggle("far", state.k < 0.4);
  }
  // The "fit" button: the whole graph, width and height. At load (whole false): the width,
  // never so small that the kinds cannot be read (zoom out, or fit, for more).
  function fit(whole) {
    const r = svg.getBoundingClientRect();
    const [w, h] = D.size;
    const kw = (r.width - 20) / Math.max(w, 1), kh = (r.height - 20) / Math.max(h, 1);
    state.k = whole ? Math.min(1, kw, kh) : Math.max(0.45, Math.min(1, kw));
    state.x = (r.width - w * state.k) / 2;
    state.y = whole ? Math.max(10, (r.height - h * state.k) / 2) : 10;
    apply();
  }
  function zoomAt(f, cx, cy) {
    const k = Math.min(4, Math.max(0.02, state.k * f));
    state.x = cx - (cx - state.x) * (k / state.k);
    state.y = cy - (cy - state.y) * (k / state.k);
    state.k = k;
    apply();
  }
  function centerOn(i) {
    const r = svg.getBoundingClientRect(), op = D.ops[i];
    if (state.k < 0.6) state.k = 0.8;
    state.x = r.width / 2 - op.x * state.k;
    state.y = r.height / 2 - op.y * state.k;
    apply();
  }
  function search(q) {
    q = q.trim().toLowerCase();
    state.hits = q ? D.ops.map((op, i) => i).filter((i) =>
      D.ops[i].name.toLowerCase().includes(q) || D.ops[i].kind.toLowerCase().includes(q)) : [];
    state.hitSet = new Set(state.hits);
    state.hit = -1;
    $("n-hits").textContent = q ? `${state.hits.length} match${state.hits.length === 1 ? "" : "es"}` : "";
    restyle();
  }

  function wire() {
    // The wheel scrolls (shift+wheel sideways); ctrl+wheel, and a trackpad's pinch, zoom.
    svg.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = svg.getBoundingClientRect();
      if (e.ctrlKey || e.metaKey) {
        zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
        return;
      }
      const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? r.height : 1;  // lines, pages
      const sideways = e.shiftKey && !e.deltaX;
      state.x -= (sideways ? e.deltaY : e.deltaX) * unit;
      state.y -= (sideways ? 0 : e.deltaY) * unit;
      apply();
    }, { passive: false });
    let drag = null;
    svg.addEventListener("pointerdown", (e) => {
      if (e.target.closest(".op, .io")) return;
      drag = { x: e.clientX - state.x, y: e.clientY - state.y };
      svg.classList.add("dragging");
    });
    window.addEventListener("pointermove", (e) => {
      if (!drag) return;
      state.x = e.clientX - drag.x; state.y = e.clientY - drag.y; apply();
    });
    window.addEventListener("pointerup", () => { drag = null; svg.classList.remove("dragging"); });
    // an op's tooltip is made when the pointer first reaches it, not for every op at load
    $("nodes").addEventListener("pointerover", (e) => {
      const g = e.target.closest(".op");
      if (!g || g.lastElementChild.tagName === "title") return;
      const op = D.ops[Number(g.dataset.i)];
      g.insertAdjacentHTML("beforeend", `<title>${esc(op.name)} (${esc(op.kind)})</title>`);
    });
    $("nodes").addEventListener("click", (e) => {
      const g = e.target.closest(".op");
      if (g) showOp(Number(g.dataset.i));
    });
    $("io").addEventListener("click", (e) => {
      const g = e.target.closest(".io");
      if (g) showIO(Number(g.dataset.io));
    });
    $("picker-bar").addEventListener("click", (e) => {
      const b = e.target.closest("button");
      if (b) showPlan(Number(b.dataset.plan));
    });
    $("diff").addEventListener("change", (e) => {
      state.diff = e.target.checked;
      svg.classList.toggle("diffmode", state.diff);
      restyle();
    });
    $("search").addEventListener("input", (e) => search(e.target.value));
    $("search").addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || !state.hits.length) return;
      state.hit = (state.hit + 1) % state.hits.length;
      const i = state.hits[state.hit];
      centerOn(i); showOp(i);
    });
    $("fit").addEventListener("click", () => fit(true));
    $("zoom-in").addEventListener("click", () => { const r = svg.getBoundingClientRect(); zoomAt(1.4, r.width / 2, r.height / 2); });
    $("zoom-out").addEventListener("click", () => { const r = svg.getBoundingClientRect(); zoomAt(1 / 1.4, r.width / 2, r.height / 2); });
  }

  drawSummary();
  drawStatic();
  opEls = Array.from($("nodes").children);
  edgeEls = Array.from($("edges").children);
  ioEdgeEls = Array.from($("io-edges").children);
  wire();
  showPlan(0);
  fit(false);
  // For tests and the load benchmark: which ops differ, and when the page was drawn.
  const names = (list) => list.map((i) => D.ops[i].name);
  window.tacoptPage = { data: D, diffOps: () => names(diffOps), retypedOps: () => names(retypedOps),
    reviewedOps: () => names(reviewedOps), showPlan, showOp, showIO };
  requestAnimationFrame(() => requestAnimationFrame(() => {
    document.body.dataset.loadMs = performance.now().toFixed(1);
    document.body.dataset.ready = "1";
  }));
})();
