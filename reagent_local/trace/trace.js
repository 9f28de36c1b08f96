// Draws a reagent run trace from the JSON block #trace-data.
// Every piece of text from the log is inserted with textContent or setAttribute, never as HTML.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("trace-data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = { decomposer: "#4c6ef5", retriever: "#1098ad", verifier: "#2b8a3e", assembler: "#ae3ec9",
    supervisor: "#d1242f", controller: "#e8890c", channel: "#6e7781", kg: "#8c6d1f", system: "#0a7ea4" };
  var TOP = 46, LANE_H = 46, PAD = 22;
  var items = {}, order = [], entries = D.entries, calls = {}, checkpoints = {}, rollbackOf = {};
  D.items.forEach(function (it) { items[it.seq] = it; });
  D.calls.forEach(function (c) { calls[c.id] = c; });
  D.checkpoints.forEach(function (c) { checkpoints[c.id] = c; });
  D.rollbacks.forEach(function (r) { rollbackOf[r.seq] = r; });
  var selected = null;

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function sv(tag, attrs, parent) {
    var n = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(n);
    return n;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function color(agent) { return COLORS[agent] || "#57606a"; }
  function cut(s, n) { s = String(s || ""); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function cap(s) { return s.charAt(0).toUpperCase() + s.slice(1); }
  var TITLES = { rollback_local: "Local rollback", rollback_global: "Global rollback", conflict_set: "Minimal conflict set",
    assert: "Statement enters a state", retract: "Statement retracted", judgement: "Judge result", escalate: "Escalation",
    plan: "Plan", decision: "Decision on a step", rule_fired: "Rule fired", signal: "Conflict signal", rewrite: "Follow-up rewritten", answer: "Final answer" };
  var DECISION_COLORS = { accept: "#2b8a3e", retry: "#e8890c", give_up: "#d1242f" };
  var DECISION_GLYPHS = { accept: "\u2713", retry: "\u21bb", give_up: "\u2717" };
  function fmt(x, d) { return x === null || x === undefined ? "-" : Number(x).toFixed(d); }

  // ---- header ---------------------------------------------------------------------------
  function header() {
    var r = D.run, s = D.stats || {};
    document.getElementById("run-id").textContent = r.run_id;
    document.getElementById("question").textContent = r.question;
    var line = document.getElementById("answer-line");
    if (D.final.answer === null) {
      add(line, el("span", "pending", r.status === "cancelled" || r.status === "failed"
        ? "No answer: the run was " + r.status + (r.error ? " (" + r.error + ")." : ".")
        : "No answer: the run has not finished (still running, or interrupted)."));
    } else {
      line.appendChild(document.createTextNode("Answer: "));
      add(line, el("span", "answer", D.final.answer));
      if (D.final.uncertain) add(line, el("span", "uncertain", "uncertain: " + (D.final.reason || "yes")));
      var t = D.final.trust;
      if (t) {
        var label = t.probability === null || t.probability === undefined ? "trust: no model"
          : "trust " + fmt(t.probability, 2) + ", " + t.label;
        add(line, el("span", "trust " + String(t.label || "").replace(" ", "-"), label));
        if (t.grounded === false) add(line, el("span", "uncertain", "not found in the index"));
      }
    }
    var local = D.rollbacks.filter(function (b) { return b.scope === "local"; }).length;
    var chips = document.getElementById("chips");
    function chip(label, value, cls) {
      var c = add(chips, el("span", "chip" + (cls ? " " + cls : "")));
      c.appendChild(document.createTextNode(label + " "));
      add(c, el("b", null, value));
    }
    chip("status", r.status, r.status === "ok" ? "" : "warn");
    if (r.seconds !== null) chip("time", fmt(r.seconds, 1) + " s");
    chip("LLM calls", String(D.calls.length));
    if (s.prompt_tokens !== undefined) chip("tokens", s.prompt_tokens + " + " + s.completion_tokens);
    chip("local rollbacks", String(local), local ? "warn" : "");
    chip("global rollbacks", String(D.rollbacks.length - local), D.rollbacks.length - local ? "bad" : "");
    chip("conflict sets", String(D.conflict_sets.length), D.conflict_sets.length ? "bad" : "");
    chip("events", String(D.items.length));
  }

  // ---- timeline ----------------------------------------------------------------------------
  function drawn(it) { return it.type !== "round" && it.type !== "checkpoint"; }
  function shapeOf(it) {
    if (it.type === "message") return { assert: "dot", inform: "ring", reject: "diamond", challenge: "triangle" }[it.kind] || "ring";
    return { assert: "square", retract: "cross", rollback_local: "rollback", rollback_global: "rollback",
      conflict_set: "conflict", escalate: "triangle", judgement: "small", plan: "plan", decision: "decision",
      signal: "signal", rule_fired: "rule", answer: "star" }[it.type] || "small";
  }
  function entryLabel(e) {
    var t = e.value || (e.text.indexOf("->") >= 0 ? e.text.split("->").pop() : e.text);
    return cut(t.trim(), 16);
  }

  function drawShape(g, it, fill) {
    var kind = shapeOf(it);
    sv("circle", { r: 13, class: "halo" }, g);
    if (kind === "dot") sv("circle", { r: 7, fill: fill, class: "shape" }, g);
    else if (kind === "ring") {
      var c = sv("circle", { r: 6, class: "shape" }, g);
      c.style.fill = "#fff"; c.style.stroke = fill; c.style.strokeWidth = "2.4";
    }
    else if (kind === "square") sv("rect", { x: -5, y: -5, width: 10, height: 10, rx: 2, fill: fill, class: "shape" }, g);
    else if (kind === "diamond") sv("rect", { x: -6, y: -6, width: 12, height: 12, fill: "#d1242f", class: "shape", transform: "rotate(45)" }, g);
    else if (kind === "triangle") sv("path", { d: "M0,-8 L7,6 L-7,6 Z", fill: it.type === "escalate" ? "#d1242f" : "#e8890c", class: "shape" }, g);
    else if (kind === "cross") {
      sv("circle", { r: 7, fill: "#fff8c5", class: "shape" }, g);
      var x = sv("path", { d: "M-4,-4 L4,4 M4,-4 L-4,4" }, g);
      x.style.stroke = "#9a6700"; x.style.strokeWidth = "2.4"; x.style.strokeLinecap = "round";
    }
    else if (kind === "plan") {
      sv("rect", { x: -7, y: -8, width: 14, height: 16, rx: 2, fill: fill, class: "shape" }, g);
      var lines = sv("path", { d: "M-4,-4 H4 M-4,0 H4 M-4,4 H2" }, g);
      lines.style.stroke = "#fff"; lines.style.strokeWidth = "1.6";
    }
    else if (kind === "decision") {
      var d = (it.payload || {}).decision;
      sv("circle", { r: 9, fill: DECISION_COLORS[d] || "#57606a", class: "shape" }, g);
      sv("text", { class: "glyph" }, g).textContent = DECISION_GLYPHS[d] || "?";
    }
    else if (kind === "signal") {
      var fired = (it.payload || {}).fired !== false;
      var hex = sv("path", { d: "M0,-8 L7,-4 L7,4 L0,8 L-7,4 L-7,-4 Z", class: "shape" }, g);
      hex.style.fill = fired ? "#cf222e" : "#fff"; hex.style.stroke = fired ? "#fff" : "#8c959f";
      hex.style.strokeWidth = fired ? "1.5" : "2";
    }
    else if (kind === "rule") {
      var r = sv("rect", { x: -5, y: -5, width: 10, height: 10, class: "shape", transform: "rotate(45)" }, g);
      r.style.fill = "#fff"; r.style.stroke = "#8250df"; r.style.strokeWidth = "2.2";
    }
    else if (kind === "star") {
      sv("path", { d: "M0,-10 L2.9,-3.1 L9.5,-3.1 L4.2,1.2 L6.2,8.1 L0,4 L-6.2,8.1 L-4.2,1.2 L-9.5,-3.1 L-2.9,-3.1 Z",
        fill: "#1a7f37", class: "shape" }, g);
    }
    else if (kind === "rollback" || kind === "conflict") {
      var f = kind === "conflict" ? "#8250df" : (it.type === "rollback_local" ? "#e8890c" : "#d1242f");
      sv("circle", { r: 11, fill: f, class: "shape" }, g);
      var t = sv("text", { class: "glyph" }, g);
      t.textContent = kind === "conflict" ? "!" : "\u21b6";
    } else sv("circle", { r: 4.5, fill: it.type === "judgement" ? "#8c959f" : "#afb8c1", class: "shape" }, g);
  }

  function timeline() {
    var lanes = D.agents, laneY = {};
    lanes.forEach(function (a, i) { laneY[a] = TOP + i * LANE_H + LANE_H / 2; });
    var maxT = D.items.reduce(function (m, it) { return Math.max(m, it.time); }, 1);
    var scroll = document.getElementById("lanes-scroll");
    var avail = Math.max(scroll.clientWidth, 600) - 2 * PAD;
    var step = Math.max(14, Math.min(40, Math.floor(avail / Math.max(maxT - 1, 1))));
    var width = 2 * PAD + (maxT - 1) * step, height = TOP + lanes.length * LANE_H + 8;
    function x(t) { return PAD + (t - 1) * step; }
    var root = sv("svg", { width: width, height: height, role: "img", "aria-label": "timeline of the run" }, scroll);
    var defs = sv("defs", {}, root);
    var pat = sv("pattern", { id: "hatch", width: 7, height: 7, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    sv("rect", { width: 7, height: 7, fill: "#eceef1" }, pat);
    sv("line", { x1: 0, y1: 0, x2: 0, y2: 7, stroke: "#c9ced4", "stroke-width": 3 }, pat);
    ["local", "global"].forEach(function (k) {
      var m = sv("marker", { id: "head-" + k, viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
      sv("path", { d: "M0,0 L10,5 L0,10 Z", fill: k === "local" ? "#e8890c" : "#d1242f" }, m);
    });
    var labels = document.getElementById("lane-labels");
    labels.style.height = height + "px";
    lanes.forEach(function (a, i) {
      sv("rect", { x: 0, y: TOP + i * LANE_H, width: width, height: LANE_H, class: "lane-bg" + (i % 2 ? " odd" : "") }, root);
      var lab = add(labels, el("div", "lane-label", a));
      lab.style.top = (laneY[a] - 9) + "px";
      lab.style.color = color(a);
    });
    var every = step >= 24 ? 5 : 10;
    for (var t = 1; t <= maxT; t++) {
      if (t !== 1 && t % every) continue;
      sv("line", { x1: x(t), x2: x(t), y1: TOP - 6, y2: TOP, class: "axis-tick" }, root);
      sv("text", { x: x(t), y: TOP - 9, "text-anchor": "middle", class: "axis-label" }, root).textContent = "t" + t;
    }
    // abandoned branches: from the target checkpoint to the rollback, in the lanes it reverted
    D.rollbacks.forEach(function (r) {
      var rows = r.scope === "global" ? lanes : [r.agent];
      rows.forEach(function (a) {
        if (laneY[a] === undefined) return;
        var y = laneY[a] - LANE_H / 2 + 3;
        sv("rect", { x: x(r.checkpoint_time), y: y, width: Math.max(x(r.time) - x(r.checkpoint_time), 2), height: LANE_H - 6, class: "band" }, root);
      });
    });
    D.checkpoints.forEach(function (c) {
      var cx = x(c.time);
      sv("line", { x1: cx, x2: cx, y1: TOP - 2, y2: height - 6, class: "cp-line" }, root);
      var g = sv("g", { class: "mark checkpoint", transform: "translate(" + cx + "," + (TOP - 30) + ")", tabindex: 0,
        role: "button", "data-seq": c.seq, "data-type": "checkpoint", "aria-label": "checkpoint " + c.id + " " + c.label }, root);
      sv("circle", { r: 13, class: "halo" }, g);
      sv("rect", { x: -9, y: -7, width: 18, height: 14, rx: 3, class: "cp-flag shape" }, g);
      sv("text", { y: 0.5, class: "cp-text", "text-anchor": "middle", "dominant-baseline": "central" }, g).textContent = String(c.id);
      sv("title", {}, g).textContent = "checkpoint #" + c.id + " \u201c" + c.label + "\u201d at t=" + c.time;
      bind(g, c.seq);
    });
    // rollbacks: an arrow from the rollback back to its checkpoint
    D.rollbacks.forEach(function (r) {
      if (laneY[r.agent] === undefined) return;
      var y = laneY[r.agent] - 12, x1 = x(r.time) - 9, x2 = x(r.checkpoint_time) + 2;
      var lift = Math.min(TOP - 8 + (laneY[r.agent] - TOP) * 0.6, 26 + (x1 - x2) * 0.12);
      sv("path", { d: "M" + x1 + "," + y + " C" + (x1 - 10) + "," + (y - lift) + " " + (x2 + 10) + "," + (y - lift) + " " + x2 + "," + (y - 2),
        class: "arrow " + r.scope, "marker-end": "url(#head-" + r.scope + ")" }, root);
    });
    // conflict sets: dotted lines to the statements found to be inconsistent together
    D.conflict_sets.forEach(function (c) {
      var from = items[c.seq];
      if (!from || laneY[from.agent] === undefined) return;
      c.statement_ids.forEach(function (id) {
        var e = entryById(id, c.seq);
        if (!e || laneY[e.agent] === undefined) return;
        sv("line", { x1: x(from.time), y1: laneY[from.agent], x2: x(e.time), y2: laneY[e.agent], class: "conflict-link" }, root);
      });
    });
    D.items.filter(drawn).forEach(function (it) {
      if (laneY[it.agent] === undefined) return;
      var cls = "mark t-" + it.type.replace(/[^a-z_]/g, "") + (it.abandoned ? " abandoned" : "");
      if (it.type === "assert" && it.entries.length && entries[it.entries[0]].fate === "retracted") cls += " retracted";
      var g = sv("g", { class: cls, transform: "translate(" + x(it.time) + "," + laneY[it.agent] + ")", tabindex: 0, role: "button",
        "data-seq": it.seq, "data-type": it.type, "data-kind": it.kind, "aria-label": it.summary }, root);
      drawShape(g, it, color(it.agent));
      if (it.type === "assert" && it.entries.length) {
        sv("text", { y: 18, class: "label" }, g).textContent = entryLabel(entries[it.entries[0]]);
      }
      sv("title", {}, g).textContent = "t=" + it.time + " " + it.agent + ": " + it.summary;
      order.push(it.seq);
      bind(g, it.seq);
    });
    D.checkpoints.forEach(function (c) { order.push(c.seq); });
    order.sort(function (a, b) { return a - b; });
  }

  function bind(g, seq) {
    g.addEventListener("click", function () { select(seq); });
    g.addEventListener("keydown", function (ev) {
      var i = order.indexOf(seq);
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(seq); }
      else if (ev.key === "ArrowRight" && i + 1 < order.length) { ev.preventDefault(); select(order[i + 1], true); }
      else if (ev.key === "ArrowLeft" && i > 0) { ev.preventDefault(); select(order[i - 1], true); }
    });
  }

  function markFor(seq) { return document.querySelector('.mark[data-seq="' + Number(seq) + '"]'); }

  function select(seq, focus) {
    if (selected) { var old = markFor(selected); if (old) old.classList.remove("selected"); }
    selected = seq;
    var m = markFor(seq);
    if (m) { m.classList.add("selected"); if (focus) m.focus(); }
    var cp = D.checkpoints.filter(function (c) { return c.seq === seq; })[0];
    showDetails(cp ? null : items[seq], cp);
    if (history.replaceState) history.replaceState(null, "", "#seq-" + seq);
  }

  // ---- details ----------------------------------------------------------------------------
  // score: the passage's score where it was used (a retrieval, a citation); passages are shared across steps
  function passageBlock(pid, score, fallback) {
    var p = D.passages[pid] || fallback;
    var box = el("div", "passage" + (p && p.suspicious ? " suspicious" : ""));
    var head = add(box, el("div", "ptitle", p ? p.title : pid));
    add(head, el("span", "small", "  " + pid + (score !== null && score !== undefined ? "  score " + fmt(score, 3) : "") +
      (p && p.suspicious ? "  flagged: reads like an instruction" : "")));
    var from = pid.indexOf("|") > 0 ? pid.slice(0, pid.indexOf("|")) : "";  // several indexes: "name|id"
    if (from) add(box, el("div", "porigin", "index " + from));
    if (p && p.origin && p.origin.label) add(box, el("div", "porigin", p.origin.label));
    add(box, el("p", "ptext", p ? p.text : "(the text of this passage is not in the log)"));
    return box;
  }

  function callBlock(id, open) {
    var c = calls[id];
    var d = el("details", "call");
    if (open) d.open = true;
    add(d, el("summary", null, "LLM call #" + c.id + " \u00b7 " + c.purpose + " \u00b7 " + (c.agent || "?") + " \u00b7 " + c.model +
      " \u00b7 " + (c.prompt_tokens === null ? "?" : c.prompt_tokens) + "+" + (c.completion_tokens === null ? "?" : c.completion_tokens) +
      " tokens" + (c.seconds === null ? "" : " \u00b7 " + fmt(c.seconds, 2) + " s")));
    var body = add(d, el("div", "body"));
    add(body, el("div", "role", "rendered prompt"));
    c.prompt.forEach(function (m) { add(body, el("div", "role", m.role)); add(body, el("pre", null, m.content)); });
    add(body, el("div", "role", "raw output"));
    add(body, el("pre", null, c.output));
    return d;
  }

  function callsBehind(entry) {
    var own = items[entry.seq] ? items[entry.seq].calls : [];
    var msg = entry.message_seq !== null && items[entry.message_seq] ? items[entry.message_seq].calls : [];
    return own.concat(msg);
  }

  function statementCard(entry, openCalls) {
    var card = el("div", "card" + (entry.fate === "discarded" ? " abandoned" : ""));
    var top = add(card, el("div"));
    add(top, el("span", "stmt", entry.text));
    add(top, el("span", "fate " + entry.fate, entry.fate));
    var kv = add(card, el("div", "kv"));
    var parts = [entry.agent + " holds " + entry.id + " from t=" + entry.time, "confidence " + fmt(entry.confidence, 2)];
    if (entry.relation) parts.push(entry.relation + "(" + entry.subject + ") = " + entry.value);
    if (entry.subquestion !== null && entry.subquestion !== undefined) parts.push("step " + (Number(entry.subquestion) + 1));
    kv.textContent = parts.join(" \u00b7 ");
    if (entry.ended_seq !== null && items[entry.ended_seq]) {
      add(card, el("div", "kv", entry.fate + " at t=" + items[entry.ended_seq].time + ": " + entry.ended_reason));
    }
    if (entry.provenance.length) {
      add(card, el("h3", null, "Evidence passages"));
      entry.provenance.forEach(function (p) { card.appendChild(passageBlock(p[0], p[1])); });
    }
    var behind = callsBehind(entry);
    if (behind.length) {
      add(card, el("h3", null, "LLM call behind it"));
      behind.forEach(function (id) { card.appendChild(callBlock(id, openCalls)); });
    }
    return card;
  }

  function rawStatementCard(s) {
    var card = el("div", "card");
    add(card, el("div", "stmt", s.text));
    add(card, el("div", "kv", (s.id || "") + (s.relation ? " \u00b7 " + s.relation + "(" + s.subject + ") = " + s.value : "") +
      " \u00b7 not applied to a state from this event"));
    (s.provenance || []).forEach(function (p) { card.appendChild(passageBlock(p[0], p[1])); });
    return card;
  }

  // the latest entry of a statement id (before seq, if given)
  function entryById(id, before) {
    var best = null;
    Object.keys(entries).forEach(function (k) {
      var e = entries[k];
      if (e.id === id && (before === undefined || e.seq < before) && (!best || e.seq > best.seq)) best = e;
    });
    return best;
  }

  function jumpButton(text, seq, cls) {
    var b = el("button", "jump " + (cls || ""), text);
    b.type = "button";
    b.addEventListener("click", function () { select(seq, true); });
    return b;
  }

  function showDetails(it, cp) {
    var box = document.getElementById("details");
    box.textContent = "";
    if (cp) {
      add(box, el("h2", null, "Checkpoint #" + cp.id + " \u201c" + cp.label + "\u201d"));
      add(box, el("div", "meta", "taken by " + cp.agent + " at t=" + cp.time + " \u00b7 seq " + cp.seq));
      add(box, el("h3", null, "Statements held at this point (" + cp.held.length + ")"));
      var ul = add(box, el("ul"));
      cp.held.forEach(function (h) { add(ul, el("li", null, h[0] + ": " + h[2])); });
      if (!cp.held.length) add(box, el("p", "small", "none"));
      var back = D.rollbacks.filter(function (r) { return r.checkpoint_id === cp.id; });
      back.forEach(function (r) { add(box, jumpButton("\u21b6 " + r.scope + " rollback to here at t=" + r.time, r.seq, r.scope)); });
      return;
    }
    add(box, el("h2", null, TITLES[it.type] || (it.type === "message" ? cap(it.kind) + " message" : cap(it.type.replace(/_/g, " ")))));
    add(box, el("div", "meta", it.agent + " \u00b7 t=" + it.time + " \u00b7 seq " + it.seq + (it.round ? " \u00b7 round " + it.round : "") +
      (it.parent_seq !== null ? " \u00b7 caused by seq " + it.parent_seq : "")));
    if (!rollbackOf[it.seq]) add(box, el("p", "summary-line", it.summary));
    var abandonedEntry = it.entries.map(function (s) { return entries[s]; }).filter(function (e) { return e.fate === "discarded"; })[0];
    if (it.abandoned && abandonedEntry) {
      var rb = rollbackOf[abandonedEntry.ended_seq];
      add(box, el("div", "banner abandoned", "Abandoned branch: discarded by the " + (rb ? rb.scope : "") + " rollback at t=" +
        items[abandonedEntry.ended_seq].time + (rb ? " back to checkpoint #" + rb.checkpoint_id + " \u201c" + rb.checkpoint_label + "\u201d" : "") +
        ". Reason: " + abandonedEntry.ended_reason));
    }
    var r = rollbackOf[it.seq];
    if (r) {
      add(box, el("div", "banner " + r.scope, (r.scope === "global" ? "Global" : "Local") + " rollback: " +
        (r.scope === "global" ? "every agent" : r.agent) + " went back to checkpoint #" + r.checkpoint_id + " \u201c" +
        r.checkpoint_label + "\u201d (t=" + r.checkpoint_time + "). Reason: " + r.reason));
      add(box, el("h3", null, "Discarded statements (" + r.discarded.length + ")"));
      r.discarded.forEach(function (s) { box.appendChild(statementCard(entries[s], false)); });
      if (r.restored.length) {
        add(box, el("h3", null, "Restored statements (" + r.restored.length + ")"));
        r.restored.forEach(function (s) { box.appendChild(statementCard(entries[s], false)); });
      }
      var cs = D.conflict_sets.filter(function (c) { return c.rollback_seq === r.seq; })[0];
      if (cs) add(box, jumpButton("! the conflict set behind this rollback (t=" + cs.time + ")", cs.seq, "conflict"));
    } else if (it.type === "conflict_set") {
      var c = D.conflict_sets.filter(function (x) { return x.seq === it.seq; })[0];
      add(box, el("h3", null, "Minimal conflict set"));
      c.statement_ids.forEach(function (id, i) {
        var e = entryById(id, c.seq);
        var card = e ? statementCard(e, false) : rawStatementCard({ id: id, text: c.texts[i] || id });
        add(card, el("div", "kv", id === c.discard_id ? "\u2717 given up by the supervisor" : "\u2713 kept"));
        box.appendChild(card);
      });
      add(box, el("p", "small", "Reason: " + c.reason));
      if (c.source) add(box, el("p", "small", "Found by: " + c.source));
      if (c.affected_steps.length) add(box, el("p", "small", "Steps solved again: " +
        c.affected_steps.map(function (s) { return s + 1; }).join(", ")));
      if (c.reassert.length) add(box, el("p", "small", "Re-asserted after the rollback: " + c.reassert.join(", ")));
      if (c.rollback_seq !== null) add(box, jumpButton("\u21b6 the global rollback that followed (t=" + items[c.rollback_seq].time + ")", c.rollback_seq, "global"));
    } else if (it.entries.length) {
      add(box, el("h3", null, it.type === "retract" ? "Statement taken out" : "Statement"));
      it.entries.forEach(function (s) { box.appendChild(statementCard(entries[s], true)); });
    } else if (it.type === "message" && (it.payload.statements || []).length) {
      add(box, el("h3", null, "Statements"));
      it.payload.statements.forEach(function (s) { box.appendChild(rawStatementCard(s)); });
    } else if (it.type === "escalate" && (it.payload.statements || []).length) {
      add(box, el("h3", null, "Escalated statements"));
      it.payload.statements.forEach(function (s) { box.appendChild(rawStatementCard(s)); });
    }
    var body = it.payload.payload || {};
    if (it.type === "message" && body.passages) {
      add(box, el("h3", null, "Passages for the query \u201c" + (body.query || "") + "\u201d"));
      body.passages.forEach(function (p) { box.appendChild(passageBlock(p.id, p.score, p)); });
    }
    if (it.type === "message" && body.subquestions) {
      add(box, el("h3", null, "Sub-questions"));
      var ol = add(box, el("ol"));
      body.subquestions.forEach(function (q) { add(ol, el("li", null, q)); });
    }
    typedDetails(box, it);
    if (it.type === "judgement") {
      add(box, el("h3", null, "Pair judged"));
      add(box, el("div", "card", it.payload.a_text));
      add(box, el("div", "card", it.payload.b_text));
    }
    var shown = it.entries.length && !r && it.type !== "conflict_set";
    if (it.calls.length && !shown) {
      add(box, el("h3", null, "LLM call behind it"));
      it.calls.forEach(function (id) { box.appendChild(callBlock(id, true)); });
    }
    var raw = add(box, el("details", "raw"));
    add(raw, el("summary", null, "raw event payload"));
    add(raw, el("pre", null, JSON.stringify(it.payload, null, 2)));
  }

  // the loop's typed events (core/events.py): plan, decision, signal, rule_fired, answer
  function pairs(box, rows) {
    var ul = add(box, el("ul"));
    rows.forEach(function (r) {
      if (r[1] === "" || r[1] === null || r[1] === undefined) return;
      var li = add(ul, el("li"));
      add(li, el("b", null, r[0] + ": "));
      li.appendChild(document.createTextNode(String(r[1])));
    });
  }
  function typedDetails(box, it) {
    var p = it.payload || {};
    if (it.type === "plan") {
      add(box, el("h3", null, "Sub-questions" + (p.attempt > 1 ? " (attempt " + p.attempt + ")" : "")));
      var ol = add(box, el("ol"));
      (p.subquestions || []).forEach(function (q, i) {
        var uses = (p.depends_on || [])[i] || [];
        add(ol, el("li", null, q + (uses.length ? "  (uses " + uses.map(function (k) { return "#" + (k + 1); }).join(", ") + ")" : "")));
      });
      if (p.reason) add(box, el("p", "small", "Why: " + p.reason));
    } else if (it.type === "decision") {
      pairs(box, [["step", p.step + 1], ["decision", String(p.decision || "").replace(/_/g, " ")], ["answer", p.answer],
        ["confidence", fmt(p.confidence, 2)], ["query", p.query]]);
      if ((p.reasons || []).length) {
        add(box, el("h3", null, "Reasons"));
        var ul = add(box, el("ul"));
        p.reasons.forEach(function (r) { add(ul, el("li", null, r)); });
      }
    } else if (it.type === "signal") {
      pairs(box, [["signal", p.signal], ["fired", p.fired ? "yes: a conflict" : "no"],
        ["step", p.step === null || p.step === undefined ? "" : p.step + 1], ["detail", p.detail]]);
      var keys = Object.keys(p.values || {});
      if (keys.length) {
        add(box, el("h3", null, "Values compared"));
        pairs(box, keys.map(function (k) { var v = p.values[k]; return [k, typeof v === "string" ? v : JSON.stringify(v)]; }));
      }
    } else if (it.type === "trust") {
      pairs(box, [["probability right", fmt(p.probability, 3)], ["threshold", fmt(p.threshold, 2)], ["mark", p.label],
        ["grounded", p.grounded ? "yes" : "no: not found in the index"], ["backtracking fired", p.caught ? "yes" : "no"]]);
      var parts = Object.keys(p.contributions || {}).sort(function (a, b) {
        return Math.abs(p.contributions[b]) - Math.abs(p.contributions[a]); });
      if (parts.length) {
        add(box, el("h3", null, "Each feature's share of the log-odds"));
        pairs(box, parts.map(function (k) { return [k, fmt(p.contributions[k], 3) + "  (value " + fmt((p.features || {})[k], 3) + ")"]; }));
      }
    } else if (it.type === "rewrite") {
      pairs(box, [["asked", p.question], ["read as", p.standalone], ["conversation", p.conversation], ["turn", p.turn],
        ["earlier questions", (p.earlier || []).join(" | ")], ["error", p.error]]);
    } else if (it.type === "rule_fired") {
      pairs(box, [["rule", p.rule], ["stage", p.stage], ["step", p.step === null || p.step === undefined ? "" : p.step + 1],
        ["detail", p.detail]]);
    } else if (it.type === "answer") {
      pairs(box, [["answer", p.answer], ["uncertain", p.uncertain ? "yes" + (p.reason ? ": " + p.reason : "") : "no"],
        ["rules", (p.rules || []).join(", ")]]);
    }
  }

  // ---- summary -----------------------------------------------------------------------------
  function summary() {
    var box = document.getElementById("summary");
    add(box, el("h2", null, "Rollbacks"));
    if (!D.rollbacks.length) add(box, el("p", "small", "none: nothing was taken back"));
    var ul = add(box, el("ul"));
    D.rollbacks.forEach(function (r) {
      add(ul, el("li")).appendChild(jumpButton("\u21b6 " + r.scope + " \u00b7 t=" + r.time + " \u2192 #" + r.checkpoint_id + " \u201c" +
        r.checkpoint_label + "\u201d \u00b7 " + r.discarded.length + " discarded", r.seq, r.scope));
    });
    add(box, el("h3", null, "Conflict sets"));
    if (!D.conflict_sets.length) add(box, el("p", "small", "none"));
    var ul2 = add(box, el("ul"));
    D.conflict_sets.forEach(function (c) {
      add(ul2, el("li")).appendChild(jumpButton("! t=" + c.time + " \u00b7 " + c.texts.map(function (t) { return cut(t, 60); }).join("  vs  "), c.seq, "conflict"));
    });
    add(box, el("h3", null, "Held at the end"));
    var ul3 = add(box, el("ul"));
    D.final.held.forEach(function (s) {
      var e = entries[s];
      add(ul3, el("li")).appendChild(jumpButton(e.text, s, ""));
    });
    if (!D.final.held.length) add(box, el("p", "small", "nothing"));
    add(box, el("h3", null, "Supporting passages"));
    D.final.passages.forEach(function (pid) { box.appendChild(passageBlock(pid)); });
    if (!D.final.passages.length) add(box, el("p", "small", "none cited"));
  }

  function legend() {
    var box = document.getElementById("legend");
    [["dot", "assert message"], ["ring", "inform"], ["diamond", "reject"], ["triangle", "challenge / escalate"],
     ["square", "statement enters a state"], ["cross", "retract"], ["rollback", "rollback (amber local, red global)"],
     ["conflict", "conflict set"], ["plan", "plan"], ["decision", "decision (accept / retry / give up)"],
     ["signal", "conflict signal (red: fired)"], ["rule", "rule fired"], ["star", "final answer"],
     ["flag", "checkpoint"], ["grey", "abandoned"]].forEach(function (p) {
      var s = add(box, el("span"));
      var g = sv("svg", { width: 18, height: 18, viewBox: "-9 -9 18 18" }, s);
      if (p[0] === "flag") sv("rect", { x: -8, y: -6, width: 16, height: 12, rx: 3, fill: "#0a7ea4" }, g);
      else if (p[0] === "grey") sv("circle", { r: 6, fill: "#d5d9de", stroke: "#9aa1a9", "stroke-dasharray": "2 2" }, g);
      else {
        var types = { rollback: "rollback_global", conflict: "conflict_set", square: "assert", cross: "retract",
          plan: "plan", decision: "decision", signal: "signal", rule: "rule_fired", star: "answer" };
        var fake = { type: types[p[0]] || "message", payload: { decision: "retry", fired: true },
          kind: { dot: "assert", ring: "inform", diamond: "reject", triangle: "challenge" }[p[0]] };
        var inner = sv("g", { transform: p[0] === "rollback" || p[0] === "conflict" ? "scale(0.75)" : "scale(1)" }, g);
        drawShape(inner, fake, "#57606a");
      }
      s.appendChild(document.createTextNode(p[1]));
    });
  }

  header();
  legend();
  timeline();
  summary();
  var m = /^#seq-(\d+)$/.exec(location.hash);
  if (m && (items[Number(m[1])] || D.checkpoints.some(function (c) { return c.seq === Number(m[1]); }))) select(Number(m[1]));
})();
