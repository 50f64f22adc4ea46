// EchoMQ dashboard: small progressive enhancements (no inline script anywhere).
// - "/" focuses the filter or job-id box
// - data-confirm on forms / buttons asks in the page's own dialog before acting
//   (with data-confirm-many: only for more than a handful of jobs)
// - row checkboxes: select all, the count ticked (dashboard.css shows the
//   selection's actions in place of the bulk ones while any row is ticked)
// - details.menu closes on Escape and on a click elsewhere
// - data-autosubmit selects submit their form on change
// - data-json-editor forms (edit a job's data, add a job) check their JSON as it is typed

import {jobs, thousands} from "./format.js";

function focusSearch(event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  if (document.querySelector("dialog[open]")) return;
  // The page's own box (the events' job filter) comes after the header's
  // go-to-job box, so the last one is the most specific.
  var boxes = document.querySelectorAll("[data-slash-focus]");
  var box = boxes[boxes.length - 1];
  if (!box) return;
  event.preventDefault();
  box.focus();
  if (box.select) box.select();
}

// ------------------------------------------------------------ confirmations
//
// A data-confirm question (on the submit button or its form) opens a modal
// <dialog> of the page instead of submitting: the first sentence is its
// heading, the rest its text. The server writes placeholders for what only
// the page knows when the button is pressed (dashboard/shared/action_bars.py):
// {selected} or {count} the jobs acted on ("25 jobs"), {n} their number,
// {age} the age picked, {query} a search's (form[data-query], search.js).
// A question marked data-confirm-many is asked only when the button acts
// on more than a handful of jobs (body[data-handful]: action_bars.HANDFUL),
// and the button's "…" ([data-asks-mark]) shows only then. Cancel, Escape
// or a click outside the box change nothing; the confirm button submits
// with the button that was pressed.

var handful = Number(document.body.getAttribute("data-handful")) || 0;

// How many jobs pressing `submitter` acts on: its own count (an error
// group's), the rows ticked, or the count its form shows.
function jobsActedOn(form, submitter) {
  var own = submitter && submitter.getAttribute("data-jobs");
  if (own) return Number(own) || 0;
  if (form.hasAttribute("data-selection")) return form.querySelectorAll("input[name=ids]:checked").length;
  var count = form.querySelector("[data-count-exact]");
  return count ? Number(count.textContent.replace(/\D/g, "")) || 0 : 0;
}

function asker(form, submitter) {
  if (submitter && submitter.hasAttribute("data-confirm")) return submitter;
  return form.hasAttribute("data-confirm") ? form : null;
}
function asks(form, submitter) {
  var el = asker(form, submitter);
  return !!el && (!el.hasAttribute("data-confirm-many") || jobsActedOn(form, submitter) > handful);
}
function markAsking(root) {
  root.querySelectorAll("[data-asks-mark]").forEach(function (mark) {
    var button = mark.closest("button");
    if (button && button.form) mark.hidden = !asks(button.form, button);
  });
}

function question(form, submitter) {
  var el = asker(form, submitter);
  var text = el ? el.getAttribute("data-confirm") : "";
  var n = jobsActedOn(form, submitter);
  text = text.split("{selected}").join(jobs(n)).split("{count}").join(jobs(n));
  text = text.split("{n}").join(thousands(n));
  text = text.split("{query}").join(form.getAttribute("data-query") || "");
  var age = form.querySelector("select[name=grace_ms]");
  if (age && age.selectedIndex >= 0) text = text.split("{age}").join(age.options[age.selectedIndex].text);
  return text;
}

// The confirm button says what it does: the pressed button's words without
// "selected" or the ellipsis that promised this dialog ("Remove", "Run again").
function verb(submitter) {
  var words = submitter ? submitter.textContent.replace(/…|\bselected\b/g, "").trim() : "";
  return words || "Confirm";
}

var dialog = null;
function buildDialog() {
  dialog = document.createElement("dialog");
  dialog.className = "confirm-dialog";
  dialog.setAttribute("aria-labelledby", "confirm-title");
  dialog.setAttribute("aria-describedby", "confirm-text");
  var title = document.createElement("h2");
  title.id = "confirm-title";
  var text = document.createElement("p");
  text.id = "confirm-text";
  var buttons = document.createElement("div");
  buttons.className = "confirm-buttons";
  var cancel = document.createElement("button");
  cancel.type = "button";
  cancel.className = "btn";
  cancel.textContent = "Cancel";
  cancel.setAttribute("data-confirm-cancel", "");
  var ok = document.createElement("button");
  ok.type = "button";
  ok.setAttribute("data-confirm-ok", "");
  buttons.append(cancel, ok);
  dialog.append(title, text, buttons);
  cancel.addEventListener("click", function () { dialog.close("cancel"); });
  ok.addEventListener("click", function () { dialog.close("ok"); });
  // A click on the backdrop (outside the box) is a cancel.
  dialog.addEventListener("click", function (event) {
    if (event.target !== dialog) return;
    var box = dialog.getBoundingClientRect();
    var inside = event.clientX >= box.left && event.clientX <= box.right && event.clientY >= box.top && event.clientY <= box.bottom;
    if (!inside) dialog.close("cancel");
  });
  // Tab and Shift+Tab go round the dialog's buttons, never behind it.
  dialog.addEventListener("keydown", function (event) {
    if (event.key !== "Tab") return;
    var items = dialog.querySelectorAll("button");
    var first = items[0], last = items[items.length - 1];
    if (event.shiftKey && document.activeElement === first) { event.preventDefault(); last.focus(); }
    else if (!event.shiftKey && document.activeElement === last) { event.preventDefault(); first.focus(); }
  });
  document.body.appendChild(dialog);
}

