// The page of `reagent serve`: ask a question, watch the agents' lanes fill in, read the answer.
// Everything that comes from the server (passages, answers, summaries) is put in with textContent,
// never as markup; the Content-Security-Policy allows no script or connection but this server's.
(function () {
  "use strict";
  var AGENTS = ["decomposer", "retriever", "verifier", "assembler", "supervisor", "controller"];
  var LABELS = { plan: "plan", checkpoint: "\u25c6 checkpoint", assert: "+ holds", retract: "\u2212 drops",
    rollback_local: "\u21b6 local rollback", rollback_global: "\u21b6 global rollback", conflict_set: "\u2297 conflict set",
    escalate: "\u26a0 escalates", judgement: "? judge", override: "override", skipped: "skip", signal: "\u2260 signal",
    fallback_answer: "fallback", budget_exhausted: "budget", rule_fired: "\u00a7 rule", answer: "\u2605 answer",
    llm_error: "model error", invalid_output: "invalid output", decomposition_failed: "plan failed",
    rewrite: "\u270e rewrite" };
  var $ = function (id) { return document.getElementById(id); };
  var busy = false;
  // the conversation: earlier turns go with each question, so a follow-up is read with them
  var turns = [];
  var conversationId = newConversationId();

  function newConversationId() {
    var bytes = new Uint8Array(5);
    window.crypto.getRandomValues(bytes);
    return "c-" + Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  function showTurns() {
    var list = $("turns");
    clear(list);
    turns.forEach(function (t) {
      var li = list.appendChild(el("li"));
      li.appendChild(el("span", "turn-question", t.question + " \u2192 "));
      li.appendChild(el("span", "turn-answer", t.answer));
    });
    $("conversation-id").textContent = conversationId;
    $("conversation").hidden = !turns.length;
  }

  function newConversation() {
    turns = [];
    conversationId = newConversationId();
    showTurns();
    say("A new conversation: the next question is read alone.");
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function say(text, isError) { var s = $("status"); s.textContent = text; s.className = "status" + (isError ? " error" : ""); }

  function needKey() { $("key-box").hidden = false; say("This server needs its API key (see `reagent serve --api-key`).", true); }
  function saveKey() {
    var key = $("key").value.trim();
    if (!key) return;
    document.cookie = "reagent_api_key=" + encodeURIComponent(key) + "; path=/; SameSite=Strict";
    $("key-box").hidden = true;
    say("");
    loadStatus();
    loadRuns();
  }

  function errorText(body, status) {
    if (body && body.error && body.error.message) return body.error.message;
    return "the server answered " + status;
  }

  // ---- lanes ---------------------------------------------------------------------------
  function lane(agent) {
    var lanes = $("lanes");
    var found = lanes.querySelector('.lane[data-agent="' + CSS.escape(agent) + '"]');
    if (found) return found.querySelector(".lane-events");
    var row = el("div", "lane");
    row.setAttribute("data-agent", agent);
    row.appendChild(el("div", "lane-label", agent));
    var events = row.appendChild(el("div", "lane-events"));
    // keep the agents in their usual order, others after them
    var rank = AGENTS.indexOf(agent) < 0 ? AGENTS.length : AGENTS.indexOf(agent);
    var before = null;
    Array.prototype.forEach.call(lanes.children, function (other) {
      var r = AGENTS.indexOf(other.getAttribute("data-agent"));
      if (before === null && (r < 0 ? AGENTS.length : r) > rank) before = other;
    });
    lanes.insertBefore(row, before);
    return events;
  }

  function label(e) {
    if (e.type === "message") return { inform: "\u25cb inform", assert: "\u25cf assert", reject: "\u2717 reject",
      challenge: "! challenge" }[e.kind] || ("\u25cb " + (e.kind || "message"));
    if (e.type === "decision") {
      var d = (e.payload && e.payload.decision) || "";
      var step = e.payload && typeof e.payload.step === "number" ? " step " + (e.payload.step + 1) : "";
      return ({ accept: "\u2713", retry: "\u21bb", give_up: "\u2717" }[d] || "") + " " + d.replace("_", " ") + step;
    }
    return LABELS[e.type] || e.type;
  }

  function addEvent(e) {
    if (e.type === "round") return;
    var chip = el("span", "ev " + e.type, label(e));
    if (e.type === "decision" && e.payload) chip.className += " " + e.payload.decision;
    chip.setAttribute("title", e.summary);
    chip.setAttribute("data-seq", String(e.seq));
    chip.setAttribute("data-type", e.type);
    chip.addEventListener("click", function () {
      Array.prototype.forEach.call(document.querySelectorAll(".ev.chosen"), function (c) { c.classList.remove("chosen"); });
      chip.classList.add("chosen");
      $("latest").textContent = e.agent + ": " + e.summary;
    });
    lane(e.agent).appendChild(chip);
    $("latest").textContent = e.agent + ": " + e.summary;
  }

  // ---- the answer ------------------------------------------------------------------------
  function showAnswer(data, asked) {
    var a = data.answer;
    var rewrite = (a.extra && a.extra.rewrite) || null;
    $("answer").textContent = a.answer;
    $("rewrite").hidden = !(rewrite && rewrite.changed);
    $("rewrite").textContent = rewrite && rewrite.changed ? "Read as: " + rewrite.standalone : "";
    $("uncertain").hidden = !a.uncertain;
    $("uncertain").textContent = a.uncertain ? "Uncertain: " + (a.uncertain_reason || "yes") : "";
    $("account").textContent = a.llm_calls + " LLM calls, " + a.prompt_tokens + " + " + a.completion_tokens +
      " tokens, " + Number(a.seconds).toFixed(1) + " s, backtracks " + a.backtracks.local + " local / " +
      a.backtracks.global + " global, run " + a.run_id;
    // Answer.trust_line(): the trust score and what it means ("not found in the index" first when nothing supports it)
    var trust = a.trust || {};
    $("trust").textContent = a.trust_line || "";
    $("trust").hidden = !$("trust").textContent;
    $("trust").className = "trust " + (a.not_found ? "not-found" : String(trust.label || "").replace(" ", "-"));
    var closest = $("closest");
    clear(closest);
    (a.closest || []).forEach(function (p) {
      var li = closest.appendChild(el("li"));
      li.appendChild(el("div", "passage-title", p.title));
      if (p.origin && p.origin.label) li.appendChild(el("div", "passage-origin", p.origin.label));
      li.appendChild(el("p", "passage-text", p.text));
    });
    $("closest-box").hidden = !(a.closest || []).length;
    $("road").textContent = a.road || "";  // Answer.road_line(): the two roads' verdict
    $("road").hidden = !$("road").textContent;
    var steps = $("steps");
    clear(steps);
    a.subquestions.forEach(function (s) {
      var li = steps.appendChild(el("li"));
      li.appendChild(el("span", "sub-question", s.question + " \u2192 "));
      li.appendChild(el("span", "sub-answer", s.answer));
      if (s.uncertain) li.appendChild(el("span", "uncertain", " (unverified)"));
    });
    var list = $("passages");
    clear(list);
    data.passages.forEach(function (p) {
      var li = list.appendChild(el("li"));
      li.appendChild(el("div", "passage-title", (p.index ? "[" + p.index + "] " : "") + p.title));
      if (p.origin && p.origin.label) li.appendChild(el("div", "passage-origin", p.origin.label));
      li.appendChild(el("p", "passage-text", p.text));
    });
    if (!data.passages.length) list.appendChild(el("li", null, "No passage was cited."));
    $("trace-link").setAttribute("href", "/runs/" + encodeURIComponent(a.run_id));
    $("result").hidden = false;
    var titles = [];
    data.passages.forEach(function (p) { if (titles.indexOf(p.title) < 0) titles.push(p.title); });
    turns.push({ question: asked, answer: a.answer, titles: titles.slice(0, 3) });
    showTurns();
  }

  // ---- asking: POST /api/ask with "stream": true, read the Server-Sent Events ----------------
  function handle(name, data, asked) {
    if (name === "queued") say(data.line.replace(/^\[server\] /, ""));
    else if (name === "run") {
      say("Run " + data.run_id + ": the agents are working\u2026");
      $("trace-link").setAttribute("href", "/runs/" + encodeURIComponent(data.run_id));
    } else if (name === "event") addEvent(data);
    else if (name === "answer") { showAnswer(data, asked); say("Answered."); }
    else if (name === "error") say(errorText(data, ""), true);
  }

  function parseBlock(block, asked) {
    var name = "message", lines = [];
    block.split("\n").forEach(function (line) {
      if (line.indexOf("event:") === 0) name = line.slice(6).trim();
      else if (line.indexOf("data:") === 0) lines.push(line.slice(5).replace(/^ /, ""));
    });
    if (lines.length) handle(name, JSON.parse(lines.join("\n")), asked);
  }

  function ask(question) {
    busy = true;
    $("ask").disabled = true;
    clear($("lanes"));
    $("latest").textContent = "";
    $("result").hidden = true;
    $("work").hidden = false;
    say("Sending\u2026");
    return fetch("/api/ask", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question: question, stream: true, history: turns.slice(-4),
                             conversation: conversationId }) })
      .then(function (response) {
        if (!response.ok) {
          if (response.status === 401) needKey();
          return response.json().then(function (b) { say(errorText(b, response.status), true); },
            function () { say("the server answered " + response.status, true); });
        }
        var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) return;
            buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, "\n");
            var cut;
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              parseBlock(buffer.slice(0, cut), question);
              buffer = buffer.slice(cut + 2);
            }
            return pump();
          });
        }
        return pump();
      })
      .catch(function (err) { say("The connection to the server failed: " + err, true); })
      .then(function () { busy = false; $("ask").disabled = false; loadRuns(); });
  }

  // ---- what is served, recent runs ------------------------------------------------------------
  function getJSON(path) {
    return fetch(path).then(function (r) {
      if (r.status === 401) { needKey(); throw new Error("key"); }
      return r.json();
    });
  }
  function loadStatus() {
    getJSON("/api/status").then(function (s) {
      $("served").textContent = "model " + s.model + " \u00b7 index " + s.index;
    }, function () {});
  }
  function loadRuns() {
    getJSON("/api/runs?last=8").then(function (runs) {
      var list = $("runs");
      clear(list);
      runs.forEach(function (r) {
        var li = list.appendChild(el("li"));
        li.appendChild(el("span", "run-status", r.status));
        var a = li.appendChild(el("a", null, r.question));
        a.setAttribute("href", "/runs/" + encodeURIComponent(r.run_id));
        a.setAttribute("target", "_blank");
        a.setAttribute("rel", "noopener");
        if (r.answer !== null) li.appendChild(el("span", null, " \u2192 " + r.answer));
      });
      if (!runs.length) list.appendChild(el("li", null, "No runs yet."));
    }, function () {});
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("ask-form").addEventListener("submit", function (event) {
      event.preventDefault();
      var question = $("question").value.trim();
      if (!question || busy) return;
      ask(question);
    });
    $("question").addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("ask").click(); }
    });
    $("key-save").addEventListener("click", saveKey);
    $("new-conversation").addEventListener("click", newConversation);
    loadStatus();
    loadRuns();
  });
}());
