// cordon's console: live lists. The server sends an event naming the list that changed (server-sent events,
// <session>/events); each element marked data-live="<event>" is then fetched again, once, from
// <session>/fragments/<its id>, where <session> is the session's place (data-base on the page). Without
// JavaScript every page still works (reload to see changes).
(function () {
  "use strict";
  var live = document.querySelectorAll("[data-live]");
  var base = document.documentElement.dataset.base;
  if (!live.length || !base || !window.EventSource) return;
  var waiting = {};
  function refresh(el) {
    if (waiting[el.id]) return;
    waiting[el.id] = true;
    setTimeout(function () {
      waiting[el.id] = false;
      fetch(base + "fragments/" + el.id, { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (r) {
          if (r.status === 401) { window.location.assign("/console/login"); return null; }
          return r.ok ? r.text() : null;
        })
        .then(function (html) { if (html !== null) el.innerHTML = html; })
        .catch(function () {});
    }, 100);
  }
  var source = new EventSource(base + "events");
  live.forEach(function (el) {
    source.addEventListener(el.dataset.live, function () { refresh(el); });
    source.addEventListener("changed", function () { refresh(el); });
  });
  source.addEventListener("signed-out", function () {
    source.close();
    window.location.assign("/console/login");
  });
  // Refused (this person has too many pages open, or the session ended): the lists update on reload.
  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED) document.documentElement.dataset.live = "off";
  };
  document.documentElement.dataset.live = "on";
})();
