// The confirmation page's service worker (scope /ui/): it makes the page installable as an
// app and shows the pushes the server sends — a proposal's title and deadline only. Tapping
// one opens the proposal on this origin, where the person signs in and sees every value.
"use strict";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("push", function (event) {
  let data = {};
  try { data = event.data ? event.data.json() : {}; } catch (error) { data = {}; }
  const title = typeof data.title === "string" ? data.title : "signoff";
  event.waitUntil(self.registration.showNotification(title, {
    body: typeof data.body === "string" ? data.body : "A proposal awaits your decision.",
    tag: typeof data.tag === "string" ? data.tag : undefined,
    icon: "/ui/static/icon.svg",
    data: { url: data.url },
  }));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  let target = "/ui/inbox";
  try {
    const url = new URL(event.notification.data.url, self.location.origin);
    if (url.origin === self.location.origin && url.pathname.startsWith("/ui/")) target = url.href;
  } catch (error) { target = "/ui/inbox"; }
  event.waitUntil(self.clients.openWindow(target));
});
