// Progressive enhancement only: keep the inbox current while it is open.
// The server sends "something changed" (a type and an audit seq, never content) over
// server-sent events; the page then fetches itself and swaps in the new list, so every
// read rule stays on the server. Without JavaScript the inbox is as fresh as its last load.
"use strict";
(function () {
  var live = document.querySelector("[data-live-source]");
  if (!live || !window.EventSource || !window.fetch || !window.DOMParser) { return; }
  var source = new EventSource(live.getAttribute("data-live-source"));
  var busy = false;
  var again = false;

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-live-list]");
        var current = document.querySelector("[data-live-list]");
        if (fresh && current) {
          current.replaceWith(document.importNode(fresh, true));
          var status = document.querySelector("[data-live-status]");
          if (status) { status.textContent = "Updated just now."; }
        }
      })
      .catch(function () { /* the next event, or a reload, tries again */ })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  source.addEventListener("inbox", refresh);
  window.addEventListener("pagehide", function () { source.close(); });
})();
