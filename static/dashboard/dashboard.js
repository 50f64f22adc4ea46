// EchoMQ dashboard: small progressive enhancements (no inline script anywhere).
// - "/" focuses the filter or job-id box
// - data-confirm on forms / buttons asks before destructive actions
// - row checkboxes: select all, count, enable the selection bar
// - data-autosubmit selects submit their form on change
// - data-filter-rows filters table rows by their data-filter-text (and says when none match)
(function () {
  "use strict";

  function focusSearch(event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    // The page's own box (the events' job filter) comes after the header's
    // go-to-job box, so the last one is the most specific.
    var boxes = document.querySelectorAll("[data-slash-focus]");
    var box = boxes[boxes.length - 1];
    if (!box) return;
    event.preventDefault();
    box.focus();
    if (box.select) box.select();
  }

  function confirmSubmit(event) {
    var form = event.target;
    var submitter = event.submitter || null;
    var question = (submitter && submitter.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
    if (!question) return;
    var selected = form.querySelectorAll("input[name=ids]:checked").length;
    if (selected && form.hasAttribute("data-selection")) {
      question = question.replace("the selected jobs", selected + (selected === 1 ? " job" : " jobs"));
    }
    // A clean names the age picked in its form, not "the chosen age".
    var age = form.querySelector("select[name=grace_ms]");
    if (age && age.selectedIndex >= 0) {
      question = question.replace("the chosen age", age.options[age.selectedIndex].text);
    }
    if (!window.confirm(question)) event.preventDefault();
  }

  function updateSelection(form) {
    var boxes = form.querySelectorAll("input[name=ids]");
    var checked = form.querySelectorAll("input[name=ids]:checked").length;
    var bar = form.querySelector("[data-selection-bar]");
    var count = form.querySelector("[data-selection-count]");
    var all = form.querySelector("[data-select-all]");
    if (count) count.textContent = checked + " selected";
    if (bar) {
      bar.classList.toggle("active", checked > 0);
      bar.querySelectorAll("button").forEach(function (b) { b.disabled = checked === 0; });
    }
    if (all) {
      all.checked = checked > 0 && checked === boxes.length;
      all.indeterminate = checked > 0 && checked < boxes.length;
    }
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

  function onFilter(event) {
    var input = event.target;
    if (!input.matches("[data-filter-rows]")) return;
    var needle = input.value.trim().toLowerCase();
    var body = document.querySelector(input.getAttribute("data-filter-rows"));
    if (!body) return;
    var shown = 0;
    body.querySelectorAll("tr[data-filter-text]").forEach(function (row) {
      row.hidden = needle !== "" && row.getAttribute("data-filter-text").toLowerCase().indexOf(needle) === -1;
      if (!row.hidden) shown += 1;
    });
    // Say so when nothing matches, rather than leave an empty table.
    var empty = document.querySelector("[data-filter-empty]");
    if (empty) {
      empty.hidden = shown > 0;
      var echo = empty.querySelector("[data-filter-echo]");
      if (echo) echo.textContent = input.value.trim();
    }
  }

  function init(root) {
    (root || document).querySelectorAll("form[data-selection]").forEach(updateSelection);
  }

  document.addEventListener("keydown", focusSearch);
  document.addEventListener("submit", confirmSubmit, true);
  document.addEventListener("change", onChange);
  document.addEventListener("input", onFilter);
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  // htmx swaps in new table fragments: re-arm their selection bars.
  document.addEventListener("htmx:afterSwap", function (event) { init(event.target); });
})();
