// Dashboard behaviour on top of server-rendered pages: Plotly charts, the Copy button, the request views of
// the Configuration tab, and the small form helpers below (the launch form has its own static/js/launch.js).
// Everything re-initialises after htmx swaps. The Content-Security-Policy allows no inline handlers: behaviour lives here only.
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
    // data-copy-from names a json_script element holding the text; data-copy-text holds it directly (ids).
    root.querySelectorAll("[data-copy-from], [data-copy-text]").forEach(function (btn) {
      if (btn.dataset.wired) return;
      btn.dataset.wired = "1";
      btn.addEventListener("click", function () {
        // json_script holds the raw request as a JSON string: parsing gives back the exact text.
        var text = btn.dataset.copyText !== undefined ? btn.dataset.copyText
          : JSON.parse(document.getElementById(btn.dataset.copyFrom).textContent);
        var status = document.getElementById("copy-status");
        navigator.clipboard.writeText(text).then(
          function () { if (btn.dataset.copyText !== undefined) btn.title = "Copied " + text; else btn.textContent = "Copied"; if (status) status.textContent = "Copied " + text.length + " characters to the clipboard."; },
          function (err) { if (status) status.textContent = "Copy failed: " + err; }
        );
      });
    });
  }

  // ------------------------------------------------- request views (Configuration tab)
  // The raw request formatted for reading or as its exact bytes; without JavaScript both show.
  function wireRequestViews(root) {
    root.querySelectorAll(".request-views").forEach(function (box) {
      if (box.dataset.wired) return;
      box.dataset.wired = "1";
      box.dataset.view = "formatted";
      box.querySelectorAll("[data-request-view]").forEach(function (button) {
        button.addEventListener("click", function () {
          box.dataset.view = button.dataset.requestView;
          box.querySelectorAll("[data-request-view]").forEach(function (b) { b.setAttribute("aria-selected", b === button ? "true" : "false"); });
        });
      });
    });
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

  function init(root) { renderCharts(root); wireCopy(root); wireRequestViews(root); markTab(); }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:afterSettle", function (ev) { init(ev.target); });
  // Plotly loads deferred; render charts once it is there.
  window.addEventListener("load", function () { renderCharts(document); });
})();
