// The launch form (evaluations/new): the fields and the JSON editor, kept in sync both ways, losslessly.
//
// The JSON editor holds exactly what is submitted. The fields edit it: name, label, models, envVars, tags, the
// timeout and one group of tasks — an env, its task ids (picked from the env's scenario catalog, searchable, a whole
// benchmark at once, or typed) times the levels of one perturbation (a sweep), all with the same episodes, seed,
// workers, maxSteps, record, params and success criterion. Anything else in the request (unknown fields, a task's
// metadata) is kept as written. A request the fields cannot show (tasks on several envs, tasks that differ in their
// settings…) locks the fields with the reason; the JSON editor stays open.
//
// Numbers never pass through JavaScript numbers: the JSON is parsed into Maps, arrays and Num objects that keep
// each number's source text, and serialized back from that text, so "seed": 9007199254740993 survives any edit of
// any field. Integer fields are text inputs checked against a pattern (a number input would round them).
(function () {
  "use strict";

  // ------------------------------------------------------------ lossless JSON
  function Num(text) { this.text = text; }

  var NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
  var STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;

  function parseJSON(text) {
    var i = 0;
    function fail(what) { throw new SyntaxError(what + " at character " + (i + 1)); }
    function ws() { while (i < text.length && " \t\n\r".indexOf(text[i]) >= 0) i++; }
    function token(re) { re.lastIndex = i; var m = re.exec(text); if (!m) return null; i = re.lastIndex; return m[0]; }
    function value(depth) {
      if (depth > 64) fail("nested too deeply");
      ws();
      var c = text[i], t;
      if (c === "{") {
        i++; var m = new Map(); ws();
        if (text[i] === "}") { i++; return m; }
        for (;;) {
          ws(); t = token(STRING); if (t === null) fail("expected a quoted key");
          ws(); if (text[i] !== ":") fail("expected :"); i++;
          m.set(JSON.parse(t), value(depth + 1)); ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === "}") { i++; return m; }
          fail("expected , or }");
        }
      }
      if (c === "[") {
        i++; var a = []; ws();
        if (text[i] === "]") { i++; return a; }
        for (;;) {
          a.push(value(depth + 1)); ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === "]") { i++; return a; }
          fail("expected , or ]");
        }
      }
      if (c === '"') { t = token(STRING); if (t === null) fail("bad string"); return JSON.parse(t); }
      t = token(NUMBER); if (t !== null) return new Num(t);
      var words = { "true": true, "false": false, "null": null };
      for (var w in words) { if (text.startsWith(w, i)) { i += w.length; return words[w]; } }
      fail(i >= text.length ? "unexpected end" : "unexpected " + JSON.stringify(text[i]));
    }
    var v = value(0); ws();
    if (i < text.length) fail("unexpected text after the JSON value");
    return v;
  }

  function stringify(v, indent, pad) {
    pad = pad || "";
    if (v === null || v === undefined) return "null";
    if (v instanceof Num) return v.text;
    if (typeof v === "string") return JSON.stringify(v);
    if (typeof v === "boolean") return String(v);
    var inner = pad + indent, nl = indent ? "\n" : "", sep = indent ? ": " : ":";
    if (Array.isArray(v)) {
      if (!v.length) return "[]";
      return "[" + nl + v.map(function (x) { return inner + stringify(x, indent, inner); }).join("," + nl) + nl + pad + "]";
    }
    if (v instanceof Map) {
      if (!v.size) return "{}";
      var parts = [];
      v.forEach(function (x, k) { parts.push(inner + JSON.stringify(k) + sep + stringify(x, indent, inner)); });
      return "{" + nl + parts.join("," + nl) + nl + pad + "}";
    }
    throw new TypeError("not a JSON value: " + v);
  }
  function canon(v) { return v === undefined ? "" : stringify(v, ""); }
  function clone(v) { return v === undefined ? undefined : parseJSON(stringify(v, "")); }
  function isObj(v) { return v instanceof Map; }
  function text(v) { return v instanceof Num ? v.text : typeof v === "string" ? v : v === true || v === false ? String(v) : ""; }

  // ------------------------------------------------------------ the page
  var INT = /^(0|[1-9][0-9]*)$/, DECIMAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
  var TASK_FIELDS = ["env", "episodes", "seed", "workers", "maxSteps", "record", "params", "successCriterion"];

  function wire(form) {
    if (form.dataset.wired) return;
    form.dataset.wired = "1";
    form.classList.add("launch-js");
    var json = form.querySelector("#id_request_json");
    var note = form.querySelector("#json-note");
    var lock = form.querySelector("#fields-locked");
    var fieldset = form.querySelector("#form-fields");
    var catalogs = {};
    JSON.parse(document.getElementById("catalog-envs").textContent).forEach(function (c) { catalogs[c.env] = c; });
    var perturbationCatalog = JSON.parse(document.getElementById("perturbation-catalog").textContent);
    var f = function (name) { return form.elements[name]; };

    // ---- editor tabs
    form.querySelectorAll("[data-editor-tab]").forEach(function (tab) {
      tab.addEventListener("click", function (ev) {
        ev.preventDefault();
        form.querySelectorAll("[data-editor-tab]").forEach(function (t) { t.classList.toggle("active", t === tab); });
        form.classList.toggle("launch-json", tab.dataset.editorTab === "json");
      });
    });

    function parse() {
      try { var v = parseJSON(json.value); return isObj(v) ? { req: v } : { error: "the request must be a JSON object" }; }
      catch (e) { return { error: e.message }; }
    }

    // ---- small field helpers
    function lines(s) { return s.split("\n").map(function (x) { return x.trim(); }).filter(Boolean); }
    function items(s) { return s.split(",").map(function (x) { return x.trim(); }).filter(Boolean); }
    function taskIds() { return lines(f("task_ids").value); }
    function setTaskIds(ids) { f("task_ids").value = ids.join("\n"); }
    function paramInputs() {
      var box = form.querySelector('[data-params-env="' + CSS.escape(f("env").value) + '"]');
      return box ? Array.from(box.querySelectorAll("[data-param]")) : [];
    }

    function showCurrentEnv() {
      var env = f("env").value;
      form.querySelectorAll("[data-catalog-env]").forEach(function (d) {
        var mine = d.dataset.catalogEnv === env;
        d.hidden = !mine; if (mine) d.open = true;
      });
      form.querySelectorAll("[data-params-env]").forEach(function (p) { p.hidden = p.dataset.paramsEnv !== env; });
      syncChecks();
    }
    function syncChecks() {
      var ids = taskIds();
      form.querySelectorAll('[data-catalog-env] input[name="scenarios"]').forEach(function (box) { box.checked = ids.indexOf(box.value) >= 0; });
    }
    function showDependent() {
      form.querySelectorAll("[data-show-if]").forEach(function (el) {
        var parts = el.dataset.showIf.split(":");
        el.hidden = parts[1].split("|").indexOf(f(parts[0]).value) < 0;
      });
      var kind = perturbationCatalog.find(function (k) { return k.name === f("perturbation").value; });
      form.querySelector("#perturbation-hint").textContent = kind ? kind.unit + " from " + kind.min + " to " + kind.max : "";
      f("strengths").disabled = !kind;
    }

    // ---- JSON → fields
    function perturbationOf(task) {
      var p = task.get("perturbation");
      return p === null || p === undefined || p === "" || p === "none" ? "none" : p;
    }

    function readTasks(tasks) {
      if (tasks === undefined) return { ids: [], levels: ["none"], first: new Map() };
      if (!Array.isArray(tasks)) return { problem: "tasks is not a list" };
      if (!tasks.every(isObj)) return { problem: "a task is not an object" };
      if (!tasks.length) return { ids: [], levels: ["none"], first: new Map() };
      var first = tasks[0];
      for (var k = 0; k < TASK_FIELDS.length; k++) {
        var key = TASK_FIELDS[k];
        if (!tasks.every(function (t) { return canon(t.get(key)) === canon(first.get(key)); })) return { problem: "the tasks differ in " + key };
      }
      if (!tasks.every(function (t) { return typeof t.get("taskId") === "string" && typeof perturbationOf(t) === "string"; })) {
        return { problem: "a taskId or perturbation is not a string" };
      }
      var ids = [], levels = [];
      tasks.forEach(function (t) { if (ids.indexOf(t.get("taskId")) < 0) ids.push(t.get("taskId")); });
      tasks.forEach(function (t) { if (t.get("taskId") === ids[0]) levels.push(perturbationOf(t)); });
      var grid = [];
      ids.forEach(function (id) { levels.forEach(function (p) { grid.push(id + "\u0000" + p); }); });
      if (grid.join("\u0001") !== tasks.map(function (t) { return t.get("taskId") + "\u0000" + perturbationOf(t); }).join("\u0001")) {
        return { problem: "the tasks are not every task id × every perturbation level, in order" };
      }
      var kinds = levels.filter(function (p) { return p !== "none"; }).map(function (p) { return p.split(":")[0]; });
      if (kinds.some(function (k) { return k !== kinds[0]; })) return { problem: "the tasks mix perturbations (" + kinds.join(", ") + ")" };
      return { ids: ids, levels: levels, kind: kinds[0] || "none", first: first };
    }

    function readModels(req) {
      var list = req.has("models") ? req.get("models") : req.has("model") ? [req.get("model")] : [];
      if (!Array.isArray(list)) return { problem: "models is not a list" };
      var refs = [], vars = null;
      for (var i = 0; i < list.length; i++) {
        var m = list[i], ref = typeof m === "string" ? m : isObj(m) ? m.get("model") : undefined;
        if (typeof ref !== "string") return { problem: "a model entry has no model reference" };
        var ev = isObj(m) && m.get("envVars") !== undefined ? canon(m.get("envVars")) : "{}";
        if (vars !== null && ev !== vars) return { problem: "the models have different envVars" };
        vars = ev; refs.push(ref);
      }
      var first = list.find(function (m) { return isObj(m) && isObj(m.get("envVars")); });
      return { refs: refs, envVars: first ? first.get("envVars") : new Map() };
    }

    function fill(req, models, group) {
      var metadata = req.get("metadata");
      f("name").value = typeof req.get("name") === "string" ? req.get("name") : "";
      f("label").value = isObj(metadata) && typeof metadata.get("evaluationLabel") === "string" ? metadata.get("evaluationLabel") : "";
      f("timeout_seconds").value = text(req.get("timeoutSeconds"));
      var tags = req.get("tags");
      f("tags").value = isObj(tags) ? Array.from(tags).map(function (kv) { return kv[0] + ":" + text(kv[1]); }).join(", ") : "";
      Array.from(f("models").options).forEach(function (o) { o.selected = models.refs.indexOf(o.value) >= 0; });
      f("env_vars").value = Array.from(models.envVars).map(function (kv) { return kv[0] + "=" + text(kv[1]); }).join("\n");
      var t = group.first;
      f("env").value = typeof t.get("env") === "string" ? t.get("env") : "";
      setTaskIds(group.ids);
      f("episodes").value = text(t.get("episodes"));
      f("seed").value = text(t.get("seed"));
      f("workers").value = t.get("workers") === undefined ? "1" : text(t.get("workers"));
      f("max_steps").value = text(t.get("maxSteps"));
      f("perturbation").value = group.kind;
      f("strengths").value = group.kind === "none" ? "" : group.levels.map(function (p) { return p === "none" ? "none" : p.slice(p.indexOf(":") + 1); }).join(", ");
      var record = text(t.get("record")) || "none";
      f("record").value = record.indexOf("first:") === 0 ? "first" : record;
      f("record_first").value = record.indexOf("first:") === 0 ? record.slice(6) : "";
      var sc = t.get("successCriterion");
      f("success_kind").value = isObj(sc) ? text(sc.get("kind")) : "";
      f("success_steps").value = isObj(sc) ? text(sc.get("steps")) : "";
      f("success_threshold").value = isObj(sc) ? text(sc.get("threshold")) : "";
      showCurrentEnv();
      var params = t.get("params");
      paramInputs().forEach(function (input) { input.value = isObj(params) ? text(params.get(input.dataset.param)) : ""; });
    }

    function jsonToFields() {
      var parsed = parse();
      if (parsed.error) { note.textContent = "The JSON has an error (" + parsed.error + "); the form waits until it is fixed."; return; }
      note.textContent = "";
      var models = readModels(parsed.req), group = readTasks(parsed.req.get("tasks"));
      var problem = models.problem || group.problem;
      fieldset.disabled = !!problem;
      lock.hidden = !problem;
      lock.textContent = problem ? "The form cannot show this request: " + problem + ". Edit it in the JSON tab (it is submitted as written)." : "";
      if (!problem) fill(parsed.req, models, group);
      showDependent();
      countTasks();
    }

    // ---- fields → JSON
    function checked(name, pattern, message) {
      var input = f(name), ok = !input.value.trim() || pattern.test(input.value.trim());
      input.setAttribute("aria-invalid", ok ? "false" : "true");
      return ok ? null : message;
    }
    function fieldProblems() {
      var problems = [
        checked("episodes", INT, "Episodes must be a whole number"), checked("seed", INT, "Seed must be a whole number"),
        checked("workers", INT, "Workers must be a whole number"), checked("max_steps", INT, "Max steps must be a whole number"),
        checked("record_first", INT, "N must be a whole number"), checked("success_steps", INT, "Steps must be a whole number"),
        checked("success_threshold", DECIMAL, "Threshold must be a number"), checked("timeout_seconds", DECIMAL, "Timeout must be a number"),
      ];
      // Every tag is key:value and every envVars line KEY=value: a malformed one is named, never dropped.
      [["tags", items, ":", "Tags must be key:value (not "], ["env_vars", lines, "=", "envVars lines must be KEY=value (not "]].forEach(function (spec) {
        var input = f(spec[0]), bad = spec[1](input.value).filter(function (x) { return x.indexOf(spec[2]) < 1; });
        input.setAttribute("aria-invalid", bad.length ? "true" : "false");
        if (bad.length) problems.push(spec[3] + bad.map(function (x) { return JSON.stringify(x); }).join(", ") + ")");
      });
      paramInputs().forEach(function (input) {
        var type = input.dataset.paramType, value = input.value.trim(), bad = false;
        if (value && input.tagName === "INPUT" && (type === "int" || type === "float")) bad = !(type === "int" ? /^-?(0|[1-9][0-9]*)$/ : DECIMAL).test(value);
        input.setAttribute("aria-invalid", bad ? "true" : "false");
        if (bad) problems.push(input.dataset.param + " must be " + (type === "int" ? "a whole number" : "a number"));
      });
      return problems.filter(Boolean);
    }

    function setOrDelete(map, key, value) { if (value === undefined) map.delete(key); else map.set(key, value); }
    function num(name) { var v = f(name).value.trim(); return v ? new Num(v) : undefined; }

    function paramValue(input) {
      var v = input.value.trim(), type = input.dataset.paramType;
      if (!v) return undefined;
      if (type === "bool") return v === "true";
      // Numbers stay their text (exact); anything that is not one is sent as typed, and the preview says why.
      return (type === "int" || type === "float") && DECIMAL.test(v) ? new Num(v) : v;
    }

    function taskSettings(task) {
      var episodes = num("episodes"), workers = num("workers"), record = f("record").value;
      task.set("episodes", episodes || new Num("1"));
      task.set("seed", num("seed") || new Num("0"));
      setOrDelete(task, "workers", workers && workers.text !== "1" ? workers : undefined);
      setOrDelete(task, "maxSteps", num("max_steps"));
      setOrDelete(task, "record", record === "none" ? undefined : record === "first" ? "first:" + (f("record_first").value.trim() || "1") : record);
      var kind = f("success_kind").value, sc;
      if (kind) {
        var old = task.get("successCriterion");
        sc = isObj(old) && old.get("kind") === kind ? old : new Map([["kind", kind]]);
        setOrDelete(sc, "steps", kind === "survived" ? num("success_steps") : undefined);
        setOrDelete(sc, "threshold", kind === "return_at_least" ? num("success_threshold") : undefined);
      }
      setOrDelete(task, "successCriterion", sc);
      var params = isObj(task.get("params")) ? task.get("params") : new Map();
      paramInputs().forEach(function (input) { setOrDelete(params, input.dataset.param, paramValue(input)); });
      setOrDelete(task, "params", params.size ? params : undefined);
    }

    function levels() {
      var kind = f("perturbation").value;
      if (kind === "none") return ["none"];
      var list = items(f("strengths").value).map(function (s) { return s === "none" ? "none" : kind + ":" + s; });
      return list.length ? list : [kind];
    }

    function buildTasks(oldTasks) {
      var byKey = new Map();
      (Array.isArray(oldTasks) ? oldTasks : []).forEach(function (t) {
        if (isObj(t)) { var key = t.get("taskId") + "\u0000" + perturbationOf(t); if (!byKey.has(key)) byKey.set(key, t); }
      });
      var tasks = [], ids = taskIds();
      (ids.length ? ids : [""]).forEach(function (id) {
        levels().forEach(function (p) {
          var task = clone(byKey.get(id + "\u0000" + p)) || new Map();
          task.set("env", f("env").value);
          task.set("taskId", id);
          taskSettings(task);
          setOrDelete(task, "perturbation", p === "none" ? undefined : p);
          tasks.push(task);
        });
      });
      return tasks;
    }

    function buildModels(req) {
      var envVars = new Map();
      lines(f("env_vars").value).forEach(function (line) {
        var i = line.indexOf("=");
        if (i > 0) envVars.set(line.slice(0, i).trim(), line.slice(i + 1));
      });
      var old = new Map();
      var list = req.has("models") ? req.get("models") : req.has("model") ? [req.get("model")] : [];
      (Array.isArray(list) ? list : []).forEach(function (m) {
        if (typeof m === "string") old.set(m, m); else if (isObj(m)) old.set(m.get("model"), m);
      });
      var chosen = Array.from(f("models").selectedOptions).map(function (o) { return o.value; });
      var entries = chosen.map(function (ref) {
        var prev = old.get(ref);
        if (!envVars.size && (typeof prev === "string" || prev === undefined)) return prev === undefined ? new Map([["model", ref]]) : prev;
        var entry = isObj(prev) ? clone(prev) : new Map([["model", ref]]);
        setOrDelete(entry, "envVars", envVars.size ? envVars : undefined);
        return entry;
      });
      if (req.has("model") && !req.has("models") && entries.length === 1) { req.set("model", entries[0]); return; }
      req.delete("model");
      req.set("models", entries);
    }

    function fieldsToJson() {
      if (fieldset.disabled) return;
      var parsed = json.value.trim() ? parse() : { req: new Map() };
      if (parsed.error) { note.textContent = "The JSON tab has an error (" + parsed.error + "); fix it there before editing the form."; return; }
      var problems = fieldProblems();
      if (problems.length) { note.textContent = problems.join("; ") + " (the JSON is unchanged until this is fixed)."; return; }
      note.textContent = "";
      var req = parsed.req;
      setOrDelete(req, "name", f("name").value || undefined);
      var metadata = isObj(req.get("metadata")) ? req.get("metadata") : new Map();
      setOrDelete(metadata, "evaluationLabel", f("label").value || undefined);
      setOrDelete(req, "metadata", metadata.size || req.has("metadata") ? metadata : undefined);
      buildModels(req);
      req.set("tasks", buildTasks(req.get("tasks")));
      var tags = new Map();
      items(f("tags").value).forEach(function (pair) { var i = pair.indexOf(":"); if (i > 0) tags.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim()); });
      setOrDelete(req, "tags", tags.size ? tags : undefined);
      setOrDelete(req, "timeoutSeconds", num("timeout_seconds"));
      json.value = stringify(req, "  ");
      json.dispatchEvent(new Event("sync-preview"));
      countTasks();
    }

    function countTasks() {
      var out = form.querySelector("#task-count"), n = taskIds().length, l = levels().length;
      var models = Array.from(f("models").selectedOptions).length;
      out.textContent = fieldset.disabled ? "" : n + " task id" + (n === 1 ? "" : "s") + (l > 1 ? " × " + l + " perturbation levels" : "") +
        " = " + n * l + " task" + (n * l === 1 ? "" : "s") + "; × " + models + " model" + (models === 1 ? "" : "s") + " = " + n * l * models + " workloads";
    }

    // ---- scenario picker
    function addIds(ids) {
      var current = taskIds();
      ids.forEach(function (id) { if (current.indexOf(id) < 0) current.push(id); });
      setTaskIds(current);
    }
    form.querySelectorAll("[data-catalog-env]").forEach(function (section) {
      section.querySelector("[data-scenario-search]").addEventListener("input", function (ev) {
        var q = ev.target.value.trim().toLowerCase();
        section.querySelectorAll(".scenario-list li").forEach(function (li) { li.hidden = q && li.dataset.search.indexOf(q) < 0; });
        ev.stopPropagation();
      });
      section.querySelectorAll("[data-select-benchmark]").forEach(function (button) {
        button.addEventListener("click", function () {
          var bench = button.dataset.selectBenchmark;
          addIds(catalogs[section.dataset.catalogEnv].scenarios.filter(function (s) { return s.benchmark === bench; }).map(function (s) { return s.id; }));
          syncChecks(); fieldsToJson();
        });
      });
      section.querySelector("[data-clear-scenarios]").addEventListener("click", function () { setTaskIds([]); syncChecks(); fieldsToJson(); });
      section.addEventListener("change", function (ev) {
        if (ev.target.name !== "scenarios") return;
        ev.stopPropagation();
        var ids = taskIds().filter(function (id) { return id !== ev.target.value; });
        if (ev.target.checked) ids.push(ev.target.value);
        setTaskIds(ids); fieldsToJson();
      });
    });

    var pane = form.querySelector("[data-editor-pane='fields']");
    pane.addEventListener("input", function (ev) {
      if (ev.target.matches("[data-scenario-search]")) return;
      if (ev.target === f("task_ids")) syncChecks();
      fieldsToJson();
    });
    pane.addEventListener("change", function (ev) {
      if (ev.target === f("env")) {
        var known = (catalogs[f("env").value] || { scenarios: [] }).scenarios.map(function (s) { return s.id; });
        var kept = taskIds().filter(function (id) { return known.indexOf(id) >= 0; });
        setTaskIds(kept.length || !known.length ? kept : [known[0]]);
        showCurrentEnv();
      }
      showDependent();
      fieldsToJson();
    });
    json.addEventListener("input", jsonToFields);
    jsonToFields();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("launch-form");
    if (form) wire(form);
  });
  // For tests and the console: the lossless codec this page uses.
  window.rlmeshLosslessJSON = { parse: parseJSON, stringify: stringify, Num: Num };
})();