function ask(form, submitter) {
  if (!dialog) buildDialog();
  var words = question(form, submitter);
  var split = words.search(/[?.](\s|$)/);
  dialog.querySelector("#confirm-title").textContent = split < 0 ? words : words.slice(0, split + 1);
  dialog.querySelector("#confirm-text").textContent = split < 0 ? "" : words.slice(split + 1).trim();
  var ok = dialog.querySelector("[data-confirm-ok]");
  ok.textContent = verb(submitter);
  var danger = submitter ? submitter.classList.contains("btn-danger") : false;
  ok.className = "btn " + (danger ? "btn-danger-solid" : "btn-primary");
  var opener = document.activeElement;
  dialog.returnValue = "";
  dialog.onclose = function () {
    dialog.onclose = null;
    if (dialog.returnValue !== "ok") {
      if (opener && opener.focus) opener.focus();
      return;
    }
    // A live refresh may have swapped the form out of the page while the
    // dialog was open; a form out of the document does not submit, and the
    // confirmed action would be lost without a word. It goes back in
    // (hidden) and is sent as the user saw it: the server checks the state
    // it names and says so if the job has moved meanwhile.
    if (!form.isConnected) { form.hidden = true; document.body.appendChild(form); }
    form.setAttribute("data-confirmed", "");
    if (submitter && form.requestSubmit) form.requestSubmit(submitter);
    else if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  };
  dialog.showModal();
  // The safe choice has the focus: Enter or Space right away cancels.
  dialog.querySelector("[data-confirm-cancel]").focus();
}

function confirmSubmit(event) {
  var form = event.target;
  var submitter = event.submitter || null;
  if (form.hasAttribute("data-confirmed")) {  // the dialog said yes: this submit goes through
    form.removeAttribute("data-confirmed");
    return;
  }
  if (!asks(form, submitter)) return;
  event.preventDefault();
  event.stopImmediatePropagation();
  ask(form, submitter);
}

// ------------------------------------------------------------ row selection

function updateSelection(form) {
  var boxes = form.querySelectorAll("input[name=ids]");
  var checked = form.querySelectorAll("input[name=ids]:checked").length;
  var bar = document.querySelector("[data-selection-bar]");
  var all = form.querySelector("[data-select-all]");
  if (bar) {
    var count = bar.querySelector("[data-selection-count]");
    if (count) count.textContent = thousands(checked) + " selected";
    bar.querySelectorAll("button[type=submit]").forEach(function (b) { b.disabled = checked === 0; });
  }
  if (all) {
    all.checked = checked > 0 && checked === boxes.length;
    all.indeterminate = checked > 0 && checked < boxes.length;
  }
  if (bar) markAsking(bar);
}

function onChange(event) {
  var target = event.target;
  if (target.matches("[data-select-all]")) {
    var form = target.form;
    form.querySelectorAll("input[name=ids]").forEach(function (b) { b.checked = target.checked; });
    updateSelection(form);
  } else if (target.matches("input[name=ids]")) {
    updateSelection(target.form);
  } else if (target.matches("[data-autosubmit]") && target.form) {
    target.form.requestSubmit ? target.form.requestSubmit() : target.form.submit();
  }
}

// "Clear selection" is a reset button: the boxes clear after the event.
function onReset(event) {
  var form = event.target;
  if (form.hasAttribute && form.hasAttribute("data-selection")) setTimeout(function () { updateSelection(form); }, 0);
}

// ------------------------------------------------------------ menus

function closeMenus(except) {
  document.querySelectorAll("details.menu[open]").forEach(function (menu) {
    if (menu !== except) menu.open = false;
  });
}
function onMenuKey(event) {
  if (event.key !== "Escape") return;
  var menu = event.target.closest && event.target.closest("details.menu[open]");
  if (!menu) return;
  menu.open = false;
  menu.querySelector("summary").focus();
}
function onClickAway(event) {
  if (!event.target.closest || event.target.closest("dialog")) return;  // a menu's own confirmation
  closeMenus(event.target.closest("details.menu"));
}

// ------------------------------------------------------------ JSON editors
//
// A form[data-json-editor] holds a textarea[data-json-input]: as it is typed
// it says whether the text is JSON and how large it is against the server's
// limit (data-max-bytes, from ECHOMQ_MAX_JOB_DATA_BYTES), and a submit of
// text that is not JSON or too large is stopped with the reason, the cursor
// put where the parser stopped when it says. The server checks again.

