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
// Live refresh never runs while the operator is choosing messages or typing.
window.rsmqIdle = () =>
  document.visibilityState === "visible" &&
  !document.querySelector("#live input[name=ids]:checked") &&
  !(document.activeElement && document.activeElement.closest("#live form"));
