// The page as an installable app, and turning phone notifications on (same-origin script,
// no inline code, no fetch): the server's VAPID key comes in a data attribute; the browser's
// subscription goes back in the form, with its CSRF token. The server checks it.
(function () {
  "use strict";

  function toBytes(text) {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    const binary = atob(base64 + "===".slice((base64.length + 3) % 4));
    return Uint8Array.from(binary, function (c) { return c.charCodeAt(0); });
  }

  if (!("serviceWorker" in navigator)) return;
  const registered = navigator.serviceWorker.register("/ui/sw.js", { scope: "/ui/" });

  document.addEventListener("DOMContentLoaded", function () {
    const form = document.querySelector("form[data-push-key]");
    if (!form) return;
    const status = form.querySelector("[data-push-status]");
    if (!("PushManager" in window)) {
      if (status) status.textContent = "This browser cannot receive notifications; install the page as an app first.";
      return;
    }
    form.addEventListener("submit", function (event) {
      if (form.elements.subscription.value) return;
      event.preventDefault();
      Notification.requestPermission().then(function (permission) {
        if (permission !== "granted") throw new Error("notifications are not allowed for this page");
        return registered;
      }).then(function (registration) {
        return registration.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: toBytes(form.dataset.pushKey),
        });
      }).then(function (subscription) {
        form.elements.subscription.value = JSON.stringify(subscription.toJSON());
        form.submit();
      }).catch(function (error) {
        if (status) status.textContent = "Not turned on: " + error.message;
      });
    });
  });
})();
