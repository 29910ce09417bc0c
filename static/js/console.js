// Small progressive enhancements; every page works without this file.
"use strict";

const TYPING = "input:not([type=checkbox]):not([type=radio]):not([type=hidden]), textarea, select";
const LIVE = "#live, #queue-table";

// -- Selection ------------------------------------------------------------------------------
// The ticked messages of this page, kept in sessionStorage: a refresh or an action that
// re-renders the list ticks them again (ids no longer listed simply stay unticked).
const selectionKey = () => `rsmq:selected:${window.location.pathname}`;
const boxes = () => Array.from(document.querySelectorAll("#live input[name=ids]"));
const saveSelection = () => {
  const ids = boxes().filter((b) => b.checked).map((b) => b.value);
  sessionStorage.setItem(selectionKey(), JSON.stringify(ids));
};
const restoreSelection = () => {
  let ids = [];
  try {
    ids = JSON.parse(sessionStorage.getItem(selectionKey()) || "[]");
  } catch (e) {
    ids = [];
  }
  const wanted = new Set(ids);
  boxes().forEach((b) => {
    if (wanted.has(b.value)) b.checked = true;
  });
};
const forgetSelection = () => sessionStorage.removeItem(selectionKey());

// The sticky bulk bar says how many are ticked, and offers the whole state once the whole
// page is ticked ("select all N matching").
const updateBulkBar = () => {
  const all = boxes();
  const n = all.filter((b) => b.checked).length;
  document.querySelectorAll("[data-selected-count]").forEach((el) => {
    el.textContent = `${n} selected`;
  });
  document.querySelectorAll("[data-select-matching]").forEach((el) => {
    el.hidden = !(all.length && n === all.length);
  });
  document.querySelectorAll("[data-needs-selection]").forEach((el) => {
    el.disabled = n === 0;
  });
  const head = document.querySelector("input[data-select-all]");
  if (head) head.checked = all.length > 0 && n === all.length;
};

// -- Live refresh ---------------------------------------------------------------------------
let userPaused = sessionStorage.getItem("rsmq:paused") === "1";

// Why the live refresh waits, or "" when it runs.
const pauseReason = () => {
  if (userPaused) return "Paused";
  const ticked = document.querySelectorAll("#live input[name=ids]:checked").length;
  if (ticked) return `Paused: ${ticked} selected`;
  const active = document.activeElement;
  if (active && active.closest(LIVE) && active.matches(TYPING)) return "Paused while you type";
  // What was typed and not yet sent (a queue name to confirm with) must not be morphed away.
  const typed = Array.from(document.querySelectorAll(`${LIVE.split(", ").join(" input, ")} input`));
  if (typed.some((i) => i.matches(TYPING) && i.value !== i.defaultValue)) return "Paused: unsent input";
  return "";
};

window.rsmqIdle = () => document.visibilityState === "visible" && pauseReason() === "";

const updateLiveState = () => {
  const polled = document.querySelector("[data-poll]");
  const reason = pauseReason();
  document.querySelectorAll("[data-live-state]").forEach((el) => {
    el.hidden = !polled;
    el.textContent = reason || "Live";
    el.classList.toggle("paused", reason !== "");
  });
  document.querySelectorAll("[data-live-toggle]").forEach((el) => {
    el.hidden = !polled;
    el.textContent = userPaused ? "Resume" : "Pause";
    el.setAttribute("aria-pressed", userPaused ? "true" : "false");
  });
};

// A live refresh (an element with data-poll) skips its turn while the operator is busy
// (a filter in hx-trigger would need eval, which the Content-Security-Policy forbids).
let pendingPost = false;
document.addEventListener("htmx:beforeRequest", (event) => {
  if (event.detail.elt.hasAttribute("data-poll") && !window.rsmqIdle()) event.preventDefault();
  else if (event.detail.requestConfig && event.detail.requestConfig.verb === "post") pendingPost = true;
});

document.addEventListener("htmx:beforeSwap", (event) => {
  const target = event.detail.target;
  const polled = target && target.hasAttribute("data-poll");
  if (!polled || event.detail.requestConfig.verb !== "get") return;
  // A refresh already on its way when the operator ticked a box must not wipe the tick.
  if (!window.rsmqIdle()) {
    event.detail.shouldSwap = false;
    return;
  }
  // Morph, not replace: text selection, focus and open <details> survive the refresh.
  if (event.detail.isError !== true && window.Idiomorph) event.detail.swapOverride = "morph";
});

