// Dashboard behaviour on top of server-rendered pages: Plotly charts, the Copy button, the launch
// form's two editors (fields ↔ raw JSON), and the small form helpers below. Everything re-initialises
// after htmx swaps. The Content-Security-Policy allows no inline handlers: behaviour lives here only.
(function () {
  "use strict";

  // ----------------------------------------------------------- form helpers
  // <select data-autosubmit>: submit its form on change (organization switcher, member roles).
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.matches && el.matches("select[data-autosubmit]") && el.form) el.form.submit();
  });
  // <form data-confirm="question">: ask before a plain (non-htmx) submit; the text is read as data, never code.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) ev.preventDefault();
  });

  // ---------------------------------------------------------------- charts
  function renderCharts(root) {
    if (!window.Plotly) return;
    root.querySelectorAll("[data-plotly]").forEach(function (el) {
      if (el.dataset.rendered) return;
      var data = document.getElementById(el.dataset.plotly);
      if (!data) return;
      var fig = JSON.parse(data.textContent);
      el.dataset.rendered = "1";
      window.Plotly.newPlot(el, fig.data, fig.layout, { responsive: true, displaylogo: false });
    });
  }

  // ------------------------------------------------------------------ copy
  function wireCopy(root) {
    root.querySelectorAll("[data-copy-from]").forEach(function (btn) {
      if (btn.dataset.wired) return;
      btn.dataset.wired = "1";
      btn.addEventListener("click", function () {
        // json_script holds the raw request as a JSON string: parsing gives back the exact text.
        var text = JSON.parse(document.getElementById(btn.dataset.copyFrom).textContent);
        var status = document.getElementById("copy-status");
        navigator.clipboard.writeText(text).then(
          function () { btn.textContent = "Copied"; if (status) status.textContent = "Copied " + text.length + " characters to the clipboard."; },
          function (err) { if (status) status.textContent = "Copy failed: " + err; }
        );
      });
    });
  }

  // ----------------------------------------------------------- launch form
  function wireLaunch(root) {
    var form = root.querySelector("#launch-form");
    if (!form || form.dataset.wired) return;
    form.dataset.wired = "1";
    var json = form.querySelector("#id_request_json");
    var scenarios = JSON.parse((document.getElementById("catalog-scenarios") || { textContent: "{}" }).textContent);
    var f = function (name) { return form.elements[name]; };

    form.querySelectorAll("[data-editor-tab]").forEach(function (tab) {
      tab.addEventListener("click", function (ev) {
        ev.preventDefault();
        form.querySelectorAll("[data-editor-tab]").forEach(function (t) { t.classList.toggle("active", t === tab); });
        form.classList.toggle("launch-json", tab.dataset.editorTab === "json");
      });
    });

    function fillScenarios() {
      var list = form.querySelector("#scenario-options");
      list.innerHTML = "";
      (scenarios[f("env").value] || []).forEach(function (s) {
        var opt = document.createElement("option");
        opt.value = s.id; opt.label = s.name || s.id;
        list.appendChild(opt);
      });
    }

    function parse() { try { var v = JSON.parse(json.value); return v && typeof v === "object" && !Array.isArray(v) ? v : null; } catch (e) { return null; } }
    function num(name) { var v = f(name).value; return v === "" ? null : Number(v); }

    // fields → JSON: rewrite what the fields own, keep everything else of the request as it is.
    function fieldsToJson() {
      var req = parse();
      var note = form.querySelector("#json-note");
      if (!req && json.value.trim()) {
        // Never overwrite JSON the user is still fixing; say why the fields do not apply.
        if (note) note.textContent = "The JSON tab has a syntax error; fix it there before editing the form.";
        return;
      }
      if (note) note.textContent = "";
      req = req || {};
      var name = f("name").value;
      if (name) req.name = name; else delete req.name;
      var envVars = {};
      f("env_vars").value.split("\n").forEach(function (line) {
        var i = line.indexOf("=");
        if (line.trim() && i > 0) envVars[line.slice(0, i).trim()] = line.slice(i + 1);
      });
      var chosen = Array.from(f("models").selectedOptions).map(function (o) { return o.value; });
      delete req.model;
      req.models = chosen.map(function (m) { var e = { model: m }; if (Object.keys(envVars).length) e.envVars = envVars; return e; });
      var tasks = Array.isArray(req.tasks) ? req.tasks : [];
      var t = Object.assign({}, tasks[0] || {});
      t.env = f("env").value; t.taskId = f("task_id").value;
      t.episodes = num("episodes") || 1; t.seed = num("seed") || 0;
      if ((num("workers") || 1) > 1) t.workers = num("workers"); else delete t.workers;
      if (num("max_steps")) t.maxSteps = num("max_steps"); else delete t.maxSteps;
      tasks[0] = t; req.tasks = tasks;
      var tags = {};
      f("tags").value.split(",").forEach(function (pair) {
        var i = pair.indexOf(":");
        if (pair.trim() && i > 0) tags[pair.slice(0, i).trim()] = pair.slice(i + 1).trim();
      });
      if (Object.keys(tags).length) req.tags = tags; else delete req.tags;
      json.value = JSON.stringify(req, null, 2);
      json.dispatchEvent(new Event("sync-preview"));
    }

    // JSON → fields: show the first task and the models in the form (best effort; JSON stays the truth).
    function jsonToFields() {
      var req = parse();
      if (!req) return;
      var models = Array.isArray(req.models) ? req.models : (req.model ? [req.model] : []);
      var refs = models.map(function (m) { return typeof m === "string" ? m : (m && m.model); });
      Array.from(f("models").options).forEach(function (o) { o.selected = refs.indexOf(o.value) >= 0; });
      f("name").value = typeof req.name === "string" ? req.name : "";
      var first = models.find(function (m) { return m && m.envVars; });
      f("env_vars").value = first ? Object.entries(first.envVars).map(function (kv) { return kv[0] + "=" + kv[1]; }).join("\n") : "";
      var t = (Array.isArray(req.tasks) && req.tasks[0]) || {};
      f("env").value = t.env || ""; fillScenarios();
      f("task_id").value = t.taskId || "";
      f("episodes").value = t.episodes != null ? t.episodes : "";
      f("seed").value = t.seed != null ? t.seed : "";
      f("workers").value = t.workers != null ? t.workers : 1;
      f("max_steps").value = t.maxSteps != null ? t.maxSteps : "";
      f("tags").value = req.tags && typeof req.tags === "object" ? Object.entries(req.tags).map(function (kv) { return kv[0] + ":" + kv[1]; }).join(", ") : "";
    }

    form.querySelector("[data-editor-pane='fields']").addEventListener("input", fieldsToJson);
    form.querySelector("[data-editor-pane='fields']").addEventListener("change", function (ev) {
      if (ev.target === f("env")) fillScenarios();
      fieldsToJson();
    });
    json.addEventListener("input", jsonToFields);
    jsonToFields();
  }

  // ------------------------------------------------------------------ tabs
  // Only #tab-body is swapped; mark the tab whose content is now shown.
  function markTab() {
    var content = document.querySelector("#tab-body [data-tab-content]");
    if (!content) return;
    document.querySelectorAll("nav.tabs a[data-tab]").forEach(function (a) {
      var active = a.dataset.tab === content.dataset.tabContent;
      a.classList.toggle("active", active);
      a.setAttribute("aria-selected", active ? "true" : "false");
    });
  }

  function init(root) { renderCharts(root); wireCopy(root); wireLaunch(root); markTab(); }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:afterSettle", function (ev) { init(ev.target); });
  // Plotly loads deferred; render charts once it is there.
  window.addEventListener("load", function () { renderCharts(document); });
})();
