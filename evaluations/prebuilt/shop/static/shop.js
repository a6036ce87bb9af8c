// The shop's only script: tells the env when the page is being left (so it waits for the next one) and reads the
// form values the browser shows. miniwob's core.js (loaded before) provides core.getDOMInfo and core.elementClick.
(function () {
  window.__shopLeaving = false;
  function leaving() { window.__shopLeaving = true; }
  window.addEventListener('submit', leaving, true);
  window.addEventListener('beforeunload', leaving);
  document.addEventListener('click', function (event) {
    var link = event.target && event.target.closest ? event.target.closest('a[href]') : null;
    if (link) { leaving(); }
  }, true);
  // No click-tracking canvas on shop pages (miniwob draws clicks onto one).
  if (window.core) { core.canvasDrawElementClick = function () {}; }
  window.shopForm = function () {
    var out = {};
    document.querySelectorAll('input, textarea, select').forEach(function (el) {
      if (!el.name || el.type === 'hidden' || el.type === 'submit') { return; }
      if (el.type === 'radio') {
        if (el.checked) { out[el.name] = el.value; } else if (!(el.name in out)) { out[el.name] = null; }
      } else if (el.type === 'checkbox') {
        out[el.name] = el.checked;
      } else {
        out[el.name] = el.value;
      }
    });
    return out;
  };
}());