// A refresh still on its way when an action's answer replaced its part of the page has
// nowhere to go: its answer is dropped, not swapped into the detached part (else htmx
// logs "oobErrorNoTarget"). An event of a detached element never reaches the document,
// so each live part listens itself.
const watched = new WeakSet();
const dropWhenGone = (event) => {
  if (!event.currentTarget.isConnected) event.detail.shouldSwap = false;
};
const watchPolls = () => {
  document.querySelectorAll("[data-poll]").forEach((el) => {
    if (watched.has(el)) return;
    watched.add(el);
    el.addEventListener("htmx:beforeSwap", dropWhenGone);
  });
};

// Refresh now: when the tab comes back into view, or the operator resumes.
const refreshNow = () => {
  if (!window.htmx || !window.rsmqIdle()) return;
  document.querySelectorAll("[data-poll]").forEach((el) => {
    window.htmx.ajax("GET", el.getAttribute("hx-get"), { source: el, target: el, swap: "morph" });
  });
};
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") refreshNow();
});

if (window.Idiomorph) {
  // An open <details> stays open, and what the operator is typing stays typed.
  window.Idiomorph.defaults.ignoreActiveValue = true;
  window.Idiomorph.defaults.callbacks.beforeAttributeUpdated = (attr, node, mutation) =>
    !(attr === "open" && node.tagName === "DETAILS" && mutation === "remove");
}

// -- Confirmations --------------------------------------------------------------------------
// htmx reads hx-confirm from the element that issues the request, the form; a form with
// several buttons carries each question on its button (data-confirm), asked here.
// "{n}" in a question is the number of ticked messages.
document.addEventListener("htmx:confirm", (event) => {
  const trigger = event.detail.triggeringEvent;
  const button = trigger && trigger.submitter;
  const question = button && button.dataset.confirm;
  if (!question) return;
  event.preventDefault();
  const n = boxes().filter((b) => b.checked).length;
  if (window.confirm(question.replace("{n}", n.toLocaleString("en-US")))) {
    event.detail.issueRequest(true);
  }
});

// -- Feedback -------------------------------------------------------------------------------
// The button an action was posted with: its answer is shown next to it, focused.
let clicked = null;
let clickedIn = []; // the ids of the parts of the page around the button, closest first
document.addEventListener(
  "submit",
  (event) => {
    const button = event.submitter;
    clicked = button && button.name === "action" ? button.value : null;
    clickedIn = [];
    for (let part = button && button.parentElement.closest("[id]"); part; part = part.parentElement && part.parentElement.closest("[id]")) {
      clickedIn.push(part.id);
    }
  },
  true,
);

// Actions on ticked messages (or on all of them): once done, the ticks are spent.
const ON_SELECTION = ["requeue", "delete", "move", "requeue_all", "delete_all", "purge"];

