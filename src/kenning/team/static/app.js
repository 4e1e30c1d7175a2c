// The review page works without JavaScript; this only opens a memory's history in a
// drawer (a modal <dialog>: Escape closes it, focus returns to the link) instead of a page.
"use strict";
document.addEventListener("click", async (event) => {
  const link = event.target.closest("a[data-drawer]");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
  event.preventDefault();
  const drawer = document.getElementById("drawer");
  const response = await fetch(link.getAttribute("href") + "?fragment=1", {
    credentials: "same-origin",
    headers: { Accept: "text/html" },
  });
  if (!response.ok) { window.location.href = link.href; return; }
  drawer.innerHTML = await response.text();
  drawer.addEventListener("close", () => link.focus(), { once: true });
  drawer.showModal();
  const close = drawer.querySelector("button.close");
  if (close) close.focus();
});
