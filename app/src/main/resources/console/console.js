// The overview's live part: polls /console/api/overview every 2 s, updates the table and draws
// intents/s and duplicates/s per tool for the last 5 minutes with uPlot.
(function () {
  const KEEP = 150;
  const WINDOW_SECONDS = KEEP * 2; // a point every 2 s
  const series = {}; // tool -> {t: [], intents: [], duplicates: []}
  let last = null;
  const charts = {};
  window.consoleCharts = charts; // read by the console's browser test
  const INTENT_DECISIONS = ["dispatched", "dedup_hit", "in_flight", "refused_in_flight", "conflict",
    "rejected", "bypassed", "pass_through"];
  const DUPLICATES = ["dedup_hit", "in_flight", "refused_in_flight"];

  function sum(decisions, names) {
    return names.reduce((a, n) => a + (decisions[n] || 0), 0);
  }

  function draw(id, key) {
    const tools = Object.keys(series).sort();
    if (tools.length === 0) return;
    const times = series[tools[0]].t;
    const data = [times].concat(tools.map((t) => series[t][key]));
    const el = document.getElementById(id);
    if (!charts[id] || charts[id].series.length !== tools.length + 1) {
      if (charts[id]) charts[id].destroy();
      charts[id] = new uPlot({
        width: 520, height: 220,
        series: [{}].concat(tools.map((t, i) => ({ label: t, stroke: "hsl(" + (i * 67) % 360 + ",60%,45%)", width: 2 }))),
        // always the last 5 minutes: uPlot's own range for one point spans years
        scales: { x: { time: true, range: (u, min, max) => [max - WINDOW_SECONDS, max] } },
        axes: [{}, { label: "per second" }],
      }, data, el);
    } else {
      charts[id].setData(data);
    }
  }

  function update(data) {
    const now = data.at / 1000;
    for (const [tool, v] of Object.entries(data.tools)) {
      const d = v.decisions || {};
      const row = document.querySelector('tr[data-tool="' + CSS.escape(tool) + '"]');
      const s = series[tool] || (series[tool] = { t: [], intents: [], duplicates: [] });
      let rate = 0, dupRate = 0;
      if (last && last.tools[tool]) {
        const before = last.tools[tool].decisions || {};
        const dt = Math.max(0.001, now - last.at / 1000);
        // a processor that restarted counts from zero again: no negative rate for it
        rate = Math.max(0, sum(d, INTENT_DECISIONS) - sum(before, INTENT_DECISIONS)) / dt;
        dupRate = Math.max(0, sum(d, DUPLICATES) - sum(before, DUPLICATES)) / dt;
      }
      s.t.push(now); s.intents.push(rate); s.duplicates.push(dupRate);
      if (s.t.length > KEEP) { s.t.shift(); s.intents.shift(); s.duplicates.shift(); }
      if (row) {
        row.querySelector(".rate").textContent = rate.toFixed(1);
        row.querySelector(".firstSights").textContent = d.dispatched || 0;
        row.querySelector(".duplicates").textContent = sum(d, DUPLICATES);
        row.querySelector(".conflicts").textContent = d.conflict || 0;
        row.querySelector(".failed").textContent = d.failed || 0;
        row.querySelector(".inFlight").textContent = v.inFlight || 0;
        row.querySelector(".held").textContent = v.held || 0;
        row.querySelector(".p50").textContent = v.p50Ms === undefined ? "-" : Math.round(v.p50Ms) + " ms";
        row.querySelector(".p99").textContent = v.p99Ms === undefined ? "-" : Math.round(v.p99Ms) + " ms";
      }
    }
    // every tool's series shares the time axis
    const tools = Object.keys(series);
    const longest = tools.reduce((a, t) => Math.max(a, series[t].t.length), 0);
    for (const t of tools) {
      while (series[t].t.length < longest) { series[t].t.unshift(series[t].t[0]); series[t].intents.unshift(0); series[t].duplicates.unshift(0); }
    }
    const executors = document.querySelector("#executors tbody");
    if (executors && data.executors && data.executors.length > 0) {
      executors.replaceChildren(...data.executors.map((x) => {
        const tr = document.createElement("tr");
        for (const [value, cls] of [[x.url, ""], [x.status, x.ready ? "ok" : "error"],
          [x.effects || 0, ""], [x.inFlight || 0, ""], [x.retries || 0, ""]]) {
          const td = document.createElement("td");
          td.textContent = value;
          if (cls) td.className = cls;
          tr.appendChild(td);
        }
        return tr;
      }));
    }
    last = data;
    draw("chart-intents", "intents");
    draw("chart-duplicates", "duplicates");
  }

  function poll() {
    fetch("/console/api/overview", { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
      .then(update)
      .catch(() => {})
      .finally(() => setTimeout(poll, 2000));
  }
  poll();
})();