// One answer per action, in one place: next to the button pressed (or, when the answer took
// the button away, at the top of the part of the page it was in), focused, and read out;
// the banner the server rendered (#flash, what a page without JavaScript shows) is moved
// there, links and buttons with it, not copied. A sticky bar (.bulk) is not split: the
// answer goes just above it. Only when it has no such place does the banner stay.
const showFeedback = (action, where) => {
  // The closest part around the button that the answer left on the page (the part itself
  // may be gone: a flag acknowledged leaves the list), and the button again inside it.
  const parts = where
    .filter((id) => id !== "content")
    .map((id) => document.querySelector(`#content #${CSS.escape(id)}`));
  const place = parts.find(Boolean);
  const gone = place && place !== parts[0];
  const flashes = Array.from(document.querySelectorAll("#flash .flash"));
  const invalid = document.querySelector(
    "#content .field.invalid input, #content .field.invalid textarea, #content .field.invalid select",
  );
  const pressed = `button[name=action][value="${action}"]`;
  const button =
    action && !gone && (place ? place.querySelector(pressed) : document.querySelector(`#content ${pressed}`));
  let focus = null;
  if (invalid && (!button || button.form === invalid.form)) {
    focus = invalid;
  } else if (flashes.length && (button || place)) {
    const note = document.createElement("div");
    const error = flashes.some((f) => f.classList.contains("error"));
    note.className = `feedback ${error ? "error" : "success"}`;
    note.tabIndex = -1;
    note.dataset.feedback = "";
    note.setAttribute("role", error ? "alert" : "status");
    // Each line of the answer, and whatever the server put with it (an Undo form), moved.
    Array.from(document.getElementById("flash").children).forEach((f) => {
      if (f.classList.contains("flash")) {
        const line = document.createElement("p");
        line.append(...f.childNodes);
        f.remove();
        note.appendChild(line);
      } else {
        note.appendChild(f);
      }
    });
    const bar = button && button.closest(".bulk");
    if (bar) bar.insertAdjacentElement("beforebegin", note);
    else if (button) button.insertAdjacentElement("afterend", note);
    else place.prepend(note);
    focus = note;
  } else if (flashes.length) {
    const box = document.getElementById("flash");
    box.tabIndex = -1;
    focus = box;
  }
  if (focus) {
    // The answer is seen where it was asked, even inside a <details> the page closed.
    for (let d = focus.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
    focus.focus({ preventScroll: true });
    focus.scrollIntoView({ block: "center", behavior: "instant" });
  }
};

// -- Keyboard -------------------------------------------------------------------------------
// "/" focuses the search, j / k move between table rows, x ticks the row's box.
let row = -1;
const rows = () => Array.from(document.querySelectorAll("main table.grid tbody tr"));
const markRow = (i) => {
  const all = rows();
  if (!all.length) return;
  row = Math.max(0, Math.min(i, all.length - 1));
  all.forEach((r, j) => r.classList.toggle("current", j === row));
  const target = all[row].querySelector("a, input") || all[row];
  if (!target.matches("a, input")) target.tabIndex = -1;
  target.focus();
  all[row].scrollIntoView({ block: "nearest" });
};
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const el = event.target;
  if (el.matches && el.matches(TYPING)) return;
  if (event.key === "/") {
    const search = document.querySelector("main input[type=search]");
    if (search) {
      event.preventDefault();
      search.focus();
    }
  } else if (event.key === "j" || event.key === "k") {
    const current = rows().findIndex((r) => r.contains(document.activeElement));
    const from = current >= 0 ? current : row;
    markRow(from < 0 ? 0 : from + (event.key === "j" ? 1 : -1));
  } else if (event.key === "x") {
    const all = rows();
    const at = all.findIndex((r) => r.contains(document.activeElement));
    const box = at >= 0 && all[at].querySelector("input[name=ids]");
    if (box) {
      box.click();
      box.focus();
    }
  }
});

// -- Act on every match ------------------------------------------------------------------------
// Only the chosen action's fields show (each says which actions it is for: data-for); a
// field hidden is also left out of what is sent.
const showJobFields = (form) => {
  const kind = form.querySelector("[data-job-kind]");
  if (!kind) return;
  form.querySelectorAll("[data-for]").forEach((el) => {
    const wanted = el.dataset.for.split(" ").includes(kind.value);
    el.hidden = !wanted;
    el.querySelectorAll("input, select").forEach((i) => (i.disabled = !wanted));
  });
};
const settleJobForms = () => document.querySelectorAll("form[data-job-form]").forEach(showJobFields);

// -- Wiring ---------------------------------------------------------------------------------
document.addEventListener("change", (event) => {
  // The connection selector navigates as soon as an option is picked.
  const select = event.target.closest("form[data-navigate] select");
  if (select) window.location.href = select.value;
  // "Select all" in the message browser.
  if (event.target.matches("input[data-select-all]")) {
    boxes().forEach((box) => (box.checked = event.target.checked));
  }
  if (event.target.matches("input[name=ids], input[data-select-all]")) {
    saveSelection();
    updateBulkBar();
  }
  if (event.target.matches("[data-job-kind]")) showJobFields(event.target.form);
  updateLiveState();
});

