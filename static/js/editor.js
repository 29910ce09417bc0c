// The message page's "Edit and re-send" editor: the body is checked as JSON as it is typed
// (a message need not be JSON: a body that is not is said, never refused), and
// "Pretty-print" lays a JSON body out with two-space indents. The form works without this.
"use strict";

const EDITOR = "textarea[data-json-editor]";

const statusOf = (editor) => editor.closest("form")?.querySelector("[data-json-status]");

const checkJson = (editor) => {
  const status = statusOf(editor);
  if (!status) return;
  const text = editor.value;
  const trimmed = text.trim();
  let state = "text";
  let words = "Plain text (not JSON).";
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      JSON.parse(text);
      state = "valid";
      words = "Valid JSON.";
    } catch (e) {
      state = "invalid";
      words = `Not valid JSON: ${e.message}`;
    }
  }
  status.textContent = words;
  status.dataset.jsonState = state;
  status.classList.toggle("error", state === "invalid");
  status.classList.toggle("ok", state === "valid");
  editor.setAttribute("aria-invalid", state === "invalid" ? "true" : "false");
  const pretty = editor.closest("form")?.querySelector("[data-json-pretty]");
  if (pretty) pretty.disabled = state !== "valid";
};

const checkAll = () => document.querySelectorAll(EDITOR).forEach(checkJson);

document.addEventListener("input", (event) => {
  if (event.target.matches && event.target.matches(EDITOR)) checkJson(event.target);
});

document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("[data-json-pretty]");
  if (!button) return;
  event.preventDefault();
  const editor = button.closest("form")?.querySelector(EDITOR);
  if (!editor) return;
  try {
    editor.value = JSON.stringify(JSON.parse(editor.value), null, 2);
  } catch (e) {
    // not JSON: left as it is (the status says why)
  }
  checkJson(editor);
});

document.addEventListener("DOMContentLoaded", checkAll);
document.addEventListener("htmx:afterSettle", checkAll);