function jsonProblem(text, maxBytes) {
  var bytes = new TextEncoder().encode(text).length;
  if (maxBytes && bytes > maxBytes) {
    return { message: "Too large: " + thousands(bytes) + " bytes, at most " + thousands(maxBytes) + " can be saved.", bytes: bytes };
  }
  try {
    JSON.parse(text);
  } catch (error) {
    var at = /position (\d+)/.exec(String(error.message));
    return { message: "Not valid JSON: " + error.message, position: at ? Number(at[1]) : null, bytes: bytes };
  }
  return { message: "", bytes: bytes };
}

function checkEditor(form) {
  var input = form.querySelector("[data-json-input]");
  var status = form.querySelector("[data-json-status]");
  if (!input) return null;
  var problem = jsonProblem(input.value, Number(form.getAttribute("data-max-bytes")) || 0);
  input.setAttribute("aria-invalid", problem.message ? "true" : "false");
  if (status) {
    status.textContent = problem.message || "Valid JSON, " + thousands(problem.bytes) + " bytes.";
    status.classList.toggle("editor-error", Boolean(problem.message));
  }
  return problem;
}

function onEditorInput(event) {
  var form = event.target.closest && event.target.closest("form[data-json-editor]");
  if (form && event.target.matches("[data-json-input]")) checkEditor(form);
}

function onEditorSubmit(event) {
  var form = event.target;
  if (!form.matches || !form.matches("form[data-json-editor]")) return;
  var problem = checkEditor(form);
  if (!problem || !problem.message) {
    keepDraft(form);
    return;
  }
  event.preventDefault();
  event.stopImmediatePropagation();
  var input = form.querySelector("[data-json-input]");
  input.focus();
  if (problem.position !== null && problem.position !== undefined) input.setSelectionRange(problem.position, problem.position);
}

// What was typed is not lost when the server refuses it (a worker took the
// job meanwhile, a name was missing): the fields of an editor's form are
// kept for this tab as it is sent, and if the page it lands on says an error,
// they are put back into the same form (reopened), or, where the page has no
// such form any more (the job is active now), shown under the message to
// copy. Any other answer drops them.
var DRAFT_KEY = "echomq-editor-draft";

function keepDraft(form) {
  var fields = {};
  form.querySelectorAll("input[name], textarea[name]").forEach(function (field) {
    if (field.type !== "hidden" || field.name === "id") fields[field.name] = field.value;
  });
  try {
    sessionStorage.setItem(DRAFT_KEY, JSON.stringify({ action: form.getAttribute("action"), fields: fields }));
  } catch (error) { /* storage full or off: the draft is simply not kept */ }
}

function restoreDraft() {
  var draft = null;
  try {
    draft = JSON.parse(sessionStorage.getItem(DRAFT_KEY) || "null");
    sessionStorage.removeItem(DRAFT_KEY);
  } catch (error) { return; }
  var refused = document.querySelector("#messages .message-error");
  if (!draft || !draft.fields || !refused) return;
  var form = Array.prototype.filter.call(document.querySelectorAll("form[data-json-editor]"), function (f) {
    var id = f.querySelector("input[name=id]");
    return f.getAttribute("action") === draft.action && (!id || id.value === draft.fields.id);
  })[0];
  if (form) {
    Object.keys(draft.fields).forEach(function (name) {
      var field = form.querySelector("[name='" + name + "']");
      if (field && field.type !== "hidden") field.value = draft.fields[name];
    });
    var fold = form.closest("details");
    if (fold) fold.open = true;
    checkEditor(form);
    return;
  }
  var text = draft.fields.data;
  if (!text) return;
  var box = document.createElement("details");
  box.className = "editor-draft";
  box.open = true;
  var summary = document.createElement("summary");
  summary.textContent = "Your edit, not saved (copy it from here)";
  var copy = document.createElement("textarea");
  copy.readOnly = true;
  copy.rows = 8;
  copy.value = text;
  copy.setAttribute("aria-label", "Your edit, not saved");
  box.append(summary, copy);
  refused.after(box);
}

function init(root) {
  markAsking(root || document);
  (root || document).querySelectorAll("form[data-selection]").forEach(updateSelection);
  (root || document).querySelectorAll("form[data-json-editor]").forEach(checkEditor);
}

document.addEventListener("keydown", focusSearch);
document.addEventListener("keydown", onMenuKey);
document.addEventListener("click", onClickAway);
// Before the confirmations' handler: text that is not JSON is not sent, nor asked about.
document.addEventListener("submit", onEditorSubmit, true);
document.addEventListener("submit", confirmSubmit, true);
document.addEventListener("change", onChange);
document.addEventListener("reset", onReset, true);
document.addEventListener("input", onEditorInput);
document.addEventListener("DOMContentLoaded", function () { init(document); restoreDraft(); });
// htmx swaps in new table fragments (and restores them on Back): re-arm their selection bars.
document.addEventListener("htmx:afterSwap", function (event) { init(event.target); });
document.addEventListener("htmx:historyRestore", function () { init(document); });
// A count changed without a swap (a search's matches): its buttons' "…" follows.
document.addEventListener("echomq:counted", function (event) { markAsking(event.target); });