document.addEventListener("click", (event) => {
  const toggle = event.target.closest("[data-live-toggle]");
  if (toggle) {
    userPaused = !userPaused;
    sessionStorage.setItem("rsmq:paused", userPaused ? "1" : "0");
    updateLiveState();
    if (!userPaused) refreshNow();
  }
  const matching = event.target.closest("[data-select-matching]");
  if (matching) {
    // The whole state is acted on from its own bar, behind the typed queue name.
    const guard = document.querySelector("[data-all-guard]");
    if (guard) {
      guard.scrollIntoView({ block: "center" });
      guard.focus();
    }
  }
});
document.addEventListener("focusin", updateLiveState);
document.addEventListener("input", updateLiveState);
document.addEventListener("focusout", () => setTimeout(updateLiveState));

const settle = () => {
  // Controls that only work with JavaScript are shown only with it.
  document.querySelectorAll("[data-needs-js]").forEach((el) => el.removeAttribute("hidden"));
  restoreSelection();
  updateBulkBar();
  updateLiveState();
  watchPolls();
  settleJobForms();
};
document.addEventListener("DOMContentLoaded", settle);
document.addEventListener("htmx:afterSettle", (event) => {
  settle();
  if (pendingPost) {
    pendingPost = false;
    const action = clicked;
    const where = clickedIn;
    clicked = null;
    clickedIn = [];
    const failed = document.querySelector("#content .field.invalid, #flash .flash.error");
    if (ON_SELECTION.includes(action) && !failed) {
      forgetSelection();
      boxes().forEach((b) => (b.checked = false));
      updateBulkBar();
      updateLiveState();
    }
    showFeedback(action, where);
  }
});

// -- Chart markers ----------------------------------------------------------------------------
// A timeline event on a chart (dashboard/display/charts.py) shows its text on hover and on focus,
// in a tip over the chart (the marker's SVG <title> is the tooltip without JavaScript).
const showMarker = (marker) => {
  const figure = marker.closest("figure.chart");
  if (!figure) return;
  let tip = figure.querySelector(".marker-tip");
  if (!tip) {
    tip = document.createElement("div");
    tip.className = "marker-tip";
    tip.setAttribute("role", "tooltip");
    figure.appendChild(tip);
  }
  tip.textContent = marker.dataset.marker;
  tip.hidden = false;
  const box = figure.getBoundingClientRect();
  const at = marker.getBoundingClientRect();
  const left = Math.max(0, Math.min(at.left - box.left - 20, box.width - tip.offsetWidth));
  tip.style.left = `${left}px`;
  tip.style.top = `${at.top - box.top + 14}px`;
};
const hideMarker = (marker) => {
  const tip = marker.closest("figure.chart")?.querySelector(".marker-tip");
  if (tip) tip.hidden = true;
};
["mouseover", "focusin"].forEach((type) =>
  document.addEventListener(type, (event) => {
    const marker = event.target.closest?.("[data-marker]");
    if (marker) showMarker(marker);
  }),
);
["mouseout", "focusout"].forEach((type) =>
  document.addEventListener(type, (event) => {
    const marker = event.target.closest?.("[data-marker]");
    if (marker) hideMarker(marker);
  }),
);

// -- Mark an event from a chart -----------------------------------------------------------------
// A click on a chart dates the page's *Mark an event* form at that point's time (each hover
// strip holds it: data-at, epoch ms) and opens it, ready to type what happened.
document.addEventListener("click", (event) => {
  const hit = event.target instanceof Element ? event.target.closest(".chart .hit[data-at]") : null;
  const at = document.querySelector("input[data-annotate-at]");
  if (!hit || !at) return;
  at.value = new Date(Number(hit.dataset.at)).toISOString().slice(0, 19); // UTC, to the second
  for (let d = at.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
  const text = at.form.querySelector("input[name=text]");
  text.scrollIntoView({ block: "center" });
  text.focus({ preventScroll: true });
});

// -- Chart values on hover ----------------------------------------------------------------
// Each chart's hit areas hold their values (dashboard/display/charts.py): the hovered one is also
// written under the chart, where a phone's tap shows it too.
document.addEventListener("mouseover", (event) => {
  const hit = event.target instanceof Element ? event.target.closest(".chart .hit") : null;
  if (!hit) return;
  const figure = hit.closest("figure.chart");
  figure.querySelectorAll(".hit.on").forEach((el) => el.classList.remove("on"));
  hit.classList.add("on");
  const readout = figure.querySelector("[data-readout]");
  if (readout) readout.textContent = hit.dataset.value || "";
});
