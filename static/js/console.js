// Small progressive enhancements; every page works without this file.
document.addEventListener("change", (event) => {
  // The connection selector navigates as soon as an option is picked.
  const select = event.target.closest("form[data-navigate] select");
  if (select) window.location.href = select.value;
  // "Select all" in the message browser.
  if (event.target.matches("input[data-select-all]")) {
    const table = event.target.closest("table");
    table.querySelectorAll("input[name=ids]").forEach((box) => (box.checked = event.target.checked));
  }
});

const TYPING = "input:not([type=checkbox]):not([type=radio]):not([type=hidden]), textarea, select";

// Live refresh waits while the operator is choosing messages or typing in the browser.
window.rsmqIdle = () =>
  document.visibilityState === "visible" &&
  !document.querySelector("#live input[name=ids]:checked") &&
  !(document.activeElement && document.activeElement.matches(`#live ${TYPING.split(", ").join(", #live ")}`));

// A live refresh (an element with data-poll) skips its turn while the operator is busy
// (a filter in hx-trigger would need eval, which the Content-Security-Policy forbids).
document.addEventListener("htmx:beforeRequest", (event) => {
  if (event.detail.elt.hasAttribute("data-poll") && !window.rsmqIdle()) event.preventDefault();
});

// A refresh already on its way when the operator ticked a box must not wipe the tick.
document.addEventListener("htmx:beforeSwap", (event) => {
  const target = event.detail.target;
  const polled = target && (target.id === "live" || target.id === "queue-table");
  if (polled && event.detail.requestConfig.verb === "get" && !window.rsmqIdle()) {
    event.detail.shouldSwap = false;
  }
});

// Controls that only work with JavaScript are shown only with it.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-needs-js]").forEach((el) => el.removeAttribute("hidden"));
});
document.addEventListener("htmx:afterSettle", () => {
  document.querySelectorAll("[data-needs-js]").forEach((el) => el.removeAttribute("hidden"));
});
