// fastslow viewer (served by `fastslow view`, or embedded in `fastslow report`'s static page).
// Every text from the logs goes into the page through textContent, never as markup.
(function () {
  "use strict";
  const boot = JSON.parse(document.getElementById("fastslow-data").textContent);
  const CONFIG = boot.config;
  const EMBEDDED = boot.embedded; // null when served: then the JSON API answers
  const app = document.getElementById("app");
  const crumbs = document.getElementById("crumbs");
  const cache = new Map();

  // ---- data -------------------------------------------------------------------------------------
  function api(path) {
    if (cache.has(path)) return cache.get(path);
    let promise;
    if (EMBEDDED) {
      promise = Promise.resolve(embeddedAnswer(path));
    } else {
      promise = fetch(path).then(function (r) {
        if (r.ok) return r.json();
        // the server answers every failure with {"error": "..."}: show its reason, not just a status
        return r.json().catch(() => ({})).then(function (body) {
          throw new Error(body.error ? body.error : path + ": " + r.status);
        });
      });
    }
    cache.set(path, promise);
    return promise;
  }
  function embeddedAnswer(path) {
    let m;
    if (path === "/api/runs") return EMBEDDED.runs;
    if (path === "/api/attributions") return EMBEDDED.attributions || [];
    if ((m = path.match(/^\/api\/runs\/(\d+)\/episodes$/))) return EMBEDDED.episodes[m[1]] || [];
    if ((m = path.match(/^\/api\/runs\/(\d+)\/episodes\/(.+)$/))) {
      const ep = EMBEDDED.details[m[1] + "/" + m[2]];
      if (!ep) throw new Error("this static page does not hold that episode's steps (fastslow view RUN shows every episode)");
      return ep;
    }
    throw new Error("unknown path " + path);
  }
  const runs = () => api("/api/runs");
  const attributions = () => api("/api/attributions");
  const episodes = (i) => api("/api/runs/" + i + "/episodes");
  const episode = (i, id) => api("/api/runs/" + i + "/episodes/" + encodeURIComponent(id));

  // ---- DOM helpers ------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
    }
    return node;
  }
  const link = (href, text, cls) => el("a", { href: href, class: cls }, text);
  const fmt = (v, digits) => (v === null || v === undefined ? "-" : typeof v === "number" ? v.toFixed(digits === undefined ? 2 : digits) : String(v));
  const pct = (v) => (v === null || v === undefined ? "-" : (100 * v).toFixed(1) + "%");
  function table(head, rows, opts) {
    const t = el("table", { class: (opts && opts.class) || "", id: opts && opts.id });
    t.appendChild(el("thead", {}, el("tr", {}, head.map((h) => el("th", { class: /score|strict|steps|episodes|-100|#/.test(h) ? "num" : "" }, h)))));
    const body = el("tbody");
    rows.forEach((r) => body.appendChild(r));
    t.appendChild(body);
    return t;
  }
  function td(content, cls) {
    return el("td", { class: cls }, content);
  }
  function setCrumbs(parts) {
    crumbs.textContent = "";
    parts.forEach(function (p, i) {
      if (i) crumbs.appendChild(el("span", { class: "muted" }, "›"));
      crumbs.appendChild(p[1] ? link(p[1], p[0]) : el("span", {}, p[0]));
    });
  }
  function fail(err) {
    app.textContent = "";
    app.appendChild(el("p", { class: "warn" }, String(err && err.message ? err.message : err)));
  }
  function query(hash) {
    const q = {};
    const at = hash.indexOf("?");
    if (at >= 0) new URLSearchParams(hash.slice(at + 1)).forEach((v, k) => (q[k] = v));
    return q;
  }
  function withQuery(base, q) {
    const s = new URLSearchParams(Object.entries(q).filter((kv) => kv[1] !== "" && kv[1] !== undefined)).toString();
    return base + (s ? "?" + s : "");
  }
  const epHref = (i, id) => "#/run/" + i + "/episode/" + encodeURIComponent(id);
  const listHref = (i, q) => withQuery("#/run/" + i + "/episodes", q || {});

  // ---- router -----------------------------------------------------------------------------------
  function route() {
    const hash = location.hash || "#/";
    delete app.dataset.route; // set again once this view is on the page (tests and scripts wait on it)
    const path = hash.split("?")[0];
    const q = query(hash);
    let m;
    let view;
    if ((m = path.match(/^#\/run\/(\d+)\/episodes$/))) view = showList(+m[1], q);
    else if ((m = path.match(/^#\/run\/(\d+)\/episode\/(.+)$/))) view = showEpisode(+m[1], decodeURIComponent(m[2]), q);
    else if ((m = path.match(/^#\/compare\/(.+)$/))) view = showCompare(decodeURIComponent(m[1]), (q.runs || "0,1").split(",").map(Number));
    else if ((m = path.match(/^#\/diff\/(\d+)\/(\d+)$/))) view = showDiff(+m[1], +m[2]);
    else if ((m = path.match(/^#\/attribution\/(\d+)$/))) view = showAttribution(+m[1]);
    else view = showRuns();
    return Promise.resolve(view).catch(fail).then(() => { if ((location.hash || "#/") === hash) app.dataset.route = hash; });
  }
  window.addEventListener("hashchange", route);

  // ---- runs -------------------------------------------------------------------------------------
  function showRuns() {
    setCrumbs([["runs"]]);
    return Promise.all([runs(), attributions()]).then(function ([everything, attr]) {
      // an attribution's forks are reached from its page and from their parent episodes, not listed
      const inAttr = new Set(attr.flatMap((a) => a.points.flatMap((p) => Object.values(p.runs))));
      const all = everything.filter((r) => !inAttr.has(r.index));
      app.textContent = "";
      app.appendChild(el("h1", {}, all.length + (all.length === 1 ? " run" : " runs")));
      if (attr.length) {
        app.appendChild(el("section", { class: "card", id: "attributions" }, el("h2", {}, "Mechanism attributions"),
          attr.map((a) => el("p", {}, link("#/attribution/" + a.index, a.mechanism + ": " + a.path, "attr-link"),
            " · " + a.replayed + " of " + a.events + " events forked"))));
      }
      if (all.length > 1) app.appendChild(diffPicker(all));
      all.forEach((run) => app.appendChild(runCard(run)));
    });
  }
  function diffPicker(all) {
    const a = el("select", { id: "diff-a" }, all.map((r) => el("option", { value: r.index }, r.name)));
    const b = el("select", { id: "diff-b" }, all.map((r) => el("option", { value: r.index }, r.name)));
    b.value = String(all[1].index);
    return el("div", { class: "filters card" },
      el("strong", {}, "Compare two runs: "), el("label", {}, "run A", a), el("label", {}, "run B", b),
      el("button", { id: "diff-go", onclick: () => (location.hash = "#/diff/" + a.value + "/" + b.value) }, "episodes whose outcome differs"));
  }
  function runCard(run) {
    const card = el("section", { class: "card run", id: "run-" + run.index });
    card.appendChild(el("h2", {}, run.name, " ", el("span", { class: "muted" }, run.path)));
    run.warnings.forEach((w) => card.appendChild(el("p", { class: "warn" }, "warning: " + w)));
    card.appendChild(el("p", { class: "muted" }, storeLine(run)));
    const head = run.main.head;
    const row = run.main.row;
    const col = (name) => row[head.indexOf(name)];
    const i = run.index;
    const cells = [
      ["episodes", link(listHref(i), col("episodes"))],
      ["score, paper convention (95% CI)", link(listHref(i), col("score (paper)") + " (" + col("95% CI") + ")")],
      ["score, strict (95% CI)", link(listHref(i), col("score (strict)") + " (" + col("95% CI (strict)") + ")")],
      ["success", link(listHref(i, { outcome: "success" }), col("success"))],
      ["Steps@Succ", col("Steps@Succ")],
      ["-100 failures", link(listHref(i, { outcome: "failure" }), col("-100 failures"))],
      ["errors", link(listHref(i, { outcome: "error" }), col("errors"))],
    ];
    card.appendChild(table(cells.map((c) => c[0]), [el("tr", { class: "main-row" }, cells.map((c) => td(c[1], "num")))]));
    const shares = Object.entries(run.step_shares || {});
    if (shares.length) {
      card.appendChild(el("p", { class: "shares", id: "shares-" + i }, "steps by source: ",
        shares.map(([s, v]) => [link(listHref(i, { from: s }), el("span", { class: "src src-" + s, "data-source": s }, s + " " + pct(v))), " "])));
    }
    const groups = Object.entries(run.groups).map(([g, v]) =>
      el("tr", {}, td(link(listHref(i, { group: g }), g)), td(fmt(v.score), "num"), td(fmt(v.strict), "num"), td(link(listHref(i, { group: g }), v.episodes), "num")));
    card.appendChild(el("details", {}, el("summary", {}, "by length group"), table(["group", "score (paper)", "strict", "episodes"], groups)));
    const tasks = run.tasks.map((t) =>
      el("tr", {},
        td(String(t.task_id), "num"), td(link(listHref(i, { task: t.task_id }), t.name)), td(t.group),
        td(link(listHref(i, { task: t.task_id }), t.score), "num"), td(link(listHref(i, { task: t.task_id }), t.strict), "num"),
        td(link(listHref(i, { task: t.task_id }), t.episodes), "num"),
        td(t.failures ? link(listHref(i, { task: t.task_id, outcome: "failure" }), t.failures) : "0", "num")));
    card.appendChild(el("details", { open: run.tasks.length <= 12 }, el("summary", {}, "by task (" + run.tasks.length + ")"),
      table(["#", "task", "group", "score (paper)", "strict", "episodes", "-100"], tasks, { class: "tasks" })));
    return card;
  }
  function storeLine(run) {
    const parts = [];
    if (run.store) parts.push("memory store: " + run.store.kind + " " + run.store.location + (run.store.per_run ? " (this run's own)" : " (shared)"));
    else parts.push("no memory store (AMM off)");
    if (run.warmup) parts.push("warm-up played by " + (run.warmup.played_by || "?"));
    else if (run.store) parts.push("no warm-up");
    const last = run.starts[run.starts.length - 1];
    if (last && last.memory_ranking) parts.push("ranking " + last.memory_ranking + (last.memory_embedder ? " (" + last.memory_embedder + ")" : ""));
    if (last && last.store_records_after_warmup !== null && last.store_records_after_warmup !== undefined) parts.push(last.store_records_after_warmup + " records after the warm-up");
    return parts.join(" · ");
  }

  // ---- episode list -----------------------------------------------------------------------------
  function showList(i, q) {
    return Promise.all([runs(), episodes(i)]).then(function ([all, eps]) {
      const run = all[i];
      setCrumbs([["runs", "#/"], [run.name, "#/"], ["episodes"]]);
      app.textContent = "";
      app.appendChild(el("h1", {}, run.name + ": episodes"));
      const tasks = [...new Map(eps.filter((e) => e.task_id !== null).map((e) => [e.task_id, e.task_name])).entries()].sort((a, b) => a[0] - b[0]);
      const sources = [...new Set(eps.map((e) => e.last_source).filter((s) => s))].sort();
      // sources with steps in some episode, in the vocabulary's order (swift, procedure, fallback, ...)
      const stepSources = CONFIG.sources.filter((s) => eps.some((e) => (e.sources || {})[s]));
      const pick = (name, label, options) => {
        const s = el("select", { id: "f-" + name, name: name }, el("option", { value: "" }, "any"),
          options.map((o) => el("option", { value: o[0] }, o[1])));
        s.value = q[name] || "";
        s.addEventListener("change", function () {
          const next = Object.assign({}, q);
          next[name] = s.value;
          location.hash = listHref(i, next);
        });
        return el("label", {}, label, s);
      };
      app.appendChild(el("div", { class: "filters" },
        pick("task", "task", tasks.map((t) => [String(t[0]), t[0] + " " + t[1]])),
        pick("group", "group", ["short", "medium", "long"].map((g) => [g, g])),
        pick("outcome", "outcome", CONFIG.outcomes.map((o) => [o, o === "failure" ? "-100 failure" : o.replace("_", " ")])),
        pick("source", "source of the last action", sources.map((s) => [s, s])),
        pick("from", "has steps from", stepSources.map((s) => [s, s])),
        pick("mechanism", "mechanism", Object.entries(CONFIG.mechanisms))));
      const shown = eps.filter((e) =>
        (!q.task || String(e.task_id) === q.task) && (!q.group || e.group === q.group) &&
        (!q.outcome || e.outcome === q.outcome) && (!q.source || e.last_source === q.source) &&
        (!q.from || ((e.sources || {})[q.from] || 0) > 0) &&
        (!q.mechanism || (e.mechanisms[q.mechanism] || 0) > 0));
      app.appendChild(el("p", { class: "muted", id: "count" }, shown.length + " of " + eps.length + " episodes"));
      const bad = eps.filter((e) => e.problem);
      if (bad.length) {
        app.appendChild(el("p", { class: "warn", id: "problems" }, bad.length + (bad.length === 1 ? " event log cannot" : " event logs cannot") +
          " be shown whole (marked below): " + bad.map((e) => e.id).join(", ")));
      }
      const rows = shown.map((e) => el("tr", { class: "ep" + (e.problem ? " problem" : ""), "data-id": e.id, onclick: () => (location.hash = epHref(i, e.id)) },
        td(link(epHref(i, e.id), e.id)), td(e.task_id === null ? "?" : e.task_id + " " + e.task_name), td(fmt(e.variation, 0), "num"),
        td(e.seed === null || e.seed === undefined ? "-" : String(e.seed), "num"),
        td(fmt(e.score, 0), "num"), td(fmt(e.score_strict, 0), "num"),
        td(el("span", { class: "o-" + e.outcome, title: e.problem || null }, e.outcome === "failure" ? "-100" : e.outcome)), td(fmt(e.steps, 0), "num"),
        td(el("span", { class: "src src-" + e.last_source }, e.last_source)),
        td(sourceCounts(e.sources || {}), "sources"),
        td(e.problem ? el("span", { class: "problem" }, e.problem) :
          Object.entries(e.mechanisms).map(([k, v]) => el("span", { class: "badge", title: CONFIG.mechanisms[k] }, k + " " + v)))));
      app.appendChild(table(["episode", "task", "variation", "seed", "score (paper)", "strict", "outcome", "steps", "last source", "step sources", "mechanisms"], rows, { id: "episodes" }));
    });
  }
  function sourceCounts(counts) {
    return CONFIG.sources.filter((s) => counts[s]).map((s) => el("span", { class: "src src-" + s, "data-source": s }, s + " " + counts[s] + " "));
  }

  // ---- one episode ------------------------------------------------------------------------------
  function showEpisode(i, id, q) {
    return Promise.all([runs(), episode(i, id)]).then(function ([all, ep]) {
      const run = all[i];
      setCrumbs([["runs", "#/"], [run.name, listHref(i)], [id]]);
      app.textContent = "";
      const h = ep.header;
      const last = ep.steps.length ? ep.steps[ep.steps.length - 1] : null;
      const best = Math.max(0, ...ep.steps.map((s) => s.score));
      app.appendChild(el("h1", {}, id + " · " + (h.task_name || "?") + " · variation " + fmt(h.variation, 0)));
      if (ep.problem) app.appendChild(el("p", { class: "warn", id: "problem" }, ep.problem + " (the steps it holds are shown)"));
      app.appendChild(el("p", {}, h.task_description));
      const final = typeof ep.end.final_score === "number" ? ep.end.final_score : null;
      app.appendChild(el("p", {},
        el("span", { class: "o-" + (ep.end.end || "") }, "ended: " + (ep.end.end || "?")),
        " · final score " + fmt(final, 0) + " · paper convention " + (final === null ? "-" : Math.max(best, final, 0)) +
        " · strict " + (final === null ? "-" : Math.max(final, 0)) + " · " + ep.steps.length + " steps · " + fmt(ep.end.wall_s, 1) + " s" +
        (ep.end.error ? " · error: " + ep.end.error : "")));
      const others = all.filter((r) => r.index !== i);
      if (others.length) {
        app.appendChild(el("p", {}, "Compare with: ", others.map((r) => [link("#/compare/" + encodeURIComponent(id) + "?runs=" + i + "," + r.index, r.name, "cmp-link"), " "])));
      }
      const forks = all.filter((r) => r.fork && r.fork.parent === i && r.fork.episode === id);
      if (forks.length) {
        app.appendChild(el("div", { class: "card", id: "forks" }, el("strong", {}, "Forks of this episode: "),
          forks.map((r) => el("p", { class: "fork" },
            el("button", { onclick: () => focusStep(Math.max(1, r.fork.at - 1)) }, "step " + r.fork.at),
            " " + (r.fork.intervention ? r.fork.intervention.mechanism + " off at that step" : "under " + r.name) + " · ",
            link("#/compare/" + encodeURIComponent(id) + "?runs=" + i + "," + r.index, "compare with this run", "fork-link")))));
      }
      const firstOf = (pred) => { const s = ep.steps.find(pred); return s ? s.step : null; };
      const jumps = [
        ["first score gain", firstOf((s) => s.reward > 0), "jump-gain"],
        ["first -100", firstOf((s) => s.score < 0), "jump-failure"],
        ["first Gate-1 drop", firstOf((s) => s.events.some((e) => e.event === "gate_decision" && e.outcome === "drop")), "jump-drop"],
      ];
      app.appendChild(el("div", { class: "jumps" }, jumps.map(([label, step, jid]) =>
        el("button", { id: jid, disabled: step === null, onclick: () => focusStep(step) }, label + (step === null ? " (none)" : " (step " + step + ")")))));
      app.appendChild(chart(ep.steps));
      app.appendChild(legend());
      const rows = ep.steps.map((s) => stepRow(s, ep));
      if (ep.after.length) rows.push(el("tr", { class: "after" }, td("end"), td(""), td(""), td(""), td(""), td(events(ep.after, ep), "events")));
      app.appendChild(table(["step", "source", "action", "score", "observation", "mechanism events"], rows, { id: "timeline" }));
      if (q.step) focusStep(+q.step);
      if (last === null) app.appendChild(el("p", { class: "muted" }, "No steps."));
    });
  }
  function legend() {
    return el("p", { class: "legend muted", id: "legend" }, ["swift", "procedure", "fallback", "sage", "critic"].map((s) => el("span", { class: "src src-" + s }, "▌" + s + " ")),
      "source of each action: the learned Swift, a hand-written task procedure (its rule is the step's reason), the controller's fallback, the buffer (Sage's or the Critic's actions)");
  }
  function focusStep(step) {
    if (step === null || step === undefined) return;
    document.querySelectorAll("tr.step.target").forEach((r) => r.classList.remove("target"));
    const row = document.getElementById("step-" + step);
    if (row) { row.classList.add("target"); row.scrollIntoView({ block: "center" }); }
  }
  function stepRow(s, ep) {
    const delta = s.reward > 0 ? " (+" + s.reward + ")" : s.reward < 0 ? " (" + s.reward + ")" : "";
    return el("tr", { class: "step s-" + s.source, id: "step-" + s.step, "data-step": s.step },
      td(String(s.step), "num"),
      td(el("span", { class: "src src-" + s.source, title: s.reason || "" }, s.source), ""),
      td(el("span", { class: "act" }, s.action)),
      td(String(s.score) + delta, "num " + (s.reward > 0 ? "pos" : s.reward < 0 || s.score < 0 ? "neg" : "")),
      td(s.observation, "obs"),
      td([s.reason ? el("div", { class: "ev muted" }, "why " + s.source + ": " + s.reason) : null, events(s.events, ep)], "events"));
  }
  function chart(steps) {
    const NS = "http://www.w3.org/2000/svg";
    const W = 760, H = 150, P = 26;
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", "chart"); svg.setAttribute("id", "score-chart");
    svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "score over steps");
    const n = Math.max(steps.length, 1);
    const x = (k) => P + ((W - 2 * P) * k) / n;
    const y = (score) => H - P - ((H - 2 * P) * Math.max(0, score)) / 100;
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
      if (text !== undefined) node.textContent = text;
      svg.appendChild(node);
      return node;
    };
    [0, 50, 100].forEach((v) => { add("line", { x1: P, x2: W - P, y1: y(v), y2: y(v), stroke: "#eee" }); add("text", { x: 2, y: y(v) + 4, "font-size": 10, fill: "#888" }, String(v)); });
    let pts = P + "," + y(0);
    steps.forEach((s, k) => { pts += " " + x(k + 1) + "," + y(s.score); });
    add("polyline", { points: pts, fill: "none", stroke: "#0969da", "stroke-width": 2 });
    steps.forEach((s, k) => {
      if (s.reward > 0 || s.score < 0) {
        const dot = add("circle", { cx: x(k + 1), cy: y(s.score), r: 4, fill: s.score < 0 ? "#cf222e" : "#1a7f37", class: "pt" });
        dot.addEventListener("click", () => focusStep(s.step));
        const tip = document.createElementNS(NS, "title");
        tip.textContent = "step " + s.step + ": " + s.action + " → " + s.score;
        dot.appendChild(tip);
      }
    });
    add("text", { x: W - P, y: H - 6, "font-size": 10, fill: "#888", "text-anchor": "end" }, "step " + steps.length);
    return svg;
  }

  // ---- mechanism events, by type ----------------------------------------------------------------
  // ``ep``: the episode the events belong to: its ``records`` (the store records its memory use read),
  // ``writers`` (the episodes of its run that wrote them, whose logs are served) and ``run``.
  function events(list, ep) {
    return list.map((e) => eventView(e, (ep && ep.records) || {}, ep || {}));
  }
  // An episode that wrote a record its memory use read: a link to it when it is an episode of the same
  // run (ep.writers), else its name as the log gives it (a warm-up's, another run's).
  function writerView(name, ep) {
    const here = (ep.writers || []).indexOf(name) >= 0 && ep.run !== undefined && ep.run !== null;
    return here ? link(epHref(ep.run, name), name, "writer-link") : el("span", { class: "writer" }, name);
  }
  function writerList(names, ep) {
    return names.length ? names.map((n, k) => [k ? ", " : "", writerView(n, ep)]) : "none";
  }
  function recordView(id, r, writer, ep) {
    const by = writer ? [" — written by ", writerView(writer, ep)] : null;
    if (!r) return el("div", { class: "record muted", "data-record": id }, id + " (record not in this run's SQLite store)", by);
    return el("div", { class: "record", "data-record": id }, el("span", { class: "badge" }, r.tag + "/" + r.subtag),
      r.task_name + " step " + r.step + " in " + r.room + ": " + q_(r.action) + " → " + r.observation +
      " (score " + r.score_before + "→" + r.score_after + ")", by);
  }
  function box(e, extra, ...children) {
    return el("div", { class: "ev ev-" + e.event + (extra ? " " + extra : ""), "data-event": e.event }, children);
  }
  const q_ = (s) => "“" + s + "”";
  function eventView(e, records, ep) {
    switch (e.event) {
      case "gate_decision": {
        const head = el("span", { class: "kind" }, "Gate-1");
        if (e.outcome === "drop") {
          return el("details", { class: "ev ev-gate_decision drop", "data-event": "gate_decision" },
            el("summary", {}, head, e.source + " proposed " + q_(e.original) + " → dropped (" + e.reason + ")"),
            el("div", {}, "reason: " + e.reason + (e.detail ? " — " + e.detail : "")),
            el("div", { class: "muted" }, "env steps so far: " + e.step + "; a dropped action costs no step"));
        }
        if (e.outcome === "repair") {
          return el("details", { class: "ev ev-gate_decision repair", "data-event": "gate_decision" },
            el("summary", {}, head, e.source + " proposed " + q_(e.original) + " → repaired to " + q_(e.action)),
            el("div", {}, "rule: " + e.rule + (e.detail ? " — " + e.detail : "")));
        }
        return el("details", { class: "ev ev-gate_decision accept", "data-event": "gate_decision" },
          el("summary", {}, head, e.source + " " + q_(e.original) + " admitted"),
          el("div", {}, "rule: " + (e.rule || "exact") + (e.detail ? " — " + e.detail : "") + "; becomes env step " + (e.step + 1)));
      }
      case "memory_retrieval": {
        const found = e.ids.map((id) => records[id]);
        return el("details", { class: "ev ev-memory_retrieval", "data-event": "memory_retrieval" },
          el("summary", {}, el("span", { class: "kind" }, "memory " + e.trigger), (e.rung ? e.rung + ": " : "") + e.n + " records retrieved" +
            (e.latency_ms ? " in " + fmt(e.latency_ms, 1) + " ms" : "")),
          e.ids.map((id, k) => recordView(id, found[k], e.writers ? e.writers[k] : null, ep)));
      }
      case "memory_prior": {
        const vote = (v) => (v > 0 ? "+" : "") + v;
        return el("details", { class: "ev ev-memory_prior", "data-event": "memory_prior" },
          el("summary", {}, el("span", { class: "kind" }, "memory prior"), "Swift's " + q_(e.proposed) + " → " + q_(e.action) + " first (vote " + vote(e.vote) + ")"),
          el("div", { class: "endorsed" }, "rewarded for " + q_(e.action) + " in: ", writerList(e.endorsed_by, ep)),
          e.disputed_by.length ? el("div", { class: "disputed" }, "lost score with " + q_(e.proposed) + " (vote " + vote(e.proposed_vote) + ") in: ", writerList(e.disputed_by, ep)) : null,
          (e.rivals || []).length ? el("div", { class: "rivals" }, q_(e.proposed) + " rivals the rewarded " + e.rivals.map(q_).join(", ")) : null,
          e.records.map((id) => recordView(id, records[id], null, ep)));
      }
      case "memory_injection":
        return el("details", { class: "ev ev-memory_injection", "data-event": "memory_injection" },
          el("summary", {}, el("span", { class: "kind" }, "memory → " + e.target), e.trigger + ": " + e.n + " records, " + e.chars + " chars injected"),
          e.text ? el("pre", {}, e.text) : el("div", { class: "muted" }, "(the block's text is not in logs written before it was recorded)"));
      case "memory_write":
        return box(e, "", el("span", { class: "kind" }, "memory write"), e.tag + "/" + e.subtag + " (step " + e.step + ")");
      case "memory_fallback":
        return box(e, "", el("span", { class: "kind" }, "memory fallback"), e.trigger + (e.target ? " → " + e.target : "") + ": " + e.reason);
      case "swift_proposal":
        return el("details", { class: "ev ev-swift_proposal", "data-event": "swift_proposal" },
          el("summary", {}, el("span", { class: "kind" }, "Swift"), (e.chosen ? q_(e.chosen) : "no valid candidate") + " · confidence " + fmt(e.confidence)),
          el("ol", {}, e.candidates.map((c, k) => el("li", {}, c + " (" + fmt(e.scores[k], 3) + ")"))));
      case "escalation":
        return box(e, "", el("span", { class: "kind" }, "escalation"), e.rule + (e.detail ? ": " + e.detail : "") + (e.blocked ? " (Sage not called: " + e.blocked + ")" : ""));
      case "sage_call":
        return box(e, "", el("span", { class: "kind" }, "Sage round"), e.rule + ": " + e.model_calls + " model calls, parsed " + e.parsed.length +
          ", grounded " + (e.actions.length ? e.actions.map(q_).join(", ") : "none") + (e.error ? " · error: " + e.error : ""));
      case "model_call":
        return el("details", { class: "ev ev-model_call" + (e.error ? " failed" : ""), "data-event": "model_call" },
          el("summary", {}, el("span", { class: "kind" }, "model call " + e.role), e.model + " · " + e.prompt_tokens + " → " + e.completion_tokens +
            " tokens · " + fmt(e.latency_s, 1) + " s" + (e.error ? " · failed: " + e.error : "")),
          (e.messages || []).map((m) => [el("div", { class: "msg-role" }, m.role), el("pre", { class: "prompt" }, m.content)]),
          el("div", { class: "msg-role" }, "completion"), el("pre", { class: "completion" }, e.completion === null || e.completion === undefined ? "(none)" : e.completion));
      case "buffer_push":
        return box(e, "", el("span", { class: "kind" }, "buffer ← " + e.source), e.actions.map(q_).join(", ") + (e.dropped.length ? " (over the cap: " + e.dropped.join(", ") + ")" : ""));
      case "buffer_pop":
        return box(e, "", el("span", { class: "kind" }, "buffer →"), (e.action ? q_(e.action) : "nothing") + (e.skipped.length ? " · skipped " + e.skipped.map(q_).join(", ") : "") + " · " + e.remaining + " left");
      case "buffer_clear":
        return box(e, "", el("span", { class: "kind" }, "buffer cleared"), e.reason + ": " + e.dropped.map(q_).join(", "));
      case "stagnation_report":
        return el("details", { class: "ev ev-stagnation_report", "data-event": "stagnation_report" },
          el("summary", {}, el("span", { class: "kind" }, "stagnation"), e.pattern + (e.patterns.length > 1 ? " (also " + e.patterns.slice(1).join(", ") + ")" : "")),
          el("div", {}, "evidence steps: " + e.evidence_steps.join(", ")), el("div", {}, "avoid: " + (e.avoid.join("; ") || "none")),
          e.constraints.length ? el("ul", {}, e.constraints.map((c) => el("li", {}, c))) : null);
      case "critic_call":
        return el("details", { class: "ev ev-critic_call", "data-event": "critic_call" },
          el("summary", {}, el("span", { class: "kind" }, "Critic (" + e.kind + ")"), "on " + e.pattern + ": " +
            (e.actions.length ? e.actions.map(q_).join(", ") : "no actions") + (e.injected && e.actions.length ? " injected" : "") +
            (e.skipped ? " · skipped: " + e.skipped : "") + (e.error ? " · " + e.error : "") + " · budget left " + e.budget_left),
          e.diagnosis ? el("div", {}, "diagnosis: " + e.diagnosis) : null,
          el("div", {}, "proposed: " + (e.proposed.join("; ") || "none")));
      case "critic_effect":
        return box(e, "", el("span", { class: "kind" }, "Critic effect"), "call at step " + e.call_step + ": " + (e.effective ? "effective" : "not effective") +
          " (" + e.reason + ", score " + e.score_before + "→" + e.score_after + ")");
      case "replay_end":
        return box(e, "", el("span", { class: "kind" }, "Fork"), "steps 1-" + e.step + " replayed the parent's actions (the agent chose " +
          e.agreed + " of them itself" + (e.history_steps ? "; " + e.history_steps + " earlier steps rebuilt the JVM" : "") + "); from here the fork plays");
      default:
        return el("details", { class: "ev", "data-event": e.event }, el("summary", {}, el("span", { class: "kind" }, e.event)), el("pre", {}, JSON.stringify(e, null, 1)));
    }
  }

  // ---- a mechanism attribution (fastslow attribute) ---------------------------------------------
  function showAttribution(k) {
    return Promise.all([runs(), attributions()]).then(function ([all, attr]) {
      const a = attr[k];
      if (!a) throw new Error("no such attribution");
      setCrumbs([["runs", "#/"], ["attribution: " + a.mechanism]]);
      app.textContent = "";
      app.appendChild(el("h1", {}, a.mechanism + " · " + a.path));
      const conv = (c) => c.better + " better / " + c.same + " same / " + c.worse + " worse; mean " + fmt(c.mean_difference, 2) +
        (c.ci95 ? " (95% CI " + c.ci95[0] + " to " + c.ci95[1] + ")" : "");
      app.appendChild(el("p", { id: "attr-summary" }, a.replayed + " of " + a.sampled + " sampled events forked (" + a.events + " logged; " +
        a.diverged + " did not replay; " + a.exact + " controls repeated the parent exactly); " + a.prevented_failure +
        " prevented a -100, " + a.cost_score + " cost the episode score."));
      app.appendChild(el("p", {}, "With the mechanism minus without, paper convention: " + conv(a.score) + "; strict: " + conv(a.score_strict) + "."));
      const sc = (x) => (x ? fmt(x.score, 0) + " / " + fmt(x.score_strict, 0) : "-");
      const rows = a.points.map(function (p) {
        const control = p.runs.control, off = p.runs.off;
        const parent = control !== undefined && all[control] && all[control].fork ? all[control].fork.parent : null;
        const which = [parent, control, off].filter((x) => x !== null && x !== undefined).join(",");
        return el("tr", { class: "ep", "data-id": p.name },
          td(p.point.episode), td(String(p.point.step + 1), "num"), td(sc(p.parent)), td(sc(p.control)), td(sc(p.off)),
          td(p.diverged ? "diverged" : p.exact ? "yes" : "no"),
          td(which ? link("#/compare/" + encodeURIComponent(p.point.episode) + "?runs=" + which, "compare", "attr-compare") : ""));
      });
      app.appendChild(table(["episode", "fork at step", "parent", "control", "mechanism off", "control = parent", ""], rows, { id: "attr-points" }));
    });
  }

  // ---- compare one episode across runs ----------------------------------------------------------
  function showCompare(id, which) {
    return runs().then(function (all) {
      const chosen = which.filter((i) => all[i]);
      setCrumbs([["runs", "#/"], ["compare " + id]]);
      return Promise.all(chosen.map((i) => episode(i, id).catch((err) => ({ failed: String(err && err.message ? err.message : err) })))).then(function (eps) {
        app.textContent = "";
        app.appendChild(el("h1", {}, "Episode " + id + " in " + chosen.length + " runs"));
        const have = chosen.map((i, k) => [i, eps[k]]).filter((p) => p[1] && !p[1].failed && p[1].end.end);
        chosen.forEach((i, k) => { if (!have.some((p) => p[0] === i)) app.appendChild(el("p", { class: "warn" }, all[i].name + ": " + (eps[k].failed || eps[k].problem || "no episode " + id))); });
        if (have.length < 2) return;
        const longest = Math.max(...have.map((p) => p[1].steps.length));
        let diverge = null;
        for (let k = 0; k < longest && diverge === null; k++) {
          const acts = have.map((p) => (p[1].steps[k] ? p[1].steps[k].action : null));
          if (acts.some((a) => a !== acts[0])) diverge = k;
        }
        const summary = have.map(([i, ep]) => {
          const best = Math.max(0, ...ep.steps.map((s) => s.score));
          return all[i].name + ": " + ep.end.end + ", score " + Math.max(best, ep.end.final_score, 0) + " (strict " + Math.max(ep.end.final_score, 0) + "), " + ep.steps.length + " steps";
        });
        app.appendChild(el("ul", {}, summary.map((s) => el("li", {}, s))));
        if (diverge === null) {
          app.appendChild(el("p", { id: "no-divergence" }, "The runs took the same actions at every step."));
        } else {
          const step = diverge + 1;
          const why = el("div", { class: "why" }, el("p", { id: "first-divergence", "data-step": step }, "First divergence at step " + step),
            have.map(([i, ep]) => {
              const s = ep.steps[diverge];
              if (!s) return el("p", {}, all[i].name + ": the episode had ended");
              return el("div", {}, el("strong", {}, all[i].name + ": "), el("span", { class: "src src-" + s.source }, s.source), " chose ",
                el("span", { class: "act" }, s.action), s.reason ? " — " + s.reason : "", el("div", {}, events(s.events, ep)));
            }),
            el("button", { id: "jump-divergence", onclick: () => { const r = document.getElementById("cmp-step-" + step); if (r) r.scrollIntoView({ block: "center" }); } }, "go to step " + step));
          app.appendChild(why);
        }
        const head = ["step"];
        have.forEach(([i]) => head.push(all[i].name + ": action", "score"));
        const rows = [];
        for (let k = 0; k < longest; k++) {
          const cells = [td(String(k + 1), "num")];
          have.forEach(([, ep]) => {
            const s = ep.steps[k];
            cells.push(s ? td([el("span", { class: "src src-" + s.source }, s.source + " "), el("span", { class: "act" }, s.action)]) : td("—", "muted"));
            cells.push(s ? td(String(s.score), "num " + (s.reward > 0 ? "pos" : s.score < 0 ? "neg" : "")) : td(""));
          });
          rows.push(el("tr", { id: "cmp-step-" + (k + 1), class: "cmp-step" + (k === diverge ? " diverge" : "") }, cells));
        }
        app.appendChild(table(head, rows, { id: "compare" }));
      });
    });
  }

  // ---- episodes whose outcome differs between two runs ------------------------------------------
  function showDiff(a, b) {
    return Promise.all([runs(), episodes(a), episodes(b)]).then(function ([all, ea, eb]) {
      setCrumbs([["runs", "#/"], [all[a].name + " vs " + all[b].name]]);
      app.textContent = "";
      app.appendChild(el("h1", {}, all[a].name + " vs " + all[b].name));
      // an episode whose log cannot be read whole has no outcome to compare (its list marks it)
      const byId = new Map(eb.filter((e) => !e.problem).map((e) => [e.id, e]));
      const both = ea.filter((e) => !e.problem && byId.has(e.id));
      const differ = both.map((e) => [e, byId.get(e.id)]).filter(([x, y]) => x.outcome !== y.outcome || x.score !== y.score)
        .sort((p, q) => Math.abs(q[1].score - q[0].score) - Math.abs(p[1].score - p[0].score) || (p[0].id < q[0].id ? -1 : 1));
      app.appendChild(el("p", { class: "muted", id: "diff-count" }, differ.length + " of " + both.length + " shared episodes differ in outcome or score (sorted by the score difference)"));
      const rows = differ.map(([x, y]) => el("tr", { class: "ep", onclick: () => (location.hash = "#/compare/" + encodeURIComponent(x.id) + "?runs=" + a + "," + b) },
        td(link("#/compare/" + encodeURIComponent(x.id) + "?runs=" + a + "," + b, x.id)), td(x.task_id + " " + x.task_name),
        td(el("span", { class: "o-" + x.outcome }, x.outcome) ), td(fmt(x.score, 0), "num"),
        td(el("span", { class: "o-" + y.outcome }, y.outcome)), td(fmt(y.score, 0), "num"),
        td((y.score - x.score > 0 ? "+" : "") + fmt(y.score - x.score, 0), "num " + (y.score > x.score ? "pos" : "neg"))));
      app.appendChild(table(["episode", "task", all[a].name + " outcome", "score", all[b].name + " outcome", "score", "difference"], rows, { id: "diff" }));
    });
  }

  route();
})();
