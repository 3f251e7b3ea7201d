// Progressive enhancement only: a live countdown to each <time data-countdown>.
// The pages work without it; the server alone decides whether a proposal has expired.
"use strict";
(function () {
  var serverNow = Date.parse(document.body.getAttribute("data-server-now") || "");
  var skew = isNaN(serverNow) ? 0 : serverNow - Date.now();

  function words(ms) {
    if (ms <= 0) { return "expired"; }
    var total = Math.floor(ms / 1000);
    var h = Math.floor(total / 3600);
    var m = Math.floor((total % 3600) / 60);
    var s = total % 60;
    if (h > 0) { return h + " h " + m + " min left"; }
    return m > 0 ? m + " min " + s + " s left" : s + " s left";
  }

  function tick() {
    var now = Date.now() + skew;
    document.querySelectorAll("time[data-countdown]").forEach(function (node) {
      var left = Date.parse(node.getAttribute("datetime")) - now;
      node.textContent = words(left);
      if (left <= 0) { node.classList.add("expired"); }
    });
    document.querySelectorAll("form[data-expires-at]").forEach(function (form) {
      if (Date.parse(form.getAttribute("data-expires-at")) - now <= 0) {
        form.querySelectorAll("button").forEach(function (button) {
          button.disabled = true;
          button.textContent = "Expired";
        });
      }
    });
  }

  tick();
  window.setInterval(tick, 1000);
})();
